# SPDX-License-Identifier: GPL-2.0
# rkp_test.ko runs the semantics of the kernel's kprobe KUnit tests against
# rkprobes at load time and prints KTAP into the kernel log; each of its
# results becomes one of ours.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
ktap_module rkp_test
check "rkp_test reported at least 30 checks" test "$KTAP_COUNT" -ge 30
rmmod rkp_test 2>/dev/null

# The C ABI's version (RKP_ABI_VERSION of include/rkprobes.h): a client
# built against another one is refused, with ENOEXEC and a line that says
# why; one built against this one registers.
P=/sys/module/rkp_evtest/parameters/probe
check "insmod rkp_evtest abi=999 (another ABI)" insmod $MODDIR/rkp_evtest.ko abi=999
dmesg -c > /dev/null
expect_fail "ABI 999: a kprobe is refused" sh -c "echo 'kprobe vfs_read' > $P"
expect_fail "ABI 999: a kretprobe is refused" sh -c "echo 'kretprobe vfs_read' > $P"
check "ABI 999: with ENOEXEC" sh -c "dmesg | grep -q 'rkp_evtest: kprobe on vfs_read: -8'"
check "ABI 999: the log says why" sh -c "dmesg | grep -q 'built against rkprobes ABI version 999'"
check "rmmod rkp_evtest" rmmod rkp_evtest
check "insmod rkp_evtest (this ABI)" insmod $MODDIR/rkp_evtest.ko
check "this ABI: a kprobe registers" sh -c "echo 'kprobe vfs_read' > $P"
check "this ABI: a kretprobe registers" sh -c "echo 'kretprobe vfs_read' > $P"
check "rmmod rkp_evtest" rmmod rkp_evtest
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
