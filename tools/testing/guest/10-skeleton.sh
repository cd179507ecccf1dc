# SPDX-License-Identifier: GPL-2.0
# rkprobes.ko loads, creates its debugfs directory, unloads and removes it, and
# does so again (nothing left behind by the first cycle).

for round in 1 2; do
	check "round $round: insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
	check "round $round: rkprobes listed in /proc/modules" grep -q '^rkprobes ' /proc/modules
	check "round $round: /sys/kernel/debug/rkprobes is a directory" test -d /sys/kernel/debug/rkprobes
	check "round $round: rmmod rkprobes" rmmod rkprobes
	expect_fail "round $round: rkprobes gone from /proc/modules" grep -q '^rkprobes ' /proc/modules
	expect_fail "round $round: /sys/kernel/debug/rkprobes removed" test -e /sys/kernel/debug/rkprobes
done
