# SPDX-License-Identifier: GPL-2.0
# Typed fetchargs from BTF (`p vfs_read file count`, `$arg*`, member chains,
# typed `$retval`): on a kernel with BTF and kprobe events, definitions
# generated from its BTF are written to the kernel's kprobe_events and to
# rkprobes' (tools/testing/vm/btf-args.py, in the host's python3) and must
# get the same errno, error_log entry, listing and format, and the same
# values recorded for a fixed workload. On the kernel without kprobes,
# rkprobes alone, its records checked against the workload's known values;
# without BTF, typed arguments are refused as by a kernel without
# CONFIG_PROBE_EVENTS_BTF_ARGS.

KE=/sys/kernel/debug/rkprobes/kprobe_events
EL=/sys/kernel/debug/rkprobes/error_log
T=/sys/kernel/tracing
EV=$T/events/rkprobes
[ -e $T/trace ] || mount -t tracefs nodev $T
check "insmod rkprobes.ko" insmod $MODDIR/rkprobes.ko

if [ ! -e /sys/kernel/btf/vmlinux ]; then
	expect_fail "no BTF: a parameter name is refused" sh -c "echo 'p:t1 vfs_read count' > $KE"
	check "no BTF: the kernel's message" grep -q 'BTF is not available or not supported' $EL
	expect_fail "no BTF: \$arg* is refused" sh -c "echo 'p:t1 vfs_read \$arg*' > $KE"
	check "no BTF: \$argN stays a register" sh -c "echo 'p:t1 vfs_read \$arg3' > $KE && grep -q 'arg1=\$arg3' $KE"
	check "clear" sh -c "echo > $KE"
elif [ -e $T/kprobe_events ] && has_host_tool python3; then
	cp /guest/btf-args.py /bin/readloop /tmp/
	seed=${RKP_BTF_SEED:-$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')}
	host_run python3 /tmp/btf-args.py "$seed" 500 > /tmp/btf-args.out 2>&1
	rc=$?
	grep -v '^SUMMARY' /tmp/btf-args.out | head -n 400 | sed 's/^/# /'
	summary=$(grep '^SUMMARY' /tmp/btf-args.out)
	diag "$summary"
	val() { echo "$summary" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	expect_eq "btf-args.py ran to its end" 0 "$rc"
	check "at least 500 definitions tried on both files" test "$(val tried)" -ge 500
	check "both accepted some and refused some" test "$(val accepted)" -gt 100 -a "$(val refused)" -gt 100
	expect_eq "every definition: the same errno, error_log, listing and format" "$(val tried)" "$(val agreed)"
	check "values of at least 100 events compared" test "$(val value_events)" -ge 100
	expect_eq "no mismatch (seed $seed)" 0 "$(val mismatches)"
else
	# The kernel without kprobes: rkprobes alone, on values the workload
	# sets (dd's count, the file's name and mode, the bytes read).
	echo 0123456789 > /tmp/btf-data.txt
	echo > $T/trace
	check "typed: add" sh -c "echo 'p:t1 vfs_read file count name=file->f_path.dentry->d_name.name:string mode=file->f_inode->i_mode' > $KE"
	check "typed: return" sh -c "echo 'r:t2 vfs_read \$retval count' >> $KE"
	check "typed: listed with names" grep -q 'p:rkprobes/t1 vfs_read file=file count=count name=file->f_path.dentry->d_name.name:string mode=file->f_inode->i_mode' $KE
	check "typed: count is u64, mode u16, \$retval s64" sh -c "grep -q 'field:u64 count;' $EV/t1/format && grep -q 'field:u16 mode;' $EV/t1/format && grep -q 'field:s64 arg1;' $EV/t2/format"
	check "typed: enable" sh -c "echo 1 > $EV/enable"
	dd if=/tmp/btf-data.txt of=/dev/null bs=7 count=1 2>/dev/null
	check "typed: disable" sh -c "echo 0 > $EV/enable"
	check "typed: the name, count and mode read" grep -qE 't1: .* count=7 name="btf-data.txt" mode=33188' $T/trace
	check "typed: the bytes read at return" grep -qE 't2: .* arg1=7 count=7' $T/trace
	check "typed: \$arg* expands to the parameters" sh -c "echo 'p:t3 vfs_read \$arg*' >> $KE && grep -q 'p:rkprobes/t3 vfs_read file=file buf=buf count=count pos=pos' $KE"
	expect_fail "typed: no such parameter" sh -c "echo 'p:t4 vfs_read nosuch' >> $KE"
	check "typed: its message" grep -q 'This variable is not found at this probe point' $EL
	check "clear" sh -c "echo > $KE"
fi
# A module's function: its parameters from the module's BTF, as the
# kernel's kprobe_events finds them for a symbol a loaded module has; and,
# past 6.12 (which looks `MOD:SYM` up as one name and finds no BTF), with
# the module named.
if [ -e /sys/kernel/btf/vmlinux ] && [ -e $MODDIR/lkdtm.ko ]; then
	# Before the module is loaded, from its file, which modules.dep names
	# as depmod writes it (the guest has no /lib/modules of its own).
	rmmod lkdtm 2>/dev/null
	lib=/lib/modules/$(uname -r)
	mkdir -p $lib/kernel/drivers/misc/lkdtm
	cp $MODDIR/lkdtm.ko $lib/kernel/drivers/misc/lkdtm/
	echo "kernel/drivers/misc/lkdtm/lkdtm.ko:" > $lib/modules.dep
	check "module: typed before it is loaded" sh -c "echo 'p:m0 lkdtm:lkdtm_debugfs_read count fl=f->f_flags' >> $KE"
	check "module: listed with the parameter's name" grep -q 'p:rkprobes/m0 lkdtm:lkdtm_debugfs_read count=count fl=f->f_flags' $KE
	check "module: typed from its file's BTF" sh -c "grep -q 'field:u64 count;' $EV/m0/format && grep -q 'field:u32 fl;' $EV/m0/format"
	check "module: insmod lkdtm" sh -c "grep -q '^lkdtm ' /proc/modules || insmod $MODDIR/lkdtm.ko"
	echo > $T/trace
	check "module: enable" sh -c "echo 1 > $EV/m0/enable"
	dd if=/sys/kernel/debug/provoke-crash/DIRECT of=/dev/null bs=123 count=1 2>/dev/null
	check "module: disable" sh -c "echo 0 > $EV/m0/enable"
	grep ' m0:' $T/trace | tail -n 1 | sed 's/^/# /'
	check "module: the count read, typed from the file's BTF" grep -q ' m0: (lkdtm_debugfs_read+0x[0-9a-f]*/0x[0-9a-f]* \[lkdtm\]) count=123 fl=' $T/trace
	check "module: clear m0" sh -c "echo '-:m0' >> $KE"
	rm -rf $lib
	check "module: lkdtm has BTF" test -e /sys/kernel/btf/lkdtm
	check "module: typed parameters" sh -c "echo 'p:m1 lkdtm_debugfs_read f count fl=f->f_flags' >> $KE"
	check "module: listed with the parameters' names" grep -q 'p:rkprobes/m1 lkdtm_debugfs_read f=f count=count fl=f->f_flags' $KE
	check "module: typed from the module's BTF" sh -c "grep -q 'field:u64 count;' $EV/m1/format && grep -q 'field:u32 fl;' $EV/m1/format"
	if [ -e $T/kprobe_events ]; then
		echo 'p:btfk/m1 lkdtm_debugfs_read f count fl=f->f_flags' >> $T/kprobe_events
		expect_eq "module: the same format as the kernel's event" \
			"$(grep field: $T/events/btfk/m1/format)" "$(grep field: $EV/m1/format)"
		echo '-:btfk/m1' >> $T/kprobe_events
	fi
	check "module: MOD:SYM typed too" sh -c "echo 'p:m2 lkdtm:lkdtm_debugfs_read count' >> $KE && grep -q 'field:u64 count;' $EV/m2/format"
	check "module: clear" sh -c "echo > $KE"
	rmmod lkdtm 2>/dev/null
fi

# Past the kernel: `:enum` prints a BTF enum by its enumerators' names,
# in the trace and through __print_symbolic() in the format. The same
# value untyped beside it says which name is right.
if [ -e /sys/kernel/btf/vmlinux ]; then
	echo > $T/trace
	check "enum: add" sh -c "echo 'p:en hrtimer_start_range_ns mode:enum n=mode' >> $KE"
	check "enum: the format names them for perf and trace-cmd" \
		grep -q 'print fmt: "(%lx) mode=%s n=%d", REC->__probe_ip, __print_symbolic(REC->mode, { 0, "HRTIMER_MODE_ABS" }, { 1, "HRTIMER_MODE_REL" }' $EV/en/format
	check "enum: enable" sh -c "echo 1 > $EV/en/enable"
	sleep 0.2; sleep 0.2
	check "enum: disable" sh -c "echo 0 > $EV/en/enable"
	grep ' en:' $T/trace | tail -n 2 | sed 's/^/# /'
	check "enum: records with names" grep -q ' en: .* mode=HRTIMER_MODE_' $T/trace
	check "enum: every name is its value's" sh -c "! grep ' en: ' $T/trace | grep -v -e 'mode=HRTIMER_MODE_ABS n=0' -e 'mode=HRTIMER_MODE_REL n=1' -e 'mode=HRTIMER_MODE_[A-Z_]* n=[2-9]' -e 'mode=HRTIMER_MODE_[A-Z_]* n=[1-9][0-9]'"
	expect_fail "enum: not on an integer" sh -c "echo 'p:en2 vfs_read count:enum' >> $KE"
	check "enum: clear" sh -c "echo > $KE"
fi

# The typed fields reach BPF: bpftrace reads a typed event's fields by
# name (make check leaves this to make check-all: TYPED_BPFTRACE=0).
if [ -e /sys/kernel/btf/vmlinux ] && [ "${TYPED_BPFTRACE:-1}" != 0 ] && has_host_tool bpftrace; then
	check "bpftrace: a typed event" sh -c "echo 'p:bt vfs_read file count' >> $KE"
	echo 0123456789 > /tmp/btf-bt.txt
	printf '#!/bin/sh\nexec /bin/dd if=/tmp/btf-bt.txt of=/dev/null bs=7 count=1\n' > /tmp/bt88.sh
	chmod +x /tmp/bt88.sh
	host_run bpftrace -e 'tracepoint:rkprobes:bt /comm == "dd"/ { @n[args->count] = count(); @f = args->file != 0; }' \
		-c "/bin/sh /tmp/bt88.sh" > /tmp/bt88.out 2>&1
	sed 's/^/# bpftrace: /' /tmp/bt88.out | grep -v '^# bpftrace: $' | tail -n 4
	check "bpftrace: args->count of dd's read is 7" grep -q '^@n\[7\]: 1$' /tmp/bt88.out
	check "bpftrace: args->file is set" grep -q '^@f: 1$' /tmp/bt88.out
	check "bpftrace: clear" sh -c "echo > $KE"
fi

# Linux 7.3's forms on this 6.12 kernel, checked against what the trace
# itself shows: typecasts of this_cpu_ptr() against the record's CPU,
# this_cpu_read() of x86's pcpu_hot (whose first member is the current
# task) against \$current, \$current's members against the record's task,
# a typecast of \$arg1 against the typed parameter.
if [ -e /sys/kernel/btf/vmlinux ]; then
	echo 0123456789 > /tmp/btf-73.txt
	echo > $T/trace
	check "7.3: add" sh -c "echo 'p:c73 vfs_read cpu=(pcpu_hot)this_cpu_ptr(@pcpu_hot)->cpu_number rqcpu=(rq)this_cpu_ptr(@runqueues)->cpu hot=this_cpu_read(@pcpu_hot) cur=\$current pid=\$current->pid comm=\$current->comm:string mode=(file)\$arg1->f_inode->i_mode tmode=file->f_inode->i_mode' >> $KE"
	check "7.3: enable" sh -c "echo 1 > $EV/c73/enable"
	for i in 1 2 3 4; do dd if=/tmp/btf-73.txt of=/dev/null bs=3 count=1 2>/dev/null; done
	check "7.3: disable" sh -c "echo 0 > $EV/c73/enable"
	grep ' c73:' $T/trace | tail -n 2 | sed 's/^/# /'
	# TASK-PID [CPU] FLAGS TS: c73: (vfs_read+..) cpu= rqcpu= pid= comm= mode= tmode=
	bad=$(grep ' c73:' $T/trace | awk '{
		n = split($1, t, "-"); pid = t[n]; comm = substr($1, 1, length($1) - length(pid) - 1)
		cpu = substr($2, 2, 3) + 0
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		gsub(/"/, "", v["comm"])
		if (v["cpu"] != cpu || v["rqcpu"] != cpu || v["hot"] != v["cur"] || v["pid"] != pid ||
		    v["mode"] != v["tmode"] ||
		    (comm != "<...>" && v["comm"] != comm)) { print; bad++ }
		seen++
	} END { print "records " seen " bad " bad + 0 }')
	diag "$bad" | tail -n 3
	check "7.3: records of dd" sh -c "echo '$bad' | grep -q 'records [1-9]'"
	check "7.3: CPU, task and typed cast agree with the trace" sh -c "echo '$bad' | grep -q ' bad 0\$'"
	expect_fail "7.3: a cast needs a member" sh -c "echo 'p:c74 vfs_read (file)file' >> $KE"
	check "7.3: its message" grep -q 'Typecast requires a field access' $EL
	check "7.3: clear" sh -c "echo > $KE"
fi
check "rmmod rkprobes" rmmod rkprobes
