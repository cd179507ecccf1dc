# SPDX-License-Identifier: GPL-2.0
# Every sample module loads and unloads beside rkprobes.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
for ko in $MODDIR/rkprobes_*.ko; do
	name=$(basename "$ko" .ko)
	check "insmod $name" insmod "$ko"
	check "$name listed in /proc/modules" grep -q "^$name " /proc/modules
	check "rmmod $name" rmmod "$name"
done
check "rmmod rkprobes" rmmod rkprobes
