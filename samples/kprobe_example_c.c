// SPDX-License-Identifier: GPL-2.0
/*
 * kprobe_example_c: the kernel's samples/kprobes/kprobe_example.c, in C, on
 * rkprobes: a probe module written against include/rkprobes.h as a kernel
 * developer would write one against <linux/kprobes.h>.
 *
 * A probe on kernel_clone, or on the symbol given as symbol=NAME, whose
 * pre-handler prints the probed address, the instruction pointer and the
 * flags, and whose post-handler prints the address and the flags after the
 * probed instruction ran out of line. Every fork() in the system hits it.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/ptrace.h>

#include <rkprobes.h>

static char symbol[128] = "kernel_clone";
module_param_string(symbol, symbol, sizeof(symbol), 0644);

static struct rkp_kprobe kp = {
	.symbol_name = symbol,
};

/* Runs just before the probed instruction, in int3 context. */
static int handler_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	pr_info("<%s> p->addr = 0x%p, ip = %lx, flags = 0x%lx\n",
		p->symbol_name, p->addr, regs->ip, regs->flags);
	/* 0: let the probed instruction run. */
	return 0;
}

/* Runs after the probed instruction ran out of line, in int3 context. */
static void handler_post(struct rkp_kprobe *p, struct pt_regs *regs,
			 unsigned long flags)
{
	pr_info("<%s> p->addr = 0x%p, flags = 0x%lx\n",
		p->symbol_name, p->addr, regs->flags);
}

static int __init kprobe_init(void)
{
	int ret;

	kp.pre_handler = handler_pre;
	kp.post_handler = handler_post;
	ret = rkp_register_kprobe(&kp);
	if (ret < 0) {
		pr_err("register_kprobe failed, returned %d\n", ret);
		return ret;
	}
	pr_info("Planted kprobe at %p\n", kp.addr);
	return 0;
}

static void __exit kprobe_exit(void)
{
	rkp_unregister_kprobe(&kp);
	pr_info("kprobe at %p unregistered, %lu missed\n", kp.addr, kp.nmissed);
}

module_init(kprobe_init)
module_exit(kprobe_exit)
MODULE_DESCRIPTION("rkprobes sample in C: pre and post handlers on kernel_clone");
MODULE_LICENSE("GPL");
