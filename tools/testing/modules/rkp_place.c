// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_place: the random placement test's probes
 * (tools/testing/guest/62-random-placement.sh), a C client of rkprobes
 * beside the kernel's own kprobes.
 *
 * ats=START+OFF,... (hexadecimal START, decimal OFF): for each, the greatest
 * offset at or below OFF at an instruction boundary, by the kernel's
 * register_kprobe() of a disabled probe (by rkprobes' own answer on a
 * kernel without kprobes),
 * at most 15 bytes back; then rkprobes' probe there, with a pre-handler and
 * (post=1) a post-handler, left registered until unload. The kernel's
 * probes are all removed before rkprobes' are placed.
 * rets=START,...: a kretprobe at each function entry, the kernel's (placed
 * and removed with its kprobes) and rkprobes' (left registered).
 *
 * Each answer is a line "rkp_place: p START+OFF SNAPPED KERNEL RKPROBES" or
 * "rkp_place: r START KERNEL RKPROBES", the answers errnos (0: accepted,
 * 1: the kernel has no kprobes). At unload: "rkp_place: h ADDR HITS" for
 * each probe, "rkp_place: rh ADDR RETURNS" for each return probe, then
 * "rkp_place: unloaded: H hits, P post-handler calls, M missed, R returns".
 */
#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/kprobes.h>
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <rkprobes.h>

/* Longer than a charp parameter may be (1024 bytes). */
static char ats[4096];
module_param_string(ats, ats, sizeof(ats), 0);
static char rets[4096];
module_param_string(rets, rets, sizeof(rets), 0);
static int post = 1;
module_param(post, int, 0);
/* 0: each offset as given, without looking for a boundary below it. */
static int snap = 1;
module_param(snap, int, 0);

/* Bytes an offset may move back: the longest x86 instruction, less one. */
#define MAX_BACK 14

static struct rkp_kprobe *probes;
static struct rkp_kprobe **live;
static int nlive;
static struct rkp_kretprobe *rprobes;
static struct rkp_kretprobe **rlive;
static int nrlive;
static atomic_long_t hits, posts, returns;
/* Each probe's hits and each return probe's returns, by index. */
static atomic_long_t *phits, *rhits;
static int nprobes, nrprobes;

static int place_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&hits);
	if (p >= probes && p < probes + nprobes)
		atomic_long_inc(&phits[p - probes]);
	return 0;
}

static void place_post(struct rkp_kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_long_inc(&posts);
}

static int place_ret(struct rkp_kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rkp_kretprobe *rp = ri->rp;

	atomic_long_inc(&returns);
	if (rp >= rprobes && rp < rprobes + nrprobes)
		atomic_long_inc(&rhits[rp - rprobes]);
	return 0;
}

static int count(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == ',';
	return n;
}

#ifdef CONFIG_KPROBES
static int native_pre(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

static int native_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return 0;
}

/*
 * The kernel's probe at addr: registered into *kp, or its errno. Registered
 * disabled: its answer is what the test compares, and register_kprobe()
 * makes every check before it arms a probe; armed, the kernel's own probes
 * at some functions crash the kernel by themselves.
 */
static int native_at(struct kprobe *kp, unsigned long addr)
{
	memset(kp, 0, sizeof(*kp));
	kp->addr = (kprobe_opcode_t *)addr;
	kp->pre_handler = native_pre;
	kp->flags = KPROBE_FLAG_DISABLED;
	return register_kprobe(kp);
}

/* The kernel's kretprobe at addr: registered into *rp, or its errno. */
static int native_ret_at(struct kretprobe *rp, unsigned long addr)
{
	memset(rp, 0, sizeof(*rp));
	/* Disabled, as native_at()'s. */
	rp->kp.flags = KPROBE_FLAG_DISABLED;
	rp->kp.addr = (kprobe_opcode_t *)addr;
	rp->handler = native_ret;
	rp->maxactive = 4;
	return register_kretprobe(rp);
}
#else
/* rkprobes' probe at addr, registered and removed: its errno. */
/* A pre-handler that counts nothing: the counts are the placed probes'. */
static int try_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	return 0;
}

static int rk_try(unsigned long addr)
{
	struct rkp_kprobe p = { .addr = (void *)addr, .pre_handler = try_pre };
	int ret = rkp_register_kprobe(&p);

	if (!ret)
		rkp_unregister_kprobe(&p);
	return ret;
}
#endif

static int place_init(void)
{
	int n = count(ats), nr = count(rets), i, j;
	unsigned long *start, *snap;
	int *kerr, *off;
	struct kprobe *kps = NULL;
	struct kretprobe *krps = NULL;
	unsigned long *ret_at;
	int *kret;
	char *s, *tok;

	probes = kcalloc(n, sizeof(*probes), GFP_KERNEL);
	live = kcalloc(n, sizeof(*live), GFP_KERNEL);
	rprobes = kcalloc(nr, sizeof(*rprobes), GFP_KERNEL);
	rlive = kcalloc(nr, sizeof(*rlive), GFP_KERNEL);
	phits = kcalloc(n, sizeof(*phits), GFP_KERNEL);
	rhits = kcalloc(nr, sizeof(*rhits), GFP_KERNEL);
	start = kcalloc(n, sizeof(*start), GFP_KERNEL);
	snap = kcalloc(n, sizeof(*snap), GFP_KERNEL);
	kerr = kcalloc(n, sizeof(*kerr), GFP_KERNEL);
	off = kcalloc(n, sizeof(*off), GFP_KERNEL);
	ret_at = kcalloc(nr, sizeof(*ret_at), GFP_KERNEL);
	kret = kcalloc(nr, sizeof(*kret), GFP_KERNEL);
#ifdef CONFIG_KPROBES
	kps = kcalloc(n, sizeof(*kps), GFP_KERNEL);
	krps = kcalloc(nr, sizeof(*krps), GFP_KERNEL);
#endif
	if (!probes || !live || !rprobes || !rlive || !phits || !rhits || !start || !snap ||
	    !kerr || !off || !ret_at || !kret || (IS_ENABLED(CONFIG_KPROBES) && (!kps || !krps)))
		goto nomem;

	/* Parse "START+OFF" tokens. */
	s = ats;
	for (i = 0; i < n && (tok = strsep(&s, ",")); ) {
		char *plus = strchr(tok, '+');

		if (!*tok)
			continue;
		if (!plus)
			goto inval;
		*plus = 0;
		if (kstrtoul(tok, 16, &start[i]) || kstrtoint(plus + 1, 10, &off[i]) || off[i] < 0)
			goto inval;
		i++;
	}
	n = i;
	s = rets;
	for (i = 0; i < nr && (tok = strsep(&s, ",")); ) {
		if (!*tok)
			continue;
		if (kstrtoul(tok, 16, &ret_at[i]))
			goto inval;
		i++;
	}
	nr = i;
	nprobes = n;
	nrprobes = nr;

	/* The kernel's answers, all its probes registered at once. */
	for (i = 0; i < n; i++) {
		int back;

		kerr[i] = -EILSEQ;
		snap[i] = start[i] + off[i];
		for (back = 0; snap && back <= MAX_BACK && back <= off[i]; back++) {
			unsigned long a = start[i] + off[i] - back;
			int ret;

#ifdef CONFIG_KPROBES
			ret = native_at(&kps[i], a);
#else
			ret = rk_try(a);
#endif
			snap[i] = a;
			if (ret != -EILSEQ) {
				kerr[i] = ret;
				break;
			}
		}
		if (!IS_ENABLED(CONFIG_KPROBES))
			kerr[i] = 1;
	}
#ifdef CONFIG_KPROBES
	/*
	 * All removed at once (one grace period), before its kretprobes, so
	 * that each answer is the kernel's for that probe alone.
	 */
	{
		struct kprobe **kpp = kcalloc(n, sizeof(*kpp), GFP_KERNEL);
		struct kretprobe **krpp;

		for (i = 0, j = 0; i < n; i++) {
			if (kerr[i])
				continue;
			if (kpp)
				kpp[j++] = &kps[i];
			else
				unregister_kprobe(&kps[i]);
		}
		if (j)
			unregister_kprobes(kpp, j);
		kfree(kpp);

		/* Its kretprobes, at the function entries, likewise. */
		for (i = 0; i < nr; i++)
			kret[i] = native_ret_at(&krps[i], ret_at[i]);
		krpp = kcalloc(nr, sizeof(*krpp), GFP_KERNEL);
		for (i = 0, j = 0; i < nr; i++) {
			if (kret[i])
				continue;
			if (krpp)
				krpp[j++] = &krps[i];
			else
				unregister_kretprobe(&krps[i]);
		}
		if (j)
			unregister_kretprobes(krpp, j);
		kfree(krpp);
	}
#else
	for (i = 0; i < nr; i++)
		kret[i] = 1;
#endif

	/* rkprobes' probes, left registered. */
	for (i = 0; i < n; i++) {
		struct rkp_kprobe *p = &probes[i];
		int ret;

		p->addr = (void *)snap[i];
		p->pre_handler = place_pre;
		if (post)
			p->post_handler = place_post;
		ret = rkp_register_kprobe(p);
		if (!ret)
			live[nlive++] = p;
		pr_info("rkp_place: p %lx+%d %lu %d %d\n", start[i], off[i],
			snap[i] - start[i], kerr[i], ret);
	}

	/* rkprobes' return probes at the function entries. */
	for (i = 0; i < nr; i++) {
		struct rkp_kretprobe *rp = &rprobes[i];
		int ret;

		rp->kp.addr = (void *)ret_at[i];
		rp->handler = place_ret;
		rp->maxactive = 8;
		ret = rkp_register_kretprobe(rp);
		if (!ret)
			rlive[nrlive++] = rp;
		pr_info("rkp_place: r %lx %d %d\n", ret_at[i], kret[i], ret);
	}
	pr_info("rkp_place: %d probes and %d return probes live\n", nlive, nrlive);
	n = 0;
	goto done;

inval:
	pr_err("rkp_place: bad list\n");
	n = -EINVAL;
	goto out;
nomem:
	n = -ENOMEM;
out:
	for (j = 0; j < nlive; j++)
		rkp_unregister_kprobe(live[j]);
	nlive = 0;
	kfree(probes);
	kfree(live);
	kfree(rprobes);
	kfree(rlive);
	kfree(phits);
	kfree(rhits);
done:
	kfree(kps);
	kfree(krps);
	kfree(start);
	kfree(snap);
	kfree(kerr);
	kfree(off);
	kfree(ret_at);
	kfree(kret);
	return n;
}

static void place_exit(void)
{
	unsigned long missed = 0;
	int i;

	for (i = 0; i < nlive; i++)
		missed += live[i]->nmissed;
	if (nlive)
		rkp_unregister_kprobes(live, nlive);
	if (nrlive)
		rkp_unregister_kretprobes(rlive, nrlive);
	for (i = 0; i < nlive; i++)
		pr_info("rkp_place: h %lx %ld\n", (unsigned long)live[i]->addr,
			atomic_long_read(&phits[live[i] - probes]));
	for (i = 0; i < nrlive; i++)
		pr_info("rkp_place: rh %lx %ld\n", (unsigned long)rlive[i]->kp.addr,
			atomic_long_read(&rhits[rlive[i] - rprobes]));
	pr_info("rkp_place: unloaded: %ld hits, %ld post-handler calls, %lu missed, %ld returns\n",
		atomic_long_read(&hits), atomic_long_read(&posts), missed,
		atomic_long_read(&returns));
	kfree(probes);
	kfree(live);
	kfree(rprobes);
	kfree(rlive);
	kfree(phits);
	kfree(rhits);
}

module_init(place_init);
module_exit(place_exit);
MODULE_DESCRIPTION("rkprobes random placement test: probes beside the kernel's");
MODULE_LICENSE("GPL");
