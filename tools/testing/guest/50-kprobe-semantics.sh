# SPDX-License-Identifier: GPL-2.0
# rkp_test.ko runs the semantics of the kernel's kprobe KUnit tests against
# rkprobes at load time and prints KTAP into the kernel log; each of its
# results becomes one of ours.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
dmesg -c > /dev/null
insmod $MODDIR/rkp_test.ko
rc=$?
# busybox insmod retries a failed load with init_module(): keep the first run.
dmesg | sed -n 's/.*rkp_test: //p' | awk '{ print } /^1\.\./ { exit }' > /tmp/rkp_test.out
while IFS= read -r line; do
	case "$line" in
	"not ok "*) d=${line#not ok }; not_ok "${d#* }" ;;
	"ok "*) d=${line#ok }; ok "${d#* }" ;;
	esac
done < /tmp/rkp_test.out
grep '^#' /tmp/rkp_test.out
expect_eq "rkp_test.ko loads (all its checks passed)" 0 "$rc"
check "rkp_test reported at least 30 checks" test "$(grep -cE '^(not )?ok ' /tmp/rkp_test.out)" -ge 30
rmmod rkp_test 2>/dev/null
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
