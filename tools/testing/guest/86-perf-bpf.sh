# SPDX-License-Identifier: GPL-2.0
# rkprobes' events under Debian's own perf, trace-cmd and bpftrace, run from the host's
# root (shared read-only over virtio-9p, guest-lib.sh's host_run): perf list,
# exact counts from perf stat, perf record/script records equal to the ftrace
# trace's, BPF programs attached as to a tracepoint, and removal refused
# (EBUSY) while perf or BPF holds an event. sysloop N PATH opens PATH N times
# and nothing else, so a probe on do_sys_openat2 hits exactly N times in it.

KE=/sys/kernel/debug/rkprobes/kprobe_events
T=/sys/kernel/tracing
EV=$T/events/rkprobes
NOFILE=/tmp/rkp-perf-nofile
N=100

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
# The chroot sees the guest's /tmp, not its /bin.
cp /bin/sysloop /tmp/sysloop
check "add an entry probe: register, memory and string arguments" \
	sh -c "echo 'p:popen do_sys_openat2 dfd=%di:s32 path=+0(%si):ustring flags=+0(%dx):x64' > $KE"
check "add a return probe with \$retval" \
	sh -c "echo 'r:popenr do_sys_openat2 ret=\$retval:s64' >> $KE"

# trace_body EVENT PID: the ftrace records of EVENT made by the task PID, from
# the closing parenthesis of the probe point on (the probe point is a symbol
# in ftrace and an address in perf script; the fields are the same). The task
# is matched by its pid, not its name: ftrace prints a name only if its
# saved_cmdlines cache caught the task at a context switch, and prints a
# short-lived task as <...>-PID when it did not.
trace_body() {
	grep ".-$2  *\[.* $1: " $T/trace | sed 's/^[^)]*) *//'
}

# perf_lists: whether perf list shows both events as tracepoints.
perf_lists() {
	host_run perf list tracepoint > /tmp/list.out 2>&1
	grep -q "^ *rkprobes:popen .*Tracepoint event" /tmp/list.out &&
		grep -q "^ *rkprobes:popenr .*Tracepoint event" /tmp/list.out
}

# hold.sh: a command for perf and bpftrace to run while the test looks
# (bpftrace's -c runs only an ELF file: it is given /bin/sh hold.sh).
printf '#!/bin/sh\ntouch /tmp/ready\nsleep 5\n' > /tmp/hold.sh
chmod +x /tmp/hold.sh

# removal_refused_while WHO CMD...: runs CMD, which holds popen and runs
# hold.sh, in the background; once hold.sh runs (the tool has attached),
# removing popen must fail with EBUSY and leave it as it was.
removal_refused_while() {
	who=$1
	shift
	rm -f /tmp/ready
	"$@" > /tmp/hold.out 2>&1 &
	pid=$!
	i=0
	while [ ! -e /tmp/ready ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	echo "-:popen" >> $KE 2> /tmp/rm.err
	expect_eq "removing an event $who holds fails with EBUSY" 1 \
		"$(grep -c 'resource busy' /tmp/rm.err)"
	check "and changes nothing" sh -c "grep -q '^p:rkprobes/popen ' $KE && test -d $EV/popen"
	# One write of three removals, the held event second: the write stops
	# there, as the kernel's does, so the first goes and the last stays.
	echo "p:pfirst do_sys_openat2" >> $KE
	echo "p:plast do_sys_openat2" >> $KE
	echo -e '-:pfirst\n-:popen\n-:plast' >> $KE 2> /tmp/rm.err
	expect_eq "a write removing it among others fails with EBUSY" 1 \
		"$(grep -c 'resource busy' /tmp/rm.err)"
	check "the removal before it was done" sh -c "! grep -q pfirst $KE && ! test -d $EV/pfirst"
	check "it and the removal after it were not" \
		sh -c "grep -q '^p:rkprobes/popen ' $KE && grep -q '^p:rkprobes/plast ' $KE && test -d $EV/plast"
	echo "-:plast" >> $KE
	wait $pid
}

if has_host_tool perf; then
	check "perf list shows the events" perf_lists

	# perf and ftrace on the same event at the same time.
	echo > $T/trace
	echo 1 > $EV/popen/enable
	host_run perf stat -x, -o /tmp/stat.out -e rkprobes:popen -- /tmp/sysloop $N $NOFILE
	echo 0 > $EV/popen/enable
	expect_eq "perf stat counts every hit of $N opens" $N \
		"$(sed -n 's/^\([0-9]*\),.*rkprobes:popen.*/\1/p' /tmp/stat.out)"
	expect_eq "ftrace, at the same time, recorded them all" $N \
		"$(grep -c " popen: .*path=\"$NOFILE\"" $T/trace)"

	# The same opens under perf record and under ftrace: same fields.
	echo > $T/trace
	echo 1 > $EV/popen/enable
	echo 1 > $EV/popenr/enable
	/tmp/sysloop 3 $NOFILE
	echo 0 > $EV/popen/enable
	echo 0 > $EV/popenr/enable
	check "perf record" host_run perf record -q -N -o /tmp/perf.data \
		-e rkprobes:popen -e rkprobes:popenr -- /tmp/sysloop 3 $NOFILE
	host_run perf script -i /tmp/perf.data -F event,trace > /tmp/script.out 2>/tmp/script.err
	sed 's/^/# perf script: /' /tmp/script.out | head -2
	# sysloop's pid, from its entry records (a background job would not do:
	# the shell's child opens /dev/null before it runs sysloop).
	loop=$(grep " popen: .*path=\"$NOFILE\"" $T/trace | sed -n 's/.*-\([0-9]*\)  *\[.*/\1/p' | sort -u)
	expect_eq "ftrace's popen records with the path come from one task" 1 "$(echo "$loop" | grep -c .)"
	for e in popen popenr; do
		ft=$(trace_body $e $loop | sort | uniq -c)
		pf=$(grep "rkprobes:$e:" /tmp/script.out | sed 's/^[^)]*) *//' | sort | uniq -c)
		diag "ftrace $e: $ft"
		[ -n "$ft" ] || grep -v '^#' $T/trace | head -8 | sed 's/^/# trace: /'
		expect_eq "perf script's $e records equal ftrace's (3 hits, same fields and values)" "$ft" "$pf"
	done
	check "the entry record has the path" grep -q "rkprobes:popen:.*path=\"$NOFILE\"" /tmp/script.out
	check "the return record has ret=-2 (ENOENT)" grep -q "rkprobes:popenr:.* ret=-2" /tmp/script.out

	# Removal while perf holds the event.
	removal_refused_while perf host_run perf stat -o /tmp/stat2.out -e rkprobes:popen -- /tmp/hold.sh

	# perf attaching and detaching while the event records into ftrace's
	# buffer and hits go on: each last detach frees perf's per-CPU list of
	# the event before it clears the pointer to it, and a hit must not read
	# it by then (the harness fails on any oops, BUG or KASAN report).
	echo > $T/trace
	check "churn: popen enabled in ftrace" sh -c "echo 1 > $EV/popen/enable"
	/tmp/sysloop 1000000 $NOFILE &
	loopid=$!
	runs=0
	for i in 1 2 3 4 5 6 7 8; do
		host_run perf stat -x, -o /tmp/churn.out -e rkprobes:popen -- sleep 0.2 && runs=$((runs + 1))
	done
	kill $loopid 2>/dev/null
	wait $loopid 2>/dev/null
	check "churn: popen disabled" sh -c "echo 0 > $EV/popen/enable"
	expect_eq "churn: 8 perf sessions came and went during the hits" 8 "$runs"
	check "churn: ftrace recorded the hits throughout" \
		grep -q " popen: .*path=\"$NOFILE\"" $T/trace
else
	skip "perf" "the host's root or its perf is not available"
fi

# trace-cmd, the front end most people use for ftrace: record and report
# the entry and return events of N opens, with the string and the return
# value the ftrace trace shows, then reset.
# The command trace-cmd runs waits until trace-cmd has enabled both events
# (trace-cmd starts it before that).
if [ "${TRACECMD:-1}" = 0 ]; then
	skip "trace-cmd" "TRACECMD=0 (make check; make check-all runs it)"
elif has_host_tool trace-cmd; then
	printf '#!/bin/sh\nE=/sys/kernel/tracing/events/rkprobes\ni=0\nwhile [ $i -lt 600 ] && ! { grep -qx 1 $E/popen/enable && grep -qx 1 $E/popenr/enable; }; do sleep 0.1; i=$((i + 1)); done\nexec /tmp/sysloop "$@"\n' > /tmp/tc-run.sh
	chmod +x /tmp/tc-run.sh
	host_run trace-cmd record -q -o /tmp/tc.dat -e rkprobes:popen -e rkprobes:popenr \
		/tmp/tc-run.sh $N $NOFILE > /tmp/tc.rec 2>&1
	host_run trace-cmd report -i /tmp/tc.dat > /tmp/tc.rep 2>&1
	grep -m 2 'sysloop-' /tmp/tc.rep | sed 's/^/# trace-cmd: /'
	expect_eq "trace-cmd record/report: every entry, with its string and registers" $N \
		"$(grep 'sysloop-.* popen: ' /tmp/tc.rep | grep -c "dfd=-100 path=\"$NOFILE\" flags=0x")"
	expect_eq "trace-cmd record/report: every return, with \$retval" $N \
		"$(grep -c 'sysloop-.* popenr: .*ret=-2$' /tmp/tc.rep)"
	check "trace-cmd reset" host_run trace-cmd reset
	check "after reset the events are disabled" sh -c "grep -qx 0 $EV/popen/enable && grep -qx 0 $EV/popenr/enable"
else
	skip "trace-cmd" "the host's root or its trace-cmd is not available"
fi

if has_host_tool bpftrace; then
	# bpftrace is given the type names of the events' fields (u64, s32,
	# ...) in a header, which it needs where neither the kernel's headers
	# nor its BTF name them: the kernel's own kprobe events have the same.
	cat > /tmp/ktypes.h <<-EOT
	typedef unsigned char u8; typedef signed char s8;
	typedef unsigned short u16; typedef short s16;
	typedef unsigned int u32; typedef int s32;
	typedef unsigned long long u64; typedef long long s64;
	EOT
	# One bpftrace session (each compiles its program, tens of seconds
	# under TCG): three programs, two of them on one event, count the hits
	# of sysloop's N opens, then hold the event while its removal is tried.
	printf '#!/bin/sh\n/tmp/sysloop %s %s\ntouch /tmp/ready\nsleep 5\n' $N $NOFILE > /tmp/bt.sh
	chmod +x /tmp/bt.sh
	removal_refused_while BPF host_run bpftrace --include /tmp/ktypes.h -e '
		tracepoint:rkprobes:popen { @c[comm] = count(); }
		tracepoint:rkprobes:popen /comm == "sysloop"/ { @p[str(args->path), args->dfd] = count(); }
		tracepoint:rkprobes:popenr /comm == "sysloop"/ { @r[args->ret] = count(); }' \
		-c "/bin/sh /tmp/bt.sh"
	sed 's/^/# bpftrace: /' /tmp/hold.out | grep -v '^# bpftrace: $' | tail -n 6
	check "bpftrace counts the hits by comm" grep -q "^@c\[sysloop\]: $N\$" /tmp/hold.out
	check "bpftrace reads the string and register fields" \
		grep -q "^@p\[$NOFILE, -100\]: $N\$" /tmp/hold.out
	check "bpftrace on the return probe reads \$retval" grep -q "^@r\[-2\]: $N\$" /tmp/hold.out
else
	skip "bpftrace" "the host's root or its bpftrace is not available"
fi

# A BPF program that reads nothing of the record runs without one, on a
# context rkprobes provides; its tail call into a program that reads far
# past the event's fields (allowed: a tail-call target is verified against
# the largest tracepoint context, PERF_MAX_TRACE_SIZE) must read zeroes,
# not the probe hit's stack (bpf-tail, raw bpf(2), no host tools).
out=$(bpf-tail "$(cat $EV/popen/id)" $NOFILE 20 2>&1)
diag "bpf-tail: $out"
expect_eq "a tail-called program reads zeroes past the event's fields" "ran=1 word=0x0" "$out"

# A program detached while its event's smaller program array cannot be
# allocated: the kernel leaves its dummy program (no aux) in the array in
# its place, and the hits that follow must cope. Every allocation of the
# detach is failed in turn (fail-nth) until one detach injects nothing.
FS=/sys/kernel/debug/failslab
if [ -e /proc/self/fail-nth ] && [ -d $FS ]; then
	gfp_wait=$(cat $FS/ignore-gfp-wait)
	echo N > $FS/ignore-gfp-wait
	n=1 injected=0 done=0
	while [ $n -le 50 ]; do
		out=$(bpf-tail "$(cat $EV/popen/id)" $NOFILE 5 -d $n 2>&1)
		case $out in
		"detached injected=1") injected=$((injected + 1)) ;;
		"detached injected=0") done=1; break ;;
		*) diag "N=$n: $out"; break ;;
		esac
		n=$((n + 1))
	done
	echo "$gfp_wait" > $FS/ignore-gfp-wait
	diag "detach with its N-th allocation failed: $injected runs injected, done at N=$n"
	check "detaching under every allocation failure, hits after each ($injected)" \
		test $done = 1 -a $injected -ge 1
else
	skip "detaching under allocation failures" "kernel without fail-nth and failslab"
fi

# rkprobes cannot go while an event exists (each pins it), so the refused
# removals above also kept it loaded.
check "after the tools exit, the events can be removed" sh -c "echo > $KE"
check "rkprobes unloads" rmmod rkprobes
