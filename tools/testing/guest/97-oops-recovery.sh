# SPDX-License-Identifier: GPL-2.0
# An oops in a probed instruction's out-of-line copy: a probe with a post-
# handler (so that the instruction runs as a copy) at every offset of LKDTM's
# EXCEPTION case, whose NULL write page-faults with no exception-table fixup
# and oopses. The task dies inside the probe; rkprobes must take the probe's
# frame off that CPU's stack (DIE_OOPS), or every later hit on the CPU counts
# as missed and the freed point stays referenced. Last but the 99- tests: the
# oops taints the kernel and turns lock debugging off.

D=/sys/kernel/debug/rkprobes
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "insmod lkdtm.ko" insmod $MODDIR/lkdtm.ko
if ! grep -q " lkdtm_EXCEPTION" /proc/kallsyms; then
	skip "an oops in a copy" "lkdtm_EXCEPTION is not a symbol (inlined)"
	return 0 2>/dev/null || exit 0
fi
panic_on_oops=$(cat /proc/sys/kernel/panic_on_oops)
echo 0 > /proc/sys/kernel/panic_on_oops
dmesg -c > /dev/null
check "probes at every accepted offset of lkdtm_EXCEPTION" \
	insmod $MODDIR/rkp_reenter.ko symbol=lkdtm_EXCEPTION maxoff=32
dmesg | sed -n 's/.*rkp_reenter: \([0-9].*probes on.*\)/# \1/p'
# The writer dies in the oops: the shell that runs it sees it killed.
expect_kernel_report sh -c 'echo EXCEPTION > /sys/kernel/debug/provoke-crash/DIRECT'
check "the NULL write oopsed" sh -c 'dmesg | grep -q "^Oops\|\] Oops"'
# In the copy, not in lkdtm_EXCEPTION's own text: the report shows the
# slot's address, which no symbol covers.
check "the oops was in a probe's copy" sh -c 'dmesg | grep "RIP: 0010:" | grep -qv lkdtm_EXCEPTION'
check "rmmod rkp_reenter" rmmod rkp_reenter
line=$(dmesg | sed -n 's/.*rkp_reenter: unloaded: //p' | tail -n 1)
diag "lkdtm_EXCEPTION: $line"
echo "$panic_on_oops" > /proc/sys/kernel/panic_on_oops

# Both CPUs hit a probe again: none of the hits may be missed.
check "an event on vfs_read" sh -c "echo 'p:after vfs_read' > $D/kprobe_events"
check "enabled" sh -c "echo 1 > $T/events/rkprobes/after/enable"
for cpu in 0 1; do
	taskset -c $cpu sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do dd if=/proc/version of=/dev/null 2>/dev/null; done'
done
echo 0 > $T/events/rkprobes/after/enable
set -- $(awk '$1 == "after" { print $2, $3 }' $D/kprobe_profile)
diag "after the oops: ${1:-0} hits, ${2:-?} missed"
check "hits on both CPUs after the oops (${1:-0})" test "${1:-0}" -ge 20
expect_eq "none of them missed" 0 "${2:-x}"
check "remove the event" sh -c "echo > $D/kprobe_events"
check "rmmod rkprobes" rmmod rkprobes
