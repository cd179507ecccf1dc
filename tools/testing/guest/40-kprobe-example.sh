# SPDX-License-Identifier: GPL-2.0
# The kprobe_example samples, in Rust and in C (against include/rkprobes.h):
# a probe on kernel_clone fires with its pre- and post-handlers on fork, is
# listed, and goes away on rmmod.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
for m in kprobe_example kprobe_example_c; do
	dmesg -c > /dev/null
	check "insmod $m.ko" insmod $MODDIR/$m.ko
	check "$m: planted message" sh -c 'dmesg | grep -q "Planted kprobe at"'
	check "$m: listed in rkprobes/list" grep -q 'kernel_clone+0x' /sys/kernel/debug/rkprobes/list
	diag "$(cat /sys/kernel/debug/rkprobes/list)"
	before=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
	for i in 1 2 3 4 5; do /bin/true; done
	after=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
	check "$m: pre-handler ran on fork ($before -> $after)" test $((after - before)) -ge 5
	check "$m: post-handler ran" sh -c 'dmesg | grep -q "<kernel_clone> p->addr = 0x[0-9a-f]*, flags = "'
	dmesg | grep '<kernel_clone>' | tail -2 | sed 's/^/# /'
	check "rmmod $m" rmmod $m
	check "$m: unregistered message" sh -c 'dmesg | grep -q "unregistered, [0-9]* missed"'
	check "$m: list empty after rmmod" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
	n=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
	/bin/true
	expect_eq "$m: no hits after rmmod" "$n" "$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')"
	check "$m: insmod with symbol=do_sys_openat2" insmod $MODDIR/$m.ko symbol=do_sys_openat2
	cat /proc/version > /dev/null
	check "$m: probe on do_sys_openat2 fired" sh -c 'dmesg | grep -q "<do_sys_openat2> p->addr"'
	check "rmmod $m" rmmod $m
	expect_fail "$m: symbol that does not exist is refused" insmod $MODDIR/$m.ko symbol=no_such_function_rkp
done
check "rmmod rkprobes" rmmod rkprobes
