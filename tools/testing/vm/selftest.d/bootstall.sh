# SPDX-License-Identifier: GPL-2.0
# Never runs: the case boots with an /init that sleeps instead of starting
# the harness (rdinit=), a guest that stalls before its first test.
check "unreachable" false
