# SPDX-License-Identifier: GPL-2.0
# tools/rkprobe in the guest, against the running kernel's own DWARF: the
# runner puts a statically linked rkprobe in /bin and the test kernel's
# debug sections at /usr/lib/debug/boot/vmlinux-RELEASE, where rkprobe
# finds them as perf does (no -k). Events placed by function, source line
# and variable name go into rkprobes' control file; the values traced are
# the ones the code has there: the path do_sys_openat2 opens, and vfs_read's
# count at the line after its checks while dd reads a known count. Then
# --vars, --line, --list, --del, and the errors that must write nothing.

KE=/sys/kernel/debug/rkprobes/kprobe_events
T=/sys/kernel/tracing
EV=$T/events/probe
[ -e $T/trace ] || mount -t tracefs nodev $T

# A kernel configured without debuginfo (the runner says so in
# /etc/rkprobe-no-debuginfo: the kernel without kprobes, the debug kernel;
# one kernel with debuginfo is enough) skips; on any other kernel a
# missing tool or DWARF is a failure.
if [ -e /etc/rkprobe-no-debuginfo ]; then
	skip "rkprobe tool" "$(cat /etc/rkprobe-no-debuginfo)"
else

check "rkprobe is in the guest" test -x /bin/rkprobe
check "the running kernel's DWARF is in the guest" test -e /usr/lib/debug/boot/vmlinux-"$(uname -r)"
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko
echo > $T/trace

# The DWARF file must be the running kernel's build: a build-id that is
# not the running kernel's (RKPROBE_KERNEL_NOTES stands in for
# /sys/kernel/notes with a GNU build-id note of 20 bytes 0x01) is refused,
# unless --ignore-build-id.
printf '\004\000\000\000\024\000\000\000\003\000\000\000GNU\000' > /tmp/other.notes
for i in $(seq 1 20); do printf '\001' >> /tmp/other.notes; done
RKPROBE_KERNEL_NOTES=/tmp/other.notes rkprobe --vars vfs_read > /tmp/bid 2>&1
sed -n 1p /tmp/bid | cut -c 1-160 | sed 's/^/# /'
check "a DWARF file of another build is refused" grep -q "build-id [0-9a-f]* is not the running kernel's (0101" /tmp/bid
check "--ignore-build-id reads it anyway" sh -c \
	"RKPROBE_KERNEL_NOTES=/tmp/other.notes rkprobe --ignore-build-id --vars vfs_read | grep -q 'Available variables at vfs_read'"

# --vars: what can be fetched at vfs_read's entry, with DWARF types.
rkprobe --vars vfs_read > /tmp/vars 2>&1
sed 's/^/# /' /tmp/vars
check "--vars: header" grep -q '^Available variables at vfs_read$' /tmp/vars
check "--vars: the probe address" grep -q '@<vfs_read+0>' /tmp/vars
check "--vars: count with its type" grep -qE '^		size_t	count$' /tmp/vars
check "--vars: file with its type" grep -qE '^		struct file\*	file$' /tmp/vars

# --line: the probeable lines of vfs_read; the line that calls
# rw_verify_area() is after count was checked.
rkprobe --line vfs_read > /tmp/lines 2>&1
head -5 /tmp/lines | sed 's/^/# /'
check "--line: header names the function" grep -q '^<vfs_read@.*fs/read_write.c:0>' /tmp/lines
rel=$(sed -n 's/^ *\([0-9][0-9]*\)[[:space:]]*ret = rw_verify_area(READ.*/\1/p' /tmp/lines | head -1)
check "--line: the rw_verify_area line can be probed" test -n "$rel"
diag "vfs_read:$rel is: $(grep "^ *$rel  " /tmp/lines)"

# do_sys_openat2's filename as a string, by variable name.
check "--add do_sys_openat2 filename" \
	rkprobe -q --add 'myopen=do_sys_openat2 fn=filename:ustring'
check "listed in rkprobes' control file" grep -q '^p:probe/myopen do_sys_openat2' $KE
grep myopen $KE | sed 's/^/# /'
# vfs_read's count and file->f_mode by source line.
check "--add vfs_read:$rel count file->f_mode" \
	rkprobe -q --add "myread=vfs_read:$rel count mode=file->f_mode"
grep myread $KE | sed 's/^/# /'

check "enable" sh -c "echo 1 > $EV/myopen/enable && echo 1 > $EV/myread/enable"
cat /proc/version > /dev/null
dd if=/proc/version of=/dev/null bs=37 count=1 2>/dev/null
check "disable" sh -c "echo 0 > $EV/myopen/enable && echo 0 > $EV/myread/enable"
grep -E 'myopen|myread' $T/trace | grep -E 'cat|dd' | tail -4 | sed 's/^/# /'
check "do_sys_openat2: the path opened" grep -q 'myopen: .* fn="/proc/version"' $T/trace
# size_t is unsigned: x64, printed in hex.
count=$(grep 'dd-.*myread:' $T/trace | sed -n 's/.* count=\(0x[0-9a-f]*\).*/\1/p' | head -1)
expect_eq "vfs_read: count is what dd read" 37 "$((${count:-0}))"
mode=$(grep 'dd-.*myread:' $T/trace | sed -n 's/.* mode=\(0x[0-9a-f]*\).*/\1/p' | head -1)
check "vfs_read: file->f_mode has FMODE_READ" sh -c "[ -n '$mode' ] && [ \$(( $mode & 1 )) = 1 ]"

# --list: the events with their source places and arguments.
rkprobe --list > /tmp/list 2>&1
sed 's/^/# /' /tmp/list
check "--list: myopen at do_sys_openat2" grep -qE '^  probe:myopen +\(on do_sys_openat2@.*fs/open.c with fn\)$' /tmp/list
check "--list: myread at vfs_read:$rel" grep -qE "^  probe:myread +\\(on vfs_read:$rel@.*fs/read_write.c with count mode\\)\$" /tmp/list

# -m: a module's own DWARF (lkdtm.ko, which the runner adds to the
# modules), probed by source line: lkdtm's debugfs read copies out its
# listing of crash types, n bytes, of which the reader asked for count.
check "insmod lkdtm.ko" insmod $MODDIR/lkdtm.ko
rkprobe -m $MODDIR/lkdtm.ko --line lkdtm_debugfs_read > /tmp/mlines 2>&1
mrel=$(sed -n 's/^ *\([0-9][0-9]*\)[[:space:]]*out = simple_read_from_buffer(.*/\1/p' /tmp/mlines | head -1)
check "-m --line: the simple_read_from_buffer line can be probed" test -n "$mrel"
check "-m --add lkdtm_debugfs_read:$mrel n count" \
	rkprobe -q -m $MODDIR/lkdtm.ko --add "modread=lkdtm_debugfs_read:$mrel n count"
grep modread $KE | sed 's/^/# /'
check "placed at lkdtm:lkdtm_debugfs_read" grep -q '^p:probe/modread lkdtm:lkdtm_debugfs_read+' $KE
size=$(cat /sys/kernel/debug/provoke-crash/DIRECT | wc -c)
check "enable modread" sh -c "echo 1 > $EV/modread/enable"
dd if=/sys/kernel/debug/provoke-crash/DIRECT of=/dev/null bs=4000 count=1 2>/dev/null
check "disable modread" sh -c "echo 0 > $EV/modread/enable"
grep 'dd-.*modread:' $T/trace | head -1 | sed 's/^/# /'
n=$(grep 'dd-.*modread:' $T/trace | sed -n 's/.* n=\(-*[0-9]*\).*/\1/p' | head -1)
expect_eq "lkdtm_debugfs_read: n is the listing's size" "$size" "$n"
count=$(grep 'dd-.*modread:' $T/trace | sed -n 's/.* count=\(0x[0-9a-f]*\).*/\1/p' | head -1)
expect_eq "lkdtm_debugfs_read: count is what dd asked for" 4000 "$((${count:-0}))"
rkprobe -m $MODDIR/lkdtm.ko --list modread > /tmp/mlist 2>&1
sed 's/^/# /' /tmp/mlist
check "-m --list: modread at lkdtm_debugfs_read:$mrel in lkdtm" \
	grep -qE "^  probe:modread +\\(on lkdtm_debugfs_read:$mrel@.*lkdtm/core.c in lkdtm with n count\\)\$" /tmp/mlist
check "--del modread" rkprobe -q --del modread
check "rmmod lkdtm" rmmod lkdtm

# Errors: each a message, nothing written.
before=$(cat $KE | wc -l)
expect_fail "unknown function" rkprobe -q --add 'no_such_function_xyz'
expect_fail "variable not there" rkprobe -q --add 'vfs_read no_such_var'
expect_fail "member that does not exist" rkprobe -q --add 'vfs_read file->no_such_member'
expect_fail "line that cannot be probed" rkprobe -q --add 'vfs_read:100000'
rkprobe --add 'vfs_read file->no_such_member' 2>&1 | head -2 | sed 's/^/# /'
expect_eq "errors wrote nothing" "$before" "$(cat $KE | wc -l)"

# --del with a glob.
check "--del 'my*'" rkprobe --del 'my*'
expect_eq "the control file is empty" "" "$(cat $KE)"
expect_fail "--del with nothing matching fails" rkprobe --del 'nothing*'
check "rmmod rkprobes" rmmod rkprobes
fi
