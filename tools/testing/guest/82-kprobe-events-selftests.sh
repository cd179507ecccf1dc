# SPDX-License-Identifier: GPL-2.0
# More of the kernel's ftrace selftests for kprobe events (test.d/kprobe/ in
# the 6.12 source), on rkprobes' kprobe_events: argument types, symbol
# arguments, strings, event names, instruction boundaries, return probes'
# entry arguments and maxactive, many events at once, probe points.

KE=/sys/kernel/debug/rkprobes/kprobe_events
T=/sys/kernel/tracing
EV=$T/events/rkprobes
[ -e $T/trace ] || mount -t tracefs nodev $T
FORK=kernel_clone
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
echo > $T/trace

# kprobe_args_type.tc: one value as signed, unsigned, hex and a bitfield.
for width in 64 32 16 8; do
	echo > $T/trace
	check "args_type $width: add" sh -c "echo 'p:testprobe $FORK \$stack0:s$width \$stack0:u$width \$stack0:x$width \$stack0:b4@4/$width' > $KE"
	check "args_type $width: enable" sh -c "echo 1 > $EV/testprobe/enable"
	( echo forked ) > /dev/null
	check "args_type $width: disable" sh -c "echo 0 > $EV/testprobe/enable"
	set -- $(grep testprobe $T/trace | head -n 1 | sed -e 's/.* arg1=\(.*\) arg2=\(.*\) arg3=\(.*\) arg4=\(.*\)/\1 \2 \3 \4/')
	cw=$((width / 4))
	x1=$(printf '%x' "$1" | tail -c $cw)
	x2=$(printf '%x' "$2")
	x3=$(printf '%x' "$3")
	b4=$(printf '%1x' "$4")
	b3=$(printf '%03x' "0x$x3" | tail -c 2 | head -c 1)
	check "args_type $width: s, u and x agree ($1 $2 $3)" sh -c "[ '$x1' = '$x2' ] && [ '$x2' = '$x3' ] && [ '0x$x3' = '$3' ]"
	check "args_type $width: the bitfield is bits 4..7 ($4)" test "$b3" = "$b4"
	check "args_type $width: delete" sh -c "echo '-:testprobe' >> $KE"
done

# kprobe_args_symbol.tc: @SYM with every type, and as a string.
if grep -q ' linux_proc_banner$' /proc/kallsyms; then
	echo > $T/trace
	check "args_symbol: add" sh -c "echo 'p:testprobe_u $FORK arg1=@linux_proc_banner:u64 arg2=@linux_proc_banner:u32 arg3=@linux_proc_banner:u16 arg4=@linux_proc_banner:u8' > $KE && echo 'p:testprobe_s $FORK arg1=@linux_proc_banner:s64 arg2=@linux_proc_banner:s32 arg3=@linux_proc_banner:s16 arg4=@linux_proc_banner:s8' >> $KE && echo 'p:testprobe_x $FORK arg1=@linux_proc_banner:x64 arg2=@linux_proc_banner:x32 arg3=@linux_proc_banner:x16 arg4=@linux_proc_banner:x8' >> $KE && echo 'p:testprobe_bf $FORK arg1=@linux_proc_banner:b8@4/32' >> $KE"
	check "args_symbol: enable the group" sh -c "echo 1 > $EV/enable"
	( echo forked ) > /dev/null
	check "args_symbol: disable the group" sh -c "echo 0 > $EV/enable"
	expect_eq "args_symbol: u, s and x records" 3 "$(grep -c 'testprobe_[usx]:.* arg1=.* arg2=.* arg3=.* arg4=.*' $T/trace | awk '{ print ($1 >= 3) ? 3 : $1 }')"
	check "args_symbol: the bitfield record" grep -q 'testprobe_bf:.* arg1=' $T/trace
	echo > $T/trace
	check "args_symbol: as a string" sh -c "echo 'p:testprobe_str $FORK arg1=@linux_proc_banner:string' > $KE"
	check "args_symbol: enable" sh -c "echo 1 > $EV/enable"
	( echo forked ) > /dev/null
	check "args_symbol: disable" sh -c "echo 0 > $EV/enable"
	res=$(grep testprobe_str $T/trace | head -n 1 | sed -e 's/.* arg1=\(.*\)/\1/' | sed -e 's/.* \((.*)\) \((.*)\) .*/\1 \2/')
	orig=$(sed -e 's/.* \((.*)\) \((.*)\) .*/\1 \2/' /proc/version)
	expect_eq "args_symbol: the banner, as /proc/version shows it" "$orig" "$res"
else
	skip "args_symbol" "linux_proc_banner not in kallsyms"
fi
check "args_symbol: clear" sh -c "echo > $KE"

# kprobe_args_string.tc: a string argument of eventfs_create_dir, which
# creating an event "test" calls with "test".
if grep -q ' eventfs_create_dir$' /proc/kallsyms; then
	echo > $T/trace
	check "args_string: add" sh -c "echo 'p:testprobe eventfs_create_dir arg1=+0(%di):string' > $KE"
	check "args_string: enable" sh -c "echo 1 > $EV/testprobe/enable"
	check "args_string: an event named test" sh -c "echo 'p:test $FORK' >> $KE"
	check "args_string: disable" sh -c "echo 0 > $EV/testprobe/enable"
	check "args_string: arg1=\"test\"" grep -q 'testprobe.* arg1="test"' $T/trace
	check "args_string: clear" sh -c "echo > $KE"
fi

# kprobe_args_vfs.tc: %pd and %pD, with this kernel's struct offsets.
for spec in "dput name=\$arg1:%pd" "dput \$arg1:%pd" "vfs_read name=\$arg1:%pD" "vfs_read \$arg1:%pD"; do
	fn=${spec%% *}
	echo > $T/trace
	check "args_vfs ($spec): add" sh -c "echo 'p:testprobe $spec' > $KE"
	check "args_vfs ($spec): enable" sh -c "echo 1 > $EV/testprobe/enable"
	grep -q 1 $EV/testprobe/enable
	check "args_vfs ($spec): disable" sh -c "echo 0 > $EV/testprobe/enable"
	check "args_vfs ($spec): the enable file's name in the trace" sh -c "grep 'testprobe' $T/trace | grep -q '\"enable\"'"
	check "args_vfs ($spec): clear" sh -c "echo > $KE"
done

# kprobe_eventname.tc: generated names, groups, dotted functions.
func=$(grep ' [tT] vfs_read$' /proc/kallsyms | tail -n 1 | cut -f 3 -d ' ')
check "eventname: unnamed" sh -c "echo 'p $func' > $KE"
check "eventname: p_${func}_0" test -d $EV/p_${func}_0
check "eventname: named" sh -c "echo 'p:event1 $func' > $KE"
check "eventname: event1" test -d $EV/event1
check "eventname: with a group" sh -c "echo 'p:rkprobes2/event2 $func' > $KE"
check "eventname: rkprobes2/event2" test -d $T/events/rkprobes2/event2
dot=$(grep -m 10 ' [tT] .*\.isra\..*$' /proc/kallsyms | tail -n 1 | cut -f 3 -d ' ')
if [ -n "$dot" ]; then
	if echo "p $dot" > $KE 2>/dev/null; then
		ev=$(grep "$dot" $KE | cut -f 1 -d ' ' | cut -f 2 -d :)
		check "eventname: a dotted function ($dot) gets a valid event name" test -d $T/events/$ev
	else
		ok "eventname: a dotted function ($dot) is refused like any unprobeable one # SKIP not probeable"
	fi
fi
check "eventname: clear" sh -c "echo > $KE"

# kprobe_insn_boundary.tc: every offset 0..255, accepted or refused, then
# all of them hit.
n=0
for i in $(seq 0 255); do
	echo "p $FORK+$i" >> $KE 2>/dev/null && n=$((n + 1))
done
diag "insn_boundary: $n offsets of $FORK accepted"
check "insn_boundary: some accepted" test $n -gt 20
check "insn_boundary: enable all" sh -c "echo 1 > $EV/enable"
( echo forked ) > /dev/null
check "insn_boundary: disable all" sh -c "echo 0 > $EV/enable"
check "insn_boundary: clear" sh -c "echo > $KE"

# kretprobe_entry_arg.tc: $arg1 at return is the entry's.
echo > $T/trace
check "entry_arg: add" sh -c "echo 'p:myevent1 vfs_open arg=\$arg1' >> $KE && echo 'r:myevent2 vfs_open arg=\$arg1' >> $KE"
check "entry_arg: enable" sh -c "echo 1 > $EV/enable"
cat /proc/version > /dev/null
check "entry_arg: disable" sh -c "echo 0 > $EV/enable"
a1=$(grep -m 1 myevent1 $T/trace | sed -r 's/^.*(arg=.*)/\1/')
a2=$(grep -m 1 myevent2 $T/trace | sed -r 's/^.*(arg=.*)/\1/')
check "entry_arg: both recorded ($a1)" test -n "$a1" -a -n "$a2"
expect_eq "entry_arg: the same at entry and return" "$a1" "$a2"
check "entry_arg: clear" sh -c "echo > $KE"

# kretprobe_maxactive.tc
expect_fail "maxactive: 'a' is no command" sh -c "echo 'a:myprobe vfs_read' > $KE"
expect_fail "maxactive: r1000000 too big" sh -c "echo 'r1000000:myprobe vfs_read' > $KE"
expect_fail "maxactive: r10fuzz malformed" sh -c "echo 'r10fuzz:myprobe vfs_read' > $KE"
check "maxactive: r" sh -c "echo 'r:myprobe vfs_read' > $KE && grep -q myprobe $KE && test -d $EV/myprobe"
check "maxactive: delete" sh -c "echo '-:myprobe' >> $KE"
check "maxactive: r10" sh -c "echo 'r10:myprobe vfs_read' > $KE && grep -q '^r10:rkprobes/myprobe' $KE"
check "maxactive: unnamed r10" sh -c "echo > $KE && echo 'r10 vfs_read' > $KE && grep -q vfs_read $KE"
check "maxactive: clear" sh -c "echo > $KE"

# multiple_kprobes.tc: events on the first text symbols (+5); the kernel's
# test makes 256, this one 64, to keep the run short under TCG (each event is
# a registered probe and a tracefs directory).
grep -i ' t ' /proc/kallsyms | cut -f 3 -d ' ' | grep -v '\.' > /tmp/syms
n=0
while read -r f; do
	echo "p $f+5" >> $KE 2>/dev/null && n=$((n + 1))
	[ $n -eq 64 ] && break
done < /tmp/syms
expect_eq "multiple: 64 events" 64 "$(grep -c . $KE)"
check "multiple: enable all" sh -c "echo 1 > $EV/enable"
check "multiple: disable all" sh -c "echo 0 > $EV/enable"
check "multiple: clear" sh -c "echo > $KE"

# probepoint.tc: a symbol, its address, +offset to the next symbol; a
# negative offset refused.
set -- $(grep -v __pfx_ /proc/kallsyms | grep -A1 -B1 ' tracefs_create_dir$' | cut -f 1 -d ' ')
if [ $# -eq 3 ]; then
	prev=$((0x$(echo $1 | tail -c 9) - 0x$(echo $2 | tail -c 9)))
	next=$((0x$(echo $3 | tail -c 9) - 0x$(echo $2 | tail -c 9)))
	check "probepoint: symbol" sh -c "echo 'p:testprobe tracefs_create_dir' > $KE"
	check "probepoint: address" sh -c "echo 'p:testprobe 0x$2' > $KE"
	# The offset reaches the next function: a probe there, as the kernel's.
	check "probepoint: +offset to the next symbol ($next)" sh -c "echo 'p:testprobe tracefs_create_dir+$next' > $KE"
	expect_fail "probepoint: a negative offset ($prev)" sh -c "echo 'p:testprobe tracefs_create_dir$prev' > $KE"
	check "probepoint: clear" sh -c "echo > $KE"
else
	skip "probepoint" "tracefs_create_dir neighbours not found"
fi
check "rmmod rkprobes" rmmod rkprobes
