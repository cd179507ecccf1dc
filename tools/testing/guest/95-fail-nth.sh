# SPDX-License-Identifier: GPL-2.0
# Allocation failures everywhere. Each operation on rkprobes (loading it,
# writing a p, r or argument-fetching definition to kprobe_events, enabling,
# disabling and removing the event, loading and unloading a sample client,
# unloading rkprobes) is made again and again by the fail-nth helper with its
# 1st, 2nd, ... allocation failed (failslab and fail_page_alloc, for the
# helper's own task only, through /proc/thread-self/fail-nth), until a run
# reaches its end with nothing injected: that count is the operation's N.
# Every attempt must succeed or fail with ENOMEM and leave the state exactly
# as before it (when it failed) or as an uninjected run leaves it (when it
# succeeded): the modules loaded, rkprobes' list, kprobe_events, the tracefs
# events and their enable files, rkprobes' debugfs files, and the probed
# functions' first bytes as the kernel's own kprobe_events reads them. After
# a failed attempt, the same operation without injection must work.
# Documentation/reliability.rst says what this covers and what not.

KE=/sys/kernel/debug/rkprobes/kprobe_events
DE=/sys/kernel/debug/rkprobes/dynamic_events
LIST=/sys/kernel/debug/rkprobes/list
T=/sys/kernel/tracing
EV=$T/events/rkprobes
FEV=$T/events/rkfprobes/rkp_fn_fret
DBG=/sys/kernel/debug
[ -e $T/trace ] || mount -t tracefs nodev $T
# A bound on N, so that an operation that never completes uninjected fails
# instead of looping: the largest N seen is a few hundred.
MAXN=${FAILNTH_MAX:-3000}

if [ ! -e /proc/self/fail-nth ] || [ ! -d $DBG/failslab ] || [ ! -d $DBG/fail_page_alloc ]; then
	skip "allocation failures" "kernel without FAILSLAB, FAIL_PAGE_ALLOC and their debugfs files"
	return 0 2>/dev/null || exit 0
fi

# fail-nth counts only allocations that failslab and fail_page_alloc would
# consider: by default both ignore those that may sleep (GFP_KERNEL, most of
# them) and fail_page_alloc ignores order 0. Consider all of them. verbose=1:
# one notice per injected failure in the kernel log, no stack dump (the
# console is a slow serial port).
for f in failslab fail_page_alloc; do
	echo N > $DBG/$f/ignore-gfp-wait
	echo 1 > $DBG/$f/verbose
done
echo N > $DBG/fail_page_alloc/ignore-gfp-highmem
echo 0 > $DBG/fail_page_alloc/min-order
# kprobe_example prints at every fork: keep that off the serial console
# (warnings and errors still reach it).
echo 5 > /proc/sys/kernel/printk
# Enabling the first event starts the tracing core's comm and tgid
# recording, which registers probes on sched_switch and sched_wakeup; 6.12
# ignores a failure there (tracing_start_sched_switch() returns nothing)
# and WARNs in tracepoint_probe_unregister() when the event is disabled.
# That is the kernel's, not rkprobes': with the recording off, the sweeps
# go through rkprobes' paths only. (On the test kernels with kprobe events,
# the peek event below holds the recording and hid this.)
RECORD_CMD=$(cat $T/options/record-cmd 2>/dev/null)
RECORD_TGID=$(cat $T/options/record-tgid 2>/dev/null)
echo 0 > $T/options/record-cmd 2>/dev/null
echo 0 > $T/options/record-tgid 2>/dev/null

# The probed functions' first bytes, read by the kernel's own kprobe_events
# (@SYM fetches memory at a symbol) from a probe on sync(2), recorded in a
# tracing instance of its own. Not on a kernel without CONFIG_KPROBE_EVENTS.
PEEK=0
PT=$T/instances/rkp_fail_nth
if [ -w $T/kprobe_events ] && mkdir $PT 2>/dev/null; then
	args=
	for i in 0 8 16 24 32 40; do args="$args v$i=@vfs_read+$i:x64"; done
	for i in 0 8; do args="$args k$i=@kernel_clone+$i:x64 o$i=@do_sys_openat2+$i:x64"; done
	if echo "p:rkp_fail_nth/peek __x64_sys_sync$args" >> $T/kprobe_events &&
		echo 1 > $PT/events/rkp_fail_nth/peek/enable; then
		PEEK=1
	fi
fi
# peek prints each function's bytes in memory order, "v=... k=... o=...".
# The 4 bytes after an e8 at offset 0 or 4 are masked: that is the ftrace
# call site while ftrace traces the function, and the call's target is a
# trampoline ftrace allocates anew each time it is enabled; the e8 itself
# (armed) against the 5-byte NOP (not) is compared. At the int3 site in
# vfs_read (SITE, once found), an int3 and the optimizer's jump (or a jump
# being written: int3, tail, head) are both "armed": the five bytes from
# the site read AAAAAAAAAA. Which of them a peek sees depends on when the
# optimizer's delayed work (a Tasks RCU grace period, seconds under TCG)
# ran, not on the operation under test.
peek() {
	if [ $PEEK = 1 ]; then
		echo > $PT/trace
		sync
		awk -v site="${SITE:--1}" '/ peek: / { l = $0 }
		END {
			sub(/.* peek: \([^)]*\) /, "", l)
			n = split(l, f, " ")
			for (i = 1; i <= n; i++) {
				split(f[i], kv, "=")
				h = substr(kv[2], 3)
				while (length(h) < 16)
					h = "0" h
				le = ""
				for (j = 15; j >= 1; j -= 2)
					le = le substr(h, j, 2)
				b[substr(kv[1], 1, 1)] = b[substr(kv[1], 1, 1)] le
			}
			out = ""
			split("v k o", fns, " ")
			for (i = 1; i <= 3; i++) {
				s = b[fns[i]]
				for (o = 0; o <= 4; o += 4)
					if (substr(s, 2 * o + 1, 2) == "e8")
						s = substr(s, 1, 2 * o + 2) "xxxxxxxx" substr(s, 2 * o + 11)
				if (fns[i] == "v" && site >= 0) {
					a = substr(s, 2 * site + 1, 2)
					if (a == "cc" || a == "e9")
						s = substr(s, 1, 2 * site) "AAAAAAAAAA" substr(s, 2 * site + 11)
				}
				out = out (i > 1 ? " " : "") fns[i] "=" s
			}
			print out
		}' $PT/trace
	else
		echo "n/a"
	fi
}
if [ $PEEK = 1 ]; then
	PRISTINE=$(peek)
	check "the probed functions' bytes can be read (kernel kprobe_events)" \
		sh -c "echo '$PRISTINE' | grep -Eq '^v=[0-9a-fx]{96} k=[0-9a-fx]{32} o=[0-9a-fx]{32}$'"
else
	skip "the probed functions' bytes" "kernel without CONFIG_KPROBE_EVENTS: not compared"
	PRISTINE="n/a"
fi

# The state an operation may change, without the bytes: the modules loaded,
# rkprobes' debugfs files, its list, kprobe_events, and each tracefs event
# with its enable file. One awk and one sort (the guest is slow to fork).
state() {
	echo "debugfs:" $DBG/rkprobes/*
	# busybox awk stops at a file that does not exist.
	set --
	for f in /proc/modules $LIST $KE $DE $EV/*/enable $FEV/enable; do
		[ -e "$f" ] && set -- "$@" "$f"
	done
	[ $# -gt 0 ] || return 0
	awk 'FILENAME == "/proc/modules" {
			if ($1 ~ /^(rkprobes|kprobe_example|kretprobe_example)$/) print "module " $1
			next
		}
		FILENAME ~ /\/enable$/ { n = split(FILENAME, p, "/"); print "event " p[n - 1] " enable=" $0; next }
		{ print FILENAME ": " $0 }' "$@" | sort
}

# The three views of the events agree: each event in kprobe_events has its
# tracefs directory and no directory lacks its event, and rkprobes lists a
# probe for each probe line.
agree() {
	evs=$(sed -n 's/^[pr][0-9]*:rkprobes\/\([^ ]*\) .*/\1/p' $KE 2>/dev/null | sort -u)
	dirs=$(for d in $EV/*/; do [ -d "$d" ] && basename "$d"; done | sort)
	[ "$evs" = "$dirs" ] || { echo "kprobe_events: $evs / tracefs: $dirs"; return 1; }
	[ -e $KE ] || return 0
	[ "$(grep -c . $LIST)" -ge "$(grep -c . $KE)" ] ||
		{ echo "fewer probes listed than defined"; return 1; }
}

# run OP N: the operation OP (a function below) with the N-th allocation
# failed (0: none); prints the helper's "rc=R errno=E injected=I" line.
ins() { fail-nth "$1" insmod $MODDIR/"$2".ko "$3"; }
wr() { fail-nth "$1" write "$2" "$3"; }

# bytes_ok ARMED: the probed bytes are the pristine ones (ARMED=0), or not
# (ARMED=1: a probe is armed, as far as the kernel's kprobe_events can tell).
bytes_ok() {
	[ $PEEK = 1 ] || return 0
	x=$(peek)
	if [ "$1" = 1 ]; then
		[ "$x" != "$PRISTINE" ]
	else
		[ "$x" = "$PRISTINE" ]
	fi
}

# sweep NAME OP UNDO ARMED: OP N makes the operation with its N-th
# allocation failed; UNDO (uninjected) takes a successful OP back. ARMED is 1
# when a successful OP leaves a probe armed (the bytes differ from the
# pristine ones) and 0 when it leaves none. A first run without injection
# gives the state to expect after a success; then N = 1, 2, ... until a run
# completes uninjected, whose result is left in place.
sweep() {
	name=$1 op=$2 undo=$3 armed=$4
	s0=$(state)
	x0=$(peek)
	r=$($op 0)
	case $r in
	rc=-1*) not_ok "$name: works without injection ($r)"; return ;;
	esac
	s1=$(state)
	if ! out=$(agree); then
		not_ok "$name: kprobe_events, tracefs and the list agree after it ($out)"
		return
	fi
	$undo
	if [ "$(state)" != "$s0" ] || [ "$(peek)" != "$x0" ]; then
		not_ok "$name: undone without injection"
		return
	fi
	n=1 failed=0 absorbed=0 bad= last=
	while [ $n -le $MAXN ]; do
		before=$(state)
		xb=$(peek)
		vb=$(dmesg | grep -c 'failed to validate module \[')
		r=$($op $n)
		# The kernel's module loader validates a module's BTF before the
		# module runs; a failed allocation there can fail the load with
		# another errno (-ELOOP from its type walk): the kernel's, not
		# rkprobes', and handled as a failed allocation is.
		if [ "$(dmesg | grep -c 'failed to validate module \[')" -gt "$vb" ]; then
			r=$(echo "$r" | sed 's/errno=[A-Z0-9]*/errno=ENOMEM/')
		fi
		case $r in
		"")
			bad="n=$n: the operation could not be made"
			;;
		rc=-1*injected=0)
			bad="n=$n: failed with nothing injected: $r"
			;;
		*injected=0)
			last=1
			[ "$(state)" = "$s1" ] || bad="n=$n: the uninjected run left another state"
			;;
		rc=-1*errno=ENOMEM*)
			failed=$((failed + 1))
			if [ "$(state)" != "$before" ]; then
				bad="n=$n: $r changed the state"
			elif [ "$(peek)" != "$xb" ]; then
				bad="n=$n: $r changed the probed bytes"
			else
				r2=$($op 0)
				case $r2 in
				rc=-1*) bad="n=$n: after $r, the retry failed: $r2" ;;
				*) [ "$(state)" = "$s1" ] || bad="n=$n: after $r, the retry left another state" ;;
				esac
			fi
			;;
		rc=-1*)
			bad="n=$n: failed with another errno than ENOMEM: $r"
			;;
		*)
			# An injected failure that the operation absorbed (a
			# fallback, or an allocation whose failure only costs a
			# report, as kmemleak's and KASAN's own do).
			absorbed=$((absorbed + 1))
			[ "$(state)" = "$s1" ] || bad="n=$n: $r succeeded, but left another state"
			;;
		esac
		[ -n "$bad" ] || bytes_ok $armed || bad="n=$n: $r: the probed bytes are wrong (armed should be $armed)"
		if [ -n "$bad" ]; then
			not_ok "$name: $bad"
			diag "state before:"
			echo "$before" | sed 's/^/#   /'
			diag "state after:"
			state | sed 's/^/#   /'
			diag "bytes before: $xb"
			diag "bytes after:  $(peek)"
			diag "pristine:     $PRISTINE"
			diag "kernel log:"
			dmesg | tail -n 30 | sed 's/^/#   /'
			# Carry on from the state a success leaves, if the
			# operation left it untouched, so that the next
			# operations are still tried.
			[ "$(state)" != "$before" ] || $op 0 > /dev/null
			return
		fi
		[ -z "$last" ] || break
		$undo
		n=$((n + 1))
		# Progress for the runner, which fails a silent guest.
		[ $((n % 25)) -ne 0 ] || echo "# $name: at N=$n"
	done
	if [ -z "$last" ]; then
		not_ok "$name: still injecting after $MAXN allocations"
		return
	fi
	ok "$name: N=$n ($failed failed with ENOMEM and changed nothing, $absorbed absorbed the failure)"
	echo "$name: N=$n, $failed ENOMEM, $absorbed absorbed" >> /tmp/fail-nth.summary
}
: > /tmp/fail-nth.summary

# load_sweep NAME OP UNDO ARMED: a sweep of a module load, or, with
# FAILNTH_LOADS=0 (the debug kernel's run, where the kernel's module loader
# makes about 350 allocations of its own per load and a sweep takes ten
# minutes), the load once without injection. The test kernels sweep them.
load_sweep() {
	if [ "${FAILNTH_LOADS:-1}" = 0 ]; then
		r=$($2 0)
		case $r in
		rc=0*) skip "$1: sweep" "FAILNTH_LOADS=0: swept on the test kernels" ;;
		*) not_ok "$1: works without injection ($r)" ;;
		esac
	else
		sweep "$@"
	fi
}

# Loading rkprobes.
op_load() { ins "$1" rkprobes; }
undo_load() { rmmod rkprobes; }
check "rkprobes not loaded yet" sh -c "! grep -q '^rkprobes ' /proc/modules"
load_sweep "insmod rkprobes" op_load undo_load 0
check "rkprobes loaded" grep -q '^rkprobes ' /proc/modules

# An int3 site in vfs_read: the first offset after the ftrace call site
# that rkprobes accepts (an instruction boundary).
SITE=
for off in $(seq 9 40); do
	if echo "p:rkp_fn_probe vfs_read+$off" >> $KE 2>/dev/null; then
		grep -q 'FTRACE' $LIST || SITE=$off
		echo "-:rkp_fn_probe" >> $KE
		[ -n "$SITE" ] && break
	fi
done
check "an int3 site in vfs_read (+$SITE)" test -n "$SITE"
# With SITE known, peek masks an armed site only: the pristine bytes still
# read as they did.
[ $PEEK = 1 ] && expect_eq "vfs_read's bytes at +$SITE read as pristine" "$PRISTINE" "$(peek)"
# A bystander: an event that no operation may disturb.
check "a bystander event" sh -c "echo 'p:rkp_fn_by vfs_write' >> $KE"

# The three definitions: entry (an ftrace site), an int3 site with arguments,
# a return probe with the return value.
DEF_ENTRY="p:rkp_fn_entry vfs_read"
DEF_SITE="p:rkp_fn_site vfs_read+$SITE a=%di:x64 b=+0(%si):u8 c=\$comm"
DEF_RET="r:rkp_fn_ret vfs_read ret=\$retval:s64"
for ev in entry site ret; do
	eval "def=\$DEF_$(echo $ev | tr a-z A-Z)"
	eval "op_def_$ev() { wr \"\$1\" $KE '$def'; }"
	eval "undo_def_$ev() { echo '-:rkp_fn_$ev' >> $KE; }"
	eval "op_enable_$ev() { wr \"\$1\" $EV/rkp_fn_$ev/enable 1; }"
	eval "undo_enable_$ev() { echo 0 > $EV/rkp_fn_$ev/enable; }"
	eval "op_disable_$ev() { wr \"\$1\" $EV/rkp_fn_$ev/enable 0; }"
	eval "undo_disable_$ev() { echo 1 > $EV/rkp_fn_$ev/enable; }"
	eval "op_remove_$ev() { wr \"\$1\" $KE '-:rkp_fn_$ev'; }"
	eval "undo_remove_$ev() { echo '$def' >> $KE; }"

	sweep "kprobe_events: add '$def'" op_def_$ev undo_def_$ev 0
	check "$ev: defined" grep -q "rkp_fn_$ev " $KE
	sweep "$ev: enable" op_enable_$ev undo_enable_$ev 1
	expect_eq "$ev: enabled" 1 "$(cat $EV/rkp_fn_$ev/enable)"
	sweep "$ev: disable" op_disable_$ev undo_disable_$ev 0
	expect_eq "$ev: disabled" 0 "$(cat $EV/rkp_fn_$ev/enable)"
	sweep "$ev: remove" op_remove_$ev undo_remove_$ev 0
	expect_fail "$ev: removed" grep -q "rkp_fn_$ev " $KE
done
# An f return event on a glob: its kretprobes share one pool, which each
# leaves when the event is removed and the last retires, also when the
# removal cannot allocate its batch and unregisters them one at a time.
DEF_FRET="f:rkp_fn_fret vfs_read*%return"
op_def_fret() { wr "$1" $DE "$DEF_FRET"; }
undo_def_fret() { echo '-:rkp_fn_fret' >> $DE; }
op_enable_fret() { wr "$1" $FEV/enable 1; }
undo_enable_fret() { echo 0 > $FEV/enable; }
op_disable_fret() { wr "$1" $FEV/enable 0; }
undo_disable_fret() { echo 1 > $FEV/enable; }
op_remove_fret() { wr "$1" $DE '-:rkp_fn_fret'; }
undo_remove_fret() { echo "$DEF_FRET" >> $DE; }
sweep "dynamic_events: add '$DEF_FRET'" op_def_fret undo_def_fret 0
expect_eq "fret: a probe on each vfs_read* function" \
	"$(awk '$1 ~ /^vfs_read/ { print $1 }' $T/available_filter_functions | sort -u | wc -l)" \
	"$(grep -c ' r  vfs_read' $LIST)"
sweep "fret: enable" op_enable_fret undo_enable_fret 1
sweep "fret: disable" op_disable_fret undo_disable_fret 0
sweep "fret: remove" op_remove_fret undo_remove_fret 0
expect_fail "fret: removed" grep -q "rkp_fn_fret " $DE
expect_eq "fret: no probe left" 0 "$(grep -c ' r  vfs_read' $LIST)"

check "the bystander is intact" sh -c "grep -q '^p:rkprobes/rkp_fn_by vfs_write' $KE && test -d $EV/rkp_fn_by"
check "remove the bystander" sh -c "echo '-:rkp_fn_by' >> $KE"

# Sample clients, loaded and unloaded.
op_kp_load() { ins "$1" kprobe_example symbol=kernel_clone; }
undo_kp_load() { rmmod kprobe_example; }
op_kp_unload() { fail-nth "$1" rmmod kprobe_example; }
undo_kp_unload() { insmod $MODDIR/kprobe_example.ko symbol=kernel_clone; }
load_sweep "insmod kprobe_example symbol=kernel_clone" op_kp_load undo_kp_load 1
check "kprobe_example loaded" grep -q '^kprobe_example ' /proc/modules
sweep "rmmod kprobe_example" op_kp_unload undo_kp_unload 0
expect_fail "kprobe_example unloaded" grep -q '^kprobe_example ' /proc/modules

op_krp_load() { ins "$1" kretprobe_example func=do_sys_openat2; }
undo_krp_load() { rmmod kretprobe_example; }
op_krp_unload() { fail-nth "$1" rmmod kretprobe_example; }
undo_krp_unload() { insmod $MODDIR/kretprobe_example.ko func=do_sys_openat2; }
load_sweep "insmod kretprobe_example func=do_sys_openat2" op_krp_load undo_krp_load 1
check "kretprobe_example loaded" grep -q '^kretprobe_example ' /proc/modules
sweep "rmmod kretprobe_example" op_krp_unload undo_krp_unload 0
expect_fail "kretprobe_example unloaded" grep -q '^kretprobe_example ' /proc/modules

# Unloading rkprobes, after all of the above went through it.
op_unload() { fail-nth "$1" rmmod rkprobes; }
undo_unload() { insmod $MODDIR/rkprobes.ko; }
sweep "rmmod rkprobes" op_unload undo_unload 0
expect_fail "rkprobes unloaded" grep -q '^rkprobes ' /proc/modules
check "rkprobes' debugfs directory is gone" sh -c "! test -e $DBG/rkprobes"
check "rkprobes' tracefs events are gone" sh -c "! ls -d $EV/*/ 2>/dev/null | grep -q ."

diag "N per operation:"
sed 's/^/#   /' /tmp/fail-nth.summary
if [ $PEEK = 1 ]; then
	echo 0 > $PT/events/rkp_fail_nth/peek/enable
	echo '-:rkp_fail_nth/peek' >> $T/kprobe_events
	rmdir $PT
fi
for f in failslab fail_page_alloc; do
	echo Y > $DBG/$f/ignore-gfp-wait
done
echo 8 > /proc/sys/kernel/printk
if [ -n "$RECORD_CMD" ]; then echo $RECORD_CMD > $T/options/record-cmd; fi
if [ -n "$RECORD_TGID" ]; then echo $RECORD_TGID > $T/options/record-tgid; fi
