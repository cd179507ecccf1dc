# SPDX-License-Identifier: GPL-2.0
# Jump optimization: rkp_opt_test checks optimized probes on functions of its
# own (registers as an int3 hit shows them, results, counts, the conditions
# that keep a probe an int3, unoptimization and optimization again, churn
# under load on every CPU); then a kprobe event on a kernel function is
# optimized, switched by the `optimization` knob, and its text compared byte
# for byte after removal and after rkprobes is unloaded; the cases of the
# kernel's kprobe_opt_types.tc; and churn while the knob flips. OPT_CHURN
# on the guest's command line sets the rounds of each churn (200; make check
# runs fewer).

KE=/sys/kernel/debug/rkprobes/kprobe_events
PROF=/sys/kernel/debug/rkprobes/kprobe_profile
L=/sys/kernel/debug/rkprobes/list
O=/sys/kernel/debug/rkprobes/optimization
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
FN=vfs_read
# vfs_read+0x9, after ENDBR and the ftrace call site: the prologue's pushes
# (gcc: push %r13; push %r12; push %rbp) or push %rbp; mov %rsp,%rbp (clang,
# the debug kernel), five bytes or more of simple instructions either way.
OFF=9

# The 64 bytes at an address, read by rkp_opt_test (dump mode).
text_at() {
	insmod $MODDIR/rkp_opt_test.ko dump=$1 2>/dev/null
	dmesg | sed -n 's/.*rkp_opt_test: bytes [^:]*: //p' | tail -1
}

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
expect_eq "optimization knob is 1 by default" 1 "$(cat $O)"
ktap_module rkp_opt_test churn=${OPT_CHURN:-200}
check "rkp_opt_test reported at least 50 checks" test "$KTAP_COUNT" -ge 50
rmmod rkp_opt_test 2>/dev/null

base=$(grep " [Tt] $FN\$" /proc/kallsyms | cut -d' ' -f1)
addr=0x$(printf '%x' $((0x$base + OFF)))
orig=$(text_at 0x$base)
check "$FN: text read" test -n "$orig"

# The kernel's own optimizer takes the same offset, where it has one.
if [ -e /sys/kernel/debug/kprobes/list ] && [ -e $T/kprobe_events ]; then
	echo "p:rkp_native $FN+$OFF" >> $T/kprobe_events
	echo 1 > $T/events/kprobes/rkp_native/enable
	sleep 1
	check "$FN+$OFF: the kernel's kprobes optimize it too" grep -q "$FN+0x$(printf '%x' $OFF).*OPTIMIZED" /sys/kernel/debug/kprobes/list
	echo 0 > $T/events/kprobes/rkp_native/enable
	echo '-:rkp_native' >> $T/kprobe_events
	# An instruction boundary inside the jump's first five bytes, where
	# the kernel's kprobes accept a probe while nothing is there (the
	# compilers lay the prologue out differently: gcc's push %r13 is two
	# bytes, clang's push %rbp one).
	for k in 1 2 3 4; do
		if echo "p:rkp_in $FN+$((OFF + k))" >> $T/kprobe_events 2>/dev/null; then
			echo '-:rkp_in' >> $T/kprobe_events
			IN=$((OFF + k))
			break
		fi
	done
	check "$FN+${IN:-?}: an instruction boundary inside the region" test -n "$IN"
else
	skip "$FN+$OFF: the kernel's kprobes optimize it too" "kernel without CONFIG_KPROBES"
fi

check "$FN+$OFF: add an event" sh -c "echo 'p:opt $FN+$OFF' > $KE"
check "$FN+$OFF: enable it" sh -c "echo 1 > $T/events/rkprobes/opt/enable"
# kprobe_opt_types.tc: [OPTIMIZED] at once, as the kernel's list shows it
# for a queued probe.
check "$FN+$OFF: [OPTIMIZED] in list" grep -q "$FN+0x$(printf '%x' $OFF) .*\[OPTIMIZED\]" $L
diag "$(cat $L)"
sleep 1
now=$(text_at $addr)
expect_eq "$FN+$OFF: a jmp rel32 (0xe9) at the probe" "[e9" "${now%%,*}"
# Coexistence: the kernel's kprobes must not go inside the jump (its
# decoder would see the jump's bytes). rkprobes lists the region in the
# kernel's kprobe blacklist while it is optimized.
if [ -e /sys/kernel/debug/kprobes/blacklist ] && [ -e $T/kprobe_events ]; then
	check "$FN+$OFF: the region is in the kernel's kprobes/blacklist" grep -q "^$addr-" /sys/kernel/debug/kprobes/blacklist
	expect_fail "$FN+${IN:-?}: the kernel's kprobes refuse a probe inside the jump" sh -c "[ -n '$IN' ] && echo 'p:rkp_in $FN+$IN' >> $T/kprobe_events"
else
	skip "$FN+$OFF: the region is in the kernel's kprobes/blacklist" "kernel without CONFIG_KPROBES"
	skip "$FN: the kernel's kprobes refuse a probe inside the jump" "kernel without CONFIG_KPROBES"
fi
for i in 1 2 3 4 5; do dd if=/proc/version of=/dev/null 2>/dev/null; done
hits=$(awk '$1 == "opt" { print $2 }' $PROF)
check "$FN+$OFF: hits through the jump ($hits)" test "${hits:-0}" -ge 5
check "$FN+$OFF: traced" grep -q "opt: (" $T/trace
check "knob 0" sh -c "echo 0 > $O"
check "knob 0: not [OPTIMIZED]" sh -c "! grep -q OPTIMIZED $L"
# Still armed: an int3 at the probe, the rest as it was.
int3=$(echo "$orig" | awk -F', ' -v OFS=', ' -v f=$((OFF + 1)) '{ $f = "cc"; print }')
expect_eq "knob 0: the int3 back, the rest of the text original" "$int3" "$(text_at 0x$base)"
dd if=/proc/version of=/dev/null 2>/dev/null
hits2=$(awk '$1 == "opt" { print $2 }' $PROF)
check "knob 0: hits as an int3 ($hits -> $hits2)" test "${hits2:-0}" -gt "${hits:-0}"
check "knob 1" sh -c "echo 1 > $O"
check "knob 1: [OPTIMIZED] again" grep -q "$FN+0x$(printf '%x' $OFF) .*\[OPTIMIZED\]" $L
sleep 1
now=$(text_at $addr)
expect_eq "knob 1: the jmp again" "[e9" "${now%%,*}"
check "$FN+$OFF: disable" sh -c "echo 0 > $T/events/rkprobes/opt/enable"
expect_eq "disabled: the original text" "$orig" "$(text_at 0x$base)"
check "$FN+$OFF: enable again" sh -c "echo 1 > $T/events/rkprobes/opt/enable"
sleep 1
now=$(text_at $addr)
expect_eq "enabled: the jmp again" "[e9" "${now%%,*}"
check "$FN+$OFF: disable and delete" sh -c "echo 0 > $T/events/rkprobes/opt/enable && echo '-:opt' >> $KE"
expect_eq "deleted: the original text" "$orig" "$(text_at 0x$base)"
if [ -e /sys/kernel/debug/kprobes/blacklist ] && [ -e $T/kprobe_events ]; then
	expect_fail "deleted: the region left the kernel's kprobes/blacklist" grep -q "^$addr-" /sys/kernel/debug/kprobes/blacklist
	check "deleted: the kernel's kprobes accept $FN+$IN again" sh -c "echo 'p:rkp_in $FN+$IN' >> $T/kprobe_events && echo '-:rkp_in' >> $T/kprobe_events"
fi

# Optimized again, then unregistered by deleting the event, and rkprobes
# unloaded: the text is the original one in a fresh rkprobes' eyes.
check "$FN+$OFF: add and enable again" sh -c "echo 'p:opt $FN+$OFF' > $KE && echo 1 > $T/events/rkprobes/opt/enable"
sleep 1
now=$(text_at $addr)
expect_eq "optimized again" "[e9" "${now%%,*}"
check "disable, delete, rmmod rkprobes" sh -c "echo 0 > $T/events/rkprobes/opt/enable && echo '-:opt' >> $KE && rmmod rkprobes"
check "insmod rkprobes.ko again" insmod $MODDIR/rkprobes.ko
expect_eq "after rmmod: the original text" "$orig" "$(text_at 0x$base)"

# The optimizer's state file, and its to-do list while no pass can run:
# a point that loses a client is left for the next pass, which with the
# knob at 0 never comes; turning it on looks at every point anyway, so
# nothing may pend meanwhile (it grew by one a removal).
OS=/sys/kernel/debug/rkprobes/optimizer
check "optimizer file: optimized, queued, pending" \
	sh -c "cut -d' ' -f1 $OS | tr '\n' ' ' | grep -qx 'optimized queued pending '"
check "$FN+$OFF: optimized again" sh -c "echo 'p:opt $FN+$OFF' > $KE && echo 1 > $T/events/rkprobes/opt/enable"
sleep 1
expect_eq "optimizer: one optimized, nothing queued or pending" "optimized 1 queued 0 pending 0" "$(tr '\n' ' ' < $OS | sed 's/ $//')"
echo 0 > $O
rounds=${OPT_TODO_ROUNDS:-50}
for i in $(seq 1 $rounds); do
	echo "p:opt2 $FN+$OFF" >> $KE && echo 1 > $T/events/rkprobes/opt2/enable &&
		echo 0 > $T/events/rkprobes/opt2/enable && echo '-:opt2' >> $KE
done
expect_eq "knob at 0, $rounds clients gone from the point: nothing pending" "optimized 0 queued 0 pending 0" "$(tr '\n' ' ' < $OS | sed 's/ $//')"
echo 1 > $O
sleep 1
expect_eq "knob at 1: optimized again" "optimized 1 queued 0 pending 0" "$(tr '\n' ' ' < $OS | sed 's/ $//')"
check "disable and delete" sh -c "echo 0 > $T/events/rkprobes/opt/enable && echo '-:opt' >> $KE"

# Churn while the knob flips: the module's churn, and a shell loop.
(for i in $(seq 1 60); do echo 0 > $O; sleep 0.05; echo 1 > $O; sleep 0.1; done) &
flipper=$!
ktap_module rkp_opt_test churn=${OPT_CHURN:-200} churn_only=1
wait $flipper
rmmod rkp_opt_test 2>/dev/null
expect_eq "knob back to 1" 1 "$(cat $O)"
# ktap_module cleared the log before the churn.
check "churn: no oops or warning" sh -c "! dmesg | grep -qE 'Oops|BUG:|WARNING:|RIP:'"
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
