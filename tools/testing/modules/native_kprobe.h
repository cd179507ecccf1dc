/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's own kprobes for the Rust test modules, which compare
 * rkprobes with them: struct kprobe is laid out by the C compiler from
 * <linux/kprobes.h>, never by hand. Included by one C file of each module
 * (rkp_sweep_native.c, rkp_bench_native.c), which the module's Rust calls.
 */
#ifndef _RKP_NATIVE_KPROBE_H
#define _RKP_NATIVE_KPROBE_H

#include <linux/err.h>
#include <linux/kprobes.h>
#include <linux/slab.h>

#ifdef CONFIG_KPROBES
static int rkp_native_empty_pre(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

/*
 * Registers a kernel kprobe at addr, or sym plus offset, with an empty
 * pre-handler; returns it, or an ERR_PTR. *probed is the address the
 * kernel chose. Process context.
 */
static inline void *rkp_native_kprobe(void *addr, const char *sym, unsigned int offset,
				      unsigned long *probed)
{
	struct kprobe *kp = kzalloc(sizeof(*kp), GFP_KERNEL);
	int ret;

	if (!kp)
		return ERR_PTR(-ENOMEM);
	kp->addr = addr;
	kp->symbol_name = sym;
	kp->offset = offset;
	kp->pre_handler = rkp_native_empty_pre;
	ret = register_kprobe(kp);
	if (ret) {
		kfree(kp);
		return ERR_PTR(ret);
	}
	if (probed)
		*probed = (unsigned long)kp->addr;
	return kp;
}

/* Unregisters and frees a probe of rkp_native_kprobe(). */
static inline void rkp_native_kprobe_free(void *kp)
{
	unregister_kprobe(kp);
	kfree(kp);
}
#else
static inline void *rkp_native_kprobe(void *addr, const char *sym, unsigned int offset,
				      unsigned long *probed)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void rkp_native_kprobe_free(void *kp)
{
}
#endif

#endif /* _RKP_NATIVE_KPROBE_H */
