# SPDX-License-Identifier: GPL-2.0
# Reentry everywhere (issue 10, defects 1, 2 and 9): a C client with
# printing post-handlers on every instruction that rkprobes accepts in the
# printk path, re-entered from its own post-handlers and, through sysrq-l,
# from backtrace NMIs while the other CPU runs probed copies; a `rep stosb`
# that must trap back once per call; probes in rkprobes' own exception path
# refused by the blacklist. Under the old trap-flag single-step the first
# case set TF again inside the #DB handler and the nested #DB overwrote the
# outer frames on the #DB stack: a panic.

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

# kmsg writes go through vprintk_emit -> vprintk_store -> printk_sprint ->
# vsnprintf (and prb_reserve); every post-handler's printk re-enters them.
for fn in vprintk vprintk_emit vprintk_store printk_sprint prb_reserve vsnprintf; do
	# A compiler may inline one of them (clang, on the debug kernel,
	# inlines printk_sprint): a function that is not a symbol is skipped.
	if ! grep -q " $fn\$" /proc/kallsyms; then
		skip "$fn" "not a symbol in this kernel (inlined)"
		continue
	fi
	dmesg -c > /dev/null
	check "$fn: probes at every accepted offset" insmod $MODDIR/rkp_reenter.ko symbol=$fn
	dmesg | sed -n 's/.*rkp_reenter: \([0-9].*probes on.*\)/# \1/p'
	for i in 1 2 3 4 5; do echo "rkp-reentry $fn $i" > /dev/kmsg; done
	if [ -e /proc/sysrq-trigger ]; then
		# Backtrace NMIs print through the same path on the other CPU while
		# this one keeps hitting the probes.
		( for i in $(seq 1 40); do echo "rkp-reentry load $i" > /dev/kmsg; done ) &
		for i in 1 2 3; do echo l > /proc/sysrq-trigger; done
		wait
	fi
	check "$fn: post-handlers printed" sh -c 'dmesg | grep -q "rkp_reenter: post-handler at"'
	check "$fn: rmmod" rmmod rkp_reenter
	line=$(dmesg | sed -n 's/.*rkp_reenter: unloaded: //p' | tail -n 1)
	diag "$fn: $line"
	set -- $(echo "$line" | sed 's/[^0-9 ]//g')
	# probes, hits, post-handler calls, missed
	check "$fn: hit (${2:-0} hits)" test "${2:-0}" -gt 0
	check "$fn: post-handlers ran (${3:-0})" \
		test "${3:-0}" -gt 0
	check "$fn: re-entries from post-handlers counted in nmissed (${4:-0})" \
		test "${4:-0}" -gt 0
done
if [ ! -e /proc/sysrq-trigger ]; then
	skip "hits from NMIs" "kernel without CONFIG_MAGIC_SYSRQ"
else
	check "backtrace NMIs ran" sh -c 'dmesg | grep -q "NMI backtrace for cpu"'
fi

# A rep string instruction runs whole in its slot and traps back once.
dmesg -c > /dev/null
check "rep stosb of 8 MiB under a probe with a post-handler" \
	insmod $MODDIR/rkp_reenter.ko mode=rep
dmesg | sed -n 's/.*rkp_reenter: \(rep stosb.*\)/# \1/p'
check "one hit and one post-handler call per call" \
	sh -c 'dmesg | grep -q "3 calls: 3 hits, 3 post-handler calls, 0 missed"'
rmmod rkp_reenter 2>/dev/null

# rkprobes' own hit paths (the ftrace callback, the optimized-probe
# callback and trampoline), and the kernel's int3 entry, are refused.
for fn in rkp_ftrace_func rkp_ftrace_hit rkp_optprobe_callback rkp_optprobe_trampoline exc_int3 notify_die; do
	if grep -q " $fn\$" /proc/kallsyms || grep -q " $fn	" /proc/kallsyms; then
		expect_fail "a probe in $fn is refused" \
			insmod $MODDIR/rkp_reenter.ko symbol=$fn maxoff=32
	else
		skip "a probe in $fn is refused" "no symbol $fn"
	fi
done

check "list empty" sh -c '[ -z "$(cat /sys/kernel/debug/rkprobes/list)" ]'
check "rmmod rkprobes" rmmod rkprobes
