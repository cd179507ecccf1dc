# SPDX-License-Identifier: GPL-2.0
# Probes on an instruction with an exception-table entry (a load whose
# faults the table fixes up, as in a user access or
# copy_from_kernel_nofault()): the probe fires, and a fault in its copy is
# handled at the original instruction, as with the kernel's kprobes: fixed
# up there (the load returns -EFAULT), the hit running no post-handler.
# Page faults reach rkprobes through the page_fault_kernel tracepoint,
# before the kernel's fixup; a #GP through the die chain, after the fixup
# was looked for at the copy, so rkprobes looks again at the original.
# rkp_extable.ko reads a variable, a vmalloc guard page and a non-canonical
# address through one probed load, and a fresh user page and user address 8
# through another, with user access open.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
dmesg -c > /dev/null
check "insmod rkp_extable (probes on two loads, five reads)" insmod $MODDIR/rkp_extable.ko
dmesg | grep 'rkp_extable:' | sed 's/^.*rkp_extable: /# /'
line() { dmesg | sed -n "s/.*rkp_extable: $1 //p" | tail -n 1; }
expect_eq "rkprobes accepts the probes" 0 "$(line 'rk register')"
expect_eq "a read that does not fault returns the value" "0 5eed" "$(line 'rk ok')"
expect_eq "a kernel page fault in the copy is fixed up at the load" "-14 0" "$(line 'rk guard')"
expect_eq "a #GP in the copy is fixed up" "-14 0" "$(line 'rk noncanon')"
expect_eq "a page fault that maps a user page: the load runs again" "0 0" "$(line 'rk umapped')"
expect_eq "a page fault on an unmapped user address is fixed up" "-14 0" "$(line 'rk ubad')"
# Each faulting read went back to its int3 and was handled there: one hit
# for each fixed up, two for the one whose page was mapped, and a
# post-handler call for each read that completed.
expect_eq "hits and post-handler calls" "6 post 2" "$(line 'rk hits')"
if [ -n "$(line 'kp register')" ]; then
	# The kernel's kprobes on the same instructions: the same answers but
	# for the #GP, which they do not survive.
	expect_eq "the kernel's kprobes accept them" 0 "$(line 'kp register')"
	for c in ok guard umapped ubad; do
		expect_eq "kernel's kprobes, $c: as rkprobes'" "$(line "rk $c")" "$(line "kp $c")"
	done
	expect_eq "kernel's kprobes: hits and post-handler calls" "5 post 2" "$(line 'kp hits')"
else
	skip "the kernel's kprobes on the same loads" "kernel without CONFIG_KPROBES"
fi
check "rmmod rkp_extable" rmmod rkp_extable
check "nothing left registered" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
