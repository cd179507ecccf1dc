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
# The host's root, read-only over virtio-9p when the runner shares it: the
# tests run the host's perf and bpftrace in a chroot of it (guest-lib.sh's
# host_run), with the guest's pseudo file systems and /tmp bound in.
mkdir /host
if mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host 2>/dev/null; then
	for d in proc sys dev tmp; do
		mount -o rbind /$d /host/$d
	done
else
	rmdir /host
fi
sh /guest/harness.sh > /dev/ttyS1 2>&1
sync
reboot -f
