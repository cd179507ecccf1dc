# SPDX-License-Identifier: GPL-2.0
# /sys/kernel/debug/rkprobes/blacklist lists, in the kernel's format, every
# range of the native kprobes blacklist and rkprobes' own text.

BL=/sys/kernel/debug/rkprobes/blacklist
NATIVE=/sys/kernel/debug/kprobes/blacklist

check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
check "blacklist file exists" test -f $BL
check "blacklist readable" cat $BL
n=$(wc -l < $BL)
diag "rkprobes blacklist: $n ranges"
check "every line is 0xSTART-0xEND<TAB>SYMBOL" \
	awk -F'\t' 'NF != 2 || $1 !~ /^0x[0-9a-f]{16}-0x[0-9a-f]{16}$/ { print "bad: " $0; bad = 1 } END { exit bad }' $BL
check "every range is non-empty" \
	awk '{ split($1, a, "-"); if ((a[1] "") >= (a[2] "")) { print "empty: " $0; bad = 1 } } END { exit bad }' $BL

if [ -f $NATIVE ]; then
	nn=$(wc -l < $NATIVE)
	diag "native blacklist: $nn ranges"
	# Lines of the native list missing from ours (busybox has no comm).
	grep -vxF -f $BL $NATIVE > /tmp/missing
	expect_eq "every native entry is in rkprobes' blacklist" 0 "$(wc -l < /tmp/missing)"
	head -5 /tmp/missing | sed 's/^/# missing: /'
	for sym in exc_int3 do_int3 notify_die kprobe_int3_handler; do
		if grep -q "	$sym\$" $NATIVE; then
			check "$sym blacklisted" grep -q "	$sym\$" $BL
		fi
	done
	grep -vxF -f $NATIVE $BL > /tmp/extra
	expect_eq "rkprobes adds exactly its own text" "1 1" \
		"$(wc -l < /tmp/extra) $(grep -c '\[rkprobes\]$' /tmp/extra)"
else
	skip "native comparison" "kernel without CONFIG_KPROBES"
fi
check "rkprobes' own text is listed" grep -q '\[rkprobes\]$' $BL
check "rmmod rkprobes" rmmod rkprobes
