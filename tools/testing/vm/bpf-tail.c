// SPDX-License-Identifier: GPL-2.0
/*
 * bpf-tail ID PATH N: attaches to the trace event of id ID (perf) a BPF
 * tracepoint program that reads nothing of its context and tail-calls a
 * second one, which reads the context's word at byte READ_OFF, far past any
 * event's fields: the verifier checks a tail-call target against the
 * largest context a tracepoint program may have (PERF_MAX_TRACE_SIZE), not
 * against this event. It then opens PATH N times (a probe on
 * do_sys_openat2 hits) and prints "ran=R word=0xW": R is 1 when the second
 * program ran, W what it read. rkprobes hands a program that reads nothing
 * a context of zeroes of the full size (86-perf-bpf.sh). The programs are
 * assembled here with raw bpf(2) calls: no libbpf, no BTF. Static.
 *
 * bpf-tail ID PATH N -d NTH: attaches two programs that read nothing to the
 * event, closes the second one's perf event with its NTH fault-injection
 * point failed (/proc/thread-self/fail-nth), then opens PATH N times and
 * prints "detached injected=0|1". When the detach cannot allocate the
 * event's smaller program array, the kernel puts its dummy program, which
 * has no aux, in place of the detached one (bpf_prog_array_delete_safe()),
 * and the hits that follow must cope with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READ_OFF 4000

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
/* dst = map fd, two instructions. */
#define LD_MAP_FD(d, fd) \
	INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)

static long bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_create(unsigned int type, unsigned int value_size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = 4;
	a.value_size = value_size;
	a.max_entries = 1;
	return bpf(BPF_MAP_CREATE, &a);
}

static char log_buf[65536];

static int prog_load(const struct bpf_insn *insns, unsigned int n)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = n;
	a.license = (uintptr_t)"GPL";
	a.log_buf = (uintptr_t)log_buf;
	a.log_size = sizeof(log_buf);
	a.log_level = 1;
	fd = bpf(BPF_PROG_LOAD, &a);
	if (fd < 0)
		fprintf(stderr, "bpf-tail: BPF_PROG_LOAD: %s\n%s\n", strerror(errno), log_buf);
	return fd;
}

/* A perf event of the trace event of id, this task, with prog attached. */
static int attach(const char *id, int prog)
{
	struct perf_event_attr pa;
	int ev;

	memset(&pa, 0, sizeof(pa));
	pa.type = PERF_TYPE_TRACEPOINT;
	pa.size = sizeof(pa);
	pa.config = strtoull(id, NULL, 0);
	pa.sample_period = 1;
	pa.wakeup_events = 1;
	ev = syscall(__NR_perf_event_open, &pa, 0, -1, -1, 0);
	if (ev < 0) {
		perror("bpf-tail: perf_event_open");
		return -1;
	}
	if (ioctl(ev, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(ev, PERF_EVENT_IOC_ENABLE, 0)) {
		perror("bpf-tail: attaching");
		return -1;
	}
	return ev;
}

static void hits(const char *path, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0)
			close(fd);
	}
}

/* The -d mode: the second program detached under an allocation failure. */
static int detach_nth(const char *id, const char *path, int n, const char *nth)
{
	const struct bpf_insn nothing[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	const struct bpf_insn nothing2[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	int p1 = prog_load(nothing, 2), p2 = prog_load(nothing2, 2);
	int e1, e2, fd;
	char left[32];
	ssize_t len;

	if (p1 < 0 || p2 < 0)
		return 1;
	e1 = attach(id, p1);
	e2 = attach(id, p2);
	if (e1 < 0 || e2 < 0)
		return 1;
	hits(path, n);
	fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fd < 0) {
		perror("bpf-tail: /proc/thread-self/fail-nth");
		return 1;
	}
	/* The second event is the last holder of its program's attachment. */
	if (write(fd, nth, strlen(nth)) < 0) {
		perror("bpf-tail: fail-nth");
		return 1;
	}
	close(e2);
	len = pread(fd, left, sizeof(left) - 1, 0);
	if (write(fd, "0", 1) < 0 || len <= 0) {
		perror("bpf-tail: fail-nth");
		return 1;
	}
	left[len] = 0;
	hits(path, n);
	printf("detached injected=%d\n", atoi(left) == 0);
	close(e1);
	return 0;
}

int main(int argc, char **argv)
{
	union bpf_attr a;
	uint64_t value[2] = { 0, 0 };
	uint32_t key = 0;
	int result, jmp, reader, caller, ev, n;

	if (argc == 6 && !strcmp(argv[4], "-d"))
		return detach_nth(argv[1], argv[2], atoi(argv[3]), argv[5]);
	if (argc != 4) {
		fprintf(stderr, "usage: bpf-tail ID PATH N [-d NTH]\n");
		return 2;
	}
	n = atoi(argv[3]);
	result = map_create(BPF_MAP_TYPE_ARRAY, sizeof(value));
	jmp = map_create(BPF_MAP_TYPE_PROG_ARRAY, 4);
	if (result < 0 || jmp < 0) {
		perror("bpf-tail: BPF_MAP_CREATE");
		return 1;
	}
	struct bpf_insn reader_insns[] = {
		/* r6 = the context's word at READ_OFF */
		INSN(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_6, BPF_REG_1, READ_OFF, 0),
		/* value = lookup(result, &0) */
		INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
		LD_MAP_FD(BPF_REG_1, result),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0),
		/* value[0] = ran, value[1] = word */
		INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_0, 0, 0, 1),
		INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_0, BPF_REG_6, 8, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	struct bpf_insn caller_insns[] = {
		/* bpf_tail_call(ctx, jmp, 0): r1 is still the context */
		LD_MAP_FD(BPF_REG_2, jmp),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 0),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	reader = prog_load(reader_insns, sizeof(reader_insns) / sizeof(reader_insns[0]));
	caller = prog_load(caller_insns, sizeof(caller_insns) / sizeof(caller_insns[0]));
	if (reader < 0 || caller < 0)
		return 1;
	memset(&a, 0, sizeof(a));
	a.map_fd = jmp;
	a.key = (uintptr_t)&key;
	a.value = (uintptr_t)&reader;
	if (bpf(BPF_MAP_UPDATE_ELEM, &a)) {
		perror("bpf-tail: BPF_MAP_UPDATE_ELEM");
		return 1;
	}
	ev = attach(argv[1], caller);
	if (ev < 0)
		return 1;
	hits(argv[2], n);
	ioctl(ev, PERF_EVENT_IOC_DISABLE, 0);
	memset(&a, 0, sizeof(a));
	a.map_fd = result;
	a.key = (uintptr_t)&key;
	a.value = (uintptr_t)value;
	if (bpf(BPF_MAP_LOOKUP_ELEM, &a)) {
		perror("bpf-tail: BPF_MAP_LOOKUP_ELEM");
		return 1;
	}
	printf("ran=%llu word=0x%llx\n", (unsigned long long)value[0],
	       (unsigned long long)value[1]);
	return 0;
}
