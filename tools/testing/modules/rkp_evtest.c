// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_evtest: what the kprobe_events reliability and lockdown guest tests
 * (tools/testing/guest/84-kprobe-events-reliability.sh, 99-lockdown.sh)
 * need from a module of their own.
 *
 * - A function whose name is 511 bytes long (KSYM_NAME_LEN - 1, the longest
 *   kallsyms keeps), called with its own address as its first argument on
 *   every write to the `call` parameter. sprint_symbol() of that address
 *   ("NAME+0x0/0x... [rkp_evtest]") is longer than 512 bytes and shorter
 *   than KSYM_SYMBOL_LEN: what a symstr fetcharg must survive.
 * - A C client of include/rkprobes.h that registers later than its load:
 *   writing "kprobe SYM" or "kretprobe SYM" to the `probe` parameter
 *   registers such a probe and unregisters it at once; the write fails with
 *   the registration's error. An unsigned module cannot be loaded once
 *   lockdown is raised, so the lockdown test loads this one before and asks
 *   it for a probe after. With `abi=N` it registers them as a client built
 *   against ABI version N would.
 * - A jump-label site and an inline static call site of its own, in
 *   rkp_evtest_sites(), called on every write to `call`: rkprobes' answer
 *   for a module's sites (kernel_ext/sites.rs) is compared with the
 *   kernel's over every byte of this module's text (30-blacklist.sh).
 */
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/static_call.h>
#include <linux/string.h>
#include <linux/jump_label.h>

#include <rkprobes.h>

#define RKP_PASTE(a, b) a##b
#define RKP_XPASTE(a, b) RKP_PASTE(a, b)
#define RKP_TWICE(a) RKP_XPASTE(a, a)
#define RKP_32(a) RKP_TWICE(RKP_TWICE(RKP_TWICE(RKP_TWICE(RKP_TWICE(a)))))
/* rkp_evtest_long_ (16 bytes) and 33 times symstr_0123456_ (15 bytes). */
#define RKP_LONG_NAME \
	RKP_XPASTE(RKP_XPASTE(rkp_evtest_long_, RKP_32(symstr_0123456_)), symstr_0123456_)

unsigned long RKP_LONG_NAME(void *self);

static DEFINE_STATIC_KEY_FALSE(rkp_evtest_key);

static noinline int rkp_evtest_one(int x)
{
	return x + 1;
}

DEFINE_STATIC_CALL(rkp_evtest_sc, rkp_evtest_one);

int rkp_evtest_sites(int x);

noinline int rkp_evtest_sites(int x)
{
	if (static_branch_unlikely(&rkp_evtest_key))
		x ^= 0x55;
	return static_call(rkp_evtest_sc)(x);
}

noinline unsigned long RKP_LONG_NAME(void *self)
{
	/* Something to do, so that the call is not folded away. */
	return (unsigned long)READ_ONCE(self) ^ 0x5a;
}

/* Read at each call, so that the compiler cannot specialise the function
 * for a constant argument (a .constprop copy the probe would not see). */
static void *long_name_self = (void *)RKP_LONG_NAME;

static unsigned long calls;
module_param(calls, ulong, 0444);
MODULE_PARM_DESC(calls, "how many times the long-named function ran");

static int rkp_evtest_call(const char *val, const struct kernel_param *kp)
{
	void *self = READ_ONCE(long_name_self);

	if (RKP_LONG_NAME(self) != ((unsigned long)self ^ 0x5a))
		return -EIO;
	if (rkp_evtest_sites(1) != 2)
		return -EIO;
	calls++;
	return 0;
}

static const struct kernel_param_ops rkp_evtest_call_ops = {
	.set = rkp_evtest_call,
};
module_param_cb(call, &rkp_evtest_call_ops, NULL, 0200);
MODULE_PARM_DESC(call, "write anything: calls the long-named function");

static int rkp_evtest_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	return 0;
}

static int rkp_evtest_ret(struct rkp_kretprobe_instance *ri, struct pt_regs *regs)
{
	return 0;
}

/*
 * The ABI version the probes below register with: this header's by
 * default; another one stands for a client built against another
 * include/rkprobes.h, which rkprobes must refuse (50-kprobe-semantics.sh).
 */
static uint abi = RKP_ABI_VERSION;
module_param(abi, uint, 0);
MODULE_PARM_DESC(abi, "ABI version passed at registration");

/* Parameter writes are serialised by the kernel's param lock. */
static struct rkp_kprobe kp;
static struct rkp_kretprobe rp;
static char sym[KSYM_NAME_LEN];

static int rkp_evtest_register(const char *val, const struct kernel_param *param)
{
	const char *s;
	bool ret_probe;
	int ret;

	if (!strncmp(val, "kprobe ", 7)) {
		ret_probe = false;
		s = val + 7;
	} else if (!strncmp(val, "kretprobe ", 10)) {
		ret_probe = true;
		s = val + 10;
	} else {
		return -EINVAL;
	}
	strscpy(sym, s, sizeof(sym));
	strim(sym);
	if (ret_probe) {
		memset(&rp, 0, sizeof(rp));
		rp.kp.symbol_name = sym;
		rp.handler = rkp_evtest_ret;
		ret = rkp_register_kretprobe_abi(&rp, abi);
		if (!ret)
			rkp_unregister_kretprobe(&rp);
	} else {
		memset(&kp, 0, sizeof(kp));
		kp.symbol_name = sym;
		kp.pre_handler = rkp_evtest_pre;
		ret = rkp_register_kprobe_abi(&kp, abi);
		if (!ret)
			rkp_unregister_kprobe(&kp);
	}
	pr_info("rkp_evtest: %s on %s: %d\n", ret_probe ? "kretprobe" : "kprobe", sym, ret);
	return ret;
}

static const struct kernel_param_ops rkp_evtest_register_ops = {
	.set = rkp_evtest_register,
};
module_param_cb(probe, &rkp_evtest_register_ops, NULL, 0200);
MODULE_PARM_DESC(probe, "\"kprobe SYM\" or \"kretprobe SYM\": register and unregister one");

MODULE_DESCRIPTION("rkprobes kprobe_events and lockdown test helpers");
MODULE_LICENSE("GPL");
