// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_reenter: a C client of rkprobes written as a user of include/rkprobes.h
 * would, for the reentry tests (tools/testing/guest/52-reentry.sh).
 *
 * mode=sweep (default): a probe with a pre- and a post-handler at every
 * offset of `symbol` below `maxoff` that rkprobes accepts. The post-handlers
 * print (up to `prints` lines in all), so that a function in the printk path
 * is re-entered from inside a post-handler; hits from NMIs come from the
 * test (sysrq-l). At unload the module reports its hits, post-handler calls
 * and the summed nmissed. Loading fails when no offset is accepted, which
 * the blacklist tests use.
 *
 * mode=rep: a probe with a post-handler on a `rep stosb` of this module that
 * fills `fill_kb` KiB, at load; the copy must run once per call, with one
 * trap back, and leave the buffer filled. Loading fails otherwise.
 */
#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include <rkprobes.h>

static char *mode = "sweep";
module_param(mode, charp, 0);
static char *symbol = "vprintk_store";
module_param(symbol, charp, 0);
static int maxoff = 512;
module_param(maxoff, int, 0);
static int prints = 100;
module_param(prints, int, 0);
static int fill_kb = 8192;
module_param(fill_kb, int, 0);

static struct rkp_kprobe *probes;
static struct rkp_kprobe **live;
static int nlive;
static atomic_long_t hits, posts;
static atomic_t budget;

static int rkp_reenter_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&hits);
	return 0;
}

static void rkp_reenter_post(struct rkp_kprobe *p, struct pt_regs *regs,
			     unsigned long flags)
{
	atomic_long_inc(&posts);
	if (atomic_dec_if_positive(&budget) >= 0)
		pr_info("rkp_reenter: post-handler at %pS\n", p->addr);
}

static int sweep_init(void)
{
	int off, ret, refused = 0, last_err = 0;

	if (maxoff <= 0 || maxoff > 4096)
		return -EINVAL;
	probes = kcalloc(maxoff, sizeof(*probes), GFP_KERNEL);
	live = kcalloc(maxoff, sizeof(*live), GFP_KERNEL);
	if (!probes || !live) {
		kfree(probes);
		kfree(live);
		return -ENOMEM;
	}
	atomic_set(&budget, prints);
	for (off = 0; off < maxoff; off++) {
		struct rkp_kprobe *p = &probes[off];

		p->symbol_name = symbol;
		p->offset = off;
		p->pre_handler = rkp_reenter_pre;
		p->post_handler = rkp_reenter_post;
		ret = rkp_register_kprobe(p);
		if (ret) {
			refused++;
			last_err = ret;
			continue;
		}
		live[nlive++] = p;
	}
	pr_info("rkp_reenter: %d probes on %s, %d offsets refused (last error %d)\n",
		nlive, symbol, refused, last_err);
	if (!nlive) {
		kfree(probes);
		kfree(live);
		return last_err ? last_err : -EINVAL;
	}
	return 0;
}

/* The instruction under test, alone in a function of its own. */
static noinline void rkp_reenter_fill(void *buf, unsigned long n, int c)
{
	asm volatile("rep stosb" : "+D"(buf), "+c"(n) : "a"(c) : "memory");
}

static int rep_init(void)
{
	unsigned long n = (unsigned long)fill_kb * 1024, i;
	const u8 *code = (const u8 *)rkp_reenter_fill;
	struct rkp_kprobe *p;
	int round, ret;
	u8 *buf;

	/* Find `rep stosb` (f3 aa) in the function's first bytes. */
	for (i = 0; i < 64; i++)
		if (code[i] == 0xf3 && code[i + 1] == 0xaa)
			break;
	if (i == 64) {
		pr_err("rkp_reenter: no rep stosb in rkp_reenter_fill\n");
		return -ENOENT;
	}
	buf = vmalloc(n);
	probes = kzalloc(sizeof(*probes), GFP_KERNEL);
	if (!buf || !probes) {
		vfree(buf);
		kfree(probes);
		return -ENOMEM;
	}
	p = probes;
	p->addr = (void *)(code + i);
	p->pre_handler = rkp_reenter_pre;
	p->post_handler = rkp_reenter_post;
	ret = rkp_register_kprobe(p);
	if (ret) {
		pr_err("rkp_reenter: registering at the rep stosb: %d\n", ret);
		goto out;
	}
	for (round = 1; round <= 3; round++) {
		rkp_reenter_fill(buf, n, round);
		if (memchr_inv(buf, round, n)) {
			pr_err("rkp_reenter: rep stosb round %d left the buffer unfilled\n", round);
			ret = -EIO;
		}
	}
	rkp_unregister_kprobe(p);
	pr_info("rkp_reenter: rep stosb of %lu bytes, 3 calls: %ld hits, %ld post-handler calls, %lu missed\n",
		n, atomic_long_read(&hits), atomic_long_read(&posts), p->nmissed);
	if (!ret && (atomic_long_read(&hits) != 3 || atomic_long_read(&posts) != 3))
		ret = -EIO;
out:
	vfree(buf);
	kfree(probes);
	probes = NULL;
	return ret;
}

static int __init rkp_reenter_init(void)
{
	if (!strcmp(mode, "sweep"))
		return sweep_init();
	if (!strcmp(mode, "rep"))
		return rep_init();
	return -EINVAL;
}

static void __exit rkp_reenter_exit(void)
{
	unsigned long missed = 0;
	int i;

	for (i = 0; i < nlive; i++)
		missed += live[i]->nmissed;
	if (nlive)
		rkp_unregister_kprobes(live, nlive);
	pr_info("rkp_reenter: unloaded: %d probes, %ld hits, %ld post-handler calls, %lu missed\n",
		nlive, atomic_long_read(&hits), atomic_long_read(&posts), missed);
	kfree(live);
	kfree(probes);
}

module_init(rkp_reenter_init);
module_exit(rkp_reenter_exit);
MODULE_DESCRIPTION("rkprobes reentry tests: a C client with printing post-handlers");
MODULE_LICENSE("GPL");
