# SPDX-License-Identifier: GPL-2.0
# On the debug kernel: a real use-after-free (LKDTM's READ_AFTER_FREE, in a
# module, as rkprobes is), which KASAN reports without oopsing, must make the
# run fail even though every check passes.
check "insmod lkdtm" insmod $MODDIR/lkdtm.ko
check "provoke READ_AFTER_FREE" sh -c 'echo READ_AFTER_FREE > /sys/kernel/debug/provoke-crash/DIRECT'
