# SPDX-License-Identifier: GPL-2.0
# Probes on a module's code do not keep it loaded: when the module goes,
# its probes are disarmed and marked [GONE], as the kernel's kprobes do, and
# stay registered until their owner removes them. int3 probes (a Rust test
# module), probes through ftrace (lkdtm, a C module compiled with ftrace
# call sites) and kretprobes.

L=/sys/kernel/debug/rkprobes/list
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
ktap_module rkp_test > /dev/null
check "rkp_test stays loaded" grep -q '^rkp_test ' /proc/modules
check "kprobe_example on rkp_test:rkp_test_target" \
	insmod $MODDIR/kprobe_example.ko symbol=rkp_test:rkp_test_target
diag "$(cat $L)"
check "listed" grep -q "rkp_test_target+0x.*rkp_test" $L
check "the probed module can be unloaded" rmmod rkp_test
check "its probe is [GONE]" grep -q '\[GONE\]' $L
diag "$(cat $L)"
check "the kernel log says so" sh -c 'dmesg | grep -q "1 probes of unloaded code marked gone"'
check "rmmod kprobe_example" rmmod kprobe_example
check "list empty" sh -c "[ -z \"\$(cat $L)\" ]"

check "insmod lkdtm.ko" insmod $MODDIR/lkdtm.ko
check "kprobe_example on lkdtm:lkdtm_do_action" \
	insmod $MODDIR/kprobe_example.ko symbol=lkdtm:lkdtm_do_action
check "probed through ftrace" grep -q 'lkdtm_do_action+0x.*\[FTRACE\]' $L
check "rmmod lkdtm" rmmod lkdtm
check "[GONE]" grep -q '\[GONE\]' $L
check "rmmod kprobe_example" rmmod kprobe_example
check "insmod lkdtm.ko again, unprobed" insmod $MODDIR/lkdtm.ko
check "rmmod lkdtm" rmmod lkdtm

ktap_module rkp_kret_test > /dev/null
check "kretprobe_example on rkp_kret_test:rkp_kret_target" \
	insmod $MODDIR/kretprobe_example.ko func=rkp_kret_test:rkp_kret_target
check "the probed module can be unloaded" rmmod rkp_kret_test
check "the return probe is [GONE]" grep -q ' r  .*\[GONE\]' $L
check "rmmod kretprobe_example" rmmod kretprobe_example
check "list empty" sh -c "[ -z \"\$(cat $L)\" ]"

# The same code loaded again is probed afresh.
ktap_module rkp_test > /dev/null
check "rkp_test passes again" grep -q '^rkp_test ' /proc/modules
check "rmmod rkp_test" rmmod rkp_test
check "rmmod rkprobes" rmmod rkprobes
