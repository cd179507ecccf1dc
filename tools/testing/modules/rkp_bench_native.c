// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own kprobes and kretprobes for rkp_bench (rkp_bench_main.rs),
 * laid out by the C compiler. Empty handlers, as rkprobes' side of the
 * benchmark has.
 */
#include "native_kprobe.h"

/* Called from rkp_bench_main.rs. */
void *rkp_bench_native_kprobe(void *addr, const char *sym);
void rkp_bench_native_kprobe_free(void *kp);
void *rkp_bench_native_kretprobe(void *addr, const char *sym);
void rkp_bench_native_kretprobe_free(void *rp);

/* A kernel kprobe with an empty pre-handler; NULL or ERR_PTR on failure. */
void *rkp_bench_native_kprobe(void *addr, const char *sym)
{
	return rkp_native_kprobe(addr, sym, 0, NULL);
}

void rkp_bench_native_kprobe_free(void *kp)
{
	rkp_native_kprobe_free(kp);
}

#ifdef CONFIG_KRETPROBES
static int rkp_bench_empty_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return 0;
}

/* Registers a kernel kretprobe on addr or sym; NULL or ERR_PTR on failure. */
void *rkp_bench_native_kretprobe(void *addr, const char *sym)
{
	struct kretprobe *rp = kzalloc(sizeof(*rp), GFP_KERNEL);
	int ret;

	if (!rp)
		return ERR_PTR(-ENOMEM);
	rp->kp.addr = addr;
	rp->kp.symbol_name = sym;
	rp->handler = rkp_bench_empty_ret;
	ret = register_kretprobe(rp);
	if (ret) {
		kfree(rp);
		return ERR_PTR(ret);
	}
	return rp;
}

void rkp_bench_native_kretprobe_free(void *rp)
{
	unregister_kretprobe(rp);
	kfree(rp);
}
#else
void *rkp_bench_native_kretprobe(void *addr, const char *sym)
{
	return ERR_PTR(-EOPNOTSUPP);
}

void rkp_bench_native_kretprobe_free(void *rp)
{
}
#endif
