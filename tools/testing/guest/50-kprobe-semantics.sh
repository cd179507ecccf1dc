# SPDX-License-Identifier: GPL-2.0
# rkp_test.ko runs the semantics of the kernel's kprobe KUnit tests against
# rkprobes at load time and prints KTAP into the kernel log; each of its
# results becomes one of ours.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
ktap_module rkp_test
check "rkp_test reported at least 30 checks" test "$KTAP_COUNT" -ge 30
rmmod rkp_test 2>/dev/null
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
