# SPDX-License-Identifier: GPL-2.0
# Churn (issue 10): rounds of add/enable/disable/remove of a kprobe_events
# event, in turn an ftrace entry, an int3 site, a return probe and one with
# arguments, while both CPUs call the probed functions; a client module unloaded while
# its probes are being hit; rkprobes unloaded right after its last event is
# removed, with hits in flight. The kernel must stay up with a clean log, and
# nothing may be left behind. A round costs about 0.7 s under TCG with both
# CPUs busy: 100 rounds here; CHURN_ROUNDS overrides it (1,000 rounds, the
# issue's figure, take about 12 minutes: see Documentation/reliability.rst).

D=/sys/kernel/debug/rkprobes
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
ROUNDS=${CHURN_ROUNDS:-100}

load() {
	# Two busy loops, one per CPU, through vfs_read and do_sys_openat2.
	for cpu in 0 1; do
		( while [ ! -e /tmp/churn.stop ]; do cat /proc/version > /dev/null; done ) &
	done
}
unload() {
	touch /tmp/churn.stop
	wait
	rm -f /tmp/churn.stop
}

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# An int3 site in vfs_read: the first offset past the entry that rkprobes
# takes.
mid=
for off in 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do
	if echo "p:churn_probe vfs_read+$off" >> $D/kprobe_events 2>/dev/null; then
		echo '-:churn_probe' >> $D/kprobe_events
		mid=$off
		break
	fi
done
check "an int3 site in vfs_read (+${mid:-none})" test -n "$mid"

# One event per round, of each kind in turn.
kind() {
	case $(($1 % 4)) in
	0) echo "p:churn vfs_read" ;;
	1) echo "p:churn vfs_read+$mid" ;;
	2) echo 'r:churn vfs_read $retval' ;;
	3) echo 'p:churn do_sys_openat2 dfd=%di:s32 path=+0(%si):ustring' ;;
	esac
}
load
# Each kind records while both CPUs run through it.
for k in 0 1 2 3; do
	echo > $T/trace
	kind $k >> $D/kprobe_events && echo 1 > $T/events/rkprobes/churn/enable
	for i in 1 2 3; do cat /proc/version > /dev/null; done
	check "$(kind $k): records" grep -q ' churn: ' $T/trace
	echo 0 > $T/events/rkprobes/churn/enable
	echo '-:churn' >> $D/kprobe_events
done
start=$(date +%s)
bad=0
i=0
while [ $i -lt $ROUNDS ]; do
	def=$(kind $i)
	i=$((i + 1))
	echo "$def" >> $D/kprobe_events || { bad=$((bad + 1)); echo "# round $i: add failed"; }
	echo 1 > $T/events/rkprobes/churn/enable || { bad=$((bad + 1)); echo "# round $i: enable failed"; }
	echo 0 > $T/events/rkprobes/churn/enable || { bad=$((bad + 1)); echo "# round $i: disable failed"; }
	echo '-:churn' >> $D/kprobe_events || { bad=$((bad + 1)); echo "# round $i: remove failed"; }
	[ $bad -gt 10 ] && break
	[ $((i % 20)) -eq 0 ] && echo "# $i rounds, $(( $(date +%s) - start ))s"
done
unload
diag "$i rounds in $(( $(date +%s) - start ))s"
expect_eq "$ROUNDS rounds without an error" "$ROUNDS 0" "$i $bad"
check "no event left" sh -c "[ -z \"\$(cat $D/kprobe_events)\" ]"
check "no probe left" sh -c "[ -z \"\$(cat $D/list)\" ]"
check "no tracefs directory left" sh -c "[ ! -e $T/events/rkprobes/churn ]"

# A client module unloaded while its probes are hit.
load
fails=0
for i in $(seq 1 10); do
	insmod $MODDIR/kprobe_example.ko symbol=vfs_read > /dev/null 2>&1 || fails=$((fails + 1))
	rmmod kprobe_example || fails=$((fails + 1))
	insmod $MODDIR/rkp_reenter.ko symbol=vfs_read maxoff=96 prints=0 > /dev/null 2>&1 || fails=$((fails + 1))
	rmmod rkp_reenter || fails=$((fails + 1))
done
unload
expect_eq "10 rounds of client modules loaded and unloaded under hits" 0 "$fails"
check "no probe left" sh -c "[ -z \"\$(cat $D/list)\" ]"
check "rmmod rkprobes" rmmod rkprobes

# rkprobes unloaded right after its last event goes, with hits in flight.
load
fails=0
for i in $(seq 1 10); do
	insmod $MODDIR/rkprobes.ko || { fails=$((fails + 1)); continue; }
	# The return probe is on a function that never sleeps: an instance
	# still out in a sleeping task would hold rkprobes loaded, by design.
	printf '%s\n' "p:churn_entry vfs_read" "p:churn_mid vfs_read+$mid" \
		'r:churn_ret rw_verify_area $retval' >> $D/kprobe_events || fails=$((fails + 1))
	echo 1 > $T/events/rkprobes/enable || fails=$((fails + 1))
	cat /proc/version > /dev/null
	# An enabled event cannot be removed (EBUSY, as the kernel's).
	echo 0 > $T/events/rkprobes/enable || fails=$((fails + 1))
	printf '%s\n' '-:churn_entry' '-:churn_mid' '-:churn_ret' >> $D/kprobe_events ||
		fails=$((fails + 1))
	for t in 1 2 3 4 5; do
		rmmod rkprobes 2>/tmp/churn.rmmod && break
		echo "# $(cat /tmp/churn.rmmod); $(grep '^rkprobes ' /proc/modules)"
		sleep 1
	done
	grep -q "^rkprobes " /proc/modules && fails=$((fails + 1))
done
unload
expect_eq "10 rounds of remove-then-rmmod under hits" 0 "$fails"
check "rkprobes is unloaded" sh -c '! grep -q "^rkprobes " /proc/modules'
