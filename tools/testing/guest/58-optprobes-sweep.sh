# SPDX-License-Identifier: GPL-2.0
# kprobe_opt_types.tc as a sweep: at every offset 0..255 of four frequently
# called functions where both accept a probe, a kprobe event of the kernel's
# and then one of rkprobes' (the kernel's removed first, and its optimizer
# waited for by rkprobes), each enabled and hit; rkprobes must optimize
# wherever the kernel's kprobes do (both lists show [OPTIMIZED] as soon as
# a probe is queued), and at more offsets in all, where the kernel refuses
# a relative branch in the region; the function must go on working.
#
# Then, at every offset where rkprobes optimized, the registers: an event
# that records every register of pt_regs and the byte at the probe (0xcc
# for an int3 hit, 0xe9 through the jump) is hit twice with optimization off
# and twice through the jump, by the same calls from the same stack
# (opt-call, pinned to CPU 0); every register that the three int3 hits
# show alike must be the same through the jump (but a dead register that
# differs between the two jump rounds), and the calls' results must not
# change. Offsets 24 bytes apart or more are done side by side, in the four
# functions at once, so that one optimizer pass serves many. The same
# rounds again with a post-handler (rkp_postregs): the registers it sees
# through the jump must be those after the int3 path's step.

# On the kernel without kprobes, the sweep finds where rkprobes optimizes
# alone, and the register comparison runs on those offsets.
native=1
if [ ! -e /sys/kernel/debug/kprobes/list ] || [ ! -e /sys/kernel/tracing/kprobe_events ]; then
	native=0
	skip "rkprobes optimizes where the kernel's kprobes do" "kernel without CONFIG_KPROBE_EVENTS"
fi
KE=/sys/kernel/debug/rkprobes/kprobe_events
L=/sys/kernel/debug/rkprobes/list
T=/sys/kernel/tracing
NL=/sys/kernel/debug/kprobes/list

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
t0=$(date +%s)
all_nat=0 all_rkp=0
for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
	both=0 nat=0 rkp=0 differ=0 more=0 extra=
	for off in $(seq 0 255); do
		[ $((off % 64)) -ne 0 ] || echo "# $fn: at offset $off"
		n=-
		if [ $native = 1 ]; then
			echo "p:rkp_nat $fn+$off" > $T/kprobe_events 2>/dev/null || continue
			echo 1 > $T/events/kprobes/rkp_nat/enable
			grep -q "$fn+0x.*OPTIMIZED" $NL && n=1 || n=0
			echo 0 > $T/events/kprobes/rkp_nat/enable
			echo > $T/kprobe_events
		fi
		echo "p:rkp_opt $fn+$off" > $KE 2>/dev/null || continue
		if echo 1 > $T/events/rkprobes/rkp_opt/enable 2>/dev/null; then
			grep -q "$fn+0x.*OPTIMIZED" $L && r=1 || r=0
			[ $r = 1 ] && eval "opt_$fn=\"\$opt_$fn $off\""
			dd if=/proc/version of=/dev/null 2>/dev/null
			echo 0 > $T/events/rkprobes/rkp_opt/enable
			both=$((both + 1))
			[ $native = 1 ] && nat=$((nat + n))
			rkp=$((rkp + r))
			if [ $native = 1 ] && [ "$n" = 1 ] && [ "$r" = 0 ]; then
				differ=$((differ + 1))
				diag "$fn+$off: optimized by the kernel, not by rkprobes"
			fi
			if [ $native = 1 ] && [ "$n" = 0 ] && [ "$r" = 1 ]; then
				more=$((more + 1))
				extra="$extra $off"
			fi
		fi
		echo > $KE
	done
	if [ $native = 1 ]; then
		diag "$fn: $both offsets probed by both; optimized: kernel $nat, rkprobes $rkp"
		diag "$fn: optimized by rkprobes alone ($more):$extra"
		all_nat=$((all_nat + nat)) all_rkp=$((all_rkp + rkp))
	else
		diag "$fn: $both offsets probed; optimized by rkprobes: $rkp"
	fi
	check "$fn: probed at 20 offsets or more ($both)" test "$both" -ge 20
	check "$fn: optimized somewhere ($rkp)" test "$rkp" -ge 1
	[ $native = 1 ] && expect_eq "$fn: optimized wherever the kernel's kprobes are" 0 "$differ"
done
# Where the kernel refuses a relative branch in the region, rkprobes moves
# it into the detour: more offsets are trap-free in these four functions.
[ $native = 1 ] && check "optimized at more offsets than the kernel ($all_rkp > $all_nat)" \
	test "$all_rkp" -gt "$all_nat"
diag "sweep: $(($(date +%s) - t0)) s"
check "fork, open, read and write still work" sh -c 'cat /proc/version > /tmp/v && test -s /tmp/v'

OPT=/sys/kernel/debug/rkprobes/optimization
REGS="ip=%ip sp=%sp fl=%flags cs=%cs oa=%orig_ax ax=%ax bx=%bx cx=%cx dx=%dx si=%si di=%di"
REGS="$REGS bp=%bp r8=%r8 r9=%r9 r10=%r10 r11=%r11 r12=%r12 r13=%r13 r14=%r14 r15=%r15"
t0=$(date +%s)
# The shell and what it runs stay off CPU 0, where opt-call runs: the
# per-CPU slab freelists that openat() and fork() allocate from then see the
# same calls each round, so their pointers in registers repeat.
taskset -p 2 $$ > /dev/null
rm -f /tmp/oc.in /tmp/oc.out
mkfifo /tmp/oc.in /tmp/oc.out
opt-call < /tmp/oc.in > /tmp/oc.out &
exec 3>/tmp/oc.in 4</tmp/oc.out
read -r hpid <&4
# One round of opt-call's calls; its results in $res.
calls() {
	echo >&3
	read -r res <&4
}
# The event of "fn:off".
evname() {
	echo "rg_${1%%:*}_${1#*:}"
}
# jumped EVS FILE: whether every event of EVS ("fn:off ...") has a record
# taken through the jump (the byte at the probe is the jump's 0xe9).
jumped() {
	awk -v evs="$1" 'BEGIN { n = split(evs, e); for (i = 1; i <= n; i++) { sub(/:/, "_", e[i]); want["rg_" e[i] ":"] = 1 } }
		/ op=0xe9/ { for (i = 1; i <= NF; i++) if ($i in want) got[$i] = 1 }
		END { for (k in want) if (!(k in got)) exit 1 }' "$2"
}
# judge EVS INT3 JUMP INT3AGAIN: for each event, the first record of each
# of the two int3 rounds before the jump (A, B; an offset in a loop is hit
# more than once a round), the first through the jump (C) and the first of
# the int3 round after it (D). Prints one line per event: "unreached",
# "nojump" (not int3, int3, jump, int3), or "ok" / "bad" followed by the
# registers of C that differ from A where A, B and D agree and where the
# first record of a second round through the jump (E) agrees with C: the
# record is taken from the registers the trampoline saved before anything
# ran, so a register the detour got wrong is wrong alike in both jump
# rounds, while a dead scratch register that a callee left behind (seen: r11
# after add_device_randomness() in kernel_clone, which holds hash state or
# not depending on the pool's fill) can differ between them. ip, sp and cs
# must agree in A and B: the calls come from the same place.
judge() {
	awk -v evs="$1" -v int3="$2" -v jump="$3" -v again="$4" -v jump2="$5" '
	function rec(line, arr,   w, n, i, kv) {
		sub(/^.*\) /, "", line); n = split(line, w, " ")
		for (i = 1; i <= n; i++) { split(w[i], kv, "="); arr[kv[1]] = kv[2] }
	}
	BEGIN {
		n = split(evs, e)
		for (i = 1; i <= n; i++) { name[i] = e[i]; sub(/:/, "_", name[i]); name[i] = " rg_" name[i] ": " }
		while ((getline l < int3) > 0) for (i = 1; i <= n; i++) if (index(l, name[i])) I[i, ++ni[i]] = l
		while ((getline l < jump) > 0) for (i = 1; i <= n; i++) if (index(l, name[i]) && !(i in J)) J[i] = l
		while ((getline l < again) > 0) for (i = 1; i <= n; i++) if (index(l, name[i]) && !(i in D)) D[i] = l
		while ((getline l < jump2) > 0) for (i = 1; i <= n; i++) if (index(l, name[i]) && !(i in E)) E[i] = l
		for (i = 1; i <= n; i++) {
			if (ni[i] == 0) { print e[i], "unreached"; continue }
			delete A; delete B; delete C; delete G; delete H
			rec(I[i, 1], A); rec(I[i, int(ni[i] / 2) + 1], B); rec(J[i], C); rec(D[i], G); rec(E[i], H)
			if (ni[i] % 2 || A["op"] != "0xcc" || B["op"] != "0xcc" || C["op"] != "0xe9" || G["op"] != "0xcc") {
				print e[i], "nojump", ni[i], A["op"], B["op"], C["op"], G["op"]; continue
			}
			d = ""; s = ""
			for (k in A) {
				if (k == "op" || A[k] != B[k] || A[k] != G[k] || C[k] == A[k]) continue
				if (H["op"] == "0xe9" && H[k] != C[k]) s = s " " k
				else d = d " " k ": int3 " A[k] ", jump " C[k] ";"
			}
			if (A["ip"] != B["ip"] || A["sp"] != B["sp"] || A["cs"] != B["cs"]) d = d " int3 hits disagree on ip, sp or cs;"
			print e[i], (d == "" ? "ok" : "bad" d) (s == "" ? "" : " scratch" s)
		}
	}'
}
total=0
for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
	eval "set -- \$opt_$fn"
	total=$((total + $#))
	eval "post_$fn=\$opt_$fn"
done
# A difference is looked at again, up to twice, and counts only if it
# shows every time: a scratch register that a callee left behind can hold
# another value in one round (seen: r11 at a few offsets of kernel_clone,
# where a callee took another path), while a register that the detour got
# wrong is wrong every time.
rounds=0 compared=0 regs_bad=0 res_bad=0 unopt=0 unreached=0 retried=0
attempt=1
while :; do
	evs=""
	if [ -z "$(eval echo \$opt_kernel_clone\$opt_do_sys_openat2\$opt_vfs_read\$opt_vfs_write)" ]; then
		[ $attempt -lt 3 ] || break
		attempt=$((attempt + 1))
		for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
			eval "opt_$fn=\$retry_$fn retry_$fn="
		done
	fi
	# Offsets of one function 24 bytes apart or more (a region is at most
	# 19) go in the same round; the rest wait for the next.
	for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
		eval "left=\$opt_$fn"
		last=-100 rest=""
		for off in $left; do
			if [ "$off" -lt $((last + 24)) ]; then
				rest="$rest $off"
				continue
			fi
			last=$off
			ev=$(evname $fn:$off)
			if echo "p:$ev $fn+$off $REGS op=@$fn+$off:x8" >> $KE &&
				echo "common_pid == $hpid" > $T/events/rkprobes/$ev/filter &&
				echo 1 > $T/events/rkprobes/$ev/enable; then
				evs="$evs $fn:$off"
			else
				regs_bad=$((regs_bad + 1))
				diag "$fn+$off: the register event could not be set up"
			fi
		done
		eval "opt_$fn=\"\$rest\""
	done
	[ -n "$evs" ] || continue
	echo 0 > $OPT
	echo > $T/trace
	calls; r1=$res
	calls; r2=$res
	cp $T/trace /tmp/int3.trace
	echo 1 > $OPT
	t=0
	while :; do
		echo > $T/trace
		calls; r3=$res
		cp $T/trace /tmp/jump.trace
		jumped "$evs" /tmp/jump.trace && break
		t=$((t + 1))
		[ $t -lt 100 ] || break
		sleep 0.1
	done
	echo > $T/trace
	calls; r5=$res
	cp $T/trace /tmp/jump2.trace
	echo 0 > $OPT
	echo > $T/trace
	calls; r4=$res
	cp $T/trace /tmp/again.trace
	echo 1 > $OPT
	judge "$evs" /tmp/int3.trace /tmp/jump.trace /tmp/again.trace /tmp/jump2.trace > /tmp/judge.out
	while read -r e verdict rest; do
		case $verdict in
		unreached) unreached=$((unreached + 1)) ;;
		nojump) unopt=$((unopt + 1)); diag "$e: not int3, int3, jump, int3: $rest" ;;
		ok)
			compared=$((compared + 1))
			[ -z "$rest" ] || diag "$e: differs between the jump rounds, not compared:${rest#scratch}" ;;
		*)
			diag "$e (attempt $attempt):$rest"
			if [ $attempt -lt 3 ]; then
				retried=$((retried + 1))
				fn=${e%%:*}
				eval "retry_$fn=\"\$retry_$fn ${e#*:}\""
			else
				compared=$((compared + 1))
				regs_bad=$((regs_bad + 1))
			fi ;;
		esac
	done < /tmp/judge.out
	if [ "$r1" != "$r2" ] || [ "$r1" != "$r3" ] || [ "$r1" != "$r4" ] || [ "$r1" != "$r5" ]; then
		res_bad=$((res_bad + 1))
		diag "round $rounds: results '$r1' '$r2' '$r3' '$r4' '$r5'"
	fi
	echo 0 > $T/events/rkprobes/enable
	echo > $KE
	rounds=$((rounds + 1))
	echo "# register round $rounds: $compared offsets compared"
done

# The same for post-handlers, at the same offsets: a probe with a
# post-handler alone (rkp_postregs) is optimized where its first
# instruction is one the int3 path steps out of line and the detour has
# room to call the post-handler after it. There, the registers the
# post-handler sees through the jump (after the detour ran the
# instruction) must be those it sees at an int3 hit (after the step), in
# the same four rounds; the rest stay trapping, counted.
PR=/sys/kernel/debug/rkp_postregs
# prround N FILE: phase N's records of the module's output FILE as judge
# reads an event's records (" rg_FN_OFF: op=... ip=...").
prround() {
	sed -n "s/^$1 / /p" "$2"
}
check "insmod rkp_postregs.ko" insmod $MODDIR/rkp_postregs.ko
echo "pid $hpid" > $PR
pt0=$(date +%s)
prounds=0 pcompared=0 pbad=0 ptrap=0 punopt=0 punreached=0 pretried=0
pattempt=1
while :; do
	if [ -z "$(eval echo \$post_kernel_clone\$post_do_sys_openat2\$post_vfs_read\$post_vfs_write)" ]; then
		[ $pattempt -lt 2 ] || break
		pattempt=$((pattempt + 1))
		for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
			eval "post_$fn=\$pretry_$fn pretry_$fn="
		done
	fi
	n=0
	for fn in kernel_clone do_sys_openat2 vfs_read vfs_write; do
		eval "left=\$post_$fn"
		last=-100 rest=""
		for off in $left; do
			if [ "$off" -lt $((last + 24)) ]; then
				rest="$rest $off"
				continue
			fi
			last=$off
			if echo "add $fn $off" > $PR; then
				n=$((n + 1))
			else
				pbad=$((pbad + 1))
				diag "$fn+$off: a probe with a post-handler could not be registered"
			fi
		done
		eval "post_$fn=\"\$rest\""
	done
	[ $n -gt 0 ] || continue
	echo 0 > $OPT
	echo "phase 0" > $PR; calls; r1=$res
	echo "phase 1" > $PR; calls; r2=$res
	echo 1 > $OPT
	echo "phase 2" > $PR
	t=0
	while :; do
		calls; r3=$res
		cat $PR > /tmp/pr.a
		# Every optimized probe that the calls reach has its record of
		# phase 2 through the jump.
		awk '/^rg_/ { opt[$1] = int(substr($2, 7) / 4) % 2 }
			/^2 / { nm = $2; sub(/:$/, "", nm); if (opt[nm] && $3 != "op=0xe9") bad = 1 }
			END { exit bad }' /tmp/pr.a && break
		t=$((t + 1))
		[ $t -lt 100 ] || break
		echo "retake 2" > $PR
		sleep 0.1
	done
	echo "phase 3" > $PR; calls; r5=$res
	cat $PR > /tmp/pr.a
	echo 0 > $OPT
	echo "phase 4" > $PR; calls; r4=$res
	cat $PR > /tmp/pr.b
	echo 1 > $OPT
	# Probes that rkprobes did not optimize with a post-handler are
	# counted; the others are judged as the events above.
	pevs=$(awk '/^rg_/ { n = substr($1, 4); i = match(n, /_[0-9]+$/)
		if (int(substr($2, 7) / 4) % 2) printf " %s:%s", substr(n, 1, i - 1), substr(n, i + 1) }' /tmp/pr.a)
	ptrap=$((ptrap + $(awk '/^rg_/ && int(substr($2, 7) / 4) % 2 == 0 { n++ } END { print n + 0 }' /tmp/pr.a)))
	{ prround 0 /tmp/pr.a; prround 1 /tmp/pr.a; } > /tmp/pint3.trace
	prround 2 /tmp/pr.a > /tmp/pjump.trace
	prround 3 /tmp/pr.a > /tmp/pjump2.trace
	prround 4 /tmp/pr.b > /tmp/pagain.trace
	: > /tmp/pjudge.out
	[ -z "$pevs" ] || judge "$pevs" /tmp/pint3.trace /tmp/pjump.trace /tmp/pagain.trace \
		/tmp/pjump2.trace > /tmp/pjudge.out
	while read -r e verdict rest; do
		case $verdict in
		unreached) punreached=$((punreached + 1)) ;;
		nojump) punopt=$((punopt + 1)); diag "$e (post): not int3, int3, jump, int3: $rest" ;;
		ok)
			pcompared=$((pcompared + 1))
			[ -z "$rest" ] || diag "$e (post): differs between the jump rounds, not compared:${rest#scratch}" ;;
		*)
			diag "$e (post, attempt $pattempt):$rest"
			if [ $pattempt -lt 2 ]; then
				pretried=$((pretried + 1))
				fn=${e%%:*}
				eval "pretry_$fn=\"\$pretry_$fn ${e#*:}\""
			else
				pcompared=$((pcompared + 1))
				pbad=$((pbad + 1))
			fi ;;
		esac
	done < /tmp/pjudge.out
	if [ "$r1" != "$r2" ] || [ "$r1" != "$r3" ] || [ "$r1" != "$r4" ] || [ "$r1" != "$r5" ]; then
		res_bad=$((res_bad + 1))
		diag "post round $prounds: results '$r1' '$r2' '$r3' '$r4' '$r5'"
	fi
	echo clear > $PR
	prounds=$((prounds + 1))
	echo "# post round $prounds: $pcompared offsets compared"
done
exec 3>&-
wait
check "rmmod rkp_postregs" rmmod rkp_postregs
diag "post-handler registers compared at $pcompared of $total optimized offsets in $prounds rounds, $(($(date +%s) - pt0)) s ($ptrap with a post-handler left trapping, $punreached not on the path of opt-call's calls; $pretried looked at again)"
expect_eq "every offset optimized with a post-handler that the calls reach hit through its jump, after two int3 hits" 0 "$punopt"
expect_eq "post-handler registers through the jump as at an int3 hit, at every offset optimized with one" 0 "$pbad"
check "post-handler registers compared at 100 optimized offsets or more ($pcompared)" test "$pcompared" -ge 100
diag "registers compared at $compared of $total optimized offsets in $rounds rounds, $(($(date +%s) - t0)) s ($unreached not on the path of opt-call's calls; $retried looked at again)"
expect_eq "every optimized offset that the calls reach hit through its jump, after two int3 hits" 0 "$unopt"
expect_eq "registers through the jump as at an int3 hit, at every optimized offset reached" 0 "$regs_bad"
check "registers compared at 100 optimized offsets or more ($compared)" test "$compared" -ge 100
expect_eq "every optimized offset compared or not reached ($total)" "$total" "$((compared + unreached))"
expect_eq "the calls' results unchanged by the jumps" 0 "$res_bad"
check "rmmod rkprobes" rmmod rkprobes
