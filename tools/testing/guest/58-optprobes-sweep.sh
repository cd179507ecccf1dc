# SPDX-License-Identifier: GPL-2.0
# kprobe_opt_types.tc as a sweep: at every offset 0..255 of four frequently
# called functions where both accept a probe, a kprobe event of the kernel's
# and then one of rkprobes' (the kernel's removed first, and its optimizer
# waited for by rkprobes), each enabled and hit; rkprobes must optimize
# exactly where the kernel's kprobes do (both lists show [OPTIMIZED] as soon
# as a probe is queued), and the function must go on working.

if [ ! -e /sys/kernel/debug/kprobes/list ] || [ ! -e /sys/kernel/tracing/kprobe_events ]; then
	skip "rkprobes optimizes where the kernel's kprobes do" "kernel without CONFIG_KPROBE_EVENTS"
	return 0 2>/dev/null || exit 0
fi
KE=/sys/kernel/debug/rkprobes/kprobe_events
L=/sys/kernel/debug/rkprobes/list
T=/sys/kernel/tracing
NL=/sys/kernel/debug/kprobes/list

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
	both=0 nat=0 rkp=0 differ=0
	for off in $(seq 0 255); do
		echo "p:rkp_nat $fn+$off" > $T/kprobe_events 2>/dev/null || continue
		echo 1 > $T/events/kprobes/rkp_nat/enable
		grep -q "$fn+0x.*OPTIMIZED" $NL && n=1 || n=0
		echo 0 > $T/events/kprobes/rkp_nat/enable
		echo > $T/kprobe_events
		echo "p:rkp_opt $fn+$off" > $KE 2>/dev/null || continue
		if echo 1 > $T/events/rkprobes/rkp_opt/enable 2>/dev/null; then
			grep -q "$fn+0x.*OPTIMIZED" $L && r=1 || r=0
			dd if=/proc/version of=/dev/null 2>/dev/null
			echo 0 > $T/events/rkprobes/rkp_opt/enable
			both=$((both + 1))
			nat=$((nat + n))
			rkp=$((rkp + r))
			if [ "$n" != "$r" ]; then
				differ=$((differ + 1))
				diag "$fn+$off: kernel $n, rkprobes $r"
			fi
		fi
		echo > $KE
	done
	diag "$fn: $both offsets probed by both; optimized: kernel $nat, rkprobes $rkp"
	check "$fn: probed at 20 offsets or more ($both)" test "$both" -ge 20
	check "$fn: optimized somewhere ($rkp)" test "$rkp" -ge 1
	expect_eq "$fn: optimized exactly where the kernel's kprobes are" 0 "$differ"
done
check "fork, open, read and write still work" sh -c 'cat /proc/version > /tmp/v && test -s /tmp/v'
check "rmmod rkprobes" rmmod rkprobes
