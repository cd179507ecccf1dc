/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/events/eprobe.c, mirrored in rust/ffi/trace_event.rs
 * for rust/events/eprobe.rs.
 */
#ifndef RKPROBES_EVENTS_EPROBE_H
#define RKPROBES_EVENTS_EPROBE_H

struct list_head;
struct trace_event_call;
struct trace_event_file;

/* trace_event.c: whether @call is one of rkprobes' events. */
int rkp_tev_is_ours(const struct trace_event_call *call);

/* What rkp_ep_field() tells of one field of an event's record. */
struct rkp_ep_field_info {
	int offset;
	int size;
	int is_signed;
	int string;
};

/* rkp_ep_field_info.string: how a field holds a string, if it does. */
#define RKP_EP_STR_NONE		0	/* not a string */
#define RKP_EP_STR_STATIC	1	/* char[N] in the record */
#define RKP_EP_STR_DYN		2	/* __data_loc char[] */
#define RKP_EP_STR_RDYN		3	/* __rel_loc char[] */
#define RKP_EP_STR_PTR		4	/* char *, a pointer to it */

int rkp_ep_layout_ok(const void *traceon_cmd, const unsigned long *expect,
		     unsigned int nexpect, const struct list_head *common_fields);
void *rkp_ep_find(const char *system, const char *event);
void rkp_ep_put(void *file);
int rkp_ep_field(void *file, const char *name, struct rkp_ep_field_info *info);
int rkp_ep_filter_check(void *file, const char *filter);
void *rkp_ep_attach(void *file, void *owner, const char *filter);
void rkp_ep_detach(void *file, void *trigger);

#endif /* RKPROBES_EVENTS_EPROBE_H */
