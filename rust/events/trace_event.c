// SPDX-License-Identifier: GPL-2.0
/*
 * Trace events of rkprobes' kprobe_events: the C side of rust/events/.
 *
 * A probe event is a real trace event, registered with the tracing core as
 * the kernel's trace_kprobe registers its own: a struct trace_event_call with
 * its class, fields and output function, added with trace_add_event_call()
 * under event_mutex, so that tracefs shows events/GRP/EVENT/ with enable,
 * filter, format, id and trigger, and records go to the ring buffers of the
 * trace instances that enable it. Those structures are C with unions and
 * bitfields, and the ring buffer calls are inline helpers, so this file
 * builds them and adapts the callbacks; what to record and how to print it
 * is Rust's (rust/events/hit.rs, rust/events/output.rs).
 *
 * The event is TRACE_EVENT_FL_DYNAMIC: an open tracefs file of it, or a perf
 * event on it, holds a reference on the call, which rkp_tev_remove() checks
 * (-EBUSY) before removing it, as the kernel's dynamic events do.
 *
 * perf and BPF: the class's reg callback takes the perf operations as the
 * kernel's kprobe_register() does, and a hit writes a record into perf's
 * per-CPU buffer (perf_trace_buf_alloc(), perf_trace_run_bpf_submit()) when
 * perf listens on this CPU or a BPF program is attached. The event is also
 * TRACE_EVENT_FL_TRACEPOINT, with a struct tracepoint of its own that only
 * carries its name, as synthetic events and user_events are: that is what
 * lets perf_event_set_bpf_prog() attach a BPF_PROG_TYPE_TRACEPOINT program,
 * which reads the record as a tracepoint's. Documentation/kprobe-events.rst
 * ("perf and BPF") lists every reader of the flag and of call->tp in 6.12 and
 * why none of them can misuse this one.
 */
#include <linux/kernel_read_file.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <linux/bpf.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/trace_events.h>
#include <linux/tracepoint-defs.h>
#include <linux/uaccess.h>
#include <linux/unaligned.h>

#include "../ffi/upcalls.h"
#include "trace_event.h"

/*
 * The group of events added without GRP/, "rkprobes" by default.
 * default_group=kprobes gives scripts and tools written for the kernel's
 * kprobe events the group they name (the kernel's ftrace selftests,
 * 83-ftracetest.sh). Checked at load as an event group name; read-only.
 * 64 bytes: the kernel's MAX_EVENT_NAME_LEN.
 */
static char rkp_default_group[64] = "rkprobes";
module_param_string(default_group, rkp_default_group, sizeof(rkp_default_group), 0444);
MODULE_PARM_DESC(default_group, "the group of events added without GRP/ (default: rkprobes)");

const char *rkp_tev_default_group(void)
{
	return rkp_default_group;
}

/* One field of an event's arguments, described by Rust. */
struct rkp_field {
	const char *type;
	const char *name;
	int offset;		/* from the start of the record */
	int size;
	int is_signed;
};

/* A trace instance that has the event enabled. */
struct rkp_tev_link {
	struct list_head list;
	struct trace_event_file *file;
	struct rcu_head rcu;
};

struct rkp_tev {
	struct trace_event_class class;
	struct trace_event_call call;
	/* Only its name is used: call.tp points here (TRACE_EVENT_FL_TRACEPOINT),
	 * and call.name, which shares a union with call.tp, is not set. */
	struct tracepoint tp;
	int perf_on;			/* perf has the event (written under
					 * event_mutex, read by hits) */
	struct list_head links;		/* RCU list of rkp_tev_link */
	void *owner;			/* the Rust event */
	int kind;			/* RKP_TEV_KPROBE, _KRETPROBE, _EPROBE */
	unsigned int hdr;		/* RKP_TEV_HEAD_SIZE(kind) */
	char *target;			/* an event probe's SYSTEM.EVENT */
	int nfields;
	struct rkp_field *fields;	/* strings owned by this struct */
};

static int rkp_tev_define_fields(struct trace_event_call *call)
{
	struct rkp_tev *tev = container_of(call, struct rkp_tev, call);
	int i, ret;

	if (tev->kind == RKP_TEV_EPROBE) {
		ret = 0;
	} else if (tev->kind == RKP_TEV_KRETPROBE) {
		ret = trace_define_field(call, "unsigned long", "__probe_func",
					 offsetof(struct rkp_kretprobe_head, func),
					 sizeof(long), 0, FILTER_OTHER);
		if (!ret)
			ret = trace_define_field(call, "unsigned long", "__probe_ret_ip",
						 offsetof(struct rkp_kretprobe_head, ret_ip),
						 sizeof(long), 0, FILTER_OTHER);
	} else {
		ret = trace_define_field(call, "unsigned long", "__probe_ip",
					 offsetof(struct rkp_kprobe_head, ip),
					 sizeof(long), 0, FILTER_OTHER);
	}
	for (i = 0; !ret && i < tev->nfields; i++) {
		struct rkp_field *f = &tev->fields[i];

		ret = trace_define_field(call, f->type, f->name, f->offset, f->size,
					 f->is_signed, FILTER_OTHER);
	}
	return ret;
}

static struct trace_event_fields rkp_tev_fields_array[] = {
	{ .type = TRACE_FUNCTION_TYPE, .define_fields = rkp_tev_define_fields },
	{}
};

/* trace_seq_putmem() for Rust's output. */
notrace void rkp_tev_seq_write(void *seq, const char *buf, unsigned int len)
{
	trace_seq_putmem(seq, buf, len);
}

/*
 * Prints a record as the kernel's print_kprobe_event() and
 * print_kretprobe_event() do. It reads nothing past the record the ring
 * buffer holds (iter->ent_size), whatever the record says: after an event
 * is removed its id can be given to another, and a record of the old one
 * left in a buffer would be printed with the new one's layout. iter->ent_size
 * is 0 only when tp_printk prints a record as it is committed, which is then
 * one rkprobes just wrote for this event.
 */
static enum print_line_t rkp_tev_print(struct trace_iterator *iter, int flags,
				       struct trace_event *event)
{
	struct rkp_tev *tev = container_of(event, struct rkp_tev, call.event);
	struct trace_seq *s = &iter->seq;
	unsigned int hdr = tev->hdr;
	const struct rkp_kretprobe_head *rh = (const void *)iter->ent;
	const struct rkp_kprobe_head *kh = (const void *)iter->ent;

	trace_seq_printf(s, "%s: (", trace_event_name(&tev->call));
	if (iter->ent_size && iter->ent_size < hdr)
		trace_seq_puts(s, "<OVERFLOW>");
	else if (tev->kind == RKP_TEV_EPROBE)
		trace_seq_puts(s, tev->target);
	else if (tev->kind == RKP_TEV_KRETPROBE)
		trace_seq_printf(s, "%pS <- %ps", (void *)rh->ret_ip, (void *)rh->func);
	else
		trace_seq_printf(s, "%pS", (void *)kh->ip);
	trace_seq_putc(s, ')');
	rkp_event_print_args(tev->owner, iter->ent, iter->ent_size, s);
	trace_seq_putc(s, '\n');
	return trace_handle_return(s);
}

static struct trace_event_functions rkp_tev_funcs = {
	.trace = rkp_tev_print,
};

static void rkp_tev_link_free(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct rkp_tev_link, rcu));
}

/* Whether a trace instance or perf has the event: its probes are armed. */
static bool rkp_tev_in_use(struct rkp_tev *tev)
{
	return !list_empty(&tev->links) || READ_ONCE(tev->perf_on);
}

/*
 * Called by the tracing core, with event_mutex held, when a trace instance
 * enables or disables the event, and by perf (trace_event_perf.c) when the
 * first perf event on it is created or the last one goes: PERF_REGISTER
 * comes after call->perf_events is allocated, PERF_UNREGISTER before it is
 * freed, past a grace period. As the kernel's kprobe_register(), the probes
 * are armed while either has the event. Process context.
 */
static int rkp_tev_reg(struct trace_event_call *call, enum trace_reg type, void *data)
{
	struct rkp_tev *tev = container_of(call, struct rkp_tev, call);
	struct trace_event_file *file = data;
	struct rkp_tev_link *link;
	int ret;

	switch (type) {
	case TRACE_REG_REGISTER:
		link = kzalloc(sizeof(*link), GFP_KERNEL);
		if (!link)
			return -ENOMEM;
		link->file = file;
		if (!rkp_tev_in_use(tev)) {
			ret = rkp_event_set_enabled(tev->owner, 1);
			if (ret) {
				kfree(link);
				return ret;
			}
		}
		list_add_tail_rcu(&link->list, &tev->links);
		return 0;
	case TRACE_REG_UNREGISTER:
		list_for_each_entry(link, &tev->links, list) {
			if (link->file == file) {
				list_del_rcu(&link->list);
				call_rcu(&link->rcu, rkp_tev_link_free);
				break;
			}
		}
		if (!rkp_tev_in_use(tev))
			rkp_event_set_enabled(tev->owner, 0);
		return 0;
#ifdef CONFIG_PERF_EVENTS
	case TRACE_REG_PERF_REGISTER:
		if (!rkp_tev_in_use(tev)) {
			ret = rkp_event_set_enabled(tev->owner, 1);
			if (ret)
				return ret;
		}
		/*
		 * perf_trace_event_reg() set call->perf_events before this:
		 * a hit that reads perf_on set (acquire) sees the list.
		 */
		smp_store_release(&tev->perf_on, 1);
		return 0;
	case TRACE_REG_PERF_UNREGISTER:
		/*
		 * perf_trace_event_unreg() frees call->perf_events after its
		 * tracepoint_synchronize_unregister() and only then sets it to
		 * NULL: a hit must not read it once this is seen clear, and
		 * the grace period waits for those that saw it set.
		 */
		WRITE_ONCE(tev->perf_on, 0);
		if (!rkp_tev_in_use(tev))
			rkp_event_set_enabled(tev->owner, 0);
		return 0;
	case TRACE_REG_PERF_OPEN:
	case TRACE_REG_PERF_CLOSE:
	case TRACE_REG_PERF_ADD:
	case TRACE_REG_PERF_DEL:
		return 0;
#endif
	default:
		return -EOPNOTSUPP;
	}
}

/* find_trace_event_call(), which is static: the caller holds event_mutex. */
static bool rkp_tev_name_taken(struct list_head *ftrace_events, const char *group,
			       const char *name)
{
	struct trace_event_call *call;

	list_for_each_entry(call, ftrace_events, list) {
		if (call->class && call->class->system &&
		    !strcmp(call->class->system, group) &&
		    !strcmp(trace_event_name(call), name))
			return true;
	}
	return false;
}

/*
 * Whether the event has its directory in tracefs' top instance. Process
 * context, without event_mutex (trace_get_event_file() takes it).
 */
static bool rkp_tev_has_dir(struct rkp_tev *tev)
{
	struct trace_event_file *file;
	bool ret;

	file = trace_get_event_file(NULL, tev->class.system, tev->tp.name);
	if (IS_ERR(file))
		return false;
	ret = file->ei != NULL;
	trace_put_event_file(file);
	return ret;
}

/*
 * Creates and registers the event GROUP/NAME. event_mutex is the kernel's
 * (not exported; rkprobes finds it at run time). Returns the event or an
 * ERR_PTR. Process context.
 */
void *rkp_tev_create(struct mutex *event_mutex, struct list_head *ftrace_events,
		     const char *group, const char *name,
		     const char *print_fmt, int kind, const char *target,
		     const struct rkp_field *fields, int nfields, void *owner)
{
	struct rkp_tev *tev;
	int i, ret;

	tev = kzalloc(sizeof(*tev), GFP_KERNEL);
	if (!tev)
		return ERR_PTR(-ENOMEM);
	tev->fields = kcalloc(nfields ? nfields : 1, sizeof(*fields), GFP_KERNEL);
	tev->class.system = kstrdup(group, GFP_KERNEL);
	tev->tp.name = kstrdup(name, GFP_KERNEL);
	tev->call.print_fmt = kstrdup(print_fmt, GFP_KERNEL);
	tev->target = kstrdup(target ? target : "", GFP_KERNEL);
	ret = -ENOMEM;
	if (!tev->fields || !tev->class.system || !tev->tp.name || !tev->call.print_fmt ||
	    !tev->target)
		goto free;
	for (i = 0; i < nfields; i++) {
		tev->fields[i] = fields[i];
		tev->fields[i].type = kstrdup(fields[i].type, GFP_KERNEL);
		tev->fields[i].name = kstrdup(fields[i].name, GFP_KERNEL);
		tev->nfields = i + 1;
		if (!tev->fields[i].type || !tev->fields[i].name)
			goto free;
	}
	INIT_LIST_HEAD(&tev->links);
	INIT_LIST_HEAD(&tev->class.fields);
	tev->class.fields_array = rkp_tev_fields_array;
	tev->class.reg = rkp_tev_reg;
	tev->call.class = &tev->class;
	tev->call.event.funcs = &rkp_tev_funcs;
	/*
	 * Not TRACE_EVENT_FL_KPROBE: that tells perf and BPF the call is a
	 * struct trace_kprobe's, which it is not. TRACE_EVENT_FL_TRACEPOINT,
	 * with a tracepoint that only names the event, as user_events' and
	 * synthetic events': BPF tracepoint programs may attach, and nothing
	 * else reads the tracepoint (see the comment at the top).
	 */
	tev->call.tp = &tev->tp;
	tev->call.flags = TRACE_EVENT_FL_DYNAMIC | TRACE_EVENT_FL_TRACEPOINT;
	tev->owner = owner;
	tev->kind = kind;
	tev->hdr = RKP_TEV_HEAD_SIZE(kind);

	mutex_lock(event_mutex);
	/* As trace_probe_register_event_call(): a name any event has is taken. */
	ret = -EEXIST;
	if (rkp_tev_name_taken(ftrace_events, group, name))
		goto unlock;
	ret = -ENODEV;
	if (!register_trace_event(&tev->call.event))
		goto unlock;
	ret = trace_add_event_call(&tev->call);
	if (ret) {
		unregister_trace_event(&tev->call.event);
		goto unlock;
	}
	/*
	 * The tracing core adds the event to every trace instance, and when an
	 * allocation fails there it only warns ("Could not create tracefs ...
	 * directory", "Could not initialize trace point events/...") and goes
	 * on: the event would exist without its fields or its directory. Both
	 * are checked, and such an event is taken back (-ENOMEM), so that an
	 * event either is whole or does not exist.
	 */
	if (list_count_nodes(&tev->class.fields) !=
	    nfields + (kind == RKP_TEV_KRETPROBE ? 2 : kind == RKP_TEV_EPROBE ? 0 : 1))
		goto nomem;
	mutex_unlock(event_mutex);
	if (rkp_tev_has_dir(tev))
		return tev;
	mutex_lock(event_mutex);
nomem:
	ret = -ENOMEM;
	/* Busy only if someone took the event (by its id) in the window
	 * without event_mutex: it stays, as the kernel's own would. */
	if (rkp_tev_remove(event_mutex, tev)) {
		mutex_unlock(event_mutex);
		return tev;
	}
unlock:
	mutex_unlock(event_mutex);
	if (ret)
		goto free;
	return tev;
free:
	rkp_tev_free(tev);
	return ERR_PTR(ret);
}

/*
 * Removes the event from the tracing core; -EBUSY (and nothing done) while
 * it is enabled or one of its tracefs files is open. The caller holds
 * event_mutex, and keeps it until it has reset the trace buffers
 * (tracing_reset_all_online_cpus(), as the kernel's dyn_event_release()
 * does): the event's id is free once it is removed, and the next event
 * given that id must not find the old event's records. The caller waited
 * for a grace period after the event was disabled (a hit that saw the last
 * instance's link may still have been committing into it), and waits for
 * another before rkp_tev_free() (a hit may still be reading the event).
 * Process context.
 */
int rkp_tev_remove(struct mutex *event_mutex, void *ev)
{
	struct rkp_tev *tev = ev;

	lockdep_assert_held(event_mutex);
	/* trace_event_dyn_busy(), which is not exported. */
	if (atomic_read(&tev->call.refcnt) || rkp_tev_in_use(tev))
		return -EBUSY;
	return trace_remove_event_call(&tev->call);
}

/*
 * Whether an event GROUP/NAME exists (the kernel's or rkprobes'), for the
 * errors the kernel checks before registering a probe. Process context.
 */
int rkp_tev_name_in_use(struct mutex *event_mutex, struct list_head *ftrace_events,
			const char *group, const char *name)
{
	int ret;

	mutex_lock(event_mutex);
	ret = rkp_tev_name_taken(ftrace_events, group, name);
	mutex_unlock(event_mutex);
	return ret;
}

/* Frees a removed event. Its links were freed with call_rcu() when they
 * went; rkprobes waits for those callbacks (rcu_barrier()) before it is
 * unloaded. */
void rkp_tev_free(void *ev)
{
	struct rkp_tev *tev = ev;
	int i;

	for (i = 0; i < tev->nfields; i++) {
		kfree(tev->fields[i].type);
		kfree(tev->fields[i].name);
	}
	kfree(tev->fields);
	kfree(tev->class.system);
	kfree(tev->tp.name);
	kfree(tev->call.print_fmt);
	kfree(tev->target);
	kfree(tev);
}

/* Whether @call is one of rkprobes' events. */
int rkp_tev_is_ours(const struct trace_event_call *call)
{
	return call->event.funcs == &rkp_tev_funcs;
}

/* Whether any trace instance or perf has the event enabled (event_mutex not
 * held: a hint for listing and deletion checks). */
int rkp_tev_enabled(void *ev)
{
	struct rkp_tev *tev = ev;

	return rkp_tev_in_use(tev);
}


#ifdef CONFIG_BPF_EVENTS
/*
 * Whether a BPF program of array (an event's, not empty) reads the
 * record: the verifier's
 * max_ctx_offset, the end of its furthest direct access to the context,
 * which a tracepoint program's is (its first word, which the helpers read,
 * is the registers pointer that perf_trace_run_bpf_submit() stores, and no
 * program may read it directly: tp_prog_is_valid_access()). A program that
 * reads nothing of it, as a count of hits, needs no argument fetched.
 * Preemption is off: an RCU reader of the program array, as
 * trace_call_bpf() is.
 */
static notrace bool rkp_tev_bpf_reads(struct bpf_prog_array *array)
{
	struct bpf_prog_array_item *item;
	struct bpf_prog *prog;

	/*
	 * The kernel's dummy program, which bpf_prog_array_delete_safe() puts
	 * in place of a detached one when it cannot allocate a smaller array,
	 * has no aux: it returns 1 and reads nothing.
	 */
	for (item = &array->items[0]; (prog = READ_ONCE(item->prog)); item++)
		if (prog->aux && prog->aux->max_ctx_offset)
			return true;
	return false;
}

/*
 * trace_call_bpf(), which runs an event's BPF programs (not exported, and
 * sealed under IBT): a static call, for the reasons rust/ffi/kcalls.c
 * gives, set by rkp_tev_init(); rkp_tev_have_bpf says it was.
 */
DEFINE_STATIC_CALL_NULL(rkp_tev_call_bpf, trace_call_bpf);
static bool rkp_tev_have_bpf __read_mostly;

/*
 * The contexts rkp_tev_wants() hands to BPF programs that read nothing of
 * the record: per CPU, one per nesting level (task, softirq, irq, NMI, as
 * perf's trace buffers), each PERF_MAX_TRACE_SIZE bytes, as large as the
 * buffer the kernel gives a tracepoint program. The verifier checks a
 * program's context reads against the event's fields only at attach, and a
 * tail-call target or an freplace program is not checked against this
 * event at all, so a program may read any byte of the PERF_MAX_TRACE_SIZE
 * it was verified for. Zeroed at allocation; a hit writes only the first
 * word (the registers pointer) and BPF cannot write its context
 * (tp_prog_is_valid_access()), so the rest stays zero: no hit zeroes or
 * leaks anything.
 */
#define RKP_TEV_BPF_NEST 4
struct rkp_tev_bpf_ctx {
	u64 rec[RKP_TEV_BPF_NEST][PERF_MAX_TRACE_SIZE / sizeof(u64)];
};
static_assert(sizeof(struct rkp_tev_bpf_ctx) <= PCPU_MIN_UNIT_SIZE);
static struct rkp_tev_bpf_ctx __percpu *rkp_tev_bpf_ctx __read_mostly;
/* The nesting level of each CPU's contexts in use. */
static unsigned int __percpu *rkp_tev_bpf_nest __read_mostly;
#endif

/*
 * Load time, before any event: trace_call_bpf()'s address, or 0. Without
 * the contexts (an allocation failure), hits take the path that builds the
 * record in perf's buffer, as a program that reads the record does.
 */
void rkp_tev_init(unsigned long addr)
{
#ifdef CONFIG_BPF_EVENTS
	if (!addr)
		return;
	static_call_update(rkp_tev_call_bpf, (typeof(&trace_call_bpf))addr);
	rkp_tev_bpf_ctx = alloc_percpu(struct rkp_tev_bpf_ctx);
	rkp_tev_bpf_nest = alloc_percpu(unsigned int);
	if (!rkp_tev_bpf_ctx || !rkp_tev_bpf_nest) {
		free_percpu(rkp_tev_bpf_ctx);
		free_percpu(rkp_tev_bpf_nest);
		rkp_tev_bpf_ctx = NULL;
		rkp_tev_bpf_nest = NULL;
		return;
	}
	rkp_tev_have_bpf = true;
#endif
}

/* Unload, once no event is left and no hit runs: undoes rkp_tev_init(). */
void rkp_tev_exit(void)
{
#ifdef CONFIG_BPF_EVENTS
	rkp_tev_have_bpf = false;
	free_percpu(rkp_tev_bpf_ctx);
	free_percpu(rkp_tev_bpf_nest);
	rkp_tev_bpf_ctx = NULL;
	rkp_tev_bpf_nest = NULL;
#endif
}

/*
 * What a hit of the event must build (RKP_TEV_*, rust/events/hit.rs): a
 * record in the trace instances that have the event (RKP_TEV_TRACE), and
 * one for perf and BPF (RKP_TEV_PERF), as the kernel's kprobe_dispatcher()
 * and a tracepoint's perf_trace_##call(). Called only once the hit saw
 * perf_on set (an acquire load, against the release store made once the
 * list exists), as the kernel's kprobe_dispatcher() tests TP_FLAG_PROFILE
 * first: perf_trace_event_unreg() frees call->perf_events past the grace
 * period that follows PERF_UNREGISTER (which clears perf_on) and sets it
 * to NULL only after the free. A hit runs with preemption (or interrupts)
 * off, so a list read after perf_on was seen set stays valid until the
 * hit ends.
 *
 * When the BPF programs read nothing of the record (a count of hits, a
 * latency), they run here, as the kernel's kprobe_perf_func() runs a
 * kprobe's, with no argument fetched and no perf buffer: on a context of
 * zeroes (rkp_tev_bpf_ctx) whose first word is the registers pointer that
 * the helpers take from a tracepoint program's context
 * (perf_trace_run_bpf_submit() stores it there too), so a program attached
 * after the test below, or one that reads past the event's fields, reads
 * zeroes. As in perf_trace_run_bpf_submit(), perf gets the record only
 * when they return non-zero and perf events listen on this CPU: then
 * RKP_TEV_PERF_RAN says that they ran. Probe-hit context.
 */
notrace unsigned int rkp_tev_wants(void *ev, struct pt_regs *regs)
{
	struct rkp_tev *tev = ev;
	unsigned int wants = 0;
#ifdef CONFIG_PERF_EVENTS
	struct trace_event_call *call = &tev->call;
	struct hlist_head __percpu *events;
	struct bpf_prog_array *array;
#endif

	if (READ_ONCE(tev->links.next) != &tev->links)
		wants |= RKP_TEV_TRACE;
#ifdef CONFIG_PERF_EVENTS
	/* The caller saw perf_on set, with an acquire load (hit.rs). */
	events = READ_ONCE(call->perf_events);
	if (!events)
		return wants;
	/* bpf_prog_array_valid(), the array read once. */
	array = rcu_dereference_raw(call->prog_array);
	if (!array)
		return hlist_empty(this_cpu_ptr(events)) ? wants : wants | RKP_TEV_PERF;
#ifdef CONFIG_BPF_EVENTS
	if (rkp_tev_have_bpf && !rkp_tev_bpf_reads(array)) {
		unsigned int *nest = this_cpu_ptr(rkp_tev_bpf_nest);
		unsigned int level = (*nest)++;
		unsigned int ret;
		u64 *rec;

		/*
		 * A hit nested in this one (an NMI's) takes the next level; it
		 * ends before this one goes on, so the count is this CPU's own.
		 */
		barrier();
		if (likely(level < RKP_TEV_BPF_NEST)) {
			rec = this_cpu_ptr(rkp_tev_bpf_ctx)->rec[level];
			*(struct pt_regs **)rec = regs;
			ret = static_call(rkp_tev_call_bpf)(call, rec);
			barrier();
			(*nest)--;
			if (!ret || hlist_empty(this_cpu_ptr(events)))
				return wants;
			return wants | RKP_TEV_PERF | RKP_TEV_PERF_RAN;
		}
		barrier();
		(*nest)--;
	}
#endif
	wants |= RKP_TEV_PERF;
#endif
	return wants;
}
/* Where a hit finds perf_on before it asks rkp_tev_wants() (hit.rs). */
const unsigned int rkp_tev_perf_on_off = offsetof(struct rkp_tev, perf_on);
const unsigned int rkp_tev_wants_bits[3] = { RKP_TEV_TRACE, RKP_TEV_PERF, RKP_TEV_PERF_RAN };

/* Writes the probe's addresses (a0, a1: rkp_tev_rec's) into a record's head. */
static __always_inline void rkp_tev_fill_head(const struct rkp_tev *tev, void *head,
					      unsigned long a0, unsigned long a1)
{
	if (tev->kind == RKP_TEV_KPROBE) {
		((struct rkp_kprobe_head *)head)->ip = a0;
	} else if (tev->kind == RKP_TEV_KRETPROBE) {
		struct rkp_kretprobe_head *h = head;

		h->func = a0;
		h->ret_ip = a1;
	}
}

/*
 * Reserves a record of size bytes in the trace instance of link, unless the
 * event is soft-disabled there (trace_trigger_soft_disabled(), which also
 * runs unconditional triggers and the pid filter, as every event's hit
 * does), and writes its head. NULL when the instance takes none.
 */
static __always_inline void *rkp_tev_reserve_link(const struct rkp_tev *tev,
						  struct rkp_tev_link *link,
						  struct trace_event_buffer *fb, unsigned int size,
						  struct pt_regs *regs, unsigned long a0,
						  unsigned long a1)
{
	void *head;

	if (trace_trigger_soft_disabled(link->file))
		return NULL;
	head = trace_event_buffer_reserve(fb, link->file, size);
	if (!head)
		return NULL;
	fb->regs = regs;
	rkp_tev_fill_head(tev, head, a0, a1);
	return head;
}

/*
 * Reserves the record in the first trace instance from pos on that takes
 * it (rkp_tev_reserve_link()). NULL when no instance is left.
 */
static __always_inline void *rkp_tev_reserve_from(struct rkp_tev *tev, struct rkp_tev_rec *rec,
					  struct list_head *pos)
{
	unsigned int hdr = tev->hdr;

	for (; pos != &tev->links; pos = READ_ONCE(pos->next)) {
		struct rkp_tev_link *link = list_entry(pos, struct rkp_tev_link, list);
		void *head = rkp_tev_reserve_link(tev, link, &rec->fb, hdr + rec->size, rec->regs,
						  rec->a0, rec->a1);

		if (head) {
			rec->link = link;
			return head;
		}
	}
	return NULL;
}

/*
 * The first record of a hit: reserved in the first trace instance that has
 * the event enabled, header written; Rust fills its arguments and calls
 * rkp_tev_commit(). rec's a0, a1, regs and size are set. The links are an
 * RCU list, read under the hit's disabled preemption (or interrupts).
 * Probe-hit context: no sleeping, no allocation, no locks.
 */
notrace void *rkp_tev_reserve(void *ev, struct rkp_tev_rec *rec)
{
	struct rkp_tev *tev = ev;

	/* An event probe's record has no registers (options/stacktrace). */
	if (tev->kind == RKP_TEV_EPROBE)
		rec->regs = NULL;
	return rkp_tev_reserve_from(tev, rec, READ_ONCE(tev->links.next));
}

/*
 * Commits the record rkp_tev_reserve() or the last rkp_tev_commit() gave
 * (the filter and triggers run here, trace_event_buffer_commit()), and
 * reserves the next instance's. Probe-hit context.
 */
notrace void *rkp_tev_commit(void *ev, struct rkp_tev_rec *rec)
{
	struct rkp_tev *tev = ev;

	trace_event_buffer_commit(&rec->fb);
	return rkp_tev_reserve_from(tev, rec, READ_ONCE(rec->link->list.next));
}

/*
 * User strings for the events' ustring fetches, with the contracts of
 * strncpy_from_user_nofault() and strnlen_user_nofault(), which are not
 * exported: the exported word-at-a-time strncpy_from_user() and
 * strnlen_user() with page faults disabled, as mm/maccess.c builds them.
 * Any context: with page faults disabled a fault fails the copy instead of
 * being handled (might_fault() returns early then).
 */
notrace long rkp_strncpy_user_nofault(char *dst, const void __user *src, long count)
{
	long n;

	if (unlikely(count <= 0))
		return 0;
	pagefault_disable();
	n = strncpy_from_user(dst, src, count);
	pagefault_enable();
	if (n >= count) {
		/* Cut: the last byte becomes the NUL. */
		dst[count - 1] = '\0';
		return count;
	}
	/*
	 * The length with its NUL, or -EFAULT; an empty string 0, as
	 * mm/maccess.c's (the event then records no data and prints
	 * "(fault)", as the kernel's kprobe events print it).
	 */
	return n > 0 ? n + 1 : n;
}

notrace long rkp_strnlen_user_nofault(const void __user *src, long count)
{
	long n;

	pagefault_disable();
	n = strnlen_user(src, count);
	pagefault_enable();
	return n;
}

/* A memory load's or a string's address: its register plus the offset. */
static __always_inline unsigned long rkp_tev_store_addr(const struct pt_regs *regs,
							 const struct rkp_tev_store *st)
{
	return *(const unsigned long *)((const u8 *)regs + st->reg) + st->offset;
}

/* Whether a store reads user memory: a ustring, or any other address below
 * TASK_SIZE (the kernel's probe_mem_read() and fetch_store_string()). */
static __always_inline bool rkp_tev_store_user(const struct rkp_tev_store *st, unsigned long addr)
{
	return st->kind == RKP_TEV_STR_USER || addr < TASK_SIZE;
}

/*
 * The length of the kernel string at addr with its NUL, at most count, or
 * -EFAULT when a byte before the NUL cannot be read, as the Rust side's
 * exec::strnlen_chunked() measures it: by aligned words, which fault where
 * byte reads would (they do not cross a page).
 */
static long rkp_strnlen_kernel_nofault(unsigned long addr, long count)
{
	long n = 0;

	while (n < count) {
		unsigned long a = addr + n, word = a & ~7UL;
		unsigned int i;
		u64 w;

		if (copy_from_kernel_nofault(&w, (const void *)word, sizeof(w)))
			return -EFAULT;
		for (i = a - word; i < 8 && n < count; i++, n++)
			if (!((w >> (8 * i)) & 0xff))
				return n + 1;
	}
	return n;
}

/*
 * Copies the kernel string at addr into dst, at most count bytes with its
 * NUL (cut and NUL-terminated there): the length copied with the NUL, or
 * -EFAULT, as strncpy_from_kernel_nofault() (not exported), by words.
 */
static long rkp_strncpy_kernel_nofault(char *dst, unsigned long addr, long count)
{
	long n = 0;

	if (count <= 0)
		return 0;
	while (n < count) {
		unsigned long a = addr + n, word = a & ~7UL;
		unsigned int i;
		u64 w;

		if (copy_from_kernel_nofault(&w, (const void *)word, sizeof(w))) {
			dst[0] = '\0';
			return -EFAULT;
		}
		for (i = a - word; i < 8 && n < count; i++, n++) {
			dst[n] = (w >> (8 * i)) & 0xff;
			if (!dst[n])
				return n + 1;
		}
	}
	dst[count - 1] = '\0';
	return count;
}

/*
 * The plain record of a hit (rkp_tev_trace_regs(), rkp_tev_trace_strings()):
 * for an event whose arguments are all registers, memory or strings at a
 * register (struct rkp_tev_plain), stored here, and for the trace
 * instances alone (perf off). The size of the user strings
 * (__get_data_size()), then for each instance the reserve, the head, the
 * stores (store_trace_args()) and the commit, in one call, as the kernel's
 * kprobe_trace_func() does it in one function. The stores fill the fields
 * after the head (the kernel's fields are packed). A user string is read
 * as the Rust side's exec::store_string() reads it, through the same glue
 * (rkp_strnlen_user_nofault(), rkp_strncpy_user_nofault()), and once per
 * instance, as the kernel reads it. Probe-hit context: no sleeping, no
 * allocation, no locks.
 */
static __always_inline void rkp_tev_trace_plain(void *ev, struct pt_regs *regs, unsigned long a0,
						unsigned long a1, const struct rkp_tev_plain *plain,
						const bool strings)
{
	struct rkp_tev *tev = ev;
	const struct rkp_tev_store *st = plain->st, *mems = st + plain->nregs;
	const struct rkp_tev_store *strs = mems + plain->nmems;
	const struct rkp_tev_store *end = strs + plain->nstrs, *s;
	unsigned int fixed = plain->fixed;
	unsigned int hdr = tev->hdr;
	/* Every member the commit reads is set by the reserve, and regs here. */
	struct trace_event_buffer fb __attribute__((__uninitialized__));
	unsigned long dsize = 0;
	struct list_head *pos;

	for (s = strs; strings && s < end; s++) {
		unsigned long addr = rkp_tev_store_addr(regs, s);
		long len = rkp_tev_store_user(s, addr) ?
			rkp_strnlen_user_nofault((const void __user *)addr, RKP_TEV_MAX_STRING) :
			rkp_strnlen_kernel_nofault(addr, RKP_TEV_MAX_STRING);

		if (len > 0)
			dsize += min_t(long, len, RKP_TEV_MAX_STRING);
	}
	for (pos = READ_ONCE(tev->links.next); pos != &tev->links; pos = READ_ONCE(pos->next)) {
		struct rkp_tev_link *link = list_entry(pos, struct rkp_tev_link, list);
		unsigned long dyn, room;
		u8 *head;

		head = rkp_tev_reserve_link(tev, link, &fb, hdr + fixed + dsize, regs, a0, a1);
		if (!head)
			continue;
		for (s = mems; strings && s < strs; s++) {
			unsigned long addr = rkp_tev_store_addr(regs, s);
			u8 *d = head + hdr + s->at;
			int err = addr < TASK_SIZE ?
				copy_from_user_nofault(d, (const void __user *)addr, s->size) :
				copy_from_kernel_nofault(d, (const void *)addr, s->size);

			/* A fault leaves the field zero, as the Rust side's. */
			if (err)
				memset(d, 0, s->size);
		}
		for (s = st; s < mems; s++) {
			unsigned long v = *(unsigned long *)((u8 *)regs + s->reg);
			u8 *d = head + hdr + s->at;

			switch (s->size) {
			case 8:
				put_unaligned(v, (u64 *)d);
				break;
			case 4:
				put_unaligned((u32)v, (u32 *)d);
				break;
			case 2:
				put_unaligned((u16)v, (u16 *)d);
				break;
			default:
				*d = (u8)v;
				break;
			}
		}
		dyn = hdr + fixed;
		room = dsize;
		for (s = strs; strings && s < end; s++) {
			/*
			 * The __data_loc: what was stored, where the room
			 * left begins (nothing on a fault, for an empty
			 * string, or without room), as fetch_store_string_user().
			 */
			unsigned long addr = rkp_tev_store_addr(regs, s);
			long ret = !room ? 0 : rkp_tev_store_user(s, addr) ?
				rkp_strncpy_user_nofault((char *)head + dyn,
							 (const void __user *)addr, room) :
				rkp_strncpy_kernel_nofault((char *)head + dyn, addr, room);

			if (ret < 0)
				ret = 0;
			put_unaligned((u32)((ret << 16) | (dyn & 0xffff)), (u32 *)(head + hdr + s->at));
			dyn += ret;
			room -= ret;
		}
		trace_event_buffer_commit(&fb);
	}
}

/* The plain record of a probe with registers alone, or none. */
notrace void rkp_tev_trace_regs(void *ev, struct pt_regs *regs, unsigned long a0, unsigned long a1,
				const struct rkp_tev_plain *plain)
{
	rkp_tev_trace_plain(ev, regs, a0, a1, plain, false);
}

/* The plain record of a probe with memory loads or strings. */
notrace void rkp_tev_trace_strings(void *ev, struct pt_regs *regs, unsigned long a0,
				   unsigned long a1, const struct rkp_tev_plain *plain)
{
	rkp_tev_trace_plain(ev, regs, a0, a1, plain, true);
}

#ifdef CONFIG_PERF_EVENTS
/*
 * Records one hit for perf, when rkp_tev_wants() said RKP_TEV_PERF (in
 * rec->perf), as the kernel's kprobe_perf_func() and the
 * perf_trace_##call() of a tracepoint: the record (the same bytes as the
 * ftrace one) is written into perf's per-CPU buffer, and
 * perf_trace_run_bpf_submit() runs the BPF programs on it, as a
 * tracepoint's context, then hands it to perf unless a program said no.
 * With RKP_TEV_PERF_RAN the BPF programs ran already (rkp_tev_wants()):
 * the record goes to perf's events alone, as perf_trace_run_bpf_submit()
 * hands it on after them.
 * perf_trace_buf_alloc() takes a recursion context of perf's, which is safe
 * in NMI. Probe-hit context: preemption off, no sleeping, no allocation, no
 * locks.
 */
notrace void rkp_tev_perf(void *ev, struct rkp_tev_rec *rec, void *ctx)
{
	struct rkp_tev *tev = ev;
	struct trace_event_call *call = &tev->call;
	struct hlist_head __percpu *events = READ_ONCE(call->perf_events);
	unsigned int hdr = tev->hdr;
	void *ent;
	int rsize, rctx;

	/* Seen with perf_on set by this hit (rec->perf): not freed before it ends. */
	if (!events)
		return;
	/* As kprobe_perf_func(): perf adds a u32 size before the record. */
	rsize = ALIGN(hdr + rec->size + sizeof(u32), sizeof(u64)) - sizeof(u32);
	/* Dropped, as perf_trace_buf_alloc() would, without its WARN_ONCE(). */
	if (rsize > PERF_MAX_TRACE_SIZE)
		return;
	ent = perf_trace_buf_alloc(rsize, NULL, &rctx);
	if (!ent)
		return;
	/* The common fields are perf_tp_event()'s (perf_trace_buf_update()). */
	rkp_tev_fill_head(tev, ent, rec->a0, rec->a1);
	rkp_event_fill(ctx, ent, hdr + rec->size);
	if (rec->perf & RKP_TEV_PERF_RAN)
		perf_tp_event(call->event.type, 1, ent, rsize, rec->regs,
			      this_cpu_ptr(events), rctx, NULL);
	else
		perf_trace_run_bpf_submit(ent, rsize, rctx, call, 1, rec->regs,
					  this_cpu_ptr(events), NULL);
}
#else
notrace void rkp_tev_perf(void *ev, struct rkp_tev_rec *rec, void *ctx)
{
}
#endif

/*
 * sprint_symbol() of addr, for a symstr fetcharg: formatted on this stack
 * into a buffer of KSYM_SYMBOL_LEN bytes, the most sprint_symbol() writes
 * (as the kernel's fetch_store_symstrlen() does), then cut to len bytes of
 * room, NUL-terminated, when room is given. Returns the whole length, NUL
 * not counted. Probe-hit context.
 */
notrace unsigned int rkp_tev_symstr(unsigned long addr, char *room, unsigned int len)
{
	char buf[KSYM_SYMBOL_LEN];
	int n = sprint_symbol(buf, addr);
	unsigned int copy;

	if (n < 0)
		n = 0;
	if (room && len) {
		copy = min_t(unsigned int, n, len - 1);
		memcpy(room, buf, copy);
		room[copy] = '\0';
	}
	return n;
}

/* TASK_SIZE of the current task: the kernel's probe fetches read addresses
 * below it as user memory. Probe-hit context. */
notrace unsigned long rkp_tev_task_size(void)
{
	return TASK_SIZE;
}

/* this_cpu_ptr() of a per-CPU variable's address, for this_cpu_ptr() and
 * this_cpu_read() fetchargs: only an address, which later fetch steps read
 * without faulting. Probe-hit context (preemption off). */
notrace unsigned long rkp_tev_this_cpu_ptr(unsigned long addr)
{
	return (unsigned long)raw_cpu_ptr((void __percpu *)addr);
}

/*
 * The per-CPU scratch of the staged strings (rust/events/scratch.rs):
 * size bytes per CPU, cache-line aligned and zeroed. Process context.
 */
void __percpu *rkp_tev_scratch_alloc(unsigned long size)
{
	return __alloc_percpu(size, 64);
}

/* Frees what rkp_tev_scratch_alloc() gave. Process context. */
void rkp_tev_scratch_free(void __percpu *p)
{
	free_percpu(p);
}

/*
 * A module's BTF, /sys/kernel/btf/MODULE, read whole into vmalloc'd memory
 * (the module's own copy is gone once it is live): its size, or a negative
 * errno. The caller frees *buf with rkp_tev_free_file(). Process context.
 */
long rkp_tev_read_file(const char *path, void **buf, unsigned long max)
{
	size_t size = 0;
	ssize_t n;

	*buf = NULL;
	n = kernel_read_file_from_path(path, 0, buf, max, &size, READING_UNKNOWN);
	return n < 0 ? n : (long)size;
}

void rkp_tev_free_file(void *buf)
{
	vfree(buf);
}

/* The running kernel's release, for /lib/modules/RELEASE. Process context. */
const char *rkp_tev_kernel_release(void)
{
	return init_utsname()->release;
}
