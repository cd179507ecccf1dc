# SPDX-License-Identifier: GPL-2.0
# Guest-side harness: runs every test in /guest/tests in order, as KTAP. Each
# test is a shell script sourcing guest-lib.sh helpers; its results are
# printed indented under its own top-level result, followed by a comment with
# the test's guest time. A test that exits non-zero, fails a check, runs no
# check or exceeds its time limit is "not ok". The host's runner fails a guest
# that prints nothing for a while: long tests print progress comments.

TEST_TIMEOUT=$(cat /guest/test-timeout 2>/dev/null || echo 3600)
tests=$(ls /guest/tests/ | sort)
n=$(echo "$tests" | grep -c .)

# Guest uptime in whole seconds.
uptime_s() {
	read -r up _ < /proc/uptime
	echo "${up%.*}"
}

echo "KTAP version 1"
echo "1..$n"
i=0
for t in $tests; do
	i=$((i + 1))
	name=${t%.sh}
	echo "    KTAP version 1"
	echo "    # Subtest: $name"
	t0=$(uptime_s)
	{
		cd /tmp
		timeout -s KILL "$TEST_TIMEOUT" sh -c ". /guest/lib.sh; . /guest/tests/$t; done_testing"
		echo $? >/tmp/.rc
	} 2>&1 | sed 's/^/    /'
	rc=$(cat /tmp/.rc)
	if [ -e /tmp/.expecting-report ]; then
		echo "rkprobes-test: expected report ends" > /dev/kmsg
		rm -f /tmp/.expecting-report
	fi
	echo "# $name: $(($(uptime_s) - t0)) s"
	if [ "$rc" = 0 ]; then
		echo "ok $i $name"
	else
		[ "$rc" = 137 ] && echo "# $name: killed after ${TEST_TIMEOUT}s"
		echo "not ok $i $name # exit status $rc"
	fi
done

echo "# ---- guest dmesg ----"
dmesg
echo "# ---- end of guest dmesg ----"
echo "RKPROBES-GUEST-DONE"
