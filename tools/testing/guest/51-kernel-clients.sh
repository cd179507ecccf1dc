# SPDX-License-Identifier: GPL-2.0
# The kernel's own kprobes clients, compiled unchanged from its source tree
# against rkprobes' compatibility header (include/compat/linux/kprobes.h,
# tools/testing/modules/Kbuild): lib/test_kprobes.c, whose KUnit cases run
# under a KUnit-compatible runner (the test kernels have no KUnit), and
# samples/kprobes/kprobe_example.c and kretprobe_example.c.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
ktap_module kernel_test_kprobes
# The file compiles its kretprobe cases under CONFIG_KRETPROBES, which the
# kernel with kprobes has and the other does not.
if [ -e /sys/kernel/debug/kprobes/list ]; then
	expect_eq "test_kprobes: its 7 cases ran (kprobes, kretprobes, stack traces)" 7 "$KTAP_COUNT"
else
	expect_eq "test_kprobes: its 3 kprobe cases ran (no CONFIG_KRETPROBES)" 3 "$KTAP_COUNT"
fi
check "rmmod kernel_test_kprobes" rmmod kernel_test_kprobes
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'

# The kprobe sample, on kernel_clone: its handlers print the probe and the
# registers at each fork.
dmesg -c > /dev/null
check "insmod kernel_kprobe_example.ko" insmod $MODDIR/kernel_kprobe_example.ko
check "rkprobes lists it" grep -q ' k  kernel_clone+0x' /sys/kernel/debug/rkprobes/list
/bin/true
check "rmmod kernel_kprobe_example" rmmod kernel_kprobe_example
check "it planted the probe" sh -c 'dmesg | grep -q "Planted kprobe at "'
check "its pre-handler ran" sh -c 'dmesg | grep -q "handler_pre: <kernel_clone> p->addr = 0x[0-9a-f]*, ip = [0-9a-f]*, flags = 0x"'
check "its post-handler ran" sh -c 'dmesg | grep -q "handler_post: <kernel_clone> p->addr = 0x[0-9a-f]*, flags = 0x"'
check "it unregistered" sh -c 'dmesg | grep -q "kprobe at [0-9a-fx]* unregistered"'

# The kretprobe sample: kernel_clone's return value (the child's pid) and
# duration.
dmesg -c > /dev/null
check "insmod kernel_kretprobe_example.ko" insmod $MODDIR/kernel_kretprobe_example.ko
check "rkprobes lists it as a return probe" grep -q ' r  kernel_clone+0x' /sys/kernel/debug/rkprobes/list
/bin/true
check "rmmod kernel_kretprobe_example" rmmod kernel_kretprobe_example
check "it planted the return probe" sh -c 'dmesg | grep -q "Planted return probe at kernel_clone: "'
check "its handlers reported a return and its duration" \
	sh -c 'dmesg | grep -q "kernel_clone returned [1-9][0-9]* and took [0-9]* ns to execute"'
check "it missed none" sh -c 'dmesg | grep -q "Missed probing 0 instances of kernel_clone"'
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
