# SPDX-License-Identifier: GPL-2.0
# rkprobes calls the kernel functions it finds at run time (not exported in
# 6.12) only through its own static calls (rust/ffi/kcalls.c), which the
# kernel has patched into direct jumps to them: never through a pointer. A
# kernel built with IBT seals the ENDBR of most of these functions at boot,
# and an indirect call to a sealed function faults (#CP) on a CPU that
# enforces IBT; QEMU's TCG does not, so the jumps are checked here byte by
# byte against /proc/kallsyms, and so are the ENDBRs of the callbacks the
# kernel calls in rkprobes.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "insmod rkp_peek.ko" insmod $MODDIR/rkp_peek.ko

# vmlinux symbol NAME's address (hex), or nothing.
# One read of /proc/kallsyms (rkprobes and rkp_peek loaded): the file is
# generated anew on every read, a second or more under TCG, and the checks
# below look up about a hundred symbols: they search only rkprobes' own
# symbols and the kernel's of the same names as its calls (KSYMS).
cat /proc/kallsyms > /tmp/kcalls.all
KSYMS=/tmp/kcalls.kallsyms
awk '$4 == "[rkprobes]" && $3 ~ /^rkp_kc_bind_/ { sub(/^rkp_kc_bind_/, "", $3); print $3 }
	END { print "kallsyms_lookup_name"; print "__x86_return_thunk"; print "trace_call_bpf" }' \
	/tmp/kcalls.all > /tmp/kcalls.want
awk 'NR == FNR { want[$1] = 1; next } $4 == "[rkprobes]" || (NF == 3 && $3 in want)' \
	/tmp/kcalls.want /tmp/kcalls.all > $KSYMS
ksym() { awk -v n="$1" '$3 == n && NF == 3 { print $1; exit }' $KSYMS; }
# rkprobes' symbol NAME's address (hex), or nothing.
msym() { awk -v n="$1" '$3 == n && $4 == "[rkprobes]" { print $1; exit }' $KSYMS; }
# LEN bytes at hex ADDR, in hex.
peek() {
	echo "$1 $2" > /sys/module/rkp_peek/parameters/peek && cat /sys/module/rkp_peek/parameters/peek
}
# byte N (from 0) of hex string HEX.
byte() { echo "${1:$(($2 * 2)):2}"; }
# The target of the jmp rel32 at hex ADDR plus OFF bytes, as a shell number;
# nothing when no jmp rel32 is there.
jmp_target() {
	_b=$(peek $1 $(($2 + 5))) || return
	[ "$(byte $_b $2)" = e9 ] || return
	_rel=$((0x$(byte $_b $(($2 + 4)))$(byte $_b $(($2 + 3)))$(byte $_b $(($2 + 2)))$(byte $_b $(($2 + 1)))))
	[ $_rel -ge 2147483648 ] && _rel=$((_rel - 4294967296))
	echo $((0x$1 + $2 + 5 + _rel))
}

# The offset of a function's code after its ENDBR (or the seal's poison),
# if it starts with one.
body() {
	case $(peek $1 4) in
	f30f1efa|660f1f00) echo 4 ;;
	*) echo 0 ;;
	esac
}

# Whether the kernel seals ENDBRs (IBT): kallsyms_lookup_name, never
# address-taken in vmlinux, starts with the poison (a 4-byte NOP).
kln=$(ksym kallsyms_lookup_name)
first=$(peek $kln 4)
case $first in
f30f1efa|660f1f00)
	ibt=1
	expect_eq "kallsyms_lookup_name's ENDBR is sealed (IBT kernel)" 660f1f00 "$first" ;;
*)
	ibt=0
	skip "kallsyms_lookup_name's ENDBR is sealed" "kernel without IBT" ;;
esac

# Every call of kcalls.c, from the module's own symbols: rkp_kc_NAME is
# the call, rkp_kc_bind_NAME its setter, __SCT__rkp_sc_NAME the trampoline.
names=$(awk '$4 == "[rkprobes]" && $3 ~ /^rkp_kc_bind_/ { sub(/^rkp_kc_bind_/, "", $3); print $3 }' $KSYMS)
ncalls=$(echo $names | wc -w)
ntramps=$(awk '$4 == "[rkprobes]" && $3 ~ /^__SCT__rkp_sc_/' $KSYMS | wc -l)
diag "kcalls.c has $ncalls calls"
check "kcalls.c has its 34 calls" test $ncalls -eq 34
expect_eq "each call has its trampoline" $ncalls $ntramps

rethunk=$(ksym __x86_return_thunk)
sealed=0
bound=0
for name in $names; do
	fn=$(ksym $name)
	tramp=$(msym __SCT__rkp_sc_$name)
	if [ -z "$fn" ]; then
		# rkprobes had nothing to bind: the trampoline is still the
		# NULL one (a return, or a jump to the return thunk).
		t=$(jmp_target $tramp 0)
		[ -n "$rethunk" ] && [ "$t" = $((0x$rethunk)) ] && t=
		expect_eq "static call $name, not in this kernel, left unset" "" "$t"
		continue
	fi
	[ "$(peek $fn 4)" = 660f1f00 ] && sealed=$((sealed + 1))
	expect_eq "static call $name jumps to $name" $((0x$fn)) "$(jmp_target $tramp 0)"
	# The call rkprobes makes: rkp_kc_NAME's body, after its ENDBR, is a
	# direct jump to the function (objtool listed it as a static call site).
	wrapper=$(msym rkp_kc_$name)
	expect_eq "rkp_kc_$name jumps to $name directly" $((0x$fn)) \
		"$(jmp_target $wrapper $(body $wrapper))"
	bound=$((bound + 1))
done
diag "$bound functions bound, $sealed of them sealed by the kernel"
if [ $ibt = 1 ]; then
	check "the kernel sealed most of them" test $((sealed * 2)) -gt $bound
fi

# The other direction: rkprobes' functions that the kernel calls through a
# pointer (ftrace's list function calls the ops' func, a notifier chain
# each notifier_call, the sched_process_fork tracepoint its probe) must
# keep their ENDBR, which objtool leaves unsealed because their address is
# taken.
if [ $ibt = 1 ]; then
	callbacks=$(awk '$4 == "[rkprobes]" && ($3 == "rkp_ftrace_hit" || $3 == "rkp_fork_probe" ||
		($3 ~ /notifier.*Notifier.*4call/ && $3 !~ /^__pfx/)) { print $1 "/" $3 }' $KSYMS)
	check "rkp_ftrace_hit, rkp_fork_probe and the notifier callbacks found" \
		test $(echo $callbacks | wc -w) -ge 5
	for c in $callbacks; do
		expect_eq "${c#*/} starts with ENDBR64" f30f1efa "$(peek ${c%%/*} 4)"
	done
fi

tcb=$(ksym trace_call_bpf)
if [ -n "$tcb" ]; then
	expect_eq "static call rkp_tev_call_bpf jumps to trace_call_bpf" $((0x$tcb)) \
		"$(jmp_target $(msym __SCT__rkp_tev_call_bpf) 0)"
fi

check "rmmod rkp_peek" rmmod rkp_peek
check "rmmod rkprobes" rmmod rkprobes
