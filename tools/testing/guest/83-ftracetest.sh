# SPDX-License-Identifier: GPL-2.0
# The kernel's ftrace selftests for kprobe events, its own driver
# (ftracetest) and test.d/kprobe/*.tc files unchanged from the kernel
# source (the runner puts them in /guest/ftrace), with those of
# test.d/dynevent/ for fprobe and tprobe events, run twice in the same
# guest: on the kernel's kprobe_events and dynamic_events, then on
# rkprobes'. ftracetest
# takes the first tracefs in /proc/mounts as its tracing directory; for
# rkprobes' run, a private mount namespace puts first a directory of links
# to the tracefs files, with kprobe_events, dynamic_events, error_log and
# kprobe_profile linked to rkprobes' own and no uprobe_events (uprobes are not rkprobes':
# the .tc files that need them are unsupported there), and binds rkprobes'
# debugfs directory and optimization switch where kprobe_opt_types.tc looks
# for the kernel's (kprobes/list, the kprobes-optimization sysctl);
# rkprobes is loaded with default_group=kprobes, the group the .tc files
# look in. Every file that passes on the kernel's kprobe_events must pass
# on rkprobes', but those that need uprobe_events.

FT=/guest/ftrace
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
if [ ! -e $T/kprobe_events ]; then
	skip "ftracetest beside the kernel's kprobe_events" "kernel without CONFIG_KPROBE_EVENTS"
	return 0 2>/dev/null || exit 0
fi

# "RESULT NAME" per .tc file, from ftracetest's KTAP: pass, fail or skip.
results() {
	sed -nE 's/^((not )?ok) [0-9]+ (.*)$/\1 \3/p' "$1" | while read -r line; do
		case "$line" in
		"not ok "*) echo "fail ${line#not ok }" ;;
		*"# SKIP") n=${line#ok }; echo "skip ${n% \# SKIP}" ;;
		*"# XFAIL") n=${line#ok }; echo "pass ${n% \# XFAIL}" ;;
		*) echo "pass ${line#ok }" ;;
		esac
	done
}

# The dynamic_events tests of fprobe, tprobe and eprobe events (and BTF
# arguments, which use both), beside the kprobe ones. The eprobe ones need
# syscall events (CONFIG_FTRACE_SYSCALLS): unsupported on both sides
# without them.
DYN=
for t in add_remove_fprobe fprobe_args_vfs fprobe_entry_arg fprobe_syntax_errors \
	add_remove_tprobe tprobe_syntax_errors add_remove_btfarg \
	add_remove_eprobe eprobes_syntax_errors; do
	DYN="$DYN $FT/test.d/dynevent/$t.tc"
done

# The kernel's kprobe_events first.
$FT/ftracetest -K -l /tmp/ft-kernel.log $FT/test.d/kprobe/ $DYN > /tmp/ft-kernel.out 2>&1
results /tmp/ft-kernel.out > /tmp/ft-kernel.res
diag "the kernel's kprobe_events: $(grep -c '^pass ' /tmp/ft-kernel.res) passed, $(grep -c '^fail ' /tmp/ft-kernel.res) failed, $(grep -c '^skip ' /tmp/ft-kernel.res) skipped"
check "ftracetest ran its .tc files on the kernel's" test "$(wc -l < /tmp/ft-kernel.res)" -ge 20

expect_fail "default_group must be an event group name" insmod $MODDIR/rkprobes.ko default_group=1kprobes
check "insmod rkprobes.ko default_group=kprobes" insmod $MODDIR/rkprobes.ko default_group=kprobes
RK=/sys/kernel/debug/rkprobes
unshare -m sh -c "
	for m in \$(awk '\$3 == \"tracefs\" { print \$2 }' /proc/mounts); do
		umount -l \$m || { echo \"set-up: umount \$m failed\"; exit 1; }
	done
	mkdir -p /tmp/rkt /tmp/realt
	mount -t tmpfs tracefs /tmp/rkt && mount -t tracefs nodev /tmp/realt ||
		{ echo 'set-up: mounting the tracing directories failed'; exit 1; }
	for f in /tmp/realt/*; do ln -s \$f /tmp/rkt/; done
	for f in kprobe_events dynamic_events error_log kprobe_profile; do
		rm -f /tmp/rkt/\$f && ln -s $RK/\$f /tmp/rkt/\$f || { echo \"set-up: linking \$f failed\"; exit 1; }
	done
	rm -f /tmp/rkt/uprobe_events
	mount --bind $RK /sys/kernel/debug/kprobes &&
		mount --bind $RK/optimization /proc/sys/debug/kprobes-optimization ||
		{ echo 'set-up: binding rkprobes debugfs files failed'; exit 1; }
	first=\$(grep tracefs /proc/mounts | cut -f2 -d' ' | head -1)
	[ \"\$first\" = /tmp/rkt ] || { echo \"set-up: the first tracefs is \$first\"; grep tracefs /proc/mounts; exit 1; }
	$FT/ftracetest -K -l /tmp/ft-rk.log $FT/test.d/kprobe/ $DYN
" > /tmp/ft-rk.out 2>&1
results /tmp/ft-rk.out > /tmp/ft-rk.res
# Nothing ran: what the set-up or the driver said.
[ -s /tmp/ft-rk.res ] || tail -n 20 /tmp/ft-rk.out | sed 's/^/# /'
diag "rkprobes' kprobe_events: $(grep -c '^pass ' /tmp/ft-rk.res) passed, $(grep -c '^fail ' /tmp/ft-rk.res) failed, $(grep -c '^skip ' /tmp/ft-rk.res) skipped"
expect_eq "the same .tc files ran on rkprobes'" "$(cut -d' ' -f2- /tmp/ft-kernel.res)" "$(cut -d' ' -f2- /tmp/ft-rk.res)"
while read -r res name; do
	[ "$res" = pass ] || continue
	rk=$(awk -v n="$name" '{ r = $1; sub(/^[a-z]+ /, "") } $0 == n { print r; exit }' /tmp/ft-rk.res)
	if [ "$rk" = pass ]; then
		ok "passes on both: $name"
	elif [ "$rk" = skip ] && grep -l "description: $name\$" $FT/test.d/kprobe/*.tc $DYN |
			xargs grep -q '^# requires:.*uprobe_events'; then
		diag "not rkprobes' (uprobe_events): $name"
	else
		not_ok "passes on the kernel's, ${rk:-missing} on rkprobes': $name"
		# ftracetest's own report, once, for the reader.
		[ -n "${shown:-}" ] || tail -n 40 /tmp/ft-rk.out | sed 's/^/# /'
		shown=1
	fi
done < /tmp/ft-kernel.res
grep '^fail ' /tmp/ft-kernel.res | sed 's/^fail /# fails on the kernel'"'"'s too: /'
check "nothing left in rkprobes' kprobe_events" sh -c "[ -z \"\$(cat $RK/kprobe_events)\" ]"
check "nothing left in rkprobes' dynamic_events" sh -c "[ -z \"\$(cat $RK/dynamic_events)\" ]"
check "rmmod rkprobes" rmmod rkprobes
