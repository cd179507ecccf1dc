# SPDX-License-Identifier: GPL-2.0
# Lockdown (issue 10): once /sys/kernel/security/lockdown is raised to
# "confidentiality", no new probe can be placed through rkprobes (the
# control file, the C ABI, the Rust API), as the kernel's kprobe_events
# refuses under LOCKDOWN_KPROBES (security_locked_down() in
# __register_trace_kprobe(): -EPERM, "Failed to register probe event" in
# error_log); probes placed before keep working. Lockdown cannot be
# lowered again, so this test must be the last of its guest: it sorts
# after every other (99-l > 99-k).
#
# At "integrity" the kernel still allows kprobes (LOCKDOWN_KPROBES is past
# LOCKDOWN_INTEGRITY_MAX), but debugfs refuses to open a writable file
# (LOCKDOWN_DEBUGFS): rkprobes' kprobe_events, a debugfs file, then only
# takes writes through a descriptor opened before. At "confidentiality"
# tracefs refuses every open too (LOCKDOWN_TRACEFS), the kernel's
# kprobe_events included. Unsigned modules cannot be loaded once lockdown
# is raised (LOCKDOWN_MODULE_SIGNATURE), so every module is loaded before,
# and every later registration goes through rkp_evtest's `probe` parameter
# (the C ABI) or a descriptor opened before (the control file).

L=/sys/kernel/security/lockdown
KE=/sys/kernel/debug/rkprobes/kprobe_events
EL=/sys/kernel/debug/rkprobes/error_log
PROF=/sys/kernel/debug/rkprobes/kprobe_profile
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
KKE=$T/kprobe_events
[ -e $KKE ] || KKE=
PARAM=/sys/module/rkp_evtest/parameters/probe

if [ ! -e $L ]; then
	skip "lockdown" "no $L: a kernel without the lockdown LSM (CONFIG_SECURITY_LOCKDOWN_LSM)"
else

expect_eq "lockdown: not raised yet" "[none] integrity confidentiality" "$(cat $L)"
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "insmod rkp_evtest.ko" insmod $MODDIR/rkp_evtest.ko
# The Rust API: a probe on kernel_clone, placed at load.
check "insmod kprobe_example.ko" insmod $MODDIR/kprobe_example.ko
check "C ABI: a kprobe before lockdown" sh -c "echo 'kprobe kernel_clone' > $PARAM"

# An event to keep, enabled, and descriptors opened while it is allowed.
check "events: an event before lockdown" sh -c "echo 'p:lk/kept vfs_read' > $KE"
exec 3>>$KE
exec 7>$T/events/lk/kept/enable
check "events: enable it" sh -c "echo 1 >&7"
if [ -n "$KKE" ]; then
	echo > $T/error_log
	# Group "kl" on the kernel's side: one name cannot be both the kernel's
	# and rkprobes'; a probe on a function of its own (the two cannot both
	# be armed on one), never enabled.
	check "kernel: an event on the kernel's kprobe_events" \
		sh -c "echo 'p:kl/kept do_sys_openat2' >> $KKE"
	exec 5>>$KKE
	exec 6<$T/error_log
fi

check "lockdown: raise to integrity" sh -c "echo integrity > $L"
expect_eq "lockdown: integrity" "none [integrity] confidentiality" "$(cat $L)"
# Kprobes are still allowed at integrity, by the kernel and by rkprobes.
check "integrity: C ABI kprobe still allowed (as the kernel's register_kprobe)" \
	sh -c "echo 'kprobe kernel_clone' > $PARAM"
check "integrity: control file, through the open descriptor" sh -c "echo 'p:lk/integ vfs_write' >&3"
check "integrity: and removed" sh -c "echo '-:lk/integ' >&3"
expect_fail "integrity: debugfs no longer opens rkprobes' control file for writing" \
	sh -c "echo 'p:lk/integ2 vfs_write' >> $KE"
check "integrity: read-only rkprobes files still open" cat $PROF $EL
if [ -n "$KKE" ]; then
	check "integrity: the kernel's kprobe_events still takes probes" \
		sh -c "echo 'p:kl/kinteg vfs_write' >> $KKE && echo '-:kl/kinteg' >> $KKE"
fi

check "lockdown: raise to confidentiality" sh -c "echo confidentiality > $L"
expect_eq "lockdown: confidentiality" "none integrity [confidentiality]" "$(cat $L)"

# The C ABI (rkp_evtest, a C client of include/rkprobes.h).
dmesg -c > /dev/null
expect_fail "C ABI: kprobe refused" sh -c "echo 'kprobe kernel_clone' > $PARAM"
expect_fail "C ABI: kretprobe refused" sh -c "echo 'kretprobe kernel_clone' > $PARAM"
check "C ABI: with EPERM" sh -c "dmesg | grep -q 'rkp_evtest: kprobe on kernel_clone: -1\$' &&
	dmesg | grep -q 'rkp_evtest: kretprobe on kernel_clone: -1\$'"
# The Rust API: a sample that registers at load cannot even be loaded (the
# module loader refuses an unsigned module first); the Rust wrapper calls
# the same exported registration functions as the C ABI above.
expect_fail "Rust API: kretprobe_example cannot be placed" insmod $MODDIR/kretprobe_example.ko
dmesg | grep -i 'lockdown' | tail -3 | sed 's/^/# /'

# The control file, through the descriptor opened before; the same
# commands on the kernel's (group kl), whose error_log must read the same:
# a new event, one on a module not loaded yet (which the probe core never
# sees), one with an @SYM that does not exist (resolved after the lockdown
# check), a probe added to an existing event, and a name another event has
# (that error comes first).
cat > /tmp/lockdown.cmds <<'EOF'
p:GRP/after vfs_write
p:GRP/waitmod rkp_not_loaded_mod:some_function
p:GRP/symarg vfs_write a=@rkp_no_such_symbol
p:GRP/kept vfs_write
p:sched/sched_switch vfs_write
EOF
while IFS= read -r c; do
	r=$(echo "$c" | sed 's|GRP|lk|')
	expect_fail "confidentiality: refused: $r" sh -c "echo '$r' >&3"
	if [ -n "$KKE" ]; then
		k=$(echo "$c" | sed 's|GRP|kl|')
		expect_fail "confidentiality: the kernel refuses $k too" sh -c "echo '$k' >&5"
	fi
done < /tmp/lockdown.cmds
sed 's/^/# /' $EL
check "confidentiality: a new probe fails to register, as in the kernel" \
	grep -q 'trace_kprobe: error: Failed to register probe event' $EL
check "confidentiality: no probe was added" sh -c "! grep -qE 'after|waitmod|symarg' $PROF &&
	[ \$(grep -c kept $PROF) = 1 ]"
if [ -n "$KKE" ]; then
	cat <&6 > /tmp/kernel-error-log
	sed 's/^\[[^]]*\] //; s|kl/|lk/|' /tmp/kernel-error-log > /tmp/k.log
	sed 's/^\[[^]]*\] //' $EL > /tmp/r.log
	check "confidentiality: error_log reads as the kernel's" diff /tmp/k.log /tmp/r.log
	check "kernel: remove its event" sh -c "echo '-:kl/kept' >&5"
else
	skip "confidentiality: error_log as the kernel's" "kernel without CONFIG_KPROBE_EVENTS"
fi

# What was placed before keeps working.
dmesg -c > /dev/null
hits=$(awk '$1 == "kept" { print $2 }' $PROF)
cat /proc/version > /dev/null
( true ) &
wait
check "existing: the enabled event still counts hits" \
	sh -c "[ \$(awk '\$1 == \"kept\" { print \$2 }' $PROF) -gt $hits ]"
check "existing: the Rust API sample's probe still fires" \
	sh -c "dmesg | grep -q '<kernel_clone> p->addr'"

# Deleting stays possible, as in the kernel.
check "cleanup: disable through the open descriptor" sh -c "echo 0 >&7"
check "cleanup: delete through the open descriptor" sh -c "echo '-:lk/kept' >&3"
check "cleanup: nothing left" sh -c "[ -z \"\$(cat $PROF)\" ]"
exec 3>&- 5>&- 6<&- 7>&-
check "rmmod kprobe_example" rmmod kprobe_example
check "rmmod rkp_evtest" rmmod rkp_evtest
check "rmmod rkprobes" rmmod rkprobes
fi
