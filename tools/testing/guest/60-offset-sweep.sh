# SPDX-License-Identifier: GPL-2.0
# A probe at every offset 0..255 of four frequently called functions, all
# registered at once and hit; acceptance compared with the kernel's own
# kprobes offset by offset; the bytes restored on removal and after rkprobes
# itself is unloaded.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
# Two functions with post-handlers (every probe single-stepped or emulated),
# two without (boosted wherever the instruction allows).
for case in kernel_clone:1 do_sys_openat2:0 vfs_read:1 vfs_write:0; do
	fn=${case%:*}
	post=${case#*:}
	dmesg -c > /dev/null
	check "$fn: sweep loads (post=$post)" insmod $MODDIR/rkp_sweep.ko symbol=$fn post=$post
	dmesg | sed -n 's/.*rkp_sweep: //p' > /tmp/sweep.out
	grep -E '^swept' /tmp/sweep.out | sed 's/^/# /'
	accepted=$(sed -n 's/^swept [^:]*: \([0-9]*\) offsets.*/\1/p' /tmp/sweep.out)
	check "$fn: at least 40 offsets accepted (got $accepted)" test "${accepted:-0}" -ge 40
	sed 's/^/# /' /tmp/sweep.out | grep mismatch
	if [ -e /sys/kernel/debug/kprobes/list ]; then
		check "$fn: the same answer as the kernel's kprobes at every offset" grep -q 'offsets accepted by rkprobes, 0 differ' /tmp/sweep.out
	else
		skip "$fn: the same answer as the kernel's kprobes" "kernel without CONFIG_KPROBES"
	fi
	check "$fn: the ftrace site is probed through ftrace" grep -q "$fn+0x.*\[FTRACE\]" /sys/kernel/debug/rkprobes/list
	# Hit them: fork, open, read and write all pass through these.
	for i in 1 2 3; do dd if=/proc/version of=/dev/null 2>/dev/null; done
	check "$fn: listed" grep -q "$fn+0x" /sys/kernel/debug/rkprobes/list
	check "$fn: rmmod sweep" rmmod rkp_sweep
	dmesg | sed -n 's/.*rkp_sweep: //p' | grep '^unloaded' > /tmp/unload.out
	sed 's/^/# /' /tmp/unload.out
	check "$fn: probes were hit" sh -c '! grep -q "after 0 hits" /tmp/unload.out'
	if [ "$post" = 1 ]; then
		check "$fn: post-handlers ran" sh -c '! grep -q "(0 post-handler calls)" /tmp/unload.out'
	else
		check "$fn: no post-handlers" grep -q "(0 post-handler calls)" /tmp/unload.out
	fi
	check "$fn: bytes restored" grep -q 'bytes restored: yes' /tmp/unload.out
done
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
