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
# CPU's instructions); the least of two runs each. It runs first, on a
# fresh rkprobes: after other events or probes came and went, the same
# event's hits have been measured 2,300 instructions dearer (not yet
# explained; issue 13's profile).
KE=/sys/kernel/debug/rkprobes/kprobe_events
BN=${RKP_BENCH_BPF_ITERS:-20000}
NOFILE=/tmp/rkp-bench-nofile
# sysloop_ns PROGRAM: the loop's time under a bpftrace PROGRAM, the least of
# two runs; empty when the program did not run or did not count BN hits
# (EXPECT, when given).
sysloop_ns() {
	best=
	for _ in 1 2; do
		host_run bpftrace -e "$1" -c "/tmp/sysloop $BN $NOFILE -t" > /tmp/bpf.out 2>&1
		t=$(sed -n 's/^sysloop: [0-9]* calls in \([0-9]*\) ns$/\1/p' /tmp/bpf.out)
		[ -n "$2" ] && ! grep -q "^@: $2\$" /tmp/bpf.out && t=
		[ -z "$t" ] && return
		[ -z "$best" ] || [ "$t" -lt "$best" ] && best=$t
	done
	echo $best
}
if has_host_tool bpftrace; then
	cp /bin/sysloop /tmp/sysloop
	echo "p:bpfbench do_sys_openat2" > $KE
	ours=$(sysloop_ns 'tracepoint:rkprobes:bpfbench { @ = count(); }' $BN)
	echo "p:bpfidle ksys_sync" >> $KE
	none=$(sysloop_ns 'tracepoint:rkprobes:bpfidle { @ = count(); }')
	echo > $KE
	check "the BPF program ran on the rkprobes event, $BN times" test -n "$none" -a -n "$ours"
	native=$(sysloop_ns 'kprobe:do_sys_openat2 { @ = count(); }' $BN)
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

check "rmmod rkprobes" rmmod rkprobes
