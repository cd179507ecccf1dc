// SPDX-License-Identifier: GPL-2.0
/*
 * rkp_extable: probes on an instruction with an exception-table entry, for
 * tools/testing/guest/53-extable.sh. A C client of include/rkprobes.h.
 *
 * The instructions are two loads of this module whose faults the exception
 * table fixes up (EX_TYPE_EFAULT_REG: the load returns -EFAULT), as in
 * copy_from_kernel_nofault(): rkp_extable_load, and rkp_extable_uload,
 * which runs with user access open (stac), as in get_user(). At load, with
 * a probe (pre- and post-handler) on each, it reads
 *   ok:        a variable of this module (no fault);
 *   guard:     the guard page after a vmalloc() area (a kernel page fault);
 *   noncanon:  a non-canonical address (#GP, not a page fault);
 *   umapped:   a fresh anonymous page of insmod's (a page fault that maps
 *              it: the load runs again);
 *   ubad:      user address 8, with no mapping (a page fault fixed up);
 * and prints "rkp_extable: rk CASE ERR VALUE", then the probes' hits and
 * post-handler calls. A faulting copy goes back to the probed address, as
 * with the kernel's kprobes, where the fault is handled: fixed up (that
 * hit runs no post-handler), or resolved, when the int3 hits again.
 * Where the kernel has kprobes, its own probes on the same instructions
 * take the same reads but the #GP ("kp ..." lines): the kernel's kprobes
 * oops on a #GP there (kprobe_fault_handler() sends it back after the
 * exception table was searched at the copy).
 */
#include <linux/errno.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/objtool.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <asm/asm.h>
#include <asm/smap.h>

#include <rkprobes.h>

extern char rkp_extable_load[], rkp_extable_uload[];

static unsigned long value = 0x5eed;
static atomic_t pre, post;

/* *addr, or -EFAULT when the load faults. */
static noinline int extable_read(unsigned long addr, unsigned long *val)
{
	unsigned long v = 0;
	int err = 0;

	/* Its address is taken for the probes, not for an indirect branch. */
	asm volatile(".globl rkp_extable_load\n"
		     "rkp_extable_load:\n\t"
		     ANNOTATE_NOENDBR
		     "movq (%[addr]), %[v]\n"
		     "1:\n"
		     _ASM_EXTABLE_TYPE_REG(rkp_extable_load, 1b, EX_TYPE_EFAULT_REG, %[err])
		     : [err] "+r" (err), [v] "+r" (v)
		     : [addr] "r" (addr)
		     : "memory");
	*val = v;
	return err;
}

/* The user address addr, read with user access open, or -EFAULT. */
static noinline int extable_uread(unsigned long addr, unsigned long *val)
{
	unsigned long v = 0;
	int err = 0;

	asm volatile(ASM_STAC "\n"
		     ".globl rkp_extable_uload\n"
		     "rkp_extable_uload:\n\t"
		     ANNOTATE_NOENDBR
		     "movq (%[addr]), %[v]\n"
		     "1:\n\t"
		     ASM_CLAC "\n"
		     _ASM_EXTABLE_TYPE_REG(rkp_extable_uload, 1b, EX_TYPE_EFAULT_REG, %[err])
		     : [err] "+r" (err), [v] "+r" (v)
		     : [addr] "r" (addr)
		     : "memory");
	*val = v;
	return err;
}

static int ext_pre(struct rkp_kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&pre);
	return 0;
}

static void ext_post(struct rkp_kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_inc(&post);
}

struct read_case {
	const char *name;
	int (*read)(unsigned long addr, unsigned long *val);
	unsigned long addr;
	/* Whether the kernel's kprobes survive it (all but the #GP). */
	bool native;
};

/*
 * Makes the reads (all, or those the kernel's kprobes survive) and prints
 * their results and the probes' counts. The "umapped" case reads a fresh
 * anonymous page of the calling task, mapped here and not touched before.
 */
static void run(const char *who, struct read_case *cases, int n, bool all)
{
	unsigned long user;
	int i;

	user = vm_mmap(NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_ANONYMOUS | MAP_PRIVATE, 0);
	if (IS_ERR_VALUE(user)) {
		pr_info("rkp_extable: %s no user page: %ld\n", who, (long)user);
		return;
	}
	for (i = 0; i < n; i++) {
		if (!strcmp(cases[i].name, "umapped"))
			cases[i].addr = user;
	}
	for (i = 0; i < n; i++) {
		unsigned long v = 0;
		int err;

		if (!all && !cases[i].native)
			continue;
		err = cases[i].read(cases[i].addr, &v);
		pr_info("rkp_extable: %s %s %d %lx\n", who, cases[i].name, err, v);
	}
	pr_info("rkp_extable: %s hits %d post %d\n", who, atomic_read(&pre), atomic_read(&post));
	atomic_set(&pre, 0);
	atomic_set(&post, 0);
	vm_munmap(user, PAGE_SIZE);
}

#ifdef CONFIG_KPROBES
static int kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&pre);
	return 0;
}

static void kp_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_inc(&post);
}
#endif

static int __init extable_init(void)
{
	struct rkp_kprobe rp[2] = {
		{ .addr = (void *)rkp_extable_load },
		{ .addr = (void *)rkp_extable_uload },
	};
	struct rkp_kprobe *rpp[2] = { &rp[0], &rp[1] };
	struct read_case cases[] = {
		{ "ok", extable_read, (unsigned long)&value, true },
		{ "guard", extable_read, 0, true },
		{ "noncanon", extable_read, 0xdead000000000000UL, false },
		{ "umapped", extable_uread, 0, true },
		{ "ubad", extable_uread, 8, true },
	};
	void *area = vmalloc(PAGE_SIZE);
	int i, ret;

	if (!area)
		return -ENOMEM;
	/* vmalloc() areas are followed by an unmapped guard page. */
	cases[1].addr = (unsigned long)area + PAGE_SIZE;
	for (i = 0; i < 2; i++) {
		rp[i].pre_handler = ext_pre;
		rp[i].post_handler = ext_post;
	}
	ret = rkp_register_kprobes(rpp, 2);
	pr_info("rkp_extable: rk register %d\n", ret);
	if (!ret) {
		run("rk", cases, ARRAY_SIZE(cases), true);
		rkp_unregister_kprobes(rpp, 2);
	}
#ifdef CONFIG_KPROBES
	{
		struct kprobe kp[2] = {
			{ .addr = (kprobe_opcode_t *)rkp_extable_load },
			{ .addr = (kprobe_opcode_t *)rkp_extable_uload },
		};
		struct kprobe *kpp[2] = { &kp[0], &kp[1] };
		int kret;

		for (i = 0; i < 2; i++) {
			kp[i].pre_handler = kp_pre;
			kp[i].post_handler = kp_post;
		}
		kret = register_kprobes(kpp, 2);
		pr_info("rkp_extable: kp register %d\n", kret);
		/*
		 * 6.12's kprobe_fault_handler() clears current_kprobe but leaves
		 * the CPU's kprobe_status at KPROBE_HIT_SS: the next int3 on that
		 * CPU that is not the kernel's kprobe (an rkprobes probe, kgdb)
		 * makes kprobe_int3_handler() dereference the NULL
		 * current_kprobe. A read without a fault on the same CPU, the
		 * kernel's probe hitting normally, sets the status right.
		 */
		migrate_disable();
		if (!kret) {
			unsigned long v;

			run("kp", cases, ARRAY_SIZE(cases), false);
			cases[0].read(cases[0].addr, &v);
			unregister_kprobes(kpp, 2);
		}
		migrate_enable();
	}
#endif
	vfree(area);
	return ret;
}

static void __exit extable_exit(void)
{
}

module_init(extable_init);
module_exit(extable_exit);
MODULE_DESCRIPTION("rkprobes test: probes on an instruction with an exception-table entry");
MODULE_LICENSE("GPL");
