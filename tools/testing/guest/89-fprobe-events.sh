# SPDX-License-Identifier: GPL-2.0
# f (fprobe) and t (tracepoint) events on rkprobes' dynamic_events.
# On a kernel with fprobe events: definitions generated from its BTF
# (btf-args.py in its `dyn` mode) written to the kernel's dynamic_events
# and to rkprobes', which must give the same errno, error_log, listing,
# format and recorded values. On every kernel: records of f entries and
# exits and of a t event against values the workload sets; a wildcard
# that matches at least 5,000 functions attached (each function once, as
# ftrace lists them), fired and removed with nothing left in ftrace; and
# 2,000 processes asleep at once inside a function with an f exit probe,
# every return recorded.

DE=/sys/kernel/debug/rkprobes/dynamic_events
KE=/sys/kernel/debug/rkprobes/kprobe_events
EL=/sys/kernel/debug/rkprobes/error_log
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
G=$T/events/rkfprobes
TG=$T/events/rktracepoints

kernel_fprobes=
[ -e $T/dynamic_events ] && grep -qF 'f[:[<group>/][<event>]] <func-name>' $T/README && kernel_fprobes=1

# --- the kernel's dynamic_events beside rkprobes' --------------------------
if [ -n "$kernel_fprobes" ] && [ -e /sys/kernel/btf/vmlinux ] && has_host_tool python3; then
	cp /guest/btf-args.py /bin/readloop /tmp/
	seed=${RKP_FPROBE_SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}
	host_run python3 /tmp/btf-args.py "$seed" 300 dyn > /tmp/fprobe-args.out 2>&1
	rc=$?
	grep -v '^SUMMARY' /tmp/fprobe-args.out | head -n 200 | sed 's/^/# /'
	summary=$(grep '^SUMMARY' /tmp/fprobe-args.out)
	diag "$summary"
	val() { echo "$summary" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	expect_eq "btf-args.py dyn ran to its end" 0 "$rc"
	check "at least 300 f and t definitions tried on both files" test "$(val tried)" -ge 300
	check "both accepted some and refused some" test "$(val accepted)" -gt 50 -a "$(val refused)" -gt 50
	expect_eq "every definition: the same errno, error_log, listing and format" "$(val tried)" "$(val agreed)"
	check "values of at least 30 events compared" test "$(val value_events)" -ge 30
	expect_eq "no mismatch (seed $seed)" 0 "$(val mismatches)"
fi

# --- records against known values ------------------------------------------
echo 0123456789 > /tmp/fp-data.txt
echo > $T/trace
check "f entry with a typed argument" sh -c "echo 'f:fe vfs_read count' > $DE"
check "f exit with \$retval and an entry argument" sh -c "echo 'f:fx vfs_read%return \$retval count' >> $DE"
check "t on a tracepoint" sh -c "echo 't:tp sched_process_exec' >> $DE"
check "listed in dynamic_events" sh -c "grep -qx 'f:rkfprobes/fe vfs_read count=count' $DE && grep -qx 'f:rkfprobes/fx vfs_read%return arg1=\$retval count=count' $DE && grep -qx 't:rktracepoints/tp sched_process_exec' $DE"
check "not in kprobe_events" test -z "$(cat $KE)"
expect_fail "kprobe_events does not take f" sh -c "echo 'f vfs_write' >> $KE"
check "enable" sh -c "echo 1 > $G/enable && echo 1 > $TG/enable"
dd if=/tmp/fp-data.txt of=/dev/null bs=7 count=1 2>/dev/null
/bin/sleepers 1 1 > /dev/null
check "disable" sh -c "echo 0 > $G/enable && echo 0 > $TG/enable"
grep -E ' (fe|fx|tp): ' $T/trace | grep 'dd\|sleepers' | head -n 3 | sed 's/^/# /'
check "entry: at vfs_read's ftrace site, count" grep -qE 'dd-[0-9]+ .* fe: \(vfs_read\+0x[0-9a-f]+/0x[0-9a-f]+\) count=7$' $T/trace
check "exit: bytes read and the entry's count" grep -qE 'dd-[0-9]+ .* fx: \([^ ]+ <- vfs_read\) arg1=7 count=7$' $T/trace
check "tracepoint: the exec of sleepers" grep -qE 'sleepers-[0-9]+ .* tp: \(__probestub_sched_process_exec\+0x[0-9a-f]+/0x[0-9a-f]+\)' $T/trace
check "the entry went through ftrace (no trap)" grep -qE ' k +vfs_read\+0x[0-9a-f]+ .*\[FTRACE\]' /sys/kernel/debug/rkprobes/list
expect_fail "no such function" sh -c "echo 'f nosuch_function_xyz' >> $DE"
check "its error_log entry" sh -c "grep -q 'trace_fprobe: error: Failed to register probe event' $EL"
# A tracepoint nothing has may be a module's, not loaded yet: taken, as
# 6.12 takes it.
check "a tracepoint no one has yet is taken" sh -c "echo 't:tw nosuch_tracepoint_xyz' >> $DE && grep -qx 't:rktracepoints/tw nosuch_tracepoint_xyz' $DE"
check "and enabled, waiting" sh -c "echo 1 > $TG/tw/enable && echo 0 > $TG/tw/enable && echo '-:tw' >> $DE"
expect_fail "a negated filter is refused" sh -c "echo 'f:neg !vfs_read' >> $DE"
check "-: of one event" sh -c "echo '-:rktracepoints/tp' >> $DE && ! grep -q ' sched_process_exec' $DE"
# A glob as the event name (rkprobes': the kernel's names never match one).
check "-: of a glob of events" sh -c "echo 'f:fy vfs_write' >> $DE && echo '-:rkfprobes/f[ex]' >> $DE && grep -q '/fy ' $DE && ! grep -q '/f[ex] ' $DE"
check "-: of a group's events" sh -c "echo '-:rkfprobes/*' >> $DE && test -z \"\$(cat $DE)\""

# A module's tracepoint (rkp_tptest: writing N to its fire parameter
# calls rkp_tptest_fire(N, 2N)), typed from the module's BTF where there is
# one. As in 6.12, the event does not hold the module: it unloads, and the
# probe waits for its next load, when it is registered (and armed if the
# event is enabled); so is an event defined before the module ever loads.
fire_seen() { # N: the event recorded rkp_tptest_fire(N, 2N)
	grep -qE " mt: \(__probestub_rkp_tptest_fire\+0x[0-9a-f]+/0x[0-9a-f]+ \[rkp_tptest\]\) [a-z0-9_]+=($1|$(printf 0x%x $1)) [a-z0-9_]+=($(($1 * 2))|$(printf 0x%x $(($1 * 2))))\$" $T/trace
}
echo > $T/trace
check "insmod rkp_tptest.ko" insmod $MODDIR/rkp_tptest.ko
check "t on a loaded module's tracepoint" sh -c "echo 't:mt rkp_tptest_fire \$arg1 \$arg2' >> $DE"
check "enable" sh -c "echo 1 > $TG/mt/enable"
echo 21 > /sys/module/rkp_tptest/parameters/fire
grep ' mt: ' $T/trace | sed 's/^/# /'
check "its arguments recorded" fire_seen 21
check "the module unloads while the event exists" rmmod rkp_tptest
check "the event stays" grep -q '^t:rktracepoints/mt rkp_tptest_fire' $DE
check "nothing of rkprobes left on the stub's site" sh -c "! grep -q rkp_tptest /sys/kernel/debug/rkprobes/list"
check "insmod rkp_tptest.ko again" insmod $MODDIR/rkp_tptest.ko
echo 22 > /sys/module/rkp_tptest/parameters/fire
check "the enabled event records the new load's hits" fire_seen 22
check "disable" sh -c "echo 0 > $TG/mt/enable"
echo 23 > /sys/module/rkp_tptest/parameters/fire
expect_fail "nothing recorded while disabled" fire_seen 23
check "-: of the event" sh -c "echo '-:mt' >> $DE"
check "rmmod rkp_tptest" rmmod rkp_tptest
echo > $T/trace
check "t on the tracepoint of a module not loaded" sh -c "echo 't:mt rkp_tptest_fire \$arg1 \$arg2' >> $DE"
check "enabled before the module loads" sh -c "echo 1 > $TG/mt/enable"
check "insmod rkp_tptest.ko after the event" insmod $MODDIR/rkp_tptest.ko
echo 24 > /sys/module/rkp_tptest/parameters/fire
grep ' mt: ' $T/trace | sed 's/^/# /'
check "registered and armed when the module came" fire_seen 24
check "disable, -: and rmmod" sh -c "echo 0 > $TG/mt/enable && echo '-:mt' >> $DE && rmmod rkp_tptest"

# perf and bpftrace on an f event, as on a kprobe event (make check leaves
# this to make check-all: FPROBE_TOOLS=0).
NOFILE=/tmp/fp-nofile
N=300
if [ "${FPROBE_TOOLS:-1}" != 0 ] && has_host_tool perf; then
	cp /bin/sysloop /tmp/sysloop
	check "f event for perf" sh -c "echo 'f:fo do_sys_openat2 dfd' >> $DE"
	host_run perf stat -x, -o /tmp/fp-stat.out -e rkfprobes:fo -- /tmp/sysloop $N $NOFILE
	expect_eq "perf stat counts every hit of $N opens" $N \
		"$(sed -n 's/^\([0-9]*\),.*rkfprobes:fo.*/\1/p' /tmp/fp-stat.out)"
	if has_host_tool bpftrace; then
		host_run bpftrace -e 'tracepoint:rkfprobes:fo /comm == "sysloop"/ { @ = count(); }' \
			-c "/tmp/sysloop $N $NOFILE" > /tmp/fp-bt.out 2>&1
		check "bpftrace counts every hit of $N opens" grep -q "^@: $N\$" /tmp/fp-bt.out
	fi
	check "-:" sh -c "echo '-:fo' >> $DE"
fi
check "clear" sh -c "echo > $DE"
check "nothing left" test -z "$(cat $DE)"

# --- a wildcard on thousands of functions ----------------------------------
# Letters whose functions add up to at least 5,300, as a `[..]*` glob: at
# least 5,000 once rkprobes' blacklist is left out.
awk '{ print $1 }' $T/available_filter_functions > /tmp/fp-all
cls=
n=0
for l in $(cut -c1 /tmp/fp-all | sort | uniq -c | sort -n | awk '$2 ~ /^[a-z]$/ && $1 > 100 { print $2 }'); do
	cls="$cls$l"
	n=$(grep -c "^[$cls]" /tmp/fp-all)
	[ "$n" -ge 5300 ] && break
done
pat="[$cls]*"
grep "^[$cls]" /tmp/fp-all | sort > /tmp/fp-want
diag "wildcard $pat: $n functions in available_filter_functions"
# timed NAME CMD: runs CMD (a shell command) under timeit, its time in
# /tmp/fp-t-NAME; ns NAME prints it.
timed() {
	echo "$2" > /tmp/fp-cmd-$1
	/bin/timeit sh /tmp/fp-cmd-$1 2> /tmp/fp-t-$1
}
ns() { sed -n 's/^timeit: \([0-9]*\) ns$/\1/p' /tmp/fp-t-$1; }
check "wildcard: add" timed add "echo 'f:many $pat' >> $DE"
grep 'FTRACE\]' /sys/kernel/debug/rkprobes/list | awk '{ print $3 }' | sed 's/+0x[0-9a-f]*$//' | sort > /tmp/fp-got
got=$(wc -l < /tmp/fp-got)
bl=$((n - got))
diag "wildcard: $got functions attached, $bl of ftrace's left out ($(ns add) ns to add)"
check "wildcard: at least 5,000 functions attached" test "$got" -ge 5000
grep 'FTRACE\]' /sys/kernel/debug/rkprobes/list | awk '{ print $1 }' | sort -u > /tmp/fp-addrs
check "wildcard: each function once" test "$(wc -l < /tmp/fp-addrs)" -eq "$got"
check "wildcard: only functions ftrace lists for the pattern" test -z "$(grep -vxFf /tmp/fp-want /tmp/fp-got)"
check "wildcard: those left out are on rkprobes' blacklist" test "$bl" -le $((n / 20))
check "wildcard: listed as written" grep -qxF "f:rkfprobes/many $pat" $DE
echo > $T/trace
check "wildcard: enable" timed enable "echo 1 > $G/many/enable"
ours=$(grep -c 'rkp_ftrace' $T/enabled_functions)
diag "wildcard: $ours functions in ftrace's enabled_functions for rkprobes ($(ns enable) ns to enable)"
check "wildcard: ftrace calls rkprobes at each" test "$ours" -ge "$got"
ls -R /sys/kernel/debug/rkprobes > /dev/null
cat /tmp/fp-data.txt > /dev/null
check "wildcard: disable" timed disable "echo 0 > $G/many/enable"
fired=$(grep ' many: ' $T/trace | sed -E 's/.* many: \(([^+]+)\+.*/\1/' | sort -u | wc -l)
diag "wildcard: $fired functions fired"
check "wildcard: fired in many functions" test "$fired" -ge 20
check "wildcard: nothing of rkprobes left in enabled_functions" sh -c "! grep -q rkp_ftrace $T/enabled_functions"
check "wildcard: remove" timed remove "echo '-:rkfprobes/many' >> $DE"
diag "wildcard: $(ns disable) ns to disable, $(ns remove) ns to remove"
check "wildcard: no point left" sh -c "! grep -q FTRACE /sys/kernel/debug/rkprobes/list"

# Exits of many functions share one pool of instances.
echo > $T/trace
check "wildcard exit: add" sh -c "echo 'f:vret vfs_*%return \$retval' >> $DE"
nvfs=$(grep -c 'FTRACE\]' /sys/kernel/debug/rkprobes/list)
check "wildcard exit: enable" sh -c "echo 1 > $G/vret/enable"
cat /tmp/fp-data.txt > /dev/null
dd if=/tmp/fp-data.txt of=/tmp/fp-copy bs=5 count=2 2>/dev/null
check "wildcard exit: disable" sh -c "echo 0 > $G/vret/enable"
grep ' vret: ' $T/trace | sed -E 's/.*<- ([a-z_0-9]+)\).*/\1/' | sort | uniq -c | sed 's/^/# /'
check "wildcard exit: returns of vfs_read and vfs_write" sh -c "grep -q ' vret: (.* <- vfs_read) arg1=' $T/trace && grep -q ' vret: (.* <- vfs_write) arg1=0x5' $T/trace"
diag "wildcard exit: $nvfs functions"
check "wildcard exit: remove" sh -c "echo '-:rkfprobes/vret' >> $DE"

# --- e events ----------------------------------------------------------------
# An event probe on sched_process_exec (a __data_loc string and numbers)
# and on sched_switch (a char[16] string), with a filter; where the kernel
# has event probes, the same definitions on its dynamic_events give the
# same listing, format and records.
kernel_eprobes=
[ -e $T/dynamic_events ] && grep -q 'e\[:\[<group>/\]\[<event>\]\] <attached-group>' $T/README && kernel_eprobes=1
ex_defs="ex sched.sched_process_exec file=\$filename:string pid=\$pid old=\$old_pid:s32 c=\$comm:string
sw sched.sched_switch prev=\$prev_comm:string next=\$next_pid:s32 st=\$prev_state
fl sched.sched_process_exec file=\$filename:string if filename ~ \"*/true\""
for side in r ${kernel_eprobes:+k}; do
	if [ $side = r ]; then EF=$DE; EG=rkeprobes; else EF=$T/dynamic_events; EG=eprobes; fi
	echo > $T/trace
	echo "$ex_defs" | while read -r ev rest; do echo "e:$EG/$ev $rest"; done > /tmp/ep-$side.cmds
	check "$side: e events defined" sh -c "cat /tmp/ep-$side.cmds >> $EF"
	grep "^e:$EG/" $EF > /tmp/ep-$side.list
	for ev in ex sw fl; do sed -n '/^format:/,$p' $T/events/$EG/$ev/format; done > /tmp/ep-$side.fmt
	check "$side: enable" sh -c "echo 1 > $T/events/$EG/enable"
	/bin/true
	/bin/echo > /dev/null
	check "$side: disable" sh -c "echo 0 > $T/events/$EG/enable"
	grep -E ' (ex|fl): ' $T/trace | grep -v '/proc/self/exe' | sed -E 's/^ *[^ ]+ +\[[0-9]+\] [^ ]+ +[0-9.]+: //; s/pid=(0x)?[0-9a-f]+ old=[0-9-]+/pid old/' > /tmp/ep-$side.recs
	grep ' sw: ' $T/trace | head -n 2 | sed 's/^/# /'
	check "$side: sched_switch records with the task's name" grep -qE ' sw: \(sched.sched_switch\) prev="[^"]+" next=[0-9-]+ st=0x[0-9a-f]+$' $T/trace
	check "$side: the target's trigger file shows no trigger" sh -c "! grep -v '^#' $T/events/sched/sched_process_exec/trigger | grep -q ."
	check "$side: removed" sh -c "echo '-:$EG/*' >> $EF || for ev in ex sw fl; do echo \"-:$EG/\$ev\" >> $EF; done; ! grep -q '^e:$EG/' $EF"
done
sed 's/^/# /' /tmp/ep-r.list /tmp/ep-r.recs
check "exec records: the file, pid and comm" grep -qx 'ex: (sched.sched_process_exec) file="/bin/true" pid old c="true"' /tmp/ep-r.recs
check "the filter passes /bin/true alone" sh -c "grep -q '^fl: .*\"/bin/true\"' /tmp/ep-r.recs && ! grep -q '^fl: .*echo' /tmp/ep-r.recs"
if [ -n "$kernel_eprobes" ]; then
	expect_eq "listing as the kernel's" "$(sed 's/eprobes\//G\//' /tmp/ep-k.list)" "$(sed 's/rkeprobes\//G\//' /tmp/ep-r.list)"
	expect_eq "formats as the kernel's" "$(cat /tmp/ep-k.fmt)" "$(cat /tmp/ep-r.fmt)"
	expect_eq "records as the kernel's" "$(cat /tmp/ep-k.recs)" "$(cat /tmp/ep-r.recs)"
fi
expect_fail "an e event on a kprobe event is refused" sh -c "echo 'p:kpe vfs_read' >> $DE && echo 'e:bad rkprobes.kpe' >> $DE"
check "clear" sh -c "echo > $DE"

# --- no missed returns -------------------------------------------------------
echo > $T/trace
check "exit probe on do_nanosleep" sh -c "echo 'f:sleep_in do_nanosleep' >> $DE && echo 'f:sleep_out do_nanosleep%return' >> $DE"
# And a glob's exits, whose sites share one growing set of instances:
# each return is recorded as its own function's, from the first
# instances and from those grown while the sleepers pile up.
check "exit glob on *nanosleep" sh -c "echo 'f:nano_out *nanosleep%return' >> $DE"
check "enable" sh -c "echo 1 > $G/enable"
/bin/sleepers 2000 3000 > /tmp/fp-sleepers
check "disable" sh -c "echo 0 > $G/enable"
head -n 1 /tmp/fp-sleepers | sed 's/^/# /'
tail -n +2 /tmp/fp-sleepers | sort -u > /tmp/fp-pids
for ev in sleep_in sleep_out; do
	grep " $ev: " $T/trace | sed -E 's/^ *[^ ]*-([0-9]+) .*/\1/' | sort | uniq -c | awk '{ print $2, $1 }' > /tmp/fp-$ev
done
# The sleepers with at least one record of each.
ins=$(awk 'NR == FNR { want[$1] = 1; next } want[$1]' /tmp/fp-pids /tmp/fp-sleep_in | wc -l)
outs=$(awk 'NR == FNR { want[$1] = 1; next } want[$1]' /tmp/fp-pids /tmp/fp-sleep_out | wc -l)
diag "2,000 sleepers: $ins entries and $outs returns recorded"
check "all 2,000 asleep at once" grep -q 'sleepers: 2000 slept' /tmp/fp-sleepers
expect_eq "every sleeper's entry recorded" 2000 "$ins"
expect_eq "every sleeper's return recorded" 2000 "$outs"
# Records of the glob's exits as "FUNC CALLER" (a stub's address for the
# caller when another exit probe on FUNC hijacked the return first).
grep ' nano_out: ' $T/trace | sed -E 's/.*: \(([a-z_0-9]+)\+[^ ]* <- ([a-z_0-9]+)\).*/\2 \1/; s/.*: \(0x[0-9a-f]+ <- ([a-z_0-9]+)\).*/\1 (stub)/' > /tmp/fp-nano
sort /tmp/fp-nano | uniq -c | sed 's/^/# /'
check "the glob's exits: at least 3 functions with a return of every sleeper" \
	test "$(cut -d' ' -f1 /tmp/fp-nano | sort | uniq -c | awk '$1 >= 2000' | wc -l)" -ge 3
# Each function here has one caller: a return recorded as another
# function's would give that function a second one.
check "each return recorded as its own function's" \
	test -z "$(sort -u /tmp/fp-nano | cut -d' ' -f1 | uniq -d)"
check "clear" sh -c "echo > $DE"
check "rmmod rkprobes" rmmod rkprobes
