# SPDX-License-Identifier: GPL-2.0
# `make bench`: rkp_bench's numbers (see tools/testing/modules/rkp_bench.rs).
# A benchmark, not a test: it only checks that the benchmark ran.

# The int3 rows with jump optimization off on both sides, then the
# jump-optimized row with it on.
NATIVE_OPT=/proc/sys/debug/kprobes-optimization
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
[ -e $NATIVE_OPT ] && echo 0 > $NATIVE_OPT
echo 0 > /sys/kernel/debug/rkprobes/optimization
dmesg -c > /dev/null
check "rkp_bench runs" insmod $MODDIR/rkp_bench.ko iters=${RKP_BENCH_ITERS:-20000}
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench
[ -e $NATIVE_OPT ] && echo 1 > $NATIVE_OPT
echo 1 > /sys/kernel/debug/rkprobes/optimization
dmesg -c > /dev/null
check "rkp_bench opt=1 runs" insmod $MODDIR/rkp_bench.ko iters=${RKP_BENCH_ITERS:-20000} opt=1
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench

# An empty BPF program (a count in a map) on an rkprobes event at
# do_sys_openat2 (a tracepoint program, `tracepoint:rkprobes:...`) and on the
# kernel's kprobe at the same address (`kprobe:do_sys_openat2`), both loaded
# by Debian's bpftrace from the host's root; the cost per hit is sysloop's
# own time per open minus its time without a probe.
KE=/sys/kernel/debug/rkprobes/kprobe_events
BN=${RKP_BENCH_BPF_ITERS:-20000}
NOFILE=/tmp/rkp-bench-nofile
# sysloop_ns [bpftrace program]: the loop's time, under the program if any.
sysloop_ns() {
	if [ -n "$1" ]; then
		host_run bpftrace -e "$1" -c "/tmp/sysloop $BN $NOFILE -t" > /tmp/bpf.out 2>&1
	else
		/tmp/sysloop $BN $NOFILE -t > /tmp/bpf.out 2>&1
	fi
	sed -n 's/^sysloop: [0-9]* calls in \([0-9]*\) ns$/\1/p' /tmp/bpf.out
}
if has_host_tool bpftrace; then
	cp /bin/sysloop /tmp/sysloop
	none=$(sysloop_ns)
	echo "p:bpfbench do_sys_openat2" > $KE
	ours=$(sysloop_ns 'tracepoint:rkprobes:bpfbench { @ = count(); }')
	echo "-:bpfbench" >> $KE
	check "the BPF program ran on the rkprobes event" grep -q "^@: $BN\$" /tmp/bpf.out
	native=$(sysloop_ns 'kprobe:do_sys_openat2 { @ = count(); }')
	grep -q "^@: $BN\$" /tmp/bpf.out || native=
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
check "rmmod rkprobes" rmmod rkprobes
