# SPDX-License-Identifier: GPL-2.0
# `make demo`: what rkprobes looks like in a guest. Run by tools/testing/vm/run
# like any guest test, so that the demo also checks what it shows.

diag "uname: $(uname -r), $(nproc) CPUs"
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
diag "/sys/kernel/debug/rkprobes/:"
ls /sys/kernel/debug/rkprobes/ | sed 's/^/#   /'
diag "the first lines of its blacklist:"
head -3 /sys/kernel/debug/rkprobes/blacklist | sed 's/^/#   /'

diag ""
diag "kprobe_example: pre- and post-handlers on kernel_clone, then on"
diag "do_sys_openat2 (function entries: ftrace sites, probed through ftrace);"
diag "rkp_sweep then puts an int3 probe at every instruction of vfs_read's"
diag "first 256 bytes, single-stepped out of line"
dmesg -c > /dev/null
check "insmod kprobe_example.ko" insmod $MODDIR/kprobe_example.ko
diag "rkprobes/list:"
sed 's/^/#   /' /sys/kernel/debug/rkprobes/list
/bin/true
check "rmmod kprobe_example" rmmod kprobe_example
check "insmod kprobe_example.ko symbol=do_sys_openat2" \
	insmod $MODDIR/kprobe_example.ko symbol=do_sys_openat2
sed 's/^/#   /' /sys/kernel/debug/rkprobes/list
cat /proc/version > /dev/null
check "rmmod kprobe_example" rmmod kprobe_example
diag "kernel log:"
dmesg | grep -E 'kprobe_example' | head -12 | sed 's/^/#   /'
check "handlers fired" sh -c 'dmesg | grep -q "p->addr = .*, ip = "'
diag ""
diag "kretprobe_example: a return probe on kernel_clone reports each fork's"
diag "return value (the child's pid) and how long it took"
dmesg -c > /dev/null
check "insmod kretprobe_example.ko" insmod $MODDIR/kretprobe_example.ko
sed 's/^/#   /' /sys/kernel/debug/rkprobes/list
/bin/true
/bin/true
check "rmmod kretprobe_example" rmmod kretprobe_example
dmesg | grep -E 'kretprobe_example' | head -6 | sed 's/^/#   /'
check "return handler fired" sh -c 'dmesg | grep -q "kernel_clone returned [1-9]"'

diag ""
diag "kprobe_events: a probe on do_sys_openat2 with the file name as a"
diag "string, written as to the kernel's tracing/kprobe_events; a real trace"
diag "event, enabled in tracefs; then a command runs and the trace shows it"
KE=/sys/kernel/debug/rkprobes/kprobe_events
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
echo > $T/trace
check "add the event" sh -c "echo 'p:myopen do_sys_openat2 dfd=%di:s32 path=+0(%si):ustring' >> $KE"
diag "cat kprobe_events:"
sed 's/^/#   /' $KE
check "enable it" sh -c "echo 1 > $T/events/rkprobes/myopen/enable"
cat /etc/hostname /proc/version > /dev/null 2>&1
check "disable it" sh -c "echo 0 > $T/events/rkprobes/myopen/enable"
diag "the trace:"
grep myopen $T/trace | head -6 | sed 's/^/#   /'
check "the opens were traced" grep -q 'myopen: (do_sys_openat2.* path="/proc/version"' $T/trace
check "remove the event" sh -c "echo '-:myopen' >> $KE"

# The runner puts tools/rkprobe and the kernel's DWARF into the guest for
# scripts that name rkprobe-tool.
if [ -x /bin/rkprobe ] && [ -e /usr/lib/debug/boot/vmlinux-"$(uname -r)" ]; then
	diag ""
	diag "rkprobe (tools/rkprobe, perf probe's syntax): the same with the"
	diag "kernel's DWARF, by source line and variable name: vfs_read's count"
	diag "on the line after its checks, as dd reads 37 bytes"
	rel=$(rkprobe --line vfs_read | sed -n 's/^ *\([0-9][0-9]*\)[[:space:]]*ret = rw_verify_area(READ.*/\1/p')
	diag "\$ rkprobe --line vfs_read (the lines around it):"
	rkprobe --line vfs_read | grep -B2 -A1 "^ *$rel  " | sed 's/^/#   /'
	check "rkprobe --add 'vfs_read:$rel count mode=file->f_mode'" \
		rkprobe --add "vfs_read:$rel count mode=file->f_mode"
	sed 's/^/#   /' $KE
	check "enable it" sh -c "echo 1 > $T/events/probe/enable"
	dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
	check "disable it" sh -c "echo 0 > $T/events/probe/enable"
	grep 'dd-.*vfs_read' $T/trace | head -3 | sed 's/^/#   /'
	check "count=0x25 (37) traced" grep -q 'dd-.*vfs_read_L[0-9]*: .* count=0x25' $T/trace
	diag "\$ rkprobe --list"
	rkprobe --list | sed 's/^/#   /'
	check "rkprobe --del 'vfs_read*'" rkprobe --del 'vfs_read*'
fi

check "insmod rkp_sweep.ko symbol=vfs_read" insmod $MODDIR/rkp_sweep.ko symbol=vfs_read
diag "rkprobes/list (first lines of $(wc -l < /sys/kernel/debug/rkprobes/list)):"
head -6 /sys/kernel/debug/rkprobes/list | sed 's/^/#   /'
cat /proc/version > /dev/null
check "rmmod rkp_sweep" rmmod rkp_sweep
dmesg | grep -E 'rkp_sweep: (swept|unloaded)' | sed 's/^/#   /'
check "rmmod rkprobes" rmmod rkprobes
