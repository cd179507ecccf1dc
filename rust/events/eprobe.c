// SPDX-License-Identifier: GPL-2.0
/*
 * Event probes (e events): the C side of rust/events/eprobe.rs.
 *
 * As 6.12's trace_eprobe.c, an event probe hears its target event through
 * the target's trigger list: a trigger whose command needs the record
 * (EVENT_CMD_FL_NEEDS_REC) puts the target in trigger mode, soft-enabled,
 * and the tracing core calls the trigger with every record the target
 * builds, which the probe's fetchargs read. The trigger is not a command
 * users can write; the target's trigger file does not list it
 * (EVENT_TRIGGER_FL_PROBE, an empty print).
 *
 * struct event_trigger_data, struct event_command and struct
 * ftrace_event_field are private to kernel/trace/trace.h, so this file
 * mirrors them, and rkp_ep_layout_ok() checks the mirrors against the
 * running kernel before any event probe is made: the "traceon" command's
 * members must be at the mirrored places (its name, type and the nine
 * functions it is built with, found by name), and the common fields of
 * every event must read as their known offsets and sizes. A kernel whose
 * layouts differ gets no event probes.
 *
 * Only the top trace instance's copy of the target is attached: records of
 * an event probe go to every instance that enables the probe, made from
 * the target's records in the top instance.
 */
#include <linux/list.h>
#include <linux/rculist.h>
#include <linux/ring_buffer.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>

#include "../ffi/upcalls.h"
#include "eprobe.h"

/* The kernel's functions this file calls, bound at load (rust/ffi/kcalls.c). */
int rkp_kc_trace_event_trigger_enable_disable(struct trace_event_file *file, int enable);
void rkp_kc_update_cond_flag(struct trace_event_file *file);
int rkp_kc_create_event_filter(struct trace_array *tr, struct trace_event_call *call,
			       char *filter_str, int set_str, struct event_filter **filterp);
void rkp_kc_free_event_filter(struct event_filter *filter);

/* struct ftrace_event_field of kernel/trace/trace.h. */
struct rkp_ep_kfield {
	struct list_head	link;
	const char		*name;
	const char		*type;
	int			filter_type;
	int			offset;
	int			size;
	unsigned int		is_signed:1;
	unsigned int		needs_test:1;
	int			len;
};

struct rkp_ep_trigger;

/* struct event_command of kernel/trace/trace.h. */
struct rkp_ep_command {
	struct list_head	list;
	char			*name;
	enum event_trigger_type	trigger_type;
	int			flags;
	void			*parse;
	void			*reg;
	void			*unreg;
	void			*unreg_all;
	void			*set_filter;
	void			(*trigger)(struct rkp_ep_trigger *data,
					   struct trace_buffer *buffer, void *rec,
					   struct ring_buffer_event *rbe);
	void			*count_func;
	int			(*init)(struct rkp_ep_trigger *data);
	void			(*free)(struct rkp_ep_trigger *data);
	int			(*print)(struct seq_file *m, struct rkp_ep_trigger *data);
};

/* enum event_command_flags and enum event_trigger_flags of trace.h. */
#define RKP_EP_CMD_FL_NEEDS_REC		2
#define RKP_EP_TRIGGER_FL_PROBE		1

/*
 * What a trigger's private data points to: laid out as 6.12's struct
 * eprobe_data (the file, then the probe), because the kernel's own event
 * probes read the private data of every EVENT_TRIGGER_FL_PROBE trigger on
 * their target to find theirs, and must find a probe that is not theirs.
 */
struct rkp_ep_data {
	struct trace_event_file	*file;
	void			*owner;
	/* The end of the target's last field: every record is that long. */
	unsigned int		fixed_end;
};

/* struct event_trigger_data of kernel/trace/trace.h, and rkprobes' data. */
struct rkp_ep_trigger {
	unsigned long		count;
	int			ref;
	int			flags;
	struct rkp_ep_command	*cmd_ops;
	void __rcu		*filter;
	char			*filter_str;
	void			*private_data;
	bool			paused;
	bool			paused_tmp;
	struct list_head	list;
	char			*name;
	struct list_head	named_list;
	struct rkp_ep_trigger	*named_data;
	/* rkprobes' own, after the kernel's members. */
	struct rkp_ep_data	data;
};

/* The tracing core calls it with each record of the target. */
static void rkp_ep_trigger_fn(struct rkp_ep_trigger *t, struct trace_buffer *buffer,
			      void *rec, struct ring_buffer_event *rbe)
{
	/*
	 * A soft-disabled target's record is built in the per-CPU buffered
	 * event, whose length word ring_buffer_event_length() reads 4 bytes
	 * short for records over RB_MAX_SMALL_DATA; the fields the record
	 * was built with are there whatever it says.
	 */
	if (rec && rbe)
		rkp_eprobe_hit(t->data.owner, rec,
			       max(ring_buffer_event_length(rbe), t->data.fixed_end));
}

static int rkp_ep_init(struct rkp_ep_trigger *t)
{
	return 0;
}

/*
 * Only when the top instance's triggers are cleared, which the tracing
 * core never does (it clears an instance's when the instance goes).
 */
static void rkp_ep_free(struct rkp_ep_trigger *t)
{
}

/* Not listed in the target's trigger file. */
static int rkp_ep_print(struct seq_file *m, struct rkp_ep_trigger *t)
{
	return 0;
}

static struct rkp_ep_command rkp_ep_cmd = {
	.name		= "rkprobes_eprobe",
	.trigger_type	= ETT_EVENT_EPROBE,
	.flags		= RKP_EP_CMD_FL_NEEDS_REC,
	.trigger	= rkp_ep_trigger_fn,
	.init		= rkp_ep_init,
	.free		= rkp_ep_free,
	.print		= rkp_ep_print,
};

/*
 * Whether the mirrors above match the running kernel: @traceon_cmd is the
 * kernel's trigger_traceon_cmd, @expect the addresses of the functions it
 * is built with, in the order of struct rkp_ep_command (parse, reg, unreg,
 * set_filter, trigger, count_func, init, free, print), @common_fields the
 * kernel's ftrace_common_fields. Process context.
 */
int rkp_ep_layout_ok(const void *traceon_cmd, const unsigned long *expect,
		     unsigned int nexpect, const struct list_head *common_fields)
{
	const struct rkp_ep_command *c = traceon_cmd;
	const struct rkp_ep_kfield *f;
	int seen = 0;
	char name[8];

	if (nexpect != 9 || !c || !common_fields)
		return 0;
	if (copy_from_kernel_nofault(name, c->name, sizeof(name)) ||
	    memcmp(name, "traceon", 8))
		return 0;
	if (c->trigger_type != ETT_TRACE_ONOFF || c->unreg_all ||
	    (unsigned long)c->parse != expect[0] || (unsigned long)c->reg != expect[1] ||
	    (unsigned long)c->unreg != expect[2] || (unsigned long)c->set_filter != expect[3] ||
	    (unsigned long)c->trigger != expect[4] || (unsigned long)c->count_func != expect[5] ||
	    (unsigned long)c->init != expect[6] || (unsigned long)c->free != expect[7] ||
	    (unsigned long)c->print != expect[8])
		return 0;
	list_for_each_entry(f, common_fields, link) {
		if (!strcmp(f->name, "common_type"))
			seen |= (f->offset == 0 && f->size == 2 && !f->is_signed) << 0;
		else if (!strcmp(f->name, "common_flags"))
			seen |= (f->offset == 2 && f->size == 1 && !f->is_signed) << 1;
		else if (!strcmp(f->name, "common_pid"))
			seen |= (f->offset == 4 && f->size == 4 && f->is_signed &&
				 f->filter_type == FILTER_OTHER) << 2;
	}
	return seen == 7;
}

/*
 * The top instance's file of the event @system.@event, with a reference on
 * the event (its module, or the dynamic event), or NULL: as 6.12's
 * find_and_get_event(), not a kprobe, uprobe or event probe event, nor one
 * that cannot be enabled, nor one of rkprobes' own. Process context,
 * without event_mutex.
 */
void *rkp_ep_find(const char *system, const char *event)
{
	struct trace_event_file *file = trace_get_event_file(NULL, system, event);
	struct trace_event_call *call;

	if (IS_ERR_OR_NULL(file))
		return NULL;
	call = file->event_call;
	/*
	 * Nor a user event (user_events, user_events_multi): the reference
	 * above pins nothing of one (no module, not TRACE_EVENT_FL_DYNAMIC),
	 * and it can go while the probe exists.
	 */
	if ((call->flags & (TRACE_EVENT_FL_IGNORE_ENABLE | TRACE_EVENT_FL_KPROBE |
			    TRACE_EVENT_FL_UPROBE | TRACE_EVENT_FL_EPROBE)) ||
	    rkp_tev_is_ours(call) ||
	    (call->class->system && !strncmp(call->class->system, "user_events", 11))) {
		trace_put_event_file(file);
		return NULL;
	}
	return file;
}

/* Gives back what rkp_ep_find() took. Process context, without event_mutex. */
void rkp_ep_put(void *file)
{
	trace_put_event_file(file);
}

/*
 * The field @name of the record of @file's event (not a common field):
 * 0 and @info, or -ENOENT. Process context.
 */
int rkp_ep_field(void *file, const char *name, struct rkp_ep_field_info *info)
{
	struct trace_event_file *f = file;
	const struct rkp_ep_kfield *field;
	struct list_head *head = trace_get_fields(f->event_call);

	list_for_each_entry(field, head, link) {
		if (strcmp(field->name, name))
			continue;
		info->offset = field->offset;
		info->size = field->size;
		info->is_signed = field->is_signed;
		switch (field->filter_type) {
		case FILTER_STATIC_STRING:
			info->string = RKP_EP_STR_STATIC;
			break;
		case FILTER_DYN_STRING:
			info->string = RKP_EP_STR_DYN;
			break;
		case FILTER_RDYN_STRING:
			info->string = RKP_EP_STR_RDYN;
			break;
		case FILTER_PTR_STRING:
			info->string = RKP_EP_STR_PTR;
			break;
		default:
			info->string = RKP_EP_STR_NONE;
		}
		return 0;
	}
	return -ENOENT;
}

/* The end of @call's last field: the least length of its records. */
static unsigned int rkp_ep_fixed_end(struct trace_event_call *call)
{
	const struct rkp_ep_kfield *field;
	unsigned int end = 0;

	list_for_each_entry(field, trace_get_fields(call), link)
		end = max_t(unsigned int, end, field->offset + field->size);
	return end;
}

/*
 * Makes @filter a filter of @f's event's records in *@ef
 * (create_event_filter(); with @log, its error is logged in the top
 * instance's error_log): 0, or an errno and nothing made. Process context.
 */
static int rkp_ep_new_filter(struct trace_event_file *f, const char *filter, int log,
			     struct event_filter **ef)
{
	char *copy = kstrdup(filter, GFP_KERNEL);
	int ret;

	*ef = NULL;
	if (!copy)
		return -ENOMEM;
	ret = rkp_kc_create_event_filter(f->tr, f->event_call, copy, log, ef);
	kfree(copy);
	if (ret) {
		rkp_kc_free_event_filter(*ef);
		*ef = NULL;
	}
	return ret;
}

/*
 * Whether @filter parses as a filter of @file's event's records (its
 * error logged as the tracing core logs filter errors): 0 or an errno.
 * Process context.
 */
int rkp_ep_filter_check(void *file, const char *filter)
{
	struct event_filter *ef;
	int ret = rkp_ep_new_filter(file, filter, 1, &ef);

	rkp_kc_free_event_filter(ef);
	return ret;
}

/*
 * Puts a trigger for the event probe @owner on @file's event, with the
 * filter @filter of the target's records (NULL: none): from now on each
 * record it passes is handed to rkp_eprobe_hit(). The trigger, or an
 * ERR_PTR. Process context, with event_mutex held.
 */
void *rkp_ep_attach(void *file, void *owner, const char *filter)
{
	struct trace_event_file *f = file;
	struct rkp_ep_trigger *t = kzalloc(sizeof(*t), GFP_KERNEL);
	struct event_filter *ef = NULL;

	if (!t)
		return ERR_PTR(-ENOMEM);
	if (filter) {
		int ret = rkp_ep_new_filter(f, filter, 0, &ef);

		if (ret) {
			kfree(t);
			return ERR_PTR(ret);
		}
		RCU_INIT_POINTER(t->filter, ef);
	}
	t->flags = RKP_EP_TRIGGER_FL_PROBE;
	t->count = -1;
	t->cmd_ops = &rkp_ep_cmd;
	INIT_LIST_HEAD(&t->list);
	INIT_LIST_HEAD(&t->named_list);
	t->data.file = f;
	t->data.owner = owner;
	t->data.fixed_end = rkp_ep_fixed_end(f->event_call);
	t->private_data = &t->data;
	list_add_tail_rcu(&t->list, &f->triggers);
	rkp_kc_trace_event_trigger_enable_disable(f, 1);
	rkp_kc_update_cond_flag(f);
	return t;
}

/*
 * Takes the trigger @trigger off @file's event, and frees it once no CPU
 * runs it. Process context, with event_mutex held.
 */
void rkp_ep_detach(void *file, void *trigger)
{
	struct trace_event_file *f = file;
	struct rkp_ep_trigger *t = trigger;

	list_del_rcu(&t->list);
	rkp_kc_trace_event_trigger_enable_disable(f, 0);
	rkp_kc_update_cond_flag(f);
	/* The trigger runs from the target's tracepoint: RCU-sched. */
	tracepoint_synchronize_unregister();
	rkp_kc_free_event_filter(rcu_access_pointer(t->filter));
	kfree(t);
}
