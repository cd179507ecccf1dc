/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkprobes: the C ABI of rkprobes.ko, for probe modules in C or Rust.
 *
 * It mirrors the kernel's <linux/kprobes.h>: fill in a struct rkp_kprobe
 * (addr, or symbol_name and offset; handlers; optionally RKP_FLAG_DISABLED)
 * and register it. The structure must stay allocated, unchanged but for the
 * fields rkprobes updates, until it is unregistered, and a module must
 * unregister its probes before it is unloaded.
 *
 * Handlers run in int3 exception context with interrupts disabled, or, at
 * an ftrace site, once their probe is optimized, and for a kretprobe's
 * return, with preemption disabled and interrupts as the probed code had
 * them: they must not sleep, allocate with GFP_KERNEL, take locks that the
 * probed code may hold, or assume that interrupts are off. See
 * Documentation/kprobes-api.rst.
 */
#ifndef _RKPROBES_H
#define _RKPROBES_H

#include <linux/types.h>

struct pt_regs;
struct rkp_kprobe;

/* Called before the probed instruction runs. A non-zero return means the
 * handler changed regs->ip and the probed instruction must not run. */
typedef int (*rkp_pre_handler_t)(struct rkp_kprobe *p, struct pt_regs *regs);
/* Called after the probed instruction ran out of line (not after a skipped
 * or emulated one that a pre_handler redirected). */
typedef void (*rkp_post_handler_t)(struct rkp_kprobe *p, struct pt_regs *regs,
				   unsigned long flags);
/* Called when a fault is reported while a handler or the out-of-line step
 * runs (see the documentation for which faults reach it). Non-zero: handled. */
typedef int (*rkp_fault_handler_t)(struct rkp_kprobe *p, struct pt_regs *regs,
				   int trapnr);

/* Flags, as the kernel's KPROBE_FLAG_*. Only RKP_FLAG_DISABLED may be set by
 * the caller, before registration; the others are reported by rkprobes. */
#define RKP_FLAG_GONE		1	/* the probed code was unloaded */
#define RKP_FLAG_DISABLED	2	/* registered, not armed */
#define RKP_FLAG_OPTIMIZED	4	/* replaced by a jump */
#define RKP_FLAG_FTRACE		8	/* through ftrace at a function entry */

struct rkp_kprobe {
	/* Where: addr, or symbol_name ("sym" or "module:sym") plus offset. On
	 * successful registration addr is set to the probed address. */
	void *addr;
	const char *symbol_name;
	unsigned int offset;

	rkp_pre_handler_t pre_handler;
	rkp_post_handler_t post_handler;
	rkp_fault_handler_t fault_handler;

	unsigned int flags;
	/* Hits that could not run the handlers (a hit inside a handler or an
	 * out-of-line step). */
	unsigned long nmissed;

	/* Private to rkprobes: the probe point while registered, and the
	 * next probe at the same point. */
	void *rkp_private;
	struct rkp_kprobe *rkp_next;
};

/*
 * Return probes, as the kernel's kretprobes. The embedded kprobe gives the
 * function (its entry: a symbol with offset 0, or the address of a function's
 * start); rkprobes owns its pre_handler and post_handler. At each call an
 * instance is taken from a pool of maxactive (0: max(10, 2 * possible CPUs),
 * written back), entry_handler runs (non-zero: no return handler for this
 * call), and the return address is replaced by rkprobes' trampoline; when the
 * function returns, handler runs with the registers at return. data_size
 * bytes of ri->data are the instance's, shared by the two handlers. An empty
 * pool counts in nmissed. The entry handler runs in the entry probe's
 * context (above); the return handler with preemption disabled and
 * interrupts as the function returned with them, as the kernel's.
 */
struct rkp_kretprobe;

struct rkp_kretprobe_instance {
	struct rkp_kretprobe *rp;	/* the kretprobe */
	unsigned long ret_addr;		/* the real return address */
	unsigned long *fp;		/* where it is on the stack */
	/* Private to rkprobes. */
	void *rkp_task;
	unsigned int rkp_next;
	unsigned int rkp_index;
	unsigned long rkp_reserved;
	/* data_size bytes for the handlers. */
	char data[] __aligned(8);
};

typedef int (*rkp_kretprobe_handler_t)(struct rkp_kretprobe_instance *ri,
				       struct pt_regs *regs);

struct rkp_kretprobe {
	struct rkp_kprobe kp;
	rkp_kretprobe_handler_t handler;
	rkp_kretprobe_handler_t entry_handler;
	int maxactive;
	int nmissed;
	size_t data_size;
	/* Private to rkprobes. */
	void *rkp_private;
};

/* The largest maxactive and data_size accepted (-E2BIG above). */
#define RKP_KRETPROBE_MAXACTIVE_MAX	4096
#define RKP_KRETPROBE_MAX_DATA_SIZE	4096

/* The release of rkprobes this header comes with (modinfo's version). */
#define RKPROBES_VERSION "0.9.0"

/*
 * The version of this ABI. It changes with any change a client built
 * against the previous header could misread: a structure's size or layout,
 * a field's or flag's meaning, a function's contract. Adding a function or
 * a flag that the old meaning leaves at zero does not change it. A client
 * passes the version it was built with at registration (the inline
 * functions below); rkprobes refuses any other with -ENOEXEC and says why
 * in the kernel log.
 */
#define RKP_ABI_VERSION 1

int rkp_register_kprobe_abi(struct rkp_kprobe *p, unsigned int abi);
int rkp_register_kprobes_abi(struct rkp_kprobe **kps, int num, unsigned int abi);
int rkp_register_kretprobe_abi(struct rkp_kretprobe *rp, unsigned int abi);
int rkp_register_kretprobes_abi(struct rkp_kretprobe **rps, int num,
				unsigned int abi);

static inline int rkp_register_kprobe(struct rkp_kprobe *p)
{
	return rkp_register_kprobe_abi(p, RKP_ABI_VERSION);
}

static inline int rkp_register_kprobes(struct rkp_kprobe **kps, int num)
{
	return rkp_register_kprobes_abi(kps, num, RKP_ABI_VERSION);
}

void rkp_unregister_kprobe(struct rkp_kprobe *p);
void rkp_unregister_kprobes(struct rkp_kprobe **kps, int num);
int rkp_enable_kprobe(struct rkp_kprobe *p);
int rkp_disable_kprobe(struct rkp_kprobe *p);

static inline int rkp_register_kretprobe(struct rkp_kretprobe *rp)
{
	return rkp_register_kretprobe_abi(rp, RKP_ABI_VERSION);
}

static inline int rkp_register_kretprobes(struct rkp_kretprobe **rps, int num)
{
	return rkp_register_kretprobes_abi(rps, num, RKP_ABI_VERSION);
}

void rkp_unregister_kretprobe(struct rkp_kretprobe *rp);
void rkp_unregister_kretprobes(struct rkp_kretprobe **rps, int num);

static inline int rkp_enable_kretprobe(struct rkp_kretprobe *rp)
{
	return rkp_enable_kprobe(&rp->kp);
}

static inline int rkp_disable_kretprobe(struct rkp_kretprobe *rp)
{
	return rkp_disable_kprobe(&rp->kp);
}

/*
 * A frame whose return address a kretprobe replaced returns into a stub in
 * rkprobes' executable memory. This maps a stub address of a frame of the
 * current task back to the real return address; any other address is
 * returned unchanged. Call it with preemption disabled (as in a handler).
 */
unsigned long rkp_kretprobe_find_ret_addr(unsigned long addr);

/*
 * The kernel's unwinder stops at such a frame (its return address is not
 * kernel text). This is stack_trace_save() for the current task that goes on
 * from the real return address at every frame a kretprobe hijacked. Call it
 * with preemption disabled.
 */
unsigned int rkp_stack_trace_save(unsigned long *store, unsigned int size,
				  unsigned int skipnr);

#endif /* _RKPROBES_H */
