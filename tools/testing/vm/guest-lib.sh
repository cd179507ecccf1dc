# SPDX-License-Identifier: GPL-2.0
# Sourced by every guest test: KTAP result helpers. Each helper prints one
# result line; the harness indents them under the test's own result.
# A negative check (expect_fail) counts as a result of its own, so that it can
# fail: never write `! cmd` in a test.

_t_n=0
_t_fail=0

ok() {
	_t_n=$((_t_n + 1))
	echo "ok $_t_n $*"
}

not_ok() {
	_t_n=$((_t_n + 1))
	_t_fail=$((_t_fail + 1))
	echo "not ok $_t_n $*"
}

skip() {
	_t_n=$((_t_n + 1))
	echo "ok $_t_n $1 # SKIP $2"
}

# check DESC CMD...: passes when CMD exits 0; prints CMD's output on failure.
check() {
	_desc=$1
	shift
	if "$@" >/tmp/.check.out 2>&1; then
		ok "$_desc"
	else
		not_ok "$_desc"
		sed 's/^/# /' /tmp/.check.out
	fi
}

# expect_fail DESC CMD...: passes when CMD exits non-zero.
expect_fail() {
	_desc=$1
	shift
	if "$@" >/tmp/.check.out 2>&1; then
		not_ok "$_desc (unexpectedly succeeded)"
		sed 's/^/# /' /tmp/.check.out
	else
		ok "$_desc"
	fi
}

# expect_eq DESC EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		echo "# expected: '$2'"
		echo "# actual:   '$3'"
	fi
}

diag() {
	echo "# $*"
}

# ktap_module NAME [ARGS...]: loads the test module NAME.ko, which runs its
# checks at load and prints KTAP into the kernel log, and turns each of its
# results into one of ours, plus one for the load itself. Returns how many
# results the module reported.
ktap_module() {
	_mod=$1
	shift
	dmesg -c > /dev/null
	insmod $MODDIR/$_mod.ko "$@"
	_rc=$?
	# busybox insmod retries a failed load with init_module(): keep the
	# first run.
	dmesg | sed -n "s/.*$_mod: //p" | awk '{ print } /^1\.\./ { exit }' > /tmp/$_mod.out
	while IFS= read -r line; do
		case "$line" in
		"not ok "*) d=${line#not ok }; not_ok "${d#* }" ;;
		"ok "*) d=${line#ok }; ok "${d#* }" ;;
		esac
	done < /tmp/$_mod.out
	grep '^#' /tmp/$_mod.out
	expect_eq "$_mod.ko loads (all its checks passed)" 0 "$_rc"
	KTAP_COUNT=$(grep -cE '^(not )?ok ' /tmp/$_mod.out)
}

# Called by the harness after the test body: prints the plan, fails the test
# when a check failed or when it ran none.
done_testing() {
	echo "1..$_t_n"
	[ "$_t_fail" -eq 0 ] && [ "$_t_n" -gt 0 ]
}

MODDIR=/modules

# host_run CMD...: runs the host's CMD (Debian's perf, bpftrace) in a chroot
# of the host's root, which /init mounted read-only on /host (tools/testing/
# vm/run shares it over virtio-9p), with the guest's /proc, /sys, /dev and
# /tmp. HOME is /tmp, the one writable place.
host_run() {
	HOME=/tmp PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot /host "$@"
}

# has_host_tool TOOL: whether the host's root is mounted and has TOOL.
has_host_tool() {
	[ -d /host/usr ] && host_run sh -c "command -v $1" > /dev/null 2>&1
}

# expect_kernel_report CMD...: runs CMD, which provokes a kernel report on
# purpose (an oops a test recovers from); the runner counts the report lines
# it logs as expected instead of failing the run. The window closes when CMD
# returns, and the harness closes it after every test in any case.
expect_kernel_report() {
	echo "rkprobes-test: expected report begins" > /dev/kmsg
	touch /tmp/.expecting-report
	"$@"
	_rc=$?
	echo "rkprobes-test: expected report ends" > /dev/kmsg
	rm -f /tmp/.expecting-report
	return $_rc
}
