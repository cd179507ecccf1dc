# SPDX-License-Identifier: GPL-2.0
# /sys/kernel/debug/rkprobes/kprobe_events: the cases of the kernel's ftrace
# selftests for kprobe events (tools/testing/selftests/ftrace/test.d/kprobe/
# in the 6.12 source) on rkprobes' control files, with events in the
# default group "rkprobes"; every negative check is a result of its own.

KE=/sys/kernel/debug/rkprobes/kprobe_events
EL=/sys/kernel/debug/rkprobes/error_log
PROF=/sys/kernel/debug/rkprobes/kprobe_profile
T=/sys/kernel/tracing
EV=$T/events/rkprobes
[ -e $T/trace ] || mount -t tracefs nodev $T
FORK=kernel_clone

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "control files exist" test -f $KE -a -f $EL -a -f $PROF
echo > $T/trace

# add_and_remove.tc
check "add_and_remove: add" sh -c "echo 'p:myevent $FORK' > $KE"
check "add_and_remove: listed" grep -q myevent $KE
check "add_and_remove: tracefs directory" test -d $EV/myevent
for f in enable filter format id trigger; do
	check "add_and_remove: events/rkprobes/myevent/$f" test -e $EV/myevent/$f
done
check "add_and_remove: truncate" sh -c "echo > $KE"
check "add_and_remove: gone" sh -c "! grep -q myevent $KE && ! test -d $EV/myevent"

# busy_check.tc
check "busy_check: add" sh -c "echo 'p:myevent $FORK' > $KE"
check "busy_check: enable" sh -c "echo 1 > $EV/myevent/enable"
expect_fail "busy_check: truncating while enabled" sh -c "echo > $KE"
expect_fail "busy_check: deleting while enabled" sh -c "echo '-:myevent' >> $KE"
check "busy_check: still there" grep -q myevent $KE
expect_fail "busy_check: rkprobes cannot go while an event exists" rmmod rkprobes
check "busy_check: disable" sh -c "echo 0 > $EV/myevent/enable"
check "busy_check: delete" sh -c "echo '-:myevent' >> $KE"

# kprobe_args.tc, kprobe_args_comm.tc, kprobe_args_type.tc: fetched values
# show up in the trace in the kernel's format.
check "args: add" sh -c "echo 'p:testprobe $FORK \$stack \$stack0 +0(\$stack) comm=\$comm a=%di:x64 s=%di:s8' > $KE"
check "args: listed as written" grep -q 'comm=\$comm' $KE
check "args: enable" sh -c "echo 1 > $EV/testprobe/enable"
( echo forked ) > /dev/null
check "args: disable" sh -c "echo 0 > $EV/testprobe/enable"
grep testprobe $T/trace | tail -1 | sed 's/^/# /'
check "args: a record with the probe point" grep -q 'testprobe: (kernel_clone+0x' $T/trace
check "args: comm as a string" grep -q 'testprobe: .* comm="[^"]*"' $T/trace
check "args: x64 in hex" grep -qE 'testprobe: .* a=0x[0-9a-f]+' $T/trace
check "args: s8 in decimal" grep -qE 'testprobe: .* s=-?[0-9]+' $T/trace
check "args: format has the fields" sh -c "grep -q 'field:__data_loc char\[\] comm' $EV/testprobe/format && grep -q 'field:u64 a;' $EV/testprobe/format && grep -q 'field:s8 s;' $EV/testprobe/format"

# kprobe_args_user.tc-like: a user string through ustring.
echo > $T/trace
check "ustring: add" sh -c "echo 'p:myopen do_sys_openat2 path=+0(%si):ustring' > $KE"
check "ustring: enable" sh -c "echo 1 > $EV/myopen/enable"
cat /proc/version > /dev/null
check "ustring: disable" sh -c "echo 0 > $EV/myopen/enable"
check "ustring: the path opened" grep -q 'myopen: .* path="/proc/version"' $T/trace

# Filters work on the event's fields.
echo > $T/trace
check "filter: add" sh -c "echo 'p:myopen do_sys_openat2 dfd=%di:s32 path=+0(%si):ustring' > $KE"
check "filter: set" sh -c "echo 'path ~ \"*version\"' > $EV/myopen/filter"
check "filter: enable" sh -c "echo 1 > $EV/myopen/enable"
cat /proc/version > /dev/null
cat /proc/cmdline > /dev/null
check "filter: disable" sh -c "echo 0 > $EV/myopen/enable"
check "filter: the matching open was traced" grep -q 'path="/proc/version"' $T/trace
check "filter: the other was not" sh -c "! grep -q 'path=\"/proc/cmdline\"' $T/trace"
check "filter: reset" sh -c "echo 0 > $EV/myopen/filter"

# Triggers work on the event: traceoff, and a histogram keyed on a field.
check "triggers: add" sh -c "echo 'p:myopen do_sys_openat2 dfd=%di:s32 path=+0(%si):ustring' > $KE"
check "traceoff: set" sh -c "echo traceoff > $EV/myopen/trigger"
echo 1 > $T/tracing_on
check "traceoff: enable" sh -c "echo 1 > $EV/myopen/enable"
cat /proc/version > /dev/null
check "traceoff: disable" sh -c "echo 0 > $EV/myopen/enable"
expect_eq "traceoff: the event turned tracing off" 0 "$(cat $T/tracing_on)"
check "traceoff: clear" sh -c "echo '!traceoff' > $EV/myopen/trigger"
echo 1 > $T/tracing_on
if [ -e $EV/myopen/hist ]; then
	check "hist: set" sh -c "echo 'hist:keys=dfd:vals=hitcount' > $EV/myopen/trigger"
	check "hist: enable" sh -c "echo 1 > $EV/myopen/enable"
	cat /proc/version /proc/cmdline > /dev/null
	check "hist: disable" sh -c "echo 0 > $EV/myopen/enable"
	grep -v '^#' $EV/myopen/hist | grep . | head -4 | sed 's/^/# /'
	# The hist code prints keys as u64: -100 (AT_FDCWD) sign-extended.
	check "hist: a bucket for dfd -100 (AT_FDCWD)" grep -qE 'dfd: *18446744073709551516 } hitcount: *[1-9]' $EV/myopen/hist
	check "hist: clear" sh -c "echo '!hist:keys=dfd:vals=hitcount' > $EV/myopen/trigger"
else
	skip "hist triggers" "kernel without CONFIG_HIST_TRIGGERS"
fi
check "triggers: remove the event" sh -c "echo '-:myopen' >> $KE"

# One write of removals, the second taking one probe of a two-probe event:
# the removals of one write are done together, and a partial one only after
# those before it.
check "removals in a batch: add" sh -c "printf 'p:bA vfs_read\np:bB vfs_write\np:bB vfs_open\n' >> $KE"
check "removals in a batch: '-:bA' then '-:bB vfs_open'" sh -c "printf -- '-:bA\n-:bB vfs_open\n' >> $KE"
check "removals in a batch: bA went, bB has vfs_write alone" \
	sh -c "! grep -q ':rkprobes/bA ' $KE && [ \"\$(grep '^p:rkprobes/bB ' $KE)\" = 'p:rkprobes/bB vfs_write' ]"
check "removals in a batch: bB goes" sh -c "echo '-:bB' >> $KE"
check "removals in a batch: gone" sh -c "! grep -q ':rkprobes/b[AB] ' $KE && ! test -d $EV/bA && ! test -d $EV/bB"

# kretprobe_args.tc, kretprobe_return_suffix.tc.
echo > $T/trace
check "kretprobe: add" sh -c "echo 'r:myret do_sys_openat2 ret=\$retval:s32' > $KE"
check "kretprobe: %return form" sh -c "echo 'p:myret2 do_sys_openat2%return ret=\$retval' >> $KE"
check "kretprobe: listed as r" grep -q '^r[0-9]*:rkprobes/myret2 do_sys_openat2' $KE
check "kretprobe: enable" sh -c "echo 1 > $EV/myret/enable"
cat /proc/version > /dev/null
check "kretprobe: disable" sh -c "echo 0 > $EV/myret/enable"
grep myret $T/trace | tail -1 | sed 's/^/# /'
check "kretprobe: (retsite <- func) and the return value" grep -qE 'myret: \(.* <- do_sys_openat2\) ret=[0-9]+' $T/trace

# kprobe_multiprobe.tc
check "multiprobe: clear" sh -c "echo > $KE"
check "multiprobe: first probe" sh -c "echo 'p:rkprobes/testevent $FORK' >> $KE"
check "multiprobe: second probe, same event" sh -c "echo 'p:rkprobes/testevent do_exit' >> $KE"
expect_eq "multiprobe: two probes listed" 2 "$(grep -c testevent $KE)"
check "multiprobe: one event" test -d $EV/testevent
expect_fail "multiprobe: a kretprobe cannot join it" sh -c "echo 'r:rkprobes/testevent do_sys_openat2' >> $KE"
check "multiprobe: delete one probe" sh -c "echo '-:rkprobes/testevent do_exit' >> $KE"
expect_eq "multiprobe: one probe left" 1 "$(grep -c testevent $KE)"
check "multiprobe: the event stays" test -d $EV/testevent
check "multiprobe: the one left is kernel_clone" grep -q "testevent $FORK" $KE

# kprobe_syntax_errors.tc (a sample; the host tests have them all): the
# error and the caret in error_log.
check "errors: clear" sh -c "echo > $KE"
expect_fail "errors: bad register" sh -c "echo 'p:myevent $FORK a=%none' >> $KE"
check "errors: logged" grep -q 'trace_kprobe: error: Invalid register name' $EL
check "errors: the command" grep -q "  Command: p:myevent $FORK a=%none" $EL
expect_fail "errors: no such symbol" sh -c "echo 'p:myevent rkp_no_such_function' >> $KE"
check "errors: logged" grep -q 'trace_kprobe: error: Invalid probed address or symbol' $EL
expect_fail "errors: bad maxactive" sh -c "echo 'r5000 $FORK' >> $KE"
check "errors: nothing was created" sh -c "[ -z \"\$(cat $KE)\" ]"
# Opening error_log with O_TRUNC empties it, and writes are ignored, as
# with the kernel's tracing/error_log (ftracetest clears it this way).
check "errors: the log has entries" grep -q . $EL
check "errors: echo > error_log" sh -c "echo > $EL"
check "errors: the log is empty" sh -c "! grep -q . $EL"
check "errors: a write without O_TRUNC is ignored" sh -c "echo x >> $EL && ! grep -q . $EL"
if [ -w $T/kprobe_events ]; then
	echo 'p:rkp_el_native rkp_no_such_function' >> $T/kprobe_events 2>/dev/null
	check "errors: the kernel's log has entries" grep -q . $T/error_log
	check "errors: the kernel's log clears the same way" sh -c "echo > $T/error_log && ! grep -q . $T/error_log"
fi

# kprobe_non_uniq_symbol.tc: a symbol several functions have is refused.
dup=$(awk '$2 ~ /^[tT]$/ && $4 == "" { print $3 }' /proc/kallsyms | sort | uniq -d | grep -v '\.' | head -n1)
if [ -n "$dup" ]; then
	expect_fail "non-unique: $dup refused" sh -c "echo 'p:test $dup' >> $KE"
	check "non-unique: logged" grep -q 'trace_kprobe: error: The symbol is not unique' $EL
else
	skip "non-unique symbol" "no duplicate text symbol in this kernel"
fi

# kprobe_module.tc: a probe on a module that is not loaded yet waits for it,
# fires once it is loaded, survives its unloading ([GONE]) and is registered
# again when it comes back. lkdtm's debugfs read is harmless to call.
check "module: lkdtm not loaded" sh -c "! grep -q '^lkdtm ' /proc/modules"
check "module: add a probe on lkdtm:lkdtm_debugfs_read" \
	sh -c "echo 'p:rkprobes/modev lkdtm:lkdtm_debugfs_read' >> $KE"
check "module: listed" grep -q 'modev lkdtm:lkdtm_debugfs_read' $KE
check "module: insmod lkdtm" insmod $MODDIR/lkdtm.ko
check "module: enable" sh -c "echo 1 > $EV/modev/enable"
cat /sys/kernel/debug/provoke-crash/DIRECT > /dev/null
check "module: fired" grep -q 'modev: (lkdtm_debugfs_read+0x' $T/trace
check "module: disable" sh -c "echo 0 > $EV/modev/enable"
check "module: rmmod lkdtm" rmmod lkdtm
check "module: insmod lkdtm again" insmod $MODDIR/lkdtm.ko
echo > $T/trace
check "module: enable again" sh -c "echo 1 > $EV/modev/enable"
cat /sys/kernel/debug/provoke-crash/DIRECT > /dev/null
check "module: fires in the new load" grep -q 'modev: (lkdtm_debugfs_read+0x' $T/trace
check "module: disable again" sh -c "echo 0 > $EV/modev/enable"
check "module: delete" sh -c "echo '-:modev' >> $KE"
check "module: rmmod lkdtm" rmmod lkdtm

# @SYM takes any symbol at an address, as the kernel's: _sdata shares its
# address with the first object of .data, which sprint_symbol() names
# (kprobe_args_symbol.tc's argument).
if grep -q ' _sdata$' /proc/kallsyms; then
	check "@_sdata: accepted" sh -c "echo 'p:rkprobes/sdata vfs_read v=@_sdata' >> $KE"
	check "@_sdata: listed" grep -q 'sdata vfs_read v=@_sdata' $KE
	if [ -w $T/kprobe_events ]; then
		check "@_sdata: the kernel's accepts it too" \
			sh -c "echo 'p:kernel_sdata vfs_read v=@_sdata' >> $T/kprobe_events && echo '-:kernel_sdata' >> $T/kprobe_events"
	fi
	check "@_sdata: delete" sh -c "echo '-:rkprobes/sdata' >> $KE"
fi

# A module that comes while its events are being enabled: the coming
# module's probes are registered and armed under event_mutex, as in the
# kernel, so once it is loaded every probe of an enabled event is armed.
# 30 events on lkdtm make its coming long; the group is enabled once, at
# a point of the load that varies by round. An enable between reading an
# event's state and arming its probe was lost (issue 27, defect 6): that
# event's probe stayed disabled.
check "module race: insmod lkdtm" insmod $MODDIR/lkdtm.ko
funcs=$(awk '$4 == "[lkdtm]" && $2 ~ /^[tT]$/ && $3 !~ /^__pfx_|init|exit|\./ { print $3 }' /proc/kallsyms | head -n 30)
check "module race: rmmod lkdtm" rmmod lkdtm
n=0
for f in $funcs; do
	echo "p:rkprace/r$n lkdtm:$f" >> $KE && n=$((n + 1))
done
expect_eq "module race: 30 events wait for lkdtm" 30 "$n"
lost=0
rounds=${MODRACE_ROUNDS:-20}
for i in $(seq 1 $rounds); do
	echo 0 > $T/events/rkprace/enable
	insmod $MODDIR/lkdtm.ko &
	sleep "$(awk -v s=$i 'BEGIN { srand(s); printf "0.%03d", int(rand() * 400) }')"
	echo 1 > $T/events/rkprace/enable
	wait
	lost=$((lost + $(grep 'lkdtm' /sys/kernel/debug/rkprobes/list | grep -c DISABLED)))
	rmmod lkdtm
done
expect_eq "module race: every probe of the enabled events armed after $rounds loads" 0 "$lost"
echo 0 > $T/events/rkprace/enable
for j in $(seq 0 $((n - 1))); do echo "-:rkprace/r$j" >> $KE; done
check "module race: deleted" sh -c "! grep -q rkprace $KE"

# A name another event has is taken, as in the kernel.
if [ -d $T/events/sched/sched_switch ]; then
	expect_fail "names: sched/sched_switch is taken" sh -c "echo 'p:sched/sched_switch $FORK' >> $KE"
	check "names: the kernel's event is untouched" grep -q '^name: sched_switch' $T/events/sched/sched_switch/format
fi
check "names: no event left behind" sh -c "[ -z \"\$(cat $KE)\" ]"

# profile.tc
check "profile: add" sh -c "echo 'p:myevent $FORK' > $KE"
check "profile: enable" sh -c "echo 1 > $EV/myevent/enable"
( echo forked ) > /dev/null
check "profile: disable" sh -c "echo 0 > $EV/myevent/enable"
check "profile: hits counted" sh -c "grep myevent $PROF | awk '{ exit !(\$2 > 0) }'"

# Enabled on a function every CPU calls while other events come and go.
check "concurrent: add" sh -c "echo 'p:busy vfs_read' > $KE"
check "concurrent: enable" sh -c "echo 1 > $EV/busy/enable"
taskset 2 sh -c 'while :; do dd if=/proc/version of=/dev/null 2>/dev/null; done' &
h1=$!
fails=0
for i in $(seq 1 20); do
	echo "p:tmp$i vfs_write" >> $KE || fails=$((fails + 1))
	echo 1 > $EV/tmp$i/enable || fails=$((fails + 1))
	echo 0 > $EV/tmp$i/enable || fails=$((fails + 1))
	echo "-:tmp$i" >> $KE || fails=$((fails + 1))
done
kill $h1; wait $h1 2>/dev/null
expect_eq "concurrent: 20 events added, enabled and removed while busy fires" 0 "$fails"
check "concurrent: disable" sh -c "echo 0 > $EV/busy/enable"
check "concurrent: busy recorded" grep -q 'busy: (vfs_read+0x' $T/trace

# A fuzz run of 10,000 writes, each a write(2) of its own: a third
# commands generated from the grammar, a third those commands mutated
# (bytes inserted, deleted, replaced, raw bytes among them), a third raw
# bytes (newlines included, so that one write can hold several commands).
# awk writes to the control file as its standard output and flushes after
# each command; a failed write is dropped (awk cannot open the file itself:
# glibc's append mode seeks to the end, which a seq_file refuses). None may
# crash the kernel, and afterwards the event list must be consistent with
# tracefs and the file must clear.
fuzz_start=$(cut -d' ' -f1 /proc/uptime)
awk -v seed=$$ 'BEGIN {
	srand(seed)
	nsym = split("kernel_clone vfs_read vfs_write do_sys_openat2 do_exit dput vfs_read+4 kernel_clone+1 lkdtm:lkdtm_debugfs_read notloaded:fn 0xffffffff81000000 rkp_no_such_function", sym, " ")
	nreg = split("ax bx cx dx si di bp sp ip flags r8 r15 cs orig_ax none", reg, " ")
	ntype = split("u8 u16 u32 u64 s8 s16 s32 s64 x8 x16 x32 x64 char string ustring symbol symstr b3@2/8 b1@63/64 u8[4] string[2] %pd %pD bad", type, " ")
	nname = split("f1 f2 f3 a_b x9 e", name, " ")
	ngrp = split("fz fz-2 rkprobes", grp, " ")
	alpha = "pr:-/+%$()@=\\\"{}[]0123456789abcdefxuyz_.,;# \t"
	for (i = 0; i < 10000; i++) {
		k = i % 3
		if (k == 2) {
			c = ""
			n = 1 + int(rand() * 120)
			for (j = 0; j < n; j++)
				c = c sprintf("%c", 1 + int(rand() * 255))
			printf "%s", c
		} else {
			c = command()
			if (k == 1)
				c = mutate(c)
			printf "%s\n", c
		}
		fflush()
	}
}
function pick(arr, n) { return arr[1 + int(rand() * n)] }
function fetch(ret,    f, d) {
	r = rand()
	if (r < 0.3) f = "%" pick(reg, nreg)
	else if (r < 0.4) f = "$stack" int(rand() * 10)
	else if (r < 0.5) f = "$comm"
	else if (r < 0.6) f = "$arg" int(rand() * 8)
	else if (r < 0.65 && ret) f = "$retval"
	else if (r < 0.7) f = "@jiffies"
	else if (r < 0.75) f = "\\" int(rand() * 1000)
	else if (r < 0.8) f = "\\\"imm\""
	else f = "%" pick(reg, nreg)
	for (d = int(rand() * 3); d > 0; d--)
		f = (rand() < 0.8 ? "+" : "-") (rand() < 0.2 ? "u" : "") int(rand() * 64) "(" f ")"
	return f
}
function command(    c, ret, n, a) {
	if (rand() < 0.12) {
		c = "-:"
		if (rand() < 0.5) c = c pick(grp, ngrp) "/"
		if (rand() < 0.8) c = c pick(name, nname)
		return c
	}
	ret = rand() < 0.35
	c = ret ? "r" : "p"
	if (ret && rand() < 0.2) c = c int(rand() * 100)
	if (rand() < 0.8) {
		c = c ":"
		if (rand() < 0.5) c = c pick(grp, ngrp) "/"
		c = c pick(name, nname)
	}
	c = c " " pick(sym, nsym)
	if (!ret && rand() < 0.1) { c = c "%return"; ret = 1 }
	n = int(rand() * 5)
	for (a = 1; a <= n; a++) {
		c = c " "
		if (rand() < 0.5) c = c "v" a "="
		c = c fetch(ret)
		if (rand() < 0.6) c = c ":" pick(type, ntype)
	}
	return c
}
function mutate(c,    m, k, pos, ch) {
	m = 1 + int(rand() * 4)
	for (k = 0; k < m; k++) {
		pos = int(rand() * (length(c) + 1))
		if (rand() < 0.8) ch = substr(alpha, 1 + int(rand() * length(alpha)), 1)
		else ch = sprintf("%c", 1 + int(rand() * 255))
		r = rand()
		if (r < 0.4) c = substr(c, 1, pos) ch substr(c, pos + 1)
		else if (r < 0.7) c = substr(c, 1, pos) substr(c, pos + 2)
		else c = substr(c, 1, pos) ch substr(c, pos + 2)
	}
	return c
}' >> $KE 2>/dev/null
# And writes with NUL bytes, which the kernel refuses whole.
for i in 1 2 3 4 5; do
	printf 'p:nul%d kernel_clone\0 a=%%ax\n' $i >> $KE 2>/dev/null
done
fuzz_end=$(cut -d' ' -f1 /proc/uptime)
diag "fuzz: 10005 writes in $(awk "BEGIN { print $fuzz_end - $fuzz_start }") s, $(grep -c . $KE) probes left"
check "fuzz: no event from a write with a NUL" sh -c "! grep -q ':rkprobes/nul' $KE"
check "fuzz: every listed event has its tracefs directory" sh -c '
	sed -n "s/^[pr][0-9]*:\([^ ]*\) .*/\1/p" '$KE' | sort -u | while read -r ge; do
		test -d '$T'/events/$ge || { echo "missing $ge"; exit 1; }
	done'
check "fuzz: clear" sh -c "echo > $KE"
check "fuzz: empty" sh -c "[ -z \"\$(cat $KE)\" ]"
check "rmmod rkprobes" rmmod rkprobes
