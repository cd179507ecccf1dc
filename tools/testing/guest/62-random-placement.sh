# SPDX-License-Identifier: GPL-2.0
# Random placement, differential with the kernel's kprobes: (function,
# offset) pairs drawn at random from vmlinux's text, seeded (the seed is
# printed; PLACEMENT_SEED=N reproduces a run, a fresh one is drawn
# otherwise), PLACEMENT_PAIRS of them (2000 by default). Half are function
# entries, half a random byte of the function moved back to an instruction
# boundary (the kernel's answer decides; rkprobes' on a kernel without
# kprobes). A C client (rkp_place.ko) takes 50 pairs at a time: for each,
# where the kernel's kprobes accept a probe, rkprobes must accept it too or
# refuse it for a reason Documentation/ gives (the blacklist, which includes
# the int3 path, or a jump-label or static-call site). rkprobes' probes stay,
# with pre- and post-handlers, while both CPUs run a workload, beside a
# kretprobe at every drawn function's entry (the kernel's answer there
# compared too); then the addresses hit most become kprobe_events events.
# The kernel must keep running with a clean log (the runner fails a run
# with an oops, WARN, lockdep or KASAN report, or a stall).

RK=/sys/kernel/debug/rkprobes
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
KE=$T/kprobe_events
PAIRS=${PLACEMENT_PAIRS:-2000}
SEED=${PLACEMENT_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
BATCH=50
# Events per batch of each kind (probes, return probes): the client's
# probes cover every address; events add the tracing path on the ones the
# client saw hit most.
EVENTS=10
diag "random placement: seed $SEED, $PAIRS pairs (PLACEMENT_SEED=$SEED PLACEMENT_PAIRS=$PAIRS reproduces)"
native=0
[ -w $KE ] && native=1

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# vmlinux's text symbols and their sizes (to the next symbol): "addr size
# name". /proc/kallsyms lists vmlinux in address order; the low 32 bits of
# an address are enough for a difference (awk's numbers are doubles).
awk '$4 == "" || $4 !~ /^\[/ {
	a = ("0x" substr($1, 9)) + 0
	if (pt ~ /^[tT]$/ && a > pa && a - pa < 65536) print pfull, a - pa, pn
	pa = a; pt = $2; pn = $3; pfull = $1
}' /proc/kallsyms > /tmp/rp.all
# Names that occur once (a probe by name means that function), but the
# padding before each function (__pfx_, __cfi_), half of all text symbols,
# and the text the kernel copies (ftrace's trampoline templates and their
# inner labels, kexec's relocate_kernel): the kernel's own probes there
# crash the kernel by themselves (a kretprobe at ftrace_regs_caller_jmp
# rewrote a word of ftrace's frame: rethook's BUG), and rkprobes refuses
# them (30-blacklist.sh).
awk 'NR == FNR { c[$3]++; next } c[$3] == 1 && $3 !~ /^__(pfx|cfi)_/ &&
	$3 !~ /^(ftrace_(regs_)?caller|relocate_(kernel|range))/' /tmp/rp.all /tmp/rp.all > /tmp/rp.syms
nsyms=$(wc -l < /tmp/rp.syms)
# The kernel's probes and kretprobes are registered disabled (rkp_place.c):
# the test compares their answers, and armed, the kernel's kretprobes crash
# the kernel by themselves at some functions (__switch_to, entered as one
# task and returning on the next one's stack: rethook's BUG "Return address
# not found"; preempt_schedule_notrace, which rethook's own handler calls:
# a stack overflow). rkprobes' are armed everywhere they are accepted.
diag "$nsyms text symbols"
check "text symbols found ($nsyms)" test "$nsyms" -gt 10000

# The pairs: "addr name offset", offset 0 for half of them.
awk -v seed=$SEED -v n=$PAIRS -v nsyms=$nsyms 'BEGIN { srand(seed) }
	{ a[NR] = $1; s[NR] = $2; f[NR] = $3 }
	END {
		for (i = 0; i < n; i++) {
			k = int(rand() * nsyms) + 1
			off = (rand() < 0.5) ? 0 : int(rand() * s[k])
			print a[k], f[k], off
		}
	}' /tmp/rp.syms > /tmp/rp.pairs

# A busy loop on each CPU: files, processes, memory, the scheduler.
touch /tmp/rp.run
for cpu in 0 1; do
	( while [ -e /tmp/rp.run ]; do
		cat /proc/version /proc/stat /proc/meminfo > /dev/null
		ls /proc/self/ /sys/kernel > /dev/null
		sh -c 'echo x > /tmp/rp.w.$$; rm -f /tmp/rp.w.$$'
	done ) &
done

tried=0 nat_ok=0 rk_ok=0 both=0 nat_alone=0 ev=0 evtried=0 ev_hits=0
ret_tried=0 ret_nat=0 ret_rk=0 ret_ev_hits=0 returns=0 pre=0 posts=0 missed=0
batch=0
: > /tmp/rp.log
awk -v n=$BATCH '{ print > sprintf("/tmp/rp.batch.%05d", int((NR - 1) / n)) }' /tmp/rp.pairs
for b in /tmp/rp.batch.*; do
	batch=$((batch + 1))
	ats=$(awk '{ printf "%s%s+%d", (NR > 1 ? "," : ""), $1, $3 }' $b)
	rets=$(awk '!seen[$1]++ { printf "%s%s", n++ ? "," : "", $1 }' $b)
	dmesg -c > /dev/null
	if ! insmod $MODDIR/rkp_place.ko ats=$ats rets=$rets; then
		not_ok "batch $batch: insmod rkp_place"
		continue
	fi
	dmesg | sed -n 's/.*rkp_place: p \([0-9a-f]*\)+\([0-9]*\) \([0-9]*\) \(-*[0-9]*\) \(-*[0-9]*\)$/\1 \2 \3 \4 \5/p' > /tmp/rp.p
	dmesg | sed -n 's/.*rkp_place: r \([0-9a-f]*\) \(-*[0-9]*\) \(-*[0-9]*\)$/\1 \2 \3/p' > /tmp/rp.r
	# "START SNAPPED KERNEL RKPROBES" for each probe.
	set -- $(awk -v nat=$native '
		{ t++ }
		$4 == 0 { k++ }
		$5 == 0 { r++ }
		$4 == 0 && $5 == 0 { b++ }
		nat && $4 != 0 && $5 == 0 { ra++ }
		END { print t + 0, k + 0, r + 0, b + 0, ra + 0 }' /tmp/rp.p)
	tried=$((tried + $1)) nat_ok=$((nat_ok + $2)) rk_ok=$((rk_ok + $3))
	both=$((both + $4)) nat_alone=$((nat_alone + $5))
	awk -v nat=$native '$4 == 0 && $5 != 0 { print "refused", $1, $3, $5 }
		nat && $4 != 0 && $5 == 0 { print "accepted", $1, $3, $4 }' /tmp/rp.p >> /tmp/rp.log
	awk -v nat=$native 'nat && $2 == 0 && $3 != 0 { print "ret-refused", $1, 0, $3 }
		nat && $2 != 0 && $3 == 0 { print "ret-accepted", $1, $2 }' /tmp/rp.r >> /tmp/rp.log
	set -- $(awk '{ t++ } $2 == 0 { k++ } $3 == 0 { r++ } END { print t + 0, k + 0, r + 0 }' /tmp/rp.r)
	ret_tried=$((ret_tried + $1)) ret_nat=$((ret_nat + $2)) ret_rk=$((ret_rk + $3))
	# The client's probes fire while both CPUs run; each probe's count is
	# printed when it unloads.
	sleep 1
	dmesg -c > /dev/null
	rmmod rkp_place
	dmesg > /tmp/rp.unload
	set -- $(sed -n 's/.*rkp_place: unloaded: \([0-9]*\) hits, \([0-9]*\) post-handler calls, \([0-9]*\) missed, \([0-9]*\) returns/\1 \2 \3 \4/p' /tmp/rp.unload)
	pre=$((pre + ${1:-0})) posts=$((posts + ${2:-0})) missed=$((missed + ${3:-0})) returns=$((returns + ${4:-0}))
	# The addresses hit most, as kprobe_events events: the tracing path on
	# the same random sites.
	sed -n 's/.*rkp_place: h \([0-9a-f]*\) \([0-9]*\)$/\2 \1/p' /tmp/rp.unload | sort -rn |
		awk -v m=$EVENTS '$1 > 0 && n++ < m { printf "p:rp/e%d 0x%s\n", n, $2 }' > /tmp/rp.ev
	sed -n 's/.*rkp_place: rh \([0-9a-f]*\) \([0-9]*\)$/\2 \1/p' /tmp/rp.unload | sort -rn |
		awk -v m=$EVENTS '$1 > 0 && n++ < m { printf "r:rp/r%d 0x%s\n", n, $2 }' >> /tmp/rp.ev
	evtried=$((evtried + $(wc -l < /tmp/rp.ev)))
	while read -r line; do
		if echo "$line" >> $RK/kprobe_events 2>/dev/null; then
			ev=$((ev + 1))
		else
			diag "event refused: $line"
		fi
	done < /tmp/rp.ev
	if [ -d $T/events/rp ]; then
		echo 1 > $T/events/rp/enable
		sleep 1
		echo 0 > $T/events/rp/enable
		set -- $(awk '$1 ~ /^e[0-9]+$/ { e += $2 } $1 ~ /^r[0-9]+$/ { r += $2 } END { print e + 0, r + 0 }' $RK/kprobe_profile)
		ev_hits=$((ev_hits + $1)) ret_ev_hits=$((ret_ev_hits + $2))
	fi
	echo -n > $RK/kprobe_events
	diag "batch $batch: $tried pairs, $rk_ok accepted; hits: $pre (post $posts), events $ev_hits; returns $returns, events $ret_ev_hits"
done
rm -f /tmp/rp.run
wait

diag "pairs tried: $tried; accepted by the kernel: $nat_ok, by rkprobes: $rk_ok, by both: $both"
[ $native = 1 ] && diag "accepted by rkprobes alone: $nat_alone"
diag "hits: $pre with a client's pre-handlers ($posts post-handler calls, $missed missed), $ev_hits as events ($ev events)"
diag "return probes: $ret_tried functions, accepted by the kernel: $ret_nat, by rkprobes: $ret_rk; $returns returns, $ret_ev_hits as events"

# Why rkprobes alone refused: each address against the blacklist and the
# text sites (the ranges' files), else its error.
cut -f1 $RK/blacklist | tr -- '-' ' ' > /tmp/rp.bl
tr -- '-' ' ' < $RK/text_sites > /tmp/rp.ts
: > /tmp/rp.why
# A return probe refused where the kernel accepts one counts the same way,
# at its function's entry.
grep -e '^refused ' -e '^ret-refused ' /tmp/rp.log | while read -r _ addr off err; do
	where=$(grep -i "^$addr " /tmp/rp.syms | cut -d' ' -f3)+$off
	a=$(printf '0x%016x' $((0x$addr + off)))
	if awk -v a=$a '($1 "") <= (a "") && (a "") < ($2 "") { f = 1 } END { exit !f }' /tmp/rp.bl; then
		echo "blacklisted $where" >> /tmp/rp.why
	elif awk -v a=$a '($1 "") <= (a "") && (a "") < ($2 "") { f = 1 } END { exit !f }' /tmp/rp.ts; then
		echo "text-site $where" >> /tmp/rp.why
	else
		echo "other $where: $err" >> /tmp/rp.why
	fi
done
for r in blacklisted text-site other; do
	diag "refused by rkprobes alone, $r: $(grep -c "^$r " /tmp/rp.why)"
done
grep '^other ' /tmp/rp.why | head -20 | sed 's/^/# /'
# Where rkprobes accepts what the kernel refuses (a differing policy, not a
# hazard: such a probe fires and the kernel keeps running).
for kind in accepted ret-accepted; do
	diag "$kind (the kernel's errno or rkprobes'): $(grep -c "^$kind " /tmp/rp.log)"
	grep "^$kind " /tmp/rp.log | head -5 | while read -r k a x e; do
		echo "# $k $(grep -i "^$a " /tmp/rp.syms | cut -d' ' -f3) $x $e"
	done
done

check "pairs tried ($tried)" test "$tried" -eq "$PAIRS"
check "rkprobes accepted some ($rk_ok)" test "$rk_ok" -gt 0
check "accepted probes fire with a client's pre-handlers ($pre) and post-handlers ($posts)" test "$pre" -gt 0 -a "$posts" -gt 0
# A hit runs its post-handler once the instruction ran; one whose copy
# faulted and was fixed up at the probe address runs none (an instruction
# with an exception-table entry), as with the kernel's kprobes.
check "no more post-handler calls than hits ($((pre - posts)) hits without one)" test "$posts" -le "$pre"
# Every address the client placed takes an event too.
expect_eq "every address chosen also takes an event" "$evtried" "$ev"
check "return probes fire ($returns)" test "$returns" -gt 0
check "the addresses hit most fire as events too ($ev_hits probe and $ret_ev_hits return records from $ev events)" \
	test "$ev" -eq 0 -o $((ev_hits + ret_ev_hits)) -gt 0
expect_eq "every refusal where the kernel accepts has a documented reason" 0 "$(grep -c '^other ' /tmp/rp.why)"
check "nothing left registered" sh -c "[ -z \"\$(cat $RK/list)\" ]"
check "rmmod rkprobes" rmmod rkprobes
