# SPDX-License-Identifier: GPL-2.0
# kretprobes: the kretprobe cases of lib/test_kprobes.c (rkp_kret_test.ko, whose
# KTAP lines become results), the kretprobe_example sample, frames of tasks
# that exit inside a probed function, unregistration while frames are out,
# and rkprobes' unload held off until the last frame has returned.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
ktap_module rkp_kret_test
check "rkp_kret_test reported at least 50 checks" test "$KTAP_COUNT" -ge 50
check "rmmod rkp_kret_test" rmmod rkp_kret_test

# The sample: return value and duration of kernel_clone.
dmesg -c > /dev/null
check "insmod kretprobe_example.ko" insmod $MODDIR/kretprobe_example.ko
check "listed as a return probe" grep -q ' r  kernel_clone+0x' /sys/kernel/debug/rkprobes/list
for i in 1 2 3; do /bin/true; done
check "return handler reports the child's pid and the time" \
	sh -c 'dmesg | grep -qE "kernel_clone returned [1-9][0-9]* and took [0-9]+ ns to execute"'
dmesg | grep 'kernel_clone returned' | tail -2 | sed 's/^/# /'
check "rmmod kretprobe_example" rmmod kretprobe_example
check "no miss reported" sh -c 'dmesg | grep -q "missed probing 0 instances of kernel_clone"'
check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'

# Tasks that exit inside the probed function never return through their
# frames: do_exit never returns. With 4 instances, 20 exits would miss 16
# calls unless the instances of dead tasks are reclaimed.
dmesg -c > /dev/null
check "insmod rkp_kret_test.ko hold=do_exit" insmod $MODDIR/rkp_kret_test.ko hold=do_exit
for i in $(seq 1 20); do /bin/true; usleep 20000; done
check "rmmod rkp_kret_test" rmmod rkp_kret_test
line=$(dmesg | sed -n 's/.*rkp_kret_test: hold: //p')
diag "do_exit: $line"
set -- $line
check "20 exits entered do_exit" test "${2:-0}" -ge 20
expect_eq "none returned" 0 "${4:-x}"
check "instances of dead tasks reclaimed (nmissed ${6:-?} < 16)" test "${6:-99}" -lt 16
# Unregistered with every frame of a dead task: they are reclaimed, and then
# rkprobes may go.
check "rmmod rkprobes once the dead frames are reclaimed" \
	sh -c 'for i in $(seq 1 50); do rmmod rkprobes 2>/dev/null && exit 0; usleep 100000; done; exit 1'
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# Unregistration while a frame is out: a sleeping task is inside
# do_nanosleep when the kretprobe goes; it returns through the trampoline
# later, and rkprobes cannot be unloaded until it has.
echo 5 > /proc/sys/kernel/printk
check "insmod kretprobe_example.ko func=do_nanosleep" \
	insmod $MODDIR/kretprobe_example.ko func=do_nanosleep
sleep 2 &
sleeper=$!
usleep 300000
check "rmmod kretprobe_example with a frame out" rmmod kretprobe_example
expect_fail "rkprobes cannot be unloaded while the frame is out" rmmod rkprobes
check "rkprobes still loaded" grep -q '^rkprobes ' /proc/modules
check "the sleeper returns normally" wait $sleeper
check "rmmod rkprobes after the frame returned" \
	sh -c 'for i in $(seq 1 30); do rmmod rkprobes 2>/dev/null && exit 0; usleep 100000; done; exit 1'
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# Sleeping functions on both CPUs, and a task migrating between them, while
# the kretprobe is registered and unregistered again and again.
taskset 1 sh -c 'while :; do usleep 1000; done' &
s1=$!
taskset 2 sh -c 'while :; do usleep 1000; done' &
s2=$!
sh -c 'while :; do taskset -p 1 $$ >/dev/null; usleep 500; taskset -p 2 $$ >/dev/null; usleep 700; done' &
s3=$!
fails=0
for i in $(seq 1 15); do
	insmod $MODDIR/kretprobe_example.ko func=do_nanosleep || fails=$((fails + 1))
	usleep 50000
	rmmod kretprobe_example || fails=$((fails + 1))
done
expect_eq "15 rounds of register and unregister under fire" 0 "$fails"
check "the probe fired" sh -c 'dmesg | grep -q "do_nanosleep returned 0 and took"'
kill $s1 $s2 $s3
wait $s1 $s2 $s3 2>/dev/null
echo 8 > /proc/sys/kernel/printk
check "rmmod rkprobes" \
	sh -c 'for i in $(seq 1 30); do rmmod rkprobes 2>/dev/null && exit 0; usleep 100000; done; exit 1'
