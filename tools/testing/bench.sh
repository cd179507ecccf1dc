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
check "rmmod rkprobes" rmmod rkprobes
