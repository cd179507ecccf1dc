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
int rkp_bench_native_batch(unsigned long base, int per_fn, int fn_size, int n,
			   s64 *reg_ns, s64 *unreg_ns);
void *rkp_bench_native_hold(unsigned long base, int per_fn, int fn_size, int n, int reg);
void rkp_bench_native_release(void *held);
unsigned long rkp_bench_native_kprobe_size(void);

/* A kernel kprobe with an empty pre-handler; NULL or ERR_PTR on failure. */
void *rkp_bench_native_kprobe(void *addr, const char *sym)
{
	return rkp_native_kprobe(addr, sym, 0, NULL);
}

void rkp_bench_native_kprobe_free(void *kp)
{
	rkp_native_kprobe_free(kp);
}

#ifdef CONFIG_KPROBES
/*
 * The kernel's register_kprobes() and unregister_kprobes() on n int3 sites
 * of rkp_bench_main.rs's never-called NOP functions (per_fn sites each,
 * fn_size bytes apart), timed; 0 or an errno.
 */
int rkp_bench_native_batch(unsigned long base, int per_fn, int fn_size, int n,
			   s64 *reg_ns, s64 *unreg_ns)
{
	struct kprobe **kps = kvcalloc(n, sizeof(*kps), GFP_KERNEL);
	struct kprobe *mem = kvcalloc(n, sizeof(*mem), GFP_KERNEL);
	ktime_t t;
	int i, ret = -ENOMEM;

	if (!kps || !mem)
		goto out;
	for (i = 0; i < n; i++) {
		mem[i].addr = (void *)(base + (i / per_fn) * fn_size + i % per_fn);
		mem[i].pre_handler = rkp_native_empty_pre;
		kps[i] = &mem[i];
	}
	t = ktime_get();
	ret = register_kprobes(kps, n);
	*reg_ns = ktime_to_ns(ktime_sub(ktime_get(), t));
	if (ret)
		goto out;
	t = ktime_get();
	unregister_kprobes(kps, n);
	*unreg_ns = ktime_to_ns(ktime_sub(ktime_get(), t));
out:
	kvfree(mem);
	kvfree(kps);
	return ret;
}

/* n kernel kprobes, and the array register_kprobes() takes. */
struct rkp_bench_held {
	int n;
	bool registered;
	struct kprobe **kps;
	struct kprobe *mem;
};

/*
 * For the memory row: n kprobes on the NOP functions' sites, as
 * rkp_bench_native_batch() lays them out, registered in one batch if reg,
 * only allocated otherwise (the baseline); kept until
 * rkp_bench_native_release(). ERR_PTR on failure.
 */
void *rkp_bench_native_hold(unsigned long base, int per_fn, int fn_size, int n, int reg)
{
	struct rkp_bench_held *h = kzalloc(sizeof(*h), GFP_KERNEL);
	int i, ret = -ENOMEM;

	if (!h)
		return ERR_PTR(-ENOMEM);
	h->n = n;
	h->kps = kvcalloc(n, sizeof(*h->kps), GFP_KERNEL);
	h->mem = kvcalloc(n, sizeof(*h->mem), GFP_KERNEL);
	if (!h->kps || !h->mem)
		goto fail;
	for (i = 0; i < n; i++) {
		h->mem[i].addr = (void *)(base + (i / per_fn) * fn_size + i % per_fn);
		h->mem[i].pre_handler = rkp_native_empty_pre;
		h->kps[i] = &h->mem[i];
	}
	if (reg) {
		ret = register_kprobes(h->kps, n);
		if (ret)
			goto fail;
		h->registered = true;
	}
	return h;
fail:
	kvfree(h->mem);
	kvfree(h->kps);
	kfree(h);
	return ERR_PTR(ret);
}

void rkp_bench_native_release(void *held)
{
	struct rkp_bench_held *h = held;

	if (h->registered)
		unregister_kprobes(h->kps, h->n);
	kvfree(h->mem);
	kvfree(h->kps);
	kfree(h);
}
#else
int rkp_bench_native_batch(unsigned long base, int per_fn, int fn_size, int n,
			   s64 *reg_ns, s64 *unreg_ns)
{
	return -EOPNOTSUPP;
}

void *rkp_bench_native_hold(unsigned long base, int per_fn, int fn_size, int n, int reg)
{
	return ERR_PTR(-EOPNOTSUPP);
}

void rkp_bench_native_release(void *held)
{
}
#endif

/* What a kernel kprobe's caller allocates for it. */
unsigned long rkp_bench_native_kprobe_size(void)
{
#ifdef CONFIG_KPROBES
	return sizeof(struct kprobe);
#else
	return 0;
#endif
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
