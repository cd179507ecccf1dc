#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0
# /init of the rkprobes test initramfs: mount the pseudo file systems, run the
# harness with its output on the results port (ttyS1), then reboot, which the
# host's QEMU (-no-reboot) turns into an exit.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# /sys/kernel/security/lockdown, on kernels with the lockdown LSM.
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
echo 8 > /proc/sys/kernel/printk
sh /guest/harness.sh > /dev/ttyS1 2>&1
sync
reboot -f
