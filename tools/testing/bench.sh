# SPDX-License-Identifier: GPL-2.0
# `make bench`: rkp_bench's numbers (see tools/testing/modules/rkp_bench.rs).
# A benchmark, not a test: it only checks that the benchmark ran.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# An empty BPF program (a count in a map) on an rkprobes event at
# do_sys_openat2 (a tracepoint program, `tracepoint:rkprobes:...`) and on the
# kernel's kprobe at the same address (`kprobe:do_sys_openat2`), both loaded
# by Debian's bpftrace from the host's root. The cost per hit is sysloop's
# own time per open minus its time while bpftrace runs a program that never
# fires (bpftrace's own wake-ups count under -icount, which counts every
# CPU's instructions). The three loops run in turn in each of three rounds,
# each keeping its least. bpftrace and its sysloop run on CPU 1 (taskset
# on bpftrace: a dynamically linked taskset between them would add its own
# opens to the count): libbpf opens the perf
# event that carries a tracepoint or kprobe program on CPU 0 alone, and a
# hit there whose program returns non-zero also goes to that event's
# output (about 1,100 instructions, on either side), which made the row
# bimodal. It runs first, on a fresh rkprobes: after other events or
# probes came and went, the same event's hits have been measured 2,300
# instructions dearer (not yet explained; issue 13's profile).
KE=/sys/kernel/debug/rkprobes/kprobe_events
BN=${RKP_BENCH_BPF_ITERS:-20000}
NOFILE=/tmp/rkp-bench-nofile
# sysloop_ns PROGRAM [EXPECT]: the loop's time under a bpftrace PROGRAM;
# empty when the program did not run or did not count EXPECT hits.
sysloop_ns() {
	host_run /usr/bin/taskset -c 1 bpftrace -e "$1" -c "/tmp/sysloop $BN $NOFILE -t" > /tmp/bpf.out 2>&1
	t=$(sed -n 's/^sysloop: [0-9]* calls in \([0-9]*\) ns$/\1/p' /tmp/bpf.out)
	[ -n "$2" ] && ! grep -q "^@: $2\$" /tmp/bpf.out && t=
	echo $t
}
# least OLD NEW: the lesser, or NEW when OLD is empty.
least() {
	if [ -z "$1" ] || { [ -n "$2" ] && [ "$2" -lt "$1" ]; }; then echo "$2"; else echo "$1"; fi
}
if has_host_tool bpftrace; then
	cp /bin/sysloop /tmp/sysloop
	ours= none= native= kprobe_ok=y
	for round in 1 2 3; do
		echo "p:bpfbench do_sys_openat2" > $KE
		echo "p:bpfidle ksys_sync" >> $KE
		ours=$(least "$ours" "$(sysloop_ns 'tracepoint:rkprobes:bpfbench { @ = count(); }' $BN)")
		none=$(least "$none" "$(sysloop_ns 'tracepoint:rkprobes:bpfidle { @ = count(); }')")
		# The kernel's kprobe alone at the function: no rkprobes event
		# (a disarmed one's ftrace site may stay in its ops' filter).
		echo > $KE
		if [ -n "$kprobe_ok" ]; then
			t=$(sysloop_ns 'kprobe:do_sys_openat2 { @ = count(); }' $BN)
			[ -z "$t" ] && kprobe_ok=
			native=$(least "$native" "$t")
		fi
	done
	check "the BPF program ran on the rkprobes event, $BN times" test -n "$none" -a -n "$ours"
	awk -v n=$BN -v none="$none" -v ours="$ours" -v nat="$native" 'BEGIN {
		o = (ours - none) / n
		if (nat == "") {
			printf "# bpf-empty: %d calls: none %d ns/call, rkprobes event %d ns/call (+%d per hit), kernel kprobe refused\n", n, none / n, ours / n, o
			exit
		}
		k = (nat - none) / n
		r = 0
		if (k > 0)
			r = o / k
		printf "# bpf-empty: %d calls: none %d ns/call, kprobes %d ns/call (+%d per hit), rkprobes %d ns/call (+%d per hit), rkprobes/kprobes %.2fx\n", n, none / n, nat / n, k, ours / n, o, r
	}'
else
	skip "bpf-empty" "the host's root or its bpftrace is not available"
fi

cp /bin/sysloop /tmp/sysloop
NATIVE_KE=/sys/kernel/tracing/kprobe_events
# Is the kernel's kprobe_events there (a kernel with CONFIG_KPROBE_EVENTS)?
native_events() {
	[ -w $NATIVE_KE ]
}

# The event rows: a kprobe_events event at do_sys_openat2 with two register
# arguments and a string (the path, from user memory), recorded into the
# trace buffer, then the same event with a filter that rejects every record;
# rkprobes' event and the kernel's, each alone (never both at the same
# address: ftrace would switch to its list function). The cost per hit is
# sysloop's time per open with the event on minus its time with none. The
# row is every vCPU's instructions, so the other CPU's wake-ups count: the
# five loops (none, each side recording, each side filtering) run in turn
# in each of three rounds, and each keeps its least, so that drift over
# the run and another CPU's bursts favour neither side.
EN=${RKP_BENCH_EVENT_ITERS:-20000}
EVDEF="do_sys_openat2 dfd=%di:s32 how=%dx:x64 path=+0(%si):ustring"
# More shapes at the same site, recorded: the event written with typed
# (BTF) fetchargs where the kernel has BTF (the parameters by name, the
# path through its char * type, a member of the struct open_how); a load
# from memory (the first word of the struct open_how); a string typed
# `string` at a user address (read as user memory, as the kernel does).
EVDEF_BTF="do_sys_openat2 dfd filename:string how->flags"
EVDEF_MEM="do_sys_openat2 flags=+0(%dx):u64"
EVDEF_KSTR="do_sys_openat2 path=+0(%si):string"
# f events at the same function, on rkprobes' dynamic_events and the
# kernel's (CONFIG_FPROBE_EVENTS): the entry with no argument and with the
# typed ones, and the exit with the return value.
EVDEF_FNONE="do_sys_openat2"
EVDEF_FBTF="do_sys_openat2 dfd filename:string how->flags"
EVDEF_FRET="do_sys_openat2%return \$retval"
DE=/sys/kernel/debug/rkprobes/dynamic_events
NATIVE_DE=/sys/kernel/tracing/dynamic_events
native_fprobes() {
	[ -w $NATIVE_DE ] && grep -qF 'f[:[<group>/][<event>]] <func-name>' /sys/kernel/tracing/README
}
loop_ns() {
	/tmp/sysloop $EN $NOFILE -t | sed -n 's/^sysloop: [0-9]* calls in \([0-9]*\) ns$/\1/p'
}
# event_row CONTROL EVENTS_DIR [DEFINITION [TYPE]]: "RECORDED FILTERED",
# sysloop's times with the event on (a TYPE event, p by default),
# recording and then filtered out.
event_row() {
	echo "${4:-p}:evbench ${3:-$EVDEF}" >> $1 || return
	echo > /sys/kernel/tracing/trace
	echo 1 > $2/evbench/enable
	rec=$(loop_ns)
	echo 0 > $2/evbench/enable
	# dfd is AT_FDCWD (-100) in every call: nothing passes.
	echo 'dfd == 12345' > $2/evbench/filter
	echo 1 > $2/evbench/enable
	filt=$(loop_ns)
	echo 0 > $2/evbench/enable
	echo 0 > $2/evbench/filter
	echo "-:evbench" >> $1
	echo "$rec $filt"
}
none= ours_r= ours_f= nat_r= nat_f= ours_b= nat_b= ours_m= nat_m= ours_k= nat_k=
ours_fn= nat_fn= ours_fb= nat_fb= ours_fr= nat_fr=
for round in 1 2 3; do
	none=$(least "$none" "$(loop_ns)")
	r=$(event_row $KE /sys/kernel/tracing/events/rkprobes)
	ours_r=$(least "$ours_r" "${r% *}")
	ours_f=$(least "$ours_f" "${r#* }")
	if native_events; then
		r=$(event_row $NATIVE_KE /sys/kernel/tracing/events/kprobes)
		nat_r=$(least "$nat_r" "${r% *}")
		nat_f=$(least "$nat_f" "${r#* }")
	fi
	r=$(event_row $KE /sys/kernel/tracing/events/rkprobes "$EVDEF_MEM")
	ours_m=$(least "$ours_m" "${r% *}")
	r=$(event_row $KE /sys/kernel/tracing/events/rkprobes "$EVDEF_KSTR")
	ours_k=$(least "$ours_k" "${r% *}")
	if native_events; then
		r=$(event_row $NATIVE_KE /sys/kernel/tracing/events/kprobes "$EVDEF_MEM")
		nat_m=$(least "$nat_m" "${r% *}")
		r=$(event_row $NATIVE_KE /sys/kernel/tracing/events/kprobes "$EVDEF_KSTR")
		nat_k=$(least "$nat_k" "${r% *}")
	fi
	r=$(event_row $DE /sys/kernel/tracing/events/rkfprobes "$EVDEF_FNONE" f)
	ours_fn=$(least "$ours_fn" "${r% *}")
	r=$(event_row $DE /sys/kernel/tracing/events/rkfprobes "$EVDEF_FRET" f)
	ours_fr=$(least "$ours_fr" "${r% *}")
	if native_fprobes; then
		r=$(event_row $NATIVE_DE /sys/kernel/tracing/events/fprobes "$EVDEF_FNONE" f)
		nat_fn=$(least "$nat_fn" "${r% *}")
		r=$(event_row $NATIVE_DE /sys/kernel/tracing/events/fprobes "$EVDEF_FRET" f)
		nat_fr=$(least "$nat_fr" "${r% *}")
	fi
	if [ -e /sys/kernel/btf/vmlinux ]; then
		r=$(event_row $DE /sys/kernel/tracing/events/rkfprobes "$EVDEF_FBTF" f)
		ours_fb=$(least "$ours_fb" "${r% *}")
		if native_fprobes; then
			r=$(event_row $NATIVE_DE /sys/kernel/tracing/events/fprobes "$EVDEF_FBTF" f)
			nat_fb=$(least "$nat_fb" "${r% *}")
		fi
		r=$(event_row $KE /sys/kernel/tracing/events/rkprobes "$EVDEF_BTF")
		ours_b=$(least "$ours_b" "${r% *}")
		if native_events; then
			r=$(event_row $NATIVE_KE /sys/kernel/tracing/events/kprobes "$EVDEF_BTF")
			nat_b=$(least "$nat_b" "${r% *}")
		fi
	fi
done
# A row a side did not run is "-".
ours="$ours_r $ours_f $ours_m $ours_k ${ours_b:--} ${ours_fn:--} ${ours_fr:--} ${ours_fb:--}"
check "the event rows ran on rkprobes' event" test -n "$none" -a -n "$ours_r" -a -n "$ours_f"
native=
native_events && native="$nat_r $nat_f $nat_m $nat_k ${nat_b:--}"
# The f rows compare with the kernel's f events.
native_fprobes && native="${native:-- - - - -} ${nat_fn:--} ${nat_fr:--} ${nat_fb:--}"
rows="1 event, two registers and a string, recorded|2 event, the same, a filter rejects every record"
rows="$rows|3 event, a load from memory (+0(%dx):u64), recorded"
rows="$rows|4 event, a string typed string at a user address, recorded"
[ -n "$ours_b" ] && rows="$rows|5 event, typed from BTF (dfd filename:string how->flags), recorded"
rows="$rows|6 f event, entry, no argument, recorded|7 f event, exit, \$retval, recorded"
[ -n "$ours_fb" ] && rows="$rows|8 f event, entry, typed (dfd filename:string how->flags), recorded"
echo "$rows" | tr '|' '\n' | while read -r row; do
	i=${row%% *}
	awk -v n=$EN -v none="$none" -v ours="$(echo $ours | cut -d' ' -f$i)" \
		-v nat="$(echo $native | cut -d' ' -f$i)" -v name="${row#* }" 'BEGIN {
		o = (ours - none) / n
		if (nat == "" || nat == "-") {
			printf "# %s, do_sys_openat2: %d calls: none %d ns/call, rkprobes %d ns/call (+%d per hit), kernel kprobe_events not available\n", name, n, none / n, ours / n, o
			exit
		}
		k = (nat - none) / n
		r = 0
		if (k > 0)
			r = o / k
		printf "# %s, do_sys_openat2: %d calls: none %d ns/call, kprobes %d ns/call (+%d per hit), rkprobes %d ns/call (+%d per hit), rkprobes/kprobes %.2fx\n", name, n, none / n, nat / n, k, ours / n, o, r
	}'
done

# The event matrix: event shapes by sites at ksys_read, rkprobes' event
# beside the kernel's kprobe event (each alone), in a loop of one-byte
# reads of /dev/zero (readloop, whose buffer holds the string a shape
# fetches). Sites: the entry (an ftrace site on both sides), ksys_read+9
# with optimization on (a jump on both; the row says whether each side's
# list showed it optimized) and the same with optimization off on both
# (int3). Shapes: no argument, three register arguments, a user string
# (empty, 8 and 200 bytes), a kernel string, and at the entry a return
# event without and with $retval. The cost per hit is readloop's time with
# the event on less its time with none for the same string; three rounds,
# each keeping its least.
MN=${RKP_BENCH_MATRIX_ITERS:-20000}
TR=/sys/kernel/tracing
mloop() {
	/bin/readloop $MN $1 | sed -n 's/^readloop: [0-9]* calls in \([0-9]*\) ns$/\1/p'
}
set_opt() {
	echo $1 > /sys/kernel/debug/rkprobes/optimization
	[ -w /proc/sys/debug/kprobes-optimization ] && echo $1 > /proc/sys/debug/kprobes-optimization
}
# mrow CONTROL EVENTS_DIR LIST DEF LEN: "NS OPT", readloop's time with the
# event DEF on, and o when LIST showed the probe optimized.
mrow() {
	echo "$4" >> $1 || return
	echo > $TR/trace
	echo 1 > $2/mx/enable
	# The optimizers of both sides run some jiffies after arming.
	sleep 0.3
	opt=-
	grep -q 'ksys_read+0x9.*OPTIMIZED' $3 2>/dev/null && opt=o
	t=$(mloop $5)
	echo 0 > $2/mx/enable
	echo "-:mx" >> $1
	echo "$t $opt"
}
# The cells: "SITE SHAPE LEN DEF" (DEF without the "p:mx "/"r:mx " head).
cat > /tmp/mx.cells <<'EOC'
entry noargs 0 p ksys_read
entry regs 0 p ksys_read fd=%di:s32 buf=%si:x64 count=%dx:u64
entry ustr-empty 0 p ksys_read s=+0(%si):ustring
entry ustr-8 8 p ksys_read s=+0(%si):ustring
entry ustr-200 200 p ksys_read s=+0(%si):ustring
entry kstr 0 p ksys_read s=@linux_proc_banner:string
entry ret 0 r ksys_read
entry ret-retval 0 r ksys_read ret=$retval
opt noargs 0 p ksys_read+9
opt regs 0 p ksys_read+9 fd=%di:s32 buf=%si:x64 count=%dx:u64
opt ustr-empty 0 p ksys_read+9 s=+0(%si):ustring
opt ustr-8 8 p ksys_read+9 s=+0(%si):ustring
opt ustr-200 200 p ksys_read+9 s=+0(%si):ustring
opt kstr 0 p ksys_read+9 s=@linux_proc_banner:string
int3 noargs 0 p ksys_read+9
int3 regs 0 p ksys_read+9 fd=%di:s32 buf=%si:x64 count=%dx:u64
int3 ustr-empty 0 p ksys_read+9 s=+0(%si):ustring
int3 ustr-8 8 p ksys_read+9 s=+0(%si):ustring
int3 ustr-200 200 p ksys_read+9 s=+0(%si):ustring
int3 kstr 0 p ksys_read+9 s=@linux_proc_banner:string
EOC
: > /tmp/mx.res
for round in 1 2 3; do
	for len in 0 8 200; do
		echo "none $len $(mloop $len)" >> /tmp/mx.res
	done
	while read -r site shape len kind def; do
		[ $site = int3 ] && set_opt 0 || set_opt 1
		r=$(mrow $KE $TR/events/rkprobes /sys/kernel/debug/rkprobes/list "$kind:mx $def" $len)
		echo "rk $site $shape $r" >> /tmp/mx.res
		if native_events; then
			r=$(mrow $NATIVE_KE $TR/events/kprobes /sys/kernel/debug/kprobes/list "$kind:mx $def" $len)
			echo "k $site $shape $r" >> /tmp/mx.res
		fi
	done < /tmp/mx.cells
done
set_opt 1
check "the event matrix ran on rkprobes' events" \
	test "$(grep -c '^rk [a-z0-9]* [a-z0-9-]* [0-9]' /tmp/mx.res)" -eq $((3 * $(wc -l < /tmp/mx.cells)))
awk -v n=$MN '
	$1 == "none" { if (!($2 in none) || $3 < none[$2]) none[$2] = $3; next }
	{ k = $1 " " $2 " " $3; if ($4 != "" && (!(k in t) || $4 < t[k])) t[k] = $4; opt[k] = $5 }
	END {
		while ((getline line < "/tmp/mx.cells") > 0) {
			split(line, c, " ")
			site = c[1]; shape = c[2]; len = c[3]
			rk = "rk " site " " shape; kk = "k " site " " shape
			if (!(rk in t))
				continue
			o = (t[rk] - none[len]) / n
			if (!(kk in t)) {
				printf "# matrix %s %s: rkprobes +%d ns/hit, kernel kprobe_events not available\n", site, shape, o
				continue
			}
			k = (t[kk] - none[len]) / n
			printf "# matrix %-5s %-10s kprobes +%5d ns/hit%s, rkprobes +%5d ns/hit%s, rkprobes/kprobes %.2fx\n", site, shape, k, (site == "opt" ? " (" opt[kk] ")" : ""), o, (site == "opt" ? " (" opt[rk] ")" : ""), (k > 0 ? o / k : 0)
		}
	}' /tmp/mx.res

# The trace-read row: trace output of RN records of an event with three
# arguments and a string, read back with one `cat trace`; rkprobes' event
# and the kernel's, each recording alone into an emptied buffer made large
# enough that no record is lost. The cost per record is the read's time less
# that of reading the empty buffer. Only the print callbacks differ between
# the two sides: the ring buffer, the iterator and the common fields are the
# tracing core's.
RN=${RKP_BENCH_READ_RECORDS:-100000}
READDEF="do_sys_openat2 dfd=%di:s32 flags=+0(%dx):x64 mode=+8(%dx):u64 path=+0(%si):ustring"
TR=/sys/kernel/tracing
read_ns() {
	/bin/timeit cat $TR/trace 2>&1 >/dev/null | sed -n 's/^timeit: \([0-9]*\) ns$/\1/p'
}
# read_row CONTROL EVENTS_DIR: "NS RECORDS", the read's time and the records
# it printed.
read_row() {
	echo "p:evread $READDEF" >> $1 || return
	echo > $TR/trace
	echo 1 > $2/evread/enable
	/tmp/sysloop $RN $NOFILE > /dev/null
	echo 0 > $2/evread/enable
	t=$(read_ns)
	n=$(grep -c ' evread: ' $TR/trace)
	echo "-:evread" >> $1
	echo "$t $n"
}
old_kb=$(cat $TR/buffer_size_kb)
echo $((RN / 10 + 2048)) > $TR/buffer_size_kb
echo > $TR/trace
empty= rd_ours= rd_nat= rd_n=
for round in 1 2 3; do
	echo > $TR/trace
	empty=$(least "$empty" "$(read_ns)")
	r=$(read_row $KE $TR/events/rkprobes)
	rd_ours=$(least "$rd_ours" "${r% *}")
	rd_n=${r#* }
	if native_events; then
		r=$(read_row $NATIVE_KE $TR/events/kprobes)
		rd_nat=$(least "$rd_nat" "${r% *}")
		[ "${r#* }" -ge "$RN" ] || rd_n=${r#* }
	fi
done
echo > $TR/trace
echo $old_kb > $TR/buffer_size_kb
diag "trace read: empty $empty ours $rd_ours native $rd_nat records $rd_n"
check "the trace-read row printed $RN records on each side" test "$rd_n" -ge "$RN" -a -n "$rd_ours"
awk -v n=$RN -v empty="$empty" -v ours="$rd_ours" -v nat="$rd_nat" 'BEGIN {
	o = (ours - empty) / n
	if (nat == "") {
		printf "# trace read, 3 arguments and a string: %d records: rkprobes %d ns/record, kernel kprobe_events not available\n", n, o
		exit
	}
	k = (nat - empty) / n
	r = 0
	if (k > 0)
		r = o / k
	printf "# trace read, 3 arguments and a string: %d records: kprobes %d ns/record, rkprobes %d ns/record, rkprobes/kprobes %.2fx\n", n, k, o, r
}'

# Events at scale: the time to add 1, 64 and 1,000 events on as many
# distinct kernel functions' entries in one write to each control file, and
# to remove them with one write of "-:" commands; timeit's nanoseconds,
# less the least of three of the same write to /dev/null. The functions: ftrace's
# traceable functions of vmlinux with a unique name, outside rkprobes'
# blacklist (which holds the kernel's); a function one side refuses is
# dropped, and the count tried again on both.
# timed_write FILE CONTROL: the time of one write of FILE to CONTROL, appended
# (a truncating open would first remove every event).
timed_write() {
	/bin/timeit sh -c "cat $1 >> $2" 2>&1 >/dev/null | sed -n 's/^timeit: \([0-9]*\) ns$/\1/p'
}
# events_in CONTROL: how many of the benchmark's events CONTROL holds.
events_in() {
	grep -c '^p:[a-z]*/rkb[0-9]* ' $1
}
sed -n 's/^[^	]*	//p' /sys/kernel/debug/rkprobes/blacklist | sort -u > /tmp/bl.names
grep -v '[[ ]' /sys/kernel/tracing/available_filter_functions | sort | uniq -u |
	grep -v -x -F -f /tmp/bl.names | awk 'NR % 7 == 0' | head -1200 > /tmp/scale.funcs
diag "events at scale: $(wc -l < /tmp/scale.funcs) candidate functions"
echo > $KE
native_events && echo > $NATIVE_KE
for n in ${RKP_BENCH_EVENTS:-1 64 1000}; do
	# Nothing left from the count before.
	tries=0 bad= rk_add= rk_del=
	while :; do
		head -$n /tmp/scale.funcs | awk '{ printf "p:rkb%d %s\n", NR, $1 }' > /tmp/ev.add
		sed 's/^p:\(rkb[0-9]*\) .*/-:\1/' /tmp/ev.add > /tmp/ev.del
		[ "$(wc -l < /tmp/ev.add)" -eq $n ] || break
		# The least of three: one event's write is mostly the shell's.
		base=
		for _ in 1 2 3; do
			t=$(timed_write /tmp/ev.add /dev/null)
			[ -z "$base" ] || [ "$t" -lt "$base" ] && base=$t
		done
		bad=
		rk_add=$(timed_write /tmp/ev.add $KE)
		got=$(events_in $KE)
		[ "$got" -lt $n ] && bad=$((got + 1))
		rk_del=$(timed_write /tmp/ev.del $KE)
		kp_add=-1 kp_del=-1
		if [ -z "$bad" ] && native_events; then
			kp_add=$(timed_write /tmp/ev.add $NATIVE_KE)
			got=$(events_in $NATIVE_KE)
			[ "$got" -lt $n ] && bad=$((got + 1))
			kp_del=$(timed_write /tmp/ev.del $NATIVE_KE)
		fi
		echo > $KE
		native_events && echo > $NATIVE_KE
		[ -z "$bad" ] && break
		tries=$((tries + 1))
		[ $tries -gt 20 ] && break
		diag "events at scale: $(sed -n ${bad}p /tmp/scale.funcs) refused, dropped"
		sed -i "${bad}d" /tmp/scale.funcs
	done
	if [ -n "$bad" ] || [ -z "$rk_add" ]; then
		check "events at scale: $n events added on both sides" false
		continue
	fi
	us() { [ "$1" -lt 0 ] && echo -1 || echo $((($1 - base) / 1000)); }
	echo "# events: $n events (us): rkprobes add $(us $rk_add) remove $(us $rk_del); kprobes add $(us $kp_add) remove $(us $kp_del)"
done

# Memory per registered probe: /proc/meminfo's Slab and VmallocUsed (the
# instruction slots are execmem, which is vmalloc space) after the vmstat
# counters were folded, around rkp_bench mem=, which holds 10,000 probes
# registered in one batch; the same load with the probes only allocated is
# the baseline (the module, the caller's structures).
meminfo() {
	echo 1 > /proc/sys/vm/stat_refresh 2>/dev/null
	awk '/^Slab:/ { s = $2 } /^VmallocUsed:/ { v = $2 } END { print s, v }' /proc/meminfo
}
# held WHAT: "SLAB VMALLOC", the kB each grew by while rkp_bench mem=WHAT held its probes.
held() {
	b=$(meminfo)
	dmesg -c > /dev/null
	insmod $MODDIR/rkp_bench.ko mem=$1 || return
	a=$(meminfo)
	dmesg | sed -n 's/.*rkp_bench: /# /p' >&2
	rmmod rkp_bench
	echo "$b $a" | awk '{ print $3 - $1, $4 - $2 }'
}
mem_row() {
	base=$(held ${1}0)
	reg=$(held $1)
	[ -n "$base" ] && [ -n "$reg" ] && echo "$base $reg" |
		awk '{ printf "%d %d", ($3 - $1) * 1024 / 10000, ($4 - $2) * 1024 / 10000 }'
}
if grep -qw rkp_bench_icount /proc/cmdline; then
	# Bytes, not time: measured in the normal-TCG run (make bench).
	diag "memory: measured in the run without -icount"
else
	rk_mem=$(mem_row rk)
	check "the memory row ran on rkprobes" test -n "$rk_mem"
	kp_mem=
	[ -d /sys/kernel/debug/kprobes ] && kp_mem=$(mem_row kp)
	echo "# memory: per registered probe (bytes, 10,000 int3 probes): rkprobes slab ${rk_mem% *} execmem ${rk_mem#* }; kprobes slab ${kp_mem% *} execmem ${kp_mem#* }"
fi

# The int3 rows with jump optimization off on both sides, then the
# jump-optimized row with it on.
NATIVE_OPT=/proc/sys/debug/kprobes-optimization
[ -e $NATIVE_OPT ] && echo 0 > $NATIVE_OPT
echo 0 > /sys/kernel/debug/rkprobes/optimization
dmesg -c > /dev/null
check "rkp_bench runs" insmod $MODDIR/rkp_bench.ko iters=${RKP_BENCH_ITERS:-20000}
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench
# Registration at scale, still with both optimizers off.
dmesg -c > /dev/null
check "rkp_bench scale=1 runs" insmod $MODDIR/rkp_bench.ko scale=1
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench
[ -e $NATIVE_OPT ] && echo 1 > $NATIVE_OPT
echo 1 > /sys/kernel/debug/rkprobes/optimization
dmesg -c > /dev/null
check "rkp_bench opt=1 runs" insmod $MODDIR/rkp_bench.ko iters=${RKP_BENCH_ITERS:-20000} opt=1
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench

# Wildcards: attaching and detaching from a few hundred functions to every
# function whose name starts with a letter, at once, for the plot against
# the count (tools/testing/bench-plot --wildcard). rkprobes: one f event on
# a glob (added, then enabled; disabled, then removed). The kernel:
# bpftrace's `kprobe:` on the same letters, which attaches them with one
# kprobe_multi link per letter (its time less that of the same bpftrace on
# one function: bpftrace's own start-up), at every count; apart, the part
# of that which is bpftrace's front end (the same with --emit-elf, which
# loads and attaches nothing, less the same on one function): the first
# less the second is a closer upper bound of the kernel's attach and
# detach than the first. And, for the counts up to
# RKP_BENCH_WILDCARD_FEVENTS (about a fifth of a second of guest time per
# function), one kernel f event per function in one write to
# dynamic_events (added and enabled as a group; disabled and removed).
# timeit's nanoseconds (instructions under -icount). The counts are
# RKP_BENCH_WILDCARDS, "all" for every letter.
# glob_for N: a `[..]*` glob of letters, the rarest first, whose functions
# in ftrace's list add up to at least N (every letter for "all"), and their
# count: "GLOB COUNT".
awk '{ print $1 }' /sys/kernel/tracing/available_filter_functions > /tmp/wc.all
glob_for() {
	_want=$1
	[ "$_want" = all ] && _want=999999999
	_cls= _n=0
	for _l in $(cut -c1 /tmp/wc.all | sort | uniq -c | sort -n | awk '$2 ~ /^[a-z]$/ { print $2 }'); do
		_cls="$_cls$_l"
		_n=$(grep -c "^[$_cls]" /tmp/wc.all)
		[ "$_n" -ge "$_want" ] && break
	done
	echo "[$_cls]* $_n"
}
# tm CMD: CMD's time under timeit (a shell command).
tm() {
	/bin/timeit sh -c "$1" 2>&1 >/dev/null | sed -n 's/^timeit: \([0-9]*\) ns$/\1/p'
}
cp /bin/timeit /tmp/timeit
# front_ns PROGRAM: bpftrace's front end alone on PROGRAM (parsing, the
# globs' expansion against available_filter_functions, code generation;
# --emit-elf loads and attaches nothing).
front_ns() {
	host_run /tmp/timeit bpftrace --emit-elf /tmp/wc.elf -e "$1" 2>&1 >/dev/null |
		sed -n 's/^timeit: \([0-9]*\) ns$/\1/p'
}
bpf_base= front_base=
if has_host_tool bpftrace; then
	for round in 1 2 3; do
		bpf_base=$(least "$bpf_base" "$(host_run /tmp/timeit bpftrace -e 'kprobe:ksys_sync { }' \
			-c /bin/true 2>&1 >/dev/null | sed -n 's/^timeit: \([0-9]*\) ns$/\1/p')")
		front_base=$(least "$front_base" "$(front_ns 'kprobe:ksys_sync { }')")
	done
fi
# One untimed round first on the rarest letter, on both sides, so that the
# smallest count does not carry what a first wildcard pays beyond its
# functions (in a run of this section alone, rkprobes' first enable, of
# 320 functions, took 33 ms and the next, of 1,240, 12 ms).
g=$(glob_for 1)
warm=${g% *}
echo "f:wild $warm" >> $DE
echo 1 > /sys/kernel/tracing/events/rkfprobes/wild/enable
echo 0 > /sys/kernel/tracing/events/rkfprobes/wild/enable
echo '-:rkfprobes/wild' >> $DE
if native_fprobes; then
	grep "^${warm%\*}" /tmp/wc.all | grep -v '[.[]' | sort -u |
		awk '{ printf "f:wildk/k%d %s\n", NR, $1 }' > /tmp/wc.add
	cat /tmp/wc.add >> $NATIVE_DE
	echo 1 > /sys/kernel/tracing/events/wildk/enable
	echo 0 > /sys/kernel/tracing/events/wildk/enable
	echo > $NATIVE_DE
fi
last=
for want in ${RKP_BENCH_WILDCARDS:-300 1000 3000 10000 all}; do
	g=$(glob_for $want)
	pat=${g% *} n=${g#* }
	# Two counts that need the same letters: one line.
	[ "$pat" = "$last" ] && continue
	last=$pat
	# Three rounds of each side but the kernel's f events, each phase
	# keeping its least: grace periods, and bpftrace's reads of the
	# host's root over 9p, move a single round by a fifth.
	add= on= off= del= full= fr=
	# bpftrace's globs have no classes: one `kprobe:L*` per letter.
	probes=$(echo "${pat%]\*}" | cut -c2- | sed 's/./kprobe:&*,/g; s/,$//')
	for round in 1 2 3; do
		echo > $DE
		add=$(least "$add" "$(tm "echo 'f:wild $pat' >> $DE")")
		got=$(grep -c 'FTRACE\]' /sys/kernel/debug/rkprobes/list)
		on=$(least "$on" "$(tm "echo 1 > /sys/kernel/tracing/events/rkfprobes/wild/enable")")
		off=$(least "$off" "$(tm "echo 0 > /sys/kernel/tracing/events/rkfprobes/wild/enable")")
		del=$(least "$del" "$(tm "echo '-:rkfprobes/wild' >> $DE")")
		[ -n "$bpf_base" ] || continue
		t=$(host_run /tmp/timeit bpftrace -e "$probes { }" -c /bin/true > /tmp/wc.bpf 2>&1;
			sed -n 's/^timeit: \([0-9]*\) ns$/\1/p' /tmp/wc.bpf)
		if [ -z "$t" ] || ! grep -q '^Attaching' /tmp/wc.bpf; then
			sed 's/^/# bpftrace: /' /tmp/wc.bpf | head -n 3
			continue
		fi
		[ $round = 1 ] && diag "bpftrace on $pat: $(grep -m1 '^Attaching' /tmp/wc.bpf)"
		full=$(least "$full" "$t")
		fr=$(least "$fr" "$(front_ns "$probes { }")")
	done
	check "wildcard $pat: attached and detached on rkprobes" test -n "$add" -a -n "$del" -a "$got" -gt 0
	multi=- front=-
	[ -n "$full" ] && multi=$((full - bpf_base))
	[ -n "$full" ] && [ -n "$fr" ] && [ -n "$front_base" ] && front=$((fr - front_base))
	fev=-
	if native_fprobes && [ $want != all ] && [ $want -le ${RKP_BENCH_WILDCARD_FEVENTS:-1000} ]; then
		grep "^${pat%\*}" /tmp/wc.all | grep -v '[.[]' | sort -u |
			awk '{ printf "f:wildk/k%d %s\n", NR, $1 }' > /tmp/wc.add
		a=$(tm "cat /tmp/wc.add >> $NATIVE_DE")
		e=$(tm "echo 1 > /sys/kernel/tracing/events/wildk/enable")
		d=$(tm "echo 0 > /sys/kernel/tracing/events/wildk/enable")
		r=$(tm "echo > $NATIVE_DE")
		[ -n "$a" ] && [ -n "$r" ] && fev="$((a + e)) $((d + r)) $(wc -l < /tmp/wc.add)"
	fi
	echo "# wildcard $pat ($n in ftrace's list): rkprobes $got functions: attach $((add + on)) ns (add $add, enable $on), detach $((off + del)) ns (disable $off, remove $del); kernel kprobe_multi (bpftrace, less its start-up) attach+detach $multi ns; kernel f events one per function (attach detach count): $fev; bpftrace's front end alone (--emit-elf, less on one function) $front ns"
done

# The sweep rows (issue 32): trap-free probes and their cost per offset.
# At every offset 0..255 of kernel_clone, do_sys_openat2, vfs_read and
# vfs_write that the kernel's kprobes accept, and at RKP_BENCH_SWEEP_PER_FN
# offsets (0..255, below the function's end, in a seeded random order,
# those the kernel accepts) of RKP_BENCH_SWEEP_RANDOM functions drawn with
# the same seed from those that sweeploop's mix workload calls (below),
# rkp_trapfree puts one probe at a time on one side: the kernel's kprobe,
# then rkprobes', each with a pre-handler that only counts its hits, then
# each again with an empty post-handler too. Each probe is timed alone,
# once its jump is in when its side's list shows it [OPTIMIZED]; trap-free
# is what each list shows: [OPTIMIZED] or [FTRACE]. The time is sweeploop's,
# whose every call enters the function once (fork, open, pread, pwrite; mix
# for the random functions), and the cost per hit is its time with the probe
# less its time with none (the lesser of a loop before the four probes and
# one after), over the hits it counted; each loop starts 50 ms after the
# last removal, whose deferred work would otherwise count. An offset
# is reached when all four probes there were hit at least once a call; the
# costs are over the reached offsets. Instructions: -icount runs alone.
if grep -qw rkp_bench_icount /proc/cmdline; then
	SW=/sys/kernel/debug/rkp_trapfree
	RL=/sys/kernel/debug/rkprobes/list
	NL=/sys/kernel/debug/kprobes/list
	TR=/sys/kernel/tracing
	SW_SEED=${RKP_BENCH_SWEEP_SEED:-32}
	SW_RANDOM=${RKP_BENCH_SWEEP_RANDOM:-50}
	SW_PER_FN=${RKP_BENCH_SWEEP_PER_FN:-5}
	SW_FUNCS=${RKP_BENCH_SWEEP_FUNCS:-kernel_clone do_sys_openat2 vfs_read vfs_write}
	sw_t0=$(date +%s)
	sw_native=0
	[ -e $NL ] && sw_native=1
	check "insmod rkp_trapfree.ko" insmod $MODDIR/rkp_trapfree.ko
	# sw_loop MODE: "N NS HITS", sweeploop's calls, its time and the hits.
	# vfork()'s time moves by a few thousand instructions a call now and
	# then (another task's work landing in the loop): the least of five.
	sw_loop() {
		case $1 in
		fork) n=100 r=5 ;; open) n=1000 r=1 ;; mix) n=300 r=1 ;; *) n=2000 r=1 ;;
		esac
		for _ in $(seq $r); do
			/bin/sweeploop $1 $n $SW |
				sed -n 's/^sweeploop: \([0-9]*\) calls in \([0-9]*\) ns, \([0-9-]*\) hits$/\1 \2 \3/p'
		done | sort -n -k2 | head -n 1
	}
	# sw_probe SIDE FN OFF POST MODE: "TRAPFREE NS HITS", the probe of SIDE
	# (k or rk) timed, or nothing when SIDE refused it.
	sw_probe() {
		echo "$1 $2 $3 $4" > $SW 2> /dev/null || return
		l=$NL
		[ $1 = rk ] && l=$RL
		if [ $1 = rk ] || grep -q "[ 	]$2+.*OPTIMIZED" $l; then
			echo wait > $SW 2> /dev/null ||
				{ [ $1 = k ] && diag "sweep $2+$3: the kernel's jump not in after 5 s"; }
		fi
		tf=0
		grep -q "[ 	]$2+.*\[\(OPTIMIZED\|FTRACE\)\]" $l && tf=1
		r=$(sw_loop $5)
		echo off > $SW
		# A removal leaves work behind (grace periods, ftrace's
		# trampolines), on either CPU: let it out of the next loop.
		sleep 0.05
		echo "$tf ${r#* }"
	}
	# sw_offset GROUP FN OFF MODE: one offset's line in /tmp/sw.res; false
	# when the kernel's kprobes refuse the offset.
	# Without the kernel's kprobes, the offsets are those rkprobes
	# accepts, and only its side is timed: its coverage alone.
	sw_offset() {
		if [ $sw_native = 1 ]; then
			echo "k $2 $3 0" > $SW 2> /dev/null || return
		else
			echo "rk $2 $3 0" > $SW 2> /dev/null || return
		fi
		echo off > $SW
		sleep 0.05
		none=$(sw_loop $4)
		kp= kq=
		[ $sw_native = 0 ] || kp=$(sw_probe k $2 $3 0 $4)
		rp=$(sw_probe rk $2 $3 0 $4)
		[ $sw_native = 0 ] || kq=$(sw_probe k $2 $3 1 $4)
		rq=$(sw_probe rk $2 $3 1 $4)
		# The baseline: the lesser of the loops before and after.
		none=$({ echo "$none"; sw_loop $4; } | sort -n -k2 | head -n 1)
		echo "$1 $2 $3 $none ${kp:-- - -} ${rp:-- - -} ${kq:-- - -} ${rq:-- - -}" >> /tmp/sw.res
	}
	: > /tmp/sw.res
	for fn in $SW_FUNCS; do
		case $fn in
		kernel_clone) mode=fork ;; do_sys_openat2) mode=open ;;
		vfs_read) mode=read ;; *) mode=write ;;
		esac
		for off in $(seq 0 $((${RKP_BENCH_SWEEP_OFFSETS:-256} - 1))); do
			sw_offset named $fn $off $mode
		done
		# Progress: the runner takes five minutes without a line for a hang.
		diag "sweep: $fn done, $(($(date +%s) - sw_t0)) s"
	done
	# The random functions: those the function tracer saw sweeploop's mix
	# call at least once a call in 20 calls, with a name that is unique in
	# ftrace's list, has no '.' (no .cold or .isra part), and is on neither
	# side's blacklist; drawn in a seeded random order.
	echo 0 > $TR/tracing_on
	echo function > $TR/current_tracer
	echo > $TR/trace
	sh -c "echo \$\$ > $TR/set_ftrace_pid; echo 1 > $TR/tracing_on; exec /bin/sweeploop mix 20" > /dev/null
	echo 0 > $TR/tracing_on
	sed -n 's/.*: \([A-Za-z0-9_]*\) <-.*/\1/p' $TR/trace | sort | uniq -c |
		awk '$1 >= 20 { print $2 }' > /tmp/sw.seen
	echo nop > $TR/current_tracer
	echo > $TR/set_ftrace_pid
	echo > $TR/trace
	echo 1 > $TR/tracing_on
	awk '{ print $1 }' $TR/available_filter_functions | sort | uniq -u > /tmp/sw.uniq
	{ sed -n 's/^[^	]*	//p' /sys/kernel/debug/rkprobes/blacklist
	  awk '{ print $2 }' /sys/kernel/debug/kprobes/blacklist 2> /dev/null
	  echo "$SW_FUNCS" | tr ' ' '\n'; } | sort -u > /tmp/sw.bl
	grep -x -F -f /tmp/sw.uniq /tmp/sw.seen | grep -v -x -F -f /tmp/sw.bl | grep -v '\.' |
		awk -v s=$SW_SEED 'BEGIN { srand(s) } { printf "%.9f %s\n", rand(), $1 }' |
		sort | awk '{ print $2 }' > /tmp/sw.pool
	diag "sweep: $(wc -l < /tmp/sw.seen) functions called once a mix call or more, $(wc -l < /tmp/sw.pool) in the pool"
	drawn=0
	for fn in $(cat /tmp/sw.pool); do
		[ $drawn -lt $SW_RANDOM ] || break
		echo "size $fn" > $SW 2> /dev/null || continue
		size=$(sed -n 's/^size //p' $SW)
		[ "$size" -gt 256 ] && size=256
		got=0
		for off in $(awk -v s=$SW_SEED -v n=$size 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%.9f %d\n", rand(), i }' |
			sort | awk '{ print $2 }'); do
			sw_offset random $fn $off mix && got=$((got + 1))
			[ $got -lt $SW_PER_FN ] || break
		done
		[ $got -gt 0 ] && drawn=$((drawn + 1))
		[ $((drawn % 10)) -ne 0 ] || [ $got -eq 0 ] ||
			diag "sweep: $drawn random functions done, $(($(date +%s) - sw_t0)) s"
	done
	check "rmmod rkp_trapfree" rmmod rkp_trapfree
	check "the sweep rows ran on $SW_RANDOM random functions ($drawn)" test "$drawn" -eq "$SW_RANDOM"
	# One line per offset (bench-plot --sweep draws one function's), then
	# the summary rows: the four functions, the random ones, all.
	awk -v native=$sw_native '
	function cost(ns, h) { return (ns - none) / h }
	{
		g = $1; fn = $2; off = $3; n = $4; none = $5
		# k pre, rk pre, k post, rk post: TRAPFREE NS HITS each; without
		# kprobes in the kernel, only the rk sides count.
		ok = 1
		for (i = 0; i < 4; i++) {
			tf[i] = $(7 + 3 * i); t[i] = $(8 + 3 * i); h[i] = $(9 + 3 * i)
			if (!native && i % 2 == 0) { t[i] = none; h[i] = 1; continue }
			if (h[i] == "-" || h[i] < n) ok = 0
		}
		for (i = 0; i < 4; i++) if (tf[i] == "-") tf[i] = 0
		c = ok ? sprintf("pre kprobes %d rkprobes %d, post kprobes %d rkprobes %d", cost(t[0], h[0]), cost(t[1], h[1]), cost(t[2], h[2]), cost(t[3], h[3])) : "pre - -, post - -"
		if (ok && !native) c = sprintf("pre kprobes - rkprobes %d, post kprobes - rkprobes %d", cost(t[1], h[1]), cost(t[3], h[3]))
		printf "# sweep offset %s+%d: trap-free kprobes %d rkprobes %d, with a post-handler kprobes %d rkprobes %d, reached %d (hits a call %.2f), %s\n", fn, off, tf[0], tf[1], tf[2], tf[3], ok, (h[native ? 0 : 1] == "-" ? 0 : h[native ? 0 : 1] / n), c
		for (gi = 0; gi < 2; gi++) {
			k = gi ? "all" : g
			tried[k]++; ktf[k] += tf[0]; rtf[k] += tf[1]; kqtf[k] += tf[2]; rqtf[k] += tf[3]
			if (!ok) continue
			m = ++reached[k]
			for (i = 0; i < 4; i++) { v[k, i, m] = cost(t[i], h[i]); sum[k, i] += v[k, i, m] }
		}
	}
	function median(k, i,   m, a, j, x, y, tmp) {
		m = reached[k]
		for (j = 1; j <= m; j++) a[j] = v[k, i, j]
		for (x = 2; x <= m; x++) for (y = x; y > 1 && a[y - 1] > a[y]; y--) { tmp = a[y]; a[y] = a[y - 1]; a[y - 1] = tmp }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	function ratio(a, b) { return b > 0 ? a / b : 0 }
	END {
		split("named random all", order, " ")
		name["named"] = "kernel_clone, do_sys_openat2, vfs_read, vfs_write (every offset " (native ? "the kernel" : "rkprobes") " accepts)"
		name["random"] = "random functions (sampled offsets)"
		name["all"] = "all"
		for (o = 1; o <= 3; o++) {
			k = order[o]
			if (!(k in tried)) continue
			m = reached[k]
			line = sprintf("# sweep %s: %d offsets tried, %d reached; trap-free kprobes %d rkprobes %d (trapping kprobes %d rkprobes %d), with a post-handler kprobes %d rkprobes %d", name[k], tried[k], m, ktf[k], rtf[k], tried[k] - ktf[k], tried[k] - rtf[k], kqtf[k], rqtf[k])
			if (!native) {
				line = sprintf("# sweep %s, no kprobes in the kernel: %d offsets tried, %d reached; trap-free rkprobes %d (trapping %d), with a post-handler %d", name[k], tried[k], m, rtf[k], tried[k] - rtf[k], rqtf[k])
				for (p = 0; p < 2 && m; p++)
					line = line sprintf("; %s: mean rkprobes %d, median %d", p ? "pre+post" : "pre", sum[k, 2 * p + 1] / m, median(k, 2 * p + 1))
			} else if (m) {
				for (p = 0; p < 2; p++) {
					km = sum[k, 2 * p] / m; rm = sum[k, 2 * p + 1] / m
					kd = median(k, 2 * p); rd = median(k, 2 * p + 1)
					line = line sprintf("; %s: mean kprobes %d rkprobes %d (%.2fx), median kprobes %d rkprobes %d (%.2fx)", p ? "pre+post" : "pre", km, rm, ratio(rm, km), kd, rd, ratio(rd, kd))
				}
			}
			print line
		}
	}' /tmp/sw.res
	diag "sweep rows: $(($(date +%s) - sw_t0)) s of guest time"
fi

check "rmmod rkprobes" rmmod rkprobes
