// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoints for rkprobes' t events, as 6.12's trace_fprobe.c uses them:
 * a tracepoint calls its stub function (__probestub_TP, an empty function
 * of the tracepoint's prototype that ftrace can trace) once the stub is
 * one of its probes, and a t event probes the stub's ftrace call site,
 * where the tracepoint's arguments are the stub's.
 *
 * rkprobes registers the stub with its own cookie as data, so that its
 * registration is its own: the kernel's tprobe events register the same
 * stub with NULL, and each side removes only what it added. While both
 * have a probe on one tracepoint, the tracepoint calls the stub twice, and
 * each side's events record each hit twice.
 */
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "tprobe.h"

struct rkp_tp_search {
	const char *name;
	struct tracepoint *found;
};

static void rkp_tp_match(struct tracepoint *tp, void *priv)
{
	struct rkp_tp_search *s = priv;

	if (!s->found && !strcmp(tp->name, s->name))
		s->found = tp;
}

/* The tracepoint @name of vmlinux, or NULL. Process context. */
void *rkp_tp_find(const char *name)
{
	struct rkp_tp_search s = { .name = name };

	for_each_kernel_tracepoint(rkp_tp_match, &s);
	return s.found;
}

/*
 * The tracepoint @name of the module @mod, or NULL. The caller holds a
 * reference on @mod. Process context.
 *
 * None of a module the tracepoint code leaves out (a taint other than
 * out-of-tree, staging, unsigned, test or livepatch: its
 * trace_module_has_bad_taint(), not exported): such a module's
 * tracepoints are never registered, and its going is never told on the
 * tracepoint module chain, which rkprobes' t probes on it rely on.
 */
void *rkp_tp_find_in_module(struct module *mod, const char *name)
{
#ifdef CONFIG_TRACEPOINTS
	unsigned int i;

	if (mod->taints & ~((1 << TAINT_OOT_MODULE) | (1 << TAINT_CRAP) |
			    (1 << TAINT_UNSIGNED_MODULE) | (1 << TAINT_TEST) |
			    (1 << TAINT_LIVEPATCH)))
		return NULL;

	for (i = 0; i < mod->num_tracepoints; i++) {
		struct tracepoint *tp = tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);

		if (!strcmp(tp->name, name))
			return tp;
	}
#endif
	return NULL;
}

/* The address of @tp's stub function. */
unsigned long rkp_tp_stub(void *tp)
{
	return (unsigned long)((struct tracepoint *)tp)->probestub;
}

/*
 * Every tracepoint whose stub rkprobes registered, with the number of
 * rkprobes' t probes on it: the stub is registered once however many
 * there are, or the tracepoint would call it once per registration and
 * each probe would record every hit that many times.
 */
struct rkp_tp_ref {
	struct list_head node;
	struct tracepoint *tp;
	unsigned int users;
};

static LIST_HEAD(rkp_tp_refs);
static DEFINE_MUTEX(rkp_tp_lock);

/* rkprobes' data for the stubs it registers; never read. */
static char rkp_tp_cookie;

static struct rkp_tp_ref *rkp_tp_ref_of(struct tracepoint *tp)
{
	struct rkp_tp_ref *r;

	list_for_each_entry(r, &rkp_tp_refs, node)
		if (r->tp == tp)
			return r;
	return NULL;
}

/*
 * One more t probe on @tp: the first makes @tp call its stub. Process
 * context.
 */
int rkp_tp_attach(void *tp)
{
	struct tracepoint *t = tp;
	struct rkp_tp_ref *r;
	int ret = 0;

	mutex_lock(&rkp_tp_lock);
	r = rkp_tp_ref_of(t);
	if (r) {
		r->users++;
		goto out;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	ret = tracepoint_probe_register_prio_may_exist(t, t->probestub,
						       &rkp_tp_cookie, 0);
	if (ret) {
		kfree(r);
		goto out;
	}
	r->tp = t;
	r->users = 1;
	list_add(&r->node, &rkp_tp_refs);
out:
	mutex_unlock(&rkp_tp_lock);
	return ret;
}

/*
 * One t probe on @tp fewer: the last removes the stub. Never fails (a
 * failed removal leaves the stub called, which costs a call and records
 * nothing). Process context.
 */
void rkp_tp_detach(void *tp)
{
	struct tracepoint *t = tp;
	struct rkp_tp_ref *r;

	mutex_lock(&rkp_tp_lock);
	r = rkp_tp_ref_of(t);
	if (r && !--r->users) {
		tracepoint_probe_unregister(t, t->probestub, &rkp_tp_cookie);
		list_del(&r->node);
		kfree(r);
	}
	mutex_unlock(&rkp_tp_lock);
}
