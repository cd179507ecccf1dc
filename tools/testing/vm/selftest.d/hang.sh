# SPDX-License-Identifier: GPL-2.0
# A guest that never finishes must make the run fail by time-out.
check "started" true
sleep 100000
