# SPDX-License-Identifier: GPL-2.0
# `make bench`: rkp_bench's numbers (see tools/testing/modules/rkp_bench.rs).
# A benchmark, not a test: it only checks that the benchmark ran.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
dmesg -c > /dev/null
check "rkp_bench runs" insmod $MODDIR/rkp_bench.ko iters=${RKP_BENCH_ITERS:-20000}
dmesg | sed -n 's/.*rkp_bench: /# /p'
rmmod rkp_bench
check "rmmod rkprobes" rmmod rkprobes
