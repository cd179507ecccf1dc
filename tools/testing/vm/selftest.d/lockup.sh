# SPDX-License-Identifier: GPL-2.0
# A kernel that stops making progress while it keeps printing (a CPU spinning
# with preemption off: the soft-lockup detector reports it again and again)
# must make the run fail as a hang, soon after the first report.
check "insmod lkdtm" insmod $MODDIR/lkdtm.ko
echo SOFTLOCKUP > /sys/kernel/debug/provoke-crash/DIRECT
check "never reached" true
