# SPDX-License-Identifier: GPL-2.0
# A WARN that a test provokes on purpose, inside expect_kernel_report, must
# not fail the run (the warn case shows that the same WARN outside does).
check "insmod lkdtm" insmod $MODDIR/lkdtm.ko
check "provoke WARNING, expected" expect_kernel_report \
	sh -c 'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT'
