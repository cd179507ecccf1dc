# SPDX-License-Identifier: GPL-2.0
# kprobe_events where a probe event could crash or lie (issue 10): symstr of
# the longest symbol a kernel can have, strings and memory at user addresses
# read as the kernel's kprobe_events reads them, no stale record shown after
# an event is removed and its id given to another, and every rkprobes file
# as closed to other users as its kernel counterpart.

KE=/sys/kernel/debug/rkprobes/kprobe_events
EL=/sys/kernel/debug/rkprobes/error_log
T=/sys/kernel/tracing
EV=$T/events/rkprobes
[ -e $T/trace ] || mount -t tracefs nodev $T
# The kernel's own kprobe_events, on the kernel that has it.
KKE=$T/kprobe_events
[ -e $KKE ] || KKE=

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "insmod rkp_evtest.ko" insmod $MODDIR/rkp_evtest.ko
echo > $T/trace

# Defect 5: sprint_symbol() writes up to KSYM_SYMBOL_LEN (666) bytes, and a
# symstr of a 511-byte module symbol is more than 512 of them.
long=$(awk '$3 ~ /^rkp_evtest_long_/ { print $3; exit }' /proc/kallsyms)
expect_eq "symstr: rkp_evtest has a 511-byte symbol" 511 "${#long}"
check "symstr: add" sh -c "echo 'p:rkprobes/longsym rkp_evtest:$long self=%di:symstr' > $KE"
check "symstr: enable" sh -c "echo 1 > $EV/longsym/enable"
check "symstr: call the function" sh -c "echo 1 > /sys/module/rkp_evtest/parameters/call"
check "symstr: disable" sh -c "echo 0 > $EV/longsym/enable"
rec=$(grep 'longsym: ' $T/trace | tail -1)
echo "$rec" | cut -c1-120 | sed 's/^/# /'
# NAME+0x0/0xSIZE [rkp_evtest], whole: 511 + 8 or so + 13 bytes.
val=$(echo "$rec" | sed -n 's/.* self="\(.*\)"$/\1/p')
check "symstr: the whole text was recorded (${#val} bytes)" \
	sh -c "case '$val' in '$long+0x0/0x'*' [rkp_evtest]') exit 0 ;; esac; exit 1"
check "symstr: delete" sh -c "echo '-:longsym' >> $KE"

# Defect 8: a kernel fetch of an address below TASK_SIZE reads user memory,
# as the kernel's probe_mem_read() and fetch_store_string() do; ustring and
# +u read user memory only, symstr never does. Where the kernel's
# kprobe_events exists, the same probe there must record the same values.
f=/tmp/rkp-open-me.$$
touch $f
args="path=+0(%si):string upath=+0(%si):ustring head=+0(%si):x64 uhead=+u0(%si):x64 flags=+0(%dx):x64"
echo > $T/trace
check "user fallback: add" sh -c "echo 'p:rkprobes/uopen do_sys_openat2 $args' > $KE"
check "user fallback: enable" sh -c "echo 1 > $EV/uopen/enable"
cat $f
check "user fallback: disable" sh -c "echo 0 > $EV/uopen/enable"
# Before the event goes: removing it empties the buffer.
rec=$(grep " uopen: .*$f" $T/trace | tail -1)
check "user fallback: delete" sh -c "echo '-:uopen' >> $KE"
echo "$rec" | sed 's/^ *//; s/^/# /'
check "user fallback: :string of a user address records the file name" \
	sh -c "echo '$rec' | grep -qF ' path=\"$f\"'"
check "user fallback: :ustring too" sh -c "echo '$rec' | grep -qF 'upath=\"$f\"'"
# The first 8 bytes of the name, "/tmp/rkp", little-endian.
check "user fallback: a dereference of a user address reads user memory" \
	sh -c "echo '$rec' | grep -qF 'head=0x706b722f706d742f uhead=0x706b722f706d742f'"
# The same probe on the kernel's kprobe_events, after rkprobes' is gone
# (the two cannot both be armed on one function).
if [ -n "$KKE" ]; then
	check "user fallback: the kernel's probe" sh -c "echo 'p:kprobes/kuopen do_sys_openat2 $args' >> $KKE"
	check "user fallback: enable the kernel's" sh -c "echo 1 > $T/events/kprobes/kuopen/enable"
	cat $f
	check "user fallback: disable the kernel's" sh -c "echo 0 > $T/events/kprobes/kuopen/enable"
	krec=$(grep " kuopen: .*$f" $T/trace | tail -1)
	check "user fallback: remove the kernel's" sh -c "echo '-:kprobes/kuopen' >> $KKE"
	echo "$krec" | sed 's/^ *//; s/^/# /'
	expect_eq "user fallback: the kernel records the same values" \
		"$(echo "$krec" | sed 's/.*) //')" "$(echo "$rec" | sed 's/.*) //')"
else
	skip "user fallback: the kernel's kprobe_events" "kernel without CONFIG_KPROBE_EVENTS"
fi
rm -f $f

# Strings are read once a hit (issue 13): the size pass copies each into a
# per-CPU scratch and every record (each trace instance's, perf's) takes it
# from there. Six strings of a 600-byte path (kernel strings through a
# user pointer among them) and $comm: the first four staged, the other
# three read twice; enabled in the top buffer and in an instance, whose
# records must be the same, and the same as the kernel's kprobe_events
# records. (The host tests, probe_events_stage.rs, count the reads.)
seg=$(printf '%0190d' 0 | tr 0 s)
dir=/tmp/rkp-stage.$$/$seg/$seg/$seg
mkdir -p $dir
f=$dir/file
touch $f
args="dfd=%di:s32 p1=+0(%si):ustring p2=+0(%si):string c=\$comm p3=+0(%si):ustring p4=+0(%si):string p5=+0(%si):ustring p6=+0(%si):string"
mkdir $T/instances/rkp84s
echo > $T/trace
check "staged: add" sh -c "echo 'p:rkprobes/stg do_sys_openat2 $args' >> $KE"
check "staged: enable" sh -c "echo 1 > $EV/stg/enable"
check "staged: and in an instance" sh -c "echo 1 > $T/instances/rkp84s/events/rkprobes/stg/enable"
cat $f
check "staged: disable" sh -c "echo 0 > $EV/stg/enable && echo 0 > $T/instances/rkp84s/events/rkprobes/stg/enable"
rec=$(grep " stg: .*p1=\"$f\"" $T/trace | tail -1 | sed 's/.*) //')
irec=$(grep " stg: .*p1=\"$f\"" $T/instances/rkp84s/trace | tail -1 | sed 's/.*) //')
check "staged: delete" sh -c "echo '-:stg' >> $KE"
echo "$rec" | cut -c1-160 | sed 's/^/# /'
want="p1=\"$f\" p2=\"$f\" c=\"cat\" p3=\"$f\" p4=\"$f\" p5=\"$f\" p6=\"$f\""
check "staged: all six strings and \$comm recorded whole (${#rec} bytes)" \
	sh -c "echo '$rec' | grep -qF '$want'"
expect_eq "staged: the instance's record is the top buffer's" "$rec" "$irec"
if [ -n "$KKE" ]; then
	check "staged: the kernel's probe" sh -c "echo 'p:kprobes/kstg do_sys_openat2 $args' >> $KKE"
	check "staged: enable the kernel's" sh -c "echo 1 > $T/events/kprobes/kstg/enable"
	cat $f
	check "staged: disable the kernel's" sh -c "echo 0 > $T/events/kprobes/kstg/enable"
	krec=$(grep " kstg: .*p1=\"$f\"" $T/trace | tail -1 | sed 's/.*) //')
	check "staged: remove the kernel's" sh -c "echo '-:kprobes/kstg' >> $KKE"
	expect_eq "staged: the kernel records the same values" "$krec" "$rec"
else
	skip "staged: the kernel's kprobe_events" "kernel without CONFIG_KPROBE_EVENTS"
fi
# Eight of them are more than a ring-buffer page holds: the record is
# dropped, in both buffers, as the kernel's kprobe events drop it (the ring
# buffer refuses it), not cut.
args8="$args p7=+0(%si):ustring p8=+0(%si):string"
echo > $T/trace
echo > $T/instances/rkp84s/trace
check "staged, too large: add" sh -c "echo 'p:rkprobes/stg8 do_sys_openat2 $args8' >> $KE"
check "staged, too large: enable" sh -c "echo 1 > $EV/stg8/enable && echo 1 > $T/instances/rkp84s/events/rkprobes/stg8/enable"
cat $f
check "staged, too large: disable" sh -c "echo 0 > $EV/stg8/enable && echo 0 > $T/instances/rkp84s/events/rkprobes/stg8/enable"
n=$(grep -c " stg8: .*rkp-stage" $T/trace)
ni=$(grep -c " stg8: .*rkp-stage" $T/instances/rkp84s/trace)
check "staged, too large: delete" sh -c "echo '-:stg8' >> $KE"
expect_eq "staged, too large: no record in either buffer" "0 0" "$n $ni"
if [ -n "$KKE" ]; then
	echo "p:kprobes/kstg8 do_sys_openat2 $args8" >> $KKE
	echo 1 > $T/events/kprobes/kstg8/enable
	cat $f
	echo 0 > $T/events/kprobes/kstg8/enable
	expect_eq "staged, too large: the kernel's event records none either" 0 "$(grep -c ' kstg8: .*rkp-stage' $T/trace)"
	echo '-:kprobes/kstg8' >> $KKE
fi
rmdir $T/instances/rkp84s
rm -rf /tmp/rkp-stage.$$

# Defect 6: an event's id is free once it is removed, and the next event
# gets it (the lowest free id). Its records must be gone from every trace
# instance that had the event enabled, or trace output would print them
# with the new event's layout.
echo > $T/trace
mkdir $T/instances/rkp84
check "stale: add an event with strings" \
	sh -c "echo 'p:rkprobes/stale1 do_sys_openat2 path=+0(%si):ustring dfd=%di:s32 s=\\\"a-long-immediate-string\"' > $KE"
check "stale: enable at the top" sh -c "echo 1 > $EV/stale1/enable"
check "stale: and in an instance" sh -c "echo 1 > $T/instances/rkp84/events/rkprobes/stale1/enable"
cat /proc/version /proc/cmdline > /dev/null
check "stale: disable at the top" sh -c "echo 0 > $EV/stale1/enable"
check "stale: and in the instance" sh -c "echo 0 > $T/instances/rkp84/events/rkprobes/stale1/enable"
check "stale: recorded at the top" grep -q 'stale1: .*path="/proc/version"' $T/trace
check "stale: recorded in the instance" grep -q 'stale1: .*path="/proc/version"' $T/instances/rkp84/trace
id1=$(cat $EV/stale1/id)
check "stale: delete" sh -c "echo '-:stale1' >> $KE"
check "stale: a new event of another layout" sh -c "echo 'p:rkprobes/stale2 kernel_clone v=%di:u8' >> $KE"
id2=$(cat $EV/stale2/id)
expect_eq "stale: it has the removed event's id" "$id1" "$id2"
check "stale: no record left at the top" sh -c "! grep -E 'stale[12]:' $T/trace"
check "stale: no record left in the instance" sh -c "! grep -E 'stale[12]:' $T/instances/rkp84/trace"
check "stale: delete the new one" sh -c "echo '-:stale2' >> $KE"
rmdir $T/instances/rkp84

# Names are bytes: a Latin-1 letter is a letter to the kernel's isalpha(),
# and the event must be listed and have its tracefs directory under the
# very bytes written (the fuzz run of 80-kprobe-events.sh found them apart).
e9=$(printf '\351')
check "names: an event named with a Latin-1 byte" sh -c "printf 'p:rkprobes/caf\351 kernel_clone\n' >> $KE"
check "names: listed with the byte as written" grep -q "^p:rkprobes/caf$e9 kernel_clone\$" $KE
check "names: its tracefs directory has the same name" test -d "$EV/caf$e9"
check "names: deleted by that name" sh -c "echo '-:caf$e9' >> $KE"
check "names: gone" sh -c "! test -d $EV/caf$e9 && ! grep -q caf $KE"

# Permissions: every rkprobes file is root's, and no more open than its
# counterpart in the kernel (6.12: debug/kprobes/{list,blacklist} 0400,
# enabled 0600; tracing/kprobe_events and error_log 0640, kprobe_profile
# 0440); the tracefs files of an rkprobes event are the tracing core's, as
# for the kernel's own events.
kmode() {
	case $1 in
	list | blacklist) echo 400 ;;
	enabled) echo 600 ;;
	kprobe_events | error_log) echo 640 ;;
	kprobe_profile) echo 440 ;;
	esac
}
for f in list blacklist enabled kprobe_events error_log kprobe_profile; do
	p=/sys/kernel/debug/rkprobes/$f
	m=$(stat -c %a $p)
	k=$(kmode $f)
	check "permissions: $f ($m) is root's and no more open than the kernel's ($k)" \
		sh -c "[ \$(stat -c %u:%g $p) = 0:0 ] && [ \$((0$m & ~0$k)) = 0 ]"
done
for f in list blacklist enabled; do
	[ -e /sys/kernel/debug/kprobes/$f ] &&
		expect_eq "permissions: debug/kprobes/$f has the mode the kernel's source gives it" \
			"$(kmode $f)" "$(stat -c %a /sys/kernel/debug/kprobes/$f)"
done
for f in kprobe_events kprobe_profile error_log; do
	[ -e $T/$f ] && expect_eq "permissions: tracing/$f has the mode the kernel's source gives it" \
		"$(kmode $f)" "$(stat -c %a $T/$f)"
done
check "permissions: an event to look at" sh -c "echo 'p:rkprobes/perm kernel_clone' > $KE"
if [ -n "$KKE" ]; then
	check "permissions: and one of the kernel's" sh -c "echo 'p:kprobes/kperm kernel_clone' >> $KKE"
	for f in $(ls $EV/perm); do
		expect_eq "permissions: events/rkprobes/perm/$f as the kernel's event's" \
			"$(stat -c %a:%u $T/events/kprobes/kperm/$f)" "$(stat -c %a:%u $EV/perm/$f)"
	done
	check "permissions: remove the kernel's event" sh -c "echo '-:kprobes/kperm' >> $KKE"
fi

# An unprivileged user: the directories are opened up (debugfs and tracefs
# are mounted 0700), so that only the files' own modes stand in the way.
mkdir -p /etc
grep -q '^rkpuser:' /etc/passwd 2>/dev/null || echo 'rkpuser:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd
grep -q '^rkpuser:' /etc/group 2>/dev/null || echo 'rkpuser:x:1000:' >> /etc/group
as_user() {
	su -s /bin/sh rkpuser -c "$1"
}
check "permissions: su works" sh -c "[ \"\$(su -s /bin/sh rkpuser -c 'id -u')\" = 1000 ]"
dmode=$(stat -c %a /sys/kernel/debug)
tmode=$(stat -c %a $T)
chmod 755 /sys/kernel/debug $T
D=/sys/kernel/debug/rkprobes
check "permissions: the user can reach the files" \
	as_user "test -e $D/kprobe_events && test -e $EV/perm/enable"
for f in list blacklist enabled kprobe_events error_log kprobe_profile; do
	expect_fail "permissions: the user cannot read $f" as_user "cat $D/$f"
done
expect_fail "permissions: the user cannot write kprobe_events" \
	as_user "echo 'p:rkprobes/byuser kernel_clone' >> $D/kprobe_events"
expect_fail "permissions: nor truncate it" as_user ": > $D/kprobe_events"
expect_fail "permissions: nor write enabled" as_user "echo 0 > $D/enabled"
expect_fail "permissions: nor enable an rkprobes event" as_user "echo 1 > $EV/perm/enable"
check "permissions: the user made no event" sh -c "! grep -q byuser $KE && test -d $EV/perm"
expect_eq "permissions: probes stay enabled" 1 "$(cat $D/enabled)"
expect_eq "permissions: the event stays disabled" 0 "$(cat $EV/perm/enable)"
chmod $dmode /sys/kernel/debug
chmod $tmode $T
check "permissions: delete" sh -c "echo '-:perm' >> $KE"

# An event enabled, and hit, while its trace event is being published: the
# tracefs directory exists once the trace event is registered, before the
# event's two pointers to it (the trace event, and perf's flag in it) are
# set. A hit must see both or neither: one that saw the trace event without
# the flag would read through a null pointer. The race window (test builds)
# holds the writer 300 ms between the two stores while a task enables the
# event as soon as it appears and both CPUs hit its probe.
P=/sys/module/rkprobes/parameters
echo 300 > $P/race_window_ms
echo 1 > $P/race_window
( while :; do dd if=/dev/zero of=/dev/null bs=1 count=10000 2>/dev/null; done ) &
load=$!
( for i in $(seq 1 3000); do
	[ -e $EV/race/enable ] && echo 1 > $EV/race/enable && exit 0
	usleep 200
  done; exit 1 ) &
enabler=$!
check "race: add an event on vfs_read, held 300 ms inside its publication" \
	sh -c "echo 'p:rkprobes/race vfs_read' >> $KE"
check "race: the event was enabled as soon as it appeared" wait $enabler
echo 0 > $P/race_window
sleep 0.5
kill $load
wait $load 2>/dev/null
check "race: disable" sh -c "echo 0 > $EV/race/enable"
hits=$(awk '$1 == "race" { print $2 }' /sys/kernel/debug/rkprobes/kprobe_profile)
check "race: it recorded (${hits:-0} hits)" test "${hits:-0}" -gt 0
check "race: delete" sh -c "echo '-:race' >> $KE"

# An empty user string: strncpy_from_user_nofault() returns 0 for it, so
# the kernel's kprobe events record no data and print "(fault)"; so do
# rkprobes' (readloop's buffer holds a string of the length it is given).
# rkprobes' event and the kernel's, each alone on ksys_read. Records are
# told apart by readloop's pid: the trace prints a task's name only when
# it saw the task switch in while tracing ("<...>-PID" otherwise).
# readloop_pid N LEN: runs readloop, prints its pid.
readloop_pid() {
	/bin/readloop $1 $2 > /dev/null &
	local pid=$!
	wait $pid
	echo $pid
}
empty_ustring() { # CONTROL EVENTS_DIR
	echo 'p:emptys ksys_read s=+0(%si):ustring' >> $1 || return 1
	echo > $T/trace
	echo 1 > $2/emptys/enable
	local empty=$(readloop_pid 3 0) four=$(readloop_pid 3 4)
	echo 0 > $2/emptys/enable
	# Read before the event goes: its records print only while it exists.
	printf '%s %s\n' "$(grep -c -- "-$empty *\[.* emptys: .* s=(fault)\$" $T/trace)" \
		"$(grep -c -- "-$four *\[.* emptys: .* s=\"aaaa\"\$" $T/trace)"
	echo '-:emptys' >> $1
}
expect_eq "empty ustring: (fault) 3 times, \"aaaa\" 3 times" "3 3" "$(empty_ustring $KE $EV)"
if [ -n "$KKE" ]; then
	expect_eq "empty ustring: the kernel's event prints the same" "3 3" \
		"$(empty_ustring $KKE $T/events/kprobes)"
fi

# A user string that makes the record larger than a ring-buffer page holds
# drops the record, as the kernel's kprobe events drop it; one that fits is
# recorded whole. (A cut record would make reading trace itself, with such
# an event on ksys_read, a loop without end: each read records the text
# read before.)
long_ustring() { # CONTROL EVENTS_DIR
	echo 'p:longs ksys_read s=+0(%si):ustring' >> $1 || return 1
	echo > $T/trace
	echo 1 > $2/longs/enable
	local fits=$(readloop_pid 3 4000) over=$(readloop_pid 3 4095)
	echo 0 > $2/longs/enable
	a4000=$(printf '%04000d' 0 | tr 0 a)
	printf '%s %s\n' "$(grep -c -- "-$fits *\[.* longs: .* s=\"$a4000\"\$" $T/trace)" \
		"$(grep -cE -- "-($fits|$over) *\[.* longs: .* s=\"$a4000" $T/trace)"
	echo '-:longs' >> $1
}
expect_eq "long ustring: 4,000 bytes recorded 3 times, 4,095 never" "3 3" "$(long_ustring $KE $EV)"
if [ -n "$KKE" ]; then
	expect_eq "long ustring: the kernel's event records the same" "3 3" \
		"$(long_ustring $KKE $T/events/kprobes)"
fi
check "long ustring: reading trace ends with such an event on ksys_read enabled" sh -c "
	echo 'p:feedback ksys_read s=+0(%si):ustring' >> $KE &&
	echo 1 > $EV/feedback/enable &&
	/bin/readloop 1 4000 > /dev/null &&
	timeout 60 cat $T/trace > /dev/null; r=\$?
	echo 0 > $EV/feedback/enable; echo '-:feedback' >> $KE; exit \$r"

check "rmmod rkp_evtest" rmmod rkp_evtest
check "rmmod rkprobes" rmmod rkprobes
