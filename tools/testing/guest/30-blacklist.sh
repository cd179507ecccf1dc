# SPDX-License-Identifier: GPL-2.0
# /sys/kernel/debug/rkprobes/blacklist lists, in the kernel's format, every
# range of the native kprobes blacklist and rkprobes' own text.

BL=/sys/kernel/debug/rkprobes/blacklist
NATIVE=/sys/kernel/debug/kprobes/blacklist
I3=/sys/kernel/debug/rkprobes/int3_path

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "blacklist file exists" test -f $BL
check "blacklist readable" cat $BL
n=$(wc -l < $BL)
diag "rkprobes blacklist: $n ranges"
check "every line is 0xSTART-0xEND<TAB>SYMBOL" \
	awk -F'\t' 'NF != 2 || $1 !~ /^0x[0-9a-f]{16}-0x[0-9a-f]{16}$/ { print "bad: " $0; bad = 1 } END { exit bad }' $BL
check "every range is non-empty" \
	awk '{ split($1, a, "-"); if ((a[1] "") >= (a[2] "")) { print "empty: " $0; bad = 1 } } END { exit bad }' $BL

if [ -f $NATIVE ]; then
	nn=$(wc -l < $NATIVE)
	diag "native blacklist: $nn ranges"
	# Lines of the native list missing from ours (busybox has no comm).
	grep -vxF -f $BL $NATIVE > /tmp/missing
	expect_eq "every native entry is in rkprobes' blacklist" 0 "$(wc -l < /tmp/missing)"
	head -5 /tmp/missing | sed 's/^/# missing: /'
	for sym in exc_int3 do_int3 notify_die kprobe_int3_handler; do
		if grep -q "	$sym\$" $NATIVE; then
			check "$sym blacklisted" grep -q "	$sym\$" $BL
		fi
	done
	grep -vxF -f $NATIVE $BL > /tmp/extra
	# Its own text, the callees of its optimized callback that the kernel
	# does not list (preempt_schedule_notrace), the text the kernel copies
	# (ftrace's trampoline templates, kexec's relocate_kernel), and the
	# int3 path.
	expect_eq "rkprobes adds exactly its own text, its hit path's callees, copied text and the int3 path" "1 0" \
		"$(grep -c '\[rkprobes\]$' /tmp/extra) $(grep -v '\[rkprobes\]$' /tmp/extra | grep -vxF -f $I3 |
			grep -cv -e '	preempt_schedule\(_notrace\)\?\(_thunk\)\?$' -e '	ftrace\(_regs\)\?_caller$' -e '	relocate_\(kernel\|range\)$')"
else
	skip "native comparison" "kernel without CONFIG_KPROBES"
fi
check "rkprobes' own text is listed" grep -q '\[rkprobes\]$' $BL

# The kernel's int3 path up to rkprobes' die notifier and back, traced at
# load (arch/x86/trap_path.rs): a probe there would trap again before
# rkprobes could see the recursion, so every function of it is refused.
dmesg | grep 'int3 path:' | tail -1 | sed 's/^/# /'
check "int3_path lists functions" grep -q . $I3
check "every int3_path function is in the blacklist" sh -c "grep -vxF -f $BL $I3 | wc -l | grep -qx 0"
# What the 6.12 die chain runs for every int3, when this kernel has it: the
# out-of-line RCU read side (PREEMPT_RCU), lockdep's hooks, and the
# hw_breakpoint notifier, which runs ahead of rkprobes'.
for sym in __rcu_read_lock __rcu_read_unlock hw_breakpoint_exceptions_notify; do
	if grep -q " [tT] $sym\$" /proc/kallsyms; then
		check "$sym is on the int3 path" grep -q "	$sym\$" $I3
	fi
done
if [ -e /proc/lockdep ]; then
	for sym in lock_acquire lock_release; do
		check "$sym is on the int3 path (lockdep)" grep -q "	$sym\$" $I3
	done
fi
# Differential: the kernel's kprobes accept the same functions (their
# handler runs before the chain) and count hits; rkprobes refuses them.
if [ -f $NATIVE ] && [ -w /sys/kernel/tracing/kprobe_events ]; then
	KE=/sys/kernel/tracing/kprobe_events
	grep -vxF -f $NATIVE $I3 | cut -f2 | grep -v ' \[' > /tmp/i3.own
	i=0
	: > /tmp/i3.acc
	while read -r sym; do
		echo "p:i3/p$i $sym" >> $KE 2>/dev/null && echo "$sym" >> /tmp/i3.acc && i=$((i + 1))
	done < /tmp/i3.own
	diag "the kernel's kprobes accept $i of the $(wc -l < /tmp/i3.own) int3-path functions outside its blacklist: $(paste -sd' ' /tmp/i3.acc)"
	check "the kernel's kprobes accept some of them" test "$i" -gt 0
	echo 1 > /sys/kernel/tracing/events/i3/enable
	cat /proc/kallsyms > /dev/null
	echo 0 > /sys/kernel/tracing/events/i3/enable
	hits=$(awk '$1 ~ /^p[0-9]+$/ { n += $2 } END { print n + 0 }' /sys/kernel/tracing/kprobe_profile)
	diag "hits of the kernel's probes there: $hits"
	check "the kernel's probes there count hits ($hits)" test "$hits" -gt 0
	j=0
	while [ $j -lt $i ]; do
		echo "-:i3/p$j" >> $KE
		j=$((j + 1))
	done
	refused=0
	while read -r sym; do
		echo "p:i3/r $sym" >> /sys/kernel/debug/rkprobes/kprobe_events 2>/dev/null ||
			refused=$((refused + 1))
	done < /tmp/i3.own
	expect_eq "rkprobes refuses all of them" "$(wc -l < /tmp/i3.own)" "$refused"
fi
# The int3 path and the die chain, with or without the kernel's kprobes (its
# list or the one rkprobes builds from the kernel's annotations); do_int3 is
# inlined into the noinstr exc_int3 in some configurations.
# And what the optimized callback's preempt_enable_notrace() calls: a probe
# there would be hit again from its own callback.
for sym in do_int3 notify_die notifier_call_chain atomic_notifier_call_chain \
	preempt_schedule_notrace preempt_schedule_notrace_thunk preempt_schedule_thunk; do
	if grep -q " $sym\$" /proc/kallsyms; then
		check "$sym blacklisted" grep -q "	$sym\$" $BL
	fi
done

# Text the kernel copies and runs the copy of: ftrace builds its dynamic
# trampolines from ftrace_caller and ftrace_regs_caller (up to their _end
# labels), so an int3 there would reach every new trampoline as a trap no
# probe owns. The kernel's kprobes accept these; rkprobes refuses them.
for sym in ftrace_caller ftrace_regs_caller; do
	if grep -q " [tT] ${sym}_end\$" /proc/kallsyms; then
		check "$sym (ftrace's trampoline template) blacklisted" grep -q "	$sym\$" $BL
		s=$(grep " [tT] $sym\$" /proc/kallsyms | cut -d' ' -f1)
		e=$(grep " [tT] ${sym}_end\$" /proc/kallsyms | cut -d' ' -f1)
		check "$sym blacklisted up to ${sym}_end" grep -q "^0x$s-0x$e	$sym\$" $BL
	else
		skip "$sym blacklisted" "no ${sym}_end in this kernel"
	fi
done
# A probe inside the template (ftrace_regs_caller_jmp, an instruction of
# ftrace_regs_caller) is refused.
if a=$(grep " [tT] ftrace_regs_caller_jmp\$" /proc/kallsyms | cut -d' ' -f1) && [ -n "$a" ]; then
	dmesg -c > /dev/null
	insmod $MODDIR/rkp_sweep.ko ats=0x$a 2>/dev/null && rmmod rkp_sweep
	check "a probe inside ftrace_regs_caller refused" sh -c "dmesg | grep -q 'rkp_sweep: at 0x$a: -22'"
fi

# A suffixed copy (.cold, .part.N, .isra.N, .constprop.N) of a blacklisted
# function is refused too, as the kernel's within_kprobe_blacklist() does.
cut -f2 $BL | sort -u > /tmp/bl.names
grep -E ' [tT] [A-Za-z0-9_]+\.(cold|part\.[0-9]+|isra\.[0-9]+|constprop\.[0-9]+)$' /proc/kallsyms |
	while read -r a t name; do
		grep -qxF "${name%%.*}" /tmp/bl.names && echo "$a $name"
	done | head -n 8 > /tmp/bl.suffixed
if [ -s /tmp/bl.suffixed ]; then
	while read -r a name; do
		# The copy's own start may be in the list (NOKPROBE_SYMBOL on a
		# clone); its second byte is not, unless through its origin.
		at=$(printf '0x%x' $(( 0x$a + 1 )))
		dmesg -c > /dev/null
		insmod $MODDIR/rkp_sweep.ko ats=$at 2>/dev/null && rmmod rkp_sweep
		check "$name (a copy of a blacklisted function) refused" \
			sh -c "dmesg | grep -q 'rkp_sweep: at $at: -22'"
	done < /tmp/bl.suffixed
else
	skip "suffixed copies of blacklisted functions" "none in this kernel"
fi

# Every entry is refused: a probe at the first, middle and last byte of each
# range, 60 ranges per load of rkp_sweep.
# sweep_at LIST RESULTS: rkp_sweep tries a probe at each line of LIST (an
# address, or a range: its first, middle and last byte), 60 lines a load,
# and removes it; its answers ("0xADDR: ERRNO") go to RESULTS. Prints how
# many loads failed.
sweep_at() {
	rm -f "$1".part.*
	awk -v p="$1.part." '{ print > (p int((NR - 1) / 60)) }' "$1"
	dmesg -c > /dev/null
	fails=0
	for part in "$1".part.*; do
		insmod $MODDIR/rkp_sweep.ko ats=$(paste -sd, "$part") && rmmod rkp_sweep || fails=$((fails + 1))
	done
	dmesg | sed -n 's/.*rkp_sweep: at //p' > "$2"
	echo $fails
}

cut -f1 $BL > /tmp/bl.ranges
n=$(( $(wc -l < /tmp/bl.ranges) * 3 ))
expect_eq "rkp_sweep ran over every part" 0 "$(sweep_at /tmp/bl.ranges /tmp/bl.results)"
expect_eq "every address tried" "$n" "$(wc -l < /tmp/bl.results)"
grep -v ': -22$' /tmp/bl.results > /tmp/bl.bad
expect_eq "every blacklisted address refused with EINVAL ($n addresses)" 0 "$(wc -l < /tmp/bl.bad)"
head -5 /tmp/bl.bad | sed 's/^/# accepted or other error: /'
check "nothing left registered" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes

# The jump-label and static-call sites, which rkprobes indexes once instead
# of walking the kernel's tables for every probe (kernel_ext/sites.rs).
TS=/sys/kernel/debug/rkprobes/text_sites
check "insmod rkprobes.ko (text sites)" insmod $MODDIR/rkprobes.ko
sites=$(wc -l < $TS)
diag "text sites: $sites"
check "at least 1000 sites indexed ($sites)" test "$sites" -ge 1000
check "every line is 0xSTART-0xEND, in increasing order" \
	awk '$0 !~ /^0x[0-9a-f]{16}-0x[0-9a-f]{16}$/ || $0 <= prev { print "bad: " $0; bad = 1 } { prev = $0 } END { exit bad }' $TS
# The index against the kernel's jump_label_text_reserved() and
# static_call_text_reserved(), on every 4th site: before, first and last
# byte, after, and a range across it.
dmesg -c > /dev/null
check "check 4" sh -c "echo check 4 > $TS"
dmesg | grep 'text sites:' | sed 's/^/# /'
asked=$(dmesg | sed -n 's/.* \([0-9]*\) questions asked of the kernel (\([0-9]*\) reserved), \([0-9]*\) answers differ/\1 \2 \3/p')
set -- $asked
check "at least 1000 questions asked (${1:-0}), at least 500 answered reserved (${2:-0})" \
	test "${1:-0}" -ge 1000 -a "${2:-0}" -ge 500
expect_eq "the index answers as the kernel" 0 "${3:-x}"
# A module's sites: rkp_evtest has a static branch and a static call.
check "insmod rkp_evtest" insmod $MODDIR/rkp_evtest.ko
dmesg -c > /dev/null
check "check module rkp_evtest" sh -c "echo check module rkp_evtest > $TS"
dmesg | grep 'text sites of module' | sed 's/^/# /'
set -- $(dmesg | sed -n 's/.* \([0-9]*\) questions asked of the kernel (\([0-9]*\) reserved), \([0-9]*\) answers differ/\1 \2 \3/p')
check "every byte of rkp_evtest asked (${1:-0}), some reserved (${2:-0})" test "${1:-0}" -ge 1000 -a "${2:-0}" -ge 2
expect_eq "the module's sites are answered as the kernel" 0 "${3:-x}"
expect_fail "check module of no module fails" sh -c "echo check module rkp_nosuch > $TS"
check "rmmod rkp_evtest" rmmod rkp_evtest
expect_fail "check with a bad stride fails" sh -c "echo check x > $TS"
expect_fail "anything else fails" sh -c "echo chec > $TS"
# End to end: a probe on the first and on the last byte of every 25th site
# is refused with EINVAL.
rm -f /tmp/ts.at
awk 'NR % 25 == 1' $TS | while IFS=- read -r first end; do
	echo "$first"
	printf '0x%x\n' $((end - 1))
done > /tmp/ts.at
nat=$(wc -l < /tmp/ts.at)
expect_eq "rkp_sweep ran over every part ($nat addresses)" 0 "$(sweep_at /tmp/ts.at /tmp/ts.results)"
expect_eq "every address tried" "$nat" "$(wc -l < /tmp/ts.results)"
grep -v ': -22$' /tmp/ts.results > /tmp/ts.bad
expect_eq "a probe on a site's first or last byte is refused with EINVAL" 0 "$(wc -l < /tmp/ts.bad)"
head -5 /tmp/ts.bad | sed 's/^/# accepted or other error: /'
check "rmmod rkprobes (text sites)" rmmod rkprobes
