/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Functions of rust/events/trace_event.c beyond those rust/ffi/glue.h declares,
 * mirrored by the extern "C" block in rust/ffi/glue.rs.
 */
#ifndef RKPROBES_EVENTS_TRACE_EVENT_H
#define RKPROBES_EVENTS_TRACE_EVENT_H

struct list_head;
struct mutex;

int rkp_tev_name_in_use(struct mutex *event_mutex, struct list_head *ftrace_events,
			const char *group, const char *name);
unsigned int rkp_tev_symstr(unsigned long addr, char *room, unsigned int len);
unsigned long rkp_tev_task_size(void);
void __percpu *rkp_tev_scratch_alloc(unsigned long size);
void rkp_tev_scratch_free(void __percpu *p);

#endif /* RKPROBES_EVENTS_TRACE_EVENT_H */
