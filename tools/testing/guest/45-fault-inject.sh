# SPDX-License-Identifier: GPL-2.0
# fault_inject_example makes chdir() fail with EACCES while it is loaded,
# through a pre-handler that overrides the return value (the probe is at an
# ftrace site); an int3 probe in rkp_test does the same for its own target.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "cd works before" sh -c 'cd /tmp'
check "insmod fault_inject_example.ko" insmod $MODDIR/fault_inject_example.ko
expect_fail "cd fails while loaded" sh -c 'cd /tmp'
check "with EACCES" sh -c 'cd /tmp 2>&1 | grep -q "Permission denied"'
check "rmmod fault_inject_example" rmmod fault_inject_example
check "cd works again" sh -c 'cd /tmp'
check "failures were counted" sh -c 'dmesg | grep -q "injected [1-9][0-9]* failures"'
expect_fail "errno=0 refused" insmod $MODDIR/fault_inject_example.ko errno=0
check "rmmod rkprobes" rmmod rkprobes
