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

# The reclaim reads the state of each task with a frame out: a task that
# returns, exits and is freed meanwhile must not be read. The race window
# (test builds) holds the reclaim 200 ms between loading an instance's task
# and reading its state, while tasks sleep 200 ms in do_nanosleep, eight at
# a time with four instances: those that find no instance miss, which asks
# for a reclaim. The debug kernel's KASAN sees a read of a freed task. (Its
# forks can be slow enough that no two sleeps overlap: the misses are
# reported, not required.)
P=/sys/module/rkprobes/parameters
dmesg -c > /dev/null
check "insmod rkp_kret_test.ko hold=do_nanosleep" insmod $MODDIR/rkp_kret_test.ko hold=do_nanosleep
echo 200 > $P/race_window_ms
echo 2 > $P/race_window
for round in 1 2 3; do
	for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done
	wait
done
echo 0 > $P/race_window
check "rmmod rkp_kret_test" rmmod rkp_kret_test
line=$(dmesg | sed -n 's/.*rkp_kret_test: hold: //p')
diag "do_nanosleep: $line"
set -- $line
check "the sleeps entered do_nanosleep ($((${2:-0} + ${6:-0})))" test $((${2:-0} + ${6:-0})) -ge 24
diag "missed, each asking for a reclaim: ${6:-0}"
# Every frame that took an instance returned through it, but one: the
# harness's timeout watcher naps in do_nanosleep a second at a time, and its
# nap at unregistration may still be out.
check "every frame not missed returned (${4:-0} of ${2:-0})" test "${4:-0}" -ge $((${2:-0} - 1))

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

# A function during which the task changes: __switch_to is entered as the
# task going off the CPU and returns on the stack of the one coming on. The
# kernel's kretprobe there crashes the kernel (rethook finds frames on the
# current task's list); rkprobes' instance is named by its return stub.
sw=$(grep ' [Tt] __switch_to$' /proc/kallsyms | cut -d' ' -f1)
dmesg -c > /dev/null
check "insmod rkp_place.ko: a kretprobe on __switch_to" \
	insmod $MODDIR/rkp_place.ko rets=$sw
check "rkprobes accepted it" sh -c "dmesg | grep -q 'rkp_place: r $sw -*[0-9]* 0\$'"
sleep 1
dmesg -c > /dev/null
check "rmmod rkp_place" rmmod rkp_place
set -- $(dmesg | sed -n 's/.*rkp_place: unloaded: .* \([0-9]*\) returns$/\1/p')
check "task switches returned through it (${1:-0})" test "${1:-0}" -gt 10
check "rmmod rkprobes" \
	sh -c 'for i in $(seq 1 30); do rmmod rkprobes 2>/dev/null && exit 0; usleep 100000; done; exit 1'
