# SPDX-License-Identifier: GPL-2.0
# `make demo`: what rkprobes looks like in a guest. Run by tools/testing/vm/run
# like any guest test, so that the demo also checks what it shows.

diag "uname: $(uname -r), $(nproc) CPUs"
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
diag "lsmod:"
lsmod | sed 's/^/#   /'
diag "/sys/kernel/debug/rkprobes/:"
ls -la /sys/kernel/debug/rkprobes/ | sed 's/^/#   /'
check "debugfs tree present" test -d /sys/kernel/debug/rkprobes
check "insmod sample rkprobes_minimal" insmod $MODDIR/rkprobes_minimal.ko
check "rmmod sample" rmmod rkprobes_minimal
check "rmmod rkprobes" rmmod rkprobes
diag "kernel log of the demo:"
dmesg | grep -E 'rkprobes' | sed 's/^/#   /'
