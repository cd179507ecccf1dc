# SPDX-License-Identifier: GPL-2.0
# Guest half of tools/testing/dkms/check: the rkprobes.ko that DKMS built
# and installed (passed in as rkprobes-dkms.ko) loads, takes an event and
# records it, and unloads.
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
KE=/sys/kernel/debug/rkprobes/kprobe_events
check "insmod the DKMS-built rkprobes.ko" insmod $MODDIR/rkprobes-dkms.ko
check "its version" sh -c "grep -qx \"$DKMS_VERSION\" /sys/module/rkprobes/version"
check "an event on vfs_read" sh -c "echo 'p:dkms/rd vfs_read' > $KE && echo 1 > $T/events/dkms/rd/enable"
cat /proc/version > /dev/null
check "it records" grep -q 'rd: (vfs_read+0x' $T/trace
check "disable and delete" sh -c "echo 0 > $T/events/dkms/rd/enable && echo '-:dkms/rd' >> $KE"
check "rmmod rkprobes" rmmod rkprobes
