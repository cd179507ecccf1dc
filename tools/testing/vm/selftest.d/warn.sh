# SPDX-License-Identifier: GPL-2.0
# A real WARN in the guest kernel (through the kernel's LKDTM) must make the
# run fail even though every check passes.
check "insmod lkdtm" insmod $MODDIR/lkdtm.ko
check "provoke WARNING" sh -c 'echo WARNING > /sys/kernel/debug/provoke-crash/DIRECT'
