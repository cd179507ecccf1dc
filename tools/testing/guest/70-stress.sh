# SPDX-License-Identifier: GPL-2.0
# Registration racing with hits: one CPU registers and unregisters probes
# (and unloads client modules) in a loop while the other CPU runs the probed
# functions in a loop. Any oops, WARN, lockup or RCU stall fails the run.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "taskset is available" sh -c 'command -v taskset'
# kprobe_example logs every hit; keep that off the (slow) serial console.
echo 5 > /proc/sys/kernel/printk

# The hitter: fork, open, read and write on CPU 1, as fast as it can (dd,
# because busybox's cat copies with sendfile(), not read()).
taskset 2 sh -c 'while :; do dd if=/proc/version of=/dev/null 2>/dev/null; done' &
hitter=$!

fails=0
for i in $(seq 1 5); do
	taskset 1 insmod $MODDIR/rkp_sweep.ko symbol=vfs_read compare=0 || fails=$((fails + 1))
	taskset 1 rmmod rkp_sweep || fails=$((fails + 1))
done
expect_eq "5 rounds of 50+ probes on vfs_read registered and removed under fire" 0 "$fails"
check "every round restored the bytes" sh -c '! dmesg | grep -q "bytes restored: NO"'

fails=0
for i in $(seq 1 10); do
	taskset 1 insmod $MODDIR/kprobe_example.ko symbol=vfs_read || fails=$((fails + 1))
	usleep 100000
	taskset 1 rmmod kprobe_example || fails=$((fails + 1))
done
expect_eq "client module loaded and unloaded 10 times while its probe is hit" 0 "$fails"
check "the probe was hit while loaded" sh -c 'dmesg | grep -q "<vfs_read> p->addr"'

# Global disarm and re-arm under fire.
check "insmod kprobe_example on vfs_read" insmod $MODDIR/kprobe_example.ko symbol=vfs_read
for i in $(seq 1 10); do
	echo 0 > /sys/kernel/debug/rkprobes/enabled
	echo 1 > /sys/kernel/debug/rkprobes/enabled
done
expect_eq "enabled reads 1" 1 "$(cat /sys/kernel/debug/rkprobes/enabled)"
check "disarm" sh -c 'echo 0 > /sys/kernel/debug/rkprobes/enabled'
n=$(dmesg | grep -c '<vfs_read> p->addr')
dd if=/proc/version of=/dev/null 2>/dev/null
usleep 200000
# The hitter keeps running on the other CPU: no new hits while disarmed.
expect_eq "no hits while disarmed" "$n" "$(dmesg | grep -c '<vfs_read> p->addr')"
check "enabled reads 0" sh -c '[ "$(cat /sys/kernel/debug/rkprobes/enabled)" = 0 ]'
expect_fail "enabled refuses garbage" sh -c 'echo maybe > /sys/kernel/debug/rkprobes/enabled'
check "re-arm" sh -c 'echo 1 > /sys/kernel/debug/rkprobes/enabled'
check "rmmod kprobe_example" rmmod kprobe_example

kill $hitter
wait $hitter 2>/dev/null
echo 8 > /proc/sys/kernel/printk
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
