/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/events/trace_event.c and the record heads it writes,
 * mirrored in rust/ffi/trace_event.rs for rust/events/.
 */
#ifndef RKPROBES_EVENTS_TRACE_EVENT_H
#define RKPROBES_EVENTS_TRACE_EVENT_H

#include <linux/trace_events.h>

/*
 * The head of a record, before the arguments: the common fields and the
 * probe's addresses, as the kernel's kprobe_trace_entry_head and
 * kretprobe_trace_entry_head.
 */
struct rkp_kprobe_head {
	struct trace_entry ent;
	unsigned long ip;
};

struct rkp_kretprobe_head {
	struct trace_entry ent;
	unsigned long func;
	unsigned long ret_ip;
};

/* The kinds of record head: rkp_tev_create()'s kind. */
#define RKP_TEV_KPROBE		0	/* struct rkp_kprobe_head */
#define RKP_TEV_KRETPROBE	1	/* struct rkp_kretprobe_head */
#define RKP_TEV_EPROBE		2	/* the common fields alone */

#define RKP_TEV_HEAD_SIZE(kind)							\
	((kind) == RKP_TEV_KRETPROBE ? sizeof(struct rkp_kretprobe_head) :	\
	 (kind) == RKP_TEV_EPROBE ? sizeof(struct trace_entry) :		\
	 sizeof(struct rkp_kprobe_head))

/*
 * A record being written from Rust (rust/events/hit.rs, which mirrors the
 * layout as RkpTevRec in rust/ffi/trace_event.rs, checked at build time against
 * rust/events/tev_layout.c's offsets): the hit's addresses, registers and
 * size, the trace instance being written and its reservation.
 */
struct rkp_tev_link;
struct rkp_tev_rec {
	unsigned long a0;		/* __probe_ip, or __probe_func */
	unsigned long a1;		/* __probe_ret_ip of a return event */
	struct pt_regs *regs;
	struct rkp_tev_link *link;	/* the instance being written */
	unsigned int size;		/* the record's bytes after the header */
	int perf;			/* RKP_TEV_PERF*: perf and BPF */
	struct trace_event_buffer fb;
};

/* The most a user string takes: the kernel's MAX_STRING_SIZE (PATH_MAX). */
#define RKP_TEV_MAX_STRING 4096

/*
 * One argument that the plain record (trace_event.c) stores itself: a
 * register stored as it is (the hit path's exec::Fast::Reg, Fast::Retval
 * and Fast::Arg; size 1, 2, 4 or 8, the register's low bytes), size bytes
 * of memory at a register plus offset (Fast::Mem: user memory below
 * TASK_SIZE, else kernel memory), or a string at a register plus offset
 * (Fast::String, its field a __data_loc): a ustring (kind
 * RKP_TEV_STR_USER), or a string, read as user memory below TASK_SIZE
 * (kind RKP_TEV_STR_KERNEL). reg is the register's byte offset in struct
 * pt_regs, at the field's offset after the record's head. Mirrored as
 * RkpTevStore in rust/ffi/trace_event.rs, checked against tev_layout.c's
 * offsets.
 */
struct rkp_tev_store {
	unsigned int reg;
	unsigned int at;
	unsigned int size;
	unsigned int kind;
	long offset;
};

#define RKP_TEV_STR_USER	0
#define RKP_TEV_STR_KERNEL	1

/*
 * The arguments of a probe that the plain record stores: nregs
 * registers at st, then nmems memory loads, then nstrs strings in the
 * order of their fields;
 * fixed is the size of the fields after the record's head. Mirrored as
 * PlainStores in rust/events/mod.rs.
 */
struct rkp_tev_plain {
	const struct rkp_tev_store *st;
	unsigned int nregs;
	unsigned int nmems;
	unsigned int nstrs;
	unsigned int fixed;
};

struct mutex;
struct rkp_field;

/* rkp_tev_wants(): what a hit of an event must build (rust/events/hit.rs). */
#define RKP_TEV_TRACE		1	/* a record in the trace instances */
#define RKP_TEV_PERF		2	/* one for perf and BPF */
#define RKP_TEV_PERF_RAN	4	/* ... whose BPF programs ran */
extern const unsigned int rkp_tev_wants_bits[3];
extern const unsigned int rkp_tev_perf_on_off;

void rkp_tev_init(unsigned long addr);
void rkp_tev_exit(void);
const char *rkp_tev_default_group(void);
void *rkp_tev_create(struct mutex *event_mutex, struct list_head *ftrace_events,
		     const char *group, const char *name,
		     const char *print_fmt, int kind, const char *target,
		     const struct rkp_field *fields, int nfields, void *owner);
int rkp_tev_remove(struct mutex *event_mutex, void *ev);
void rkp_tev_free(void *ev);
int rkp_tev_is_ours(const struct trace_event_call *call);
int rkp_tev_enabled(void *ev);
unsigned int rkp_tev_wants(void *ev, struct pt_regs *regs);
void *rkp_tev_reserve(void *ev, struct rkp_tev_rec *rec);
void *rkp_tev_commit(void *ev, struct rkp_tev_rec *rec);
void rkp_tev_trace_regs(void *ev, struct pt_regs *regs, unsigned long a0, unsigned long a1,
			const struct rkp_tev_plain *plain);
void rkp_tev_trace_strings(void *ev, struct pt_regs *regs, unsigned long a0, unsigned long a1,
			   const struct rkp_tev_plain *plain);
void rkp_tev_perf(void *ev, struct rkp_tev_rec *rec, void *ctx);
void rkp_tev_seq_write(void *seq, const char *buf, unsigned int len);
int rkp_tev_name_in_use(struct mutex *event_mutex, struct list_head *ftrace_events,
			const char *group, const char *name);
unsigned int rkp_tev_symstr(unsigned long addr, char *room, unsigned int len);
unsigned long rkp_tev_task_size(void);
unsigned long rkp_tev_this_cpu_ptr(unsigned long addr);
long rkp_tev_read_file(const char *path, void **buf, unsigned long max);
void rkp_tev_free_file(void *buf);
const char *rkp_tev_kernel_release(void);
long rkp_strncpy_user_nofault(char *dst, const void __user *src, long count);
long rkp_strnlen_user_nofault(const void __user *src, long count);
void __percpu *rkp_tev_scratch_alloc(unsigned long size);
void rkp_tev_scratch_free(void __percpu *p);

#endif /* RKPROBES_EVENTS_TRACE_EVENT_H */
