# SPDX-License-Identifier: GPL-2.0
# The kprobe_example sample: a probe on kernel_clone fires with its pre- and
# post-handlers on fork, is listed, and goes away on rmmod.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "insmod kprobe_example.ko" insmod $MODDIR/kprobe_example.ko
check "planted message" sh -c 'dmesg | grep -q "Planted kprobe at"'
check "listed in rkprobes/list" grep -q 'kernel_clone+0x' /sys/kernel/debug/rkprobes/list
diag "$(cat /sys/kernel/debug/rkprobes/list)"
before=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
for i in 1 2 3 4 5; do /bin/true; done
after=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
check "pre-handler ran on fork ($before -> $after)" test $((after - before)) -ge 5
check "post-handler ran" sh -c 'dmesg | grep -q "<kernel_clone> p->addr = 0x[0-9a-f]*, flags = "'
dmesg | grep '<kernel_clone>' | tail -2 | sed 's/^/# /'
check "rmmod kprobe_example" rmmod kprobe_example
check "list empty after rmmod" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
n=$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')
/bin/true
expect_eq "no hits after rmmod" "$n" "$(dmesg | grep -c '<kernel_clone> p->addr = .*, ip = ')"
check "insmod with symbol=do_sys_openat2" insmod $MODDIR/kprobe_example.ko symbol=do_sys_openat2
cat /proc/version > /dev/null
check "probe on do_sys_openat2 fired" sh -c 'dmesg | grep -q "<do_sys_openat2> p->addr"'
check "rmmod kprobe_example" rmmod kprobe_example
expect_fail "symbol that does not exist is refused" insmod $MODDIR/kprobe_example.ko symbol=no_such_function_rkp
check "rmmod rkprobes" rmmod rkprobes
