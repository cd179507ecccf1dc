/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Functions of rust/events/trace_event.c beyond those rust/ffi/glue.h declares,
 * mirrored by the extern "C" block in rust/ffi/glue.rs.
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

#define RKP_TEV_HEAD_SIZE(is_return) \
	((is_return) ? sizeof(struct rkp_kretprobe_head) : sizeof(struct rkp_kprobe_head))

/*
 * A record being written from Rust (rust/events/hit.rs, which mirrors the
 * layout as RkpTevRec in rust/ffi/glue.rs, checked at build time against
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

int rkp_tev_name_in_use(struct mutex *event_mutex, struct list_head *ftrace_events,
			const char *group, const char *name);
unsigned int rkp_tev_symstr(unsigned long addr, char *room, unsigned int len);
unsigned long rkp_tev_task_size(void);
void __percpu *rkp_tev_scratch_alloc(unsigned long size);
void rkp_tev_scratch_free(void __percpu *p);

#endif /* RKPROBES_EVENTS_TRACE_EVENT_H */
