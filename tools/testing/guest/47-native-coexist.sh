# SPDX-License-Identifier: GPL-2.0
# rkprobes beside the kernel's own kprobes: an address that a kernel kprobe
# owns is refused with EBUSY (two patchers of one instruction would each
# restore what they saw), and is accepted again once the kernel's probe is
# gone.

if [ ! -e /sys/kernel/debug/kprobes/list ]; then
	skip "kernel kprobes beside rkprobes" "kernel without CONFIG_KPROBES"
	return 0 2>/dev/null || exit 0
fi
T=/sys/kernel/tracing
[ -e $T/kprobe_events ] || mount -t tracefs nodev $T
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "a kernel kprobe event on vfs_read" sh -c "echo 'p:rkp_native vfs_read' >> $T/kprobe_events"
check "listed by the kernel's kprobes" grep -q "vfs_read+0x" /sys/kernel/debug/kprobes/list
dmesg -c > /dev/null
expect_fail "rkprobes refuses vfs_read while the kernel probes it" \
	insmod $MODDIR/kprobe_example.ko symbol=vfs_read
check "with EBUSY" sh -c 'dmesg | grep -q "register_kprobe failed, returned -16"'
check "rkprobes list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
# Further into the function too: the kernel's probe changes the bytes that
# rkprobes decodes from the function's start.
base=$(grep ' [Tt] vfs_read$' /proc/kallsyms | cut -d' ' -f1)
dmesg -c > /dev/null
check "rkp_sweep tries vfs_read+0x20" insmod $MODDIR/rkp_sweep.ko ats=0x$(printf '%x' $(( 0x$base + 0x20 )) 2>/dev/null || echo 0)
rmmod rkp_sweep 2>/dev/null
check "refused with EBUSY" sh -c 'dmesg | grep -q "rkp_sweep: at 0x[0-9a-f]*: -16"'
diag "$(cat /sys/kernel/debug/kprobes/list)"
check "remove the kernel's event" sh -c "echo '-:rkp_native' >> $T/kprobe_events"
check "rkprobes takes vfs_read now" insmod $MODDIR/kprobe_example.ko symbol=vfs_read
dd if=/proc/version of=/dev/null 2>/dev/null
check "and it fires" sh -c 'dmesg | grep -q "<vfs_read> p->addr"'
# Kernel addresses follow kptr_restrict, as in the kernel's kprobes files
# (kallsyms_show_value()): with 2, not even root sees them.
L=/sys/kernel/debug/rkprobes/list
BL=/sys/kernel/debug/rkprobes/blacklist
kr=$(cat /proc/sys/kernel/kptr_restrict)
echo 2 > /proc/sys/kernel/kptr_restrict
expect_eq "kptr_restrict=2: list shows address 0" 0000000000000000 "$(cut -d' ' -f1 $L | sort -u)"
zeros=0x0000000000000000-0x0000000000000000
expect_eq "kptr_restrict=2: the kernel's blacklist shows ranges 0-0" $zeros \
	"$(cut -f1 /sys/kernel/debug/kprobes/blacklist | sort -u)"
expect_eq "kptr_restrict=2: rkprobes' blacklist too" $zeros "$(cut -f1 $BL | sort -u)"
echo "$kr" > /proc/sys/kernel/kptr_restrict
check "kptr_restrict=$kr: list shows the address" sh -c "cut -d' ' -f1 $L | grep -qv '^0*\$'"
check "kptr_restrict=$kr: blacklist shows the ranges" sh -c "cut -f1 $BL | grep -qv '^$zeros\$'"
check "rmmod kprobe_example" rmmod kprobe_example
check "rmmod rkprobes" rmmod rkprobes
