# SPDX-License-Identifier: GPL-2.0
# A deliberately failing check must make the run fail.
check "true succeeds" true
check "deliberate failure" false
