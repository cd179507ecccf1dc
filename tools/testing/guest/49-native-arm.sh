# SPDX-License-Identifier: GPL-2.0
# Arming re-checks the kernel's kprobes (issue 10, defects 4 and 7): a
# kprobe_events probe of rkprobes is registered disarmed; a kernel kprobe
# placed at the same bytes afterwards, and optimized into a 5-byte jump,
# must make enabling rkprobes' event fail with EBUSY and leave the kernel's
# jump alone (the old code wrote 0xcc into it). Likewise for an ftrace site.

if [ ! -e /sys/kernel/debug/kprobes/list ] || [ ! -e /sys/kernel/tracing/kprobe_events ]; then
	skip "arming beside the kernel's kprobes" "kernel without CONFIG_KPROBE_EVENTS"
	return 0 2>/dev/null || exit 0
fi
D=/sys/kernel/debug/rkprobes
T=/sys/kernel/tracing
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
[ -e /proc/sys/debug/kprobes-optimization ] && echo 1 > /proc/sys/debug/kprobes-optimization

# An int3 site in vfs_read that both take.
mid=
for off in 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do
	if echo "p:rkp_arm vfs_read+$off" >> $D/kprobe_events 2>/dev/null; then
		mid=$off
		break
	fi
done
check "rkprobes' event on vfs_read+${mid:-none}, registered disarmed" test -n "$mid"
hx=$(printf '0x%x' "${mid:-0}")
check "the kernel's event at the same address" \
	sh -c "echo 'p:kern_arm vfs_read+$mid' >> $T/kprobe_events"
check "enabled" sh -c "echo 1 > $T/events/kprobes/kern_arm/enable"
# The kernel's optimizer runs a few jiffies later; reads make sure it did.
for i in 1 2 3 4 5; do cat /proc/version > /dev/null; sleep 1; done
diag "$(grep vfs_read /sys/kernel/debug/kprobes/list)"
check "the kernel optimized its probe" grep -q "vfs_read+$hx.*OPTIMIZED" /sys/kernel/debug/kprobes/list
expect_fail "enabling rkprobes' event over the kernel's jump fails" \
	sh -c "echo 1 > $T/events/rkprobes/rkp_arm/enable"
check "with EBUSY" sh -c "{ echo 1 > $T/events/rkprobes/rkp_arm/enable; } 2>&1 | grep -qi 'busy'"
check "rkprobes' probe stays disabled" grep -q "vfs_read+$hx.*DISABLED" $D/list
echo > $T/trace
for i in 1 2 3; do cat /proc/version > /dev/null; done
check "the kernel's probe still fires" grep -q 'kern_arm:' $T/trace
check "the kernel's probe is still optimized" grep -q "vfs_read+$hx.*OPTIMIZED" /sys/kernel/debug/kprobes/list

# The ftrace site: rkprobes' event at vfs_read's entry, then the kernel's.
check "rkprobes' event at vfs_read's entry" sh -c "echo 'p:rkp_entry vfs_read' >> $D/kprobe_events"
check "the kernel's event at vfs_read's entry" sh -c "echo 'p:kern_entry vfs_read' >> $T/kprobe_events"
check "enabled" sh -c "echo 1 > $T/events/kprobes/kern_entry/enable"
expect_fail "enabling rkprobes' entry event fails" sh -c "echo 1 > $T/events/rkprobes/rkp_entry/enable"

# Once the kernel's probes are gone, rkprobes' events arm.
check "the kernel's events removed" sh -c "echo 0 > $T/events/kprobes/enable && echo > $T/kprobe_events"
check "rkprobes' events enable now" sh -c "echo 1 > $T/events/rkprobes/enable"
echo > $T/trace
for i in 1 2 3; do cat /proc/version > /dev/null; done
check "and fire" sh -c "grep -q 'rkp_arm:' $T/trace && grep -q 'rkp_entry:' $T/trace"
check "removed" sh -c "echo 0 > $T/events/rkprobes/enable && echo > $D/kprobe_events"
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
