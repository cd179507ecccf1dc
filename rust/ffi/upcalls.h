/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every function that rkprobes' C and assembly call in its Rust code, with
 * the Rust file that implements it (#[no_mangle]). Layer 1 (C glue,
 * trampolines) calls up into the layers above only through these; the
 * functions of the C ABI that clients call are in include/rkprobes.h.
 * tools/testing/layers checks that the two headers name every #[no_mangle]
 * function of the module and nothing else.
 */
#ifndef RKPROBES_UPCALLS_H
#define RKPROBES_UPCALLS_H

struct ftrace_ops;
struct ftrace_regs;
struct pt_regs;

/* rust/events/enable.rs: the tracing core enables or disables an event. */
int rkp_event_set_enabled(void *owner, int on);
/* rust/events/output.rs: trace output prints a record's arguments. */
void rkp_event_print_args(void *owner, const void *ent, int size, void *seq);
/* rust/events/hit.rs: a record for perf is filled. */
void rkp_event_fill(void *ctx, void *ent, unsigned int size);
/* rust/events/eprobe.rs: an event probe's target recorded @rec. */
void rkp_eprobe_hit(void *owner, void *rec, unsigned int len);

/* rust/kprobe/kretprobe.rs: the reclaim work of kretprobe instances. */
void rkp_kretprobe_gc(void);
/* rust/kprobe/optimize.rs: the optimizer's work. */
void rkp_optimizer_work(void);
/* rust/arch/x86/ftrace.rs: rkp_ftrace_ops' callback. */
void rkp_ftrace_hit(unsigned long ip, unsigned long parent_ip,
		    struct ftrace_ops *op, struct ftrace_regs *fregs);
/* rust/kprobe/mod.rs: the page fault tracepoint's callback. */
void rkp_page_fault(struct pt_regs *regs);

/* rust/arch/x86/rethook.rs: called by kretprobe_trampoline.S. */
void rkp_kretprobe_trampoline_callback(struct pt_regs *regs);
/* rust/arch/x86/opt.rs: called by optprobe_trampoline.S. */
void rkp_optprobe_callback(const void *point, struct pt_regs *regs);
void rkp_optprobe_entry_post_callback(const void *point, struct pt_regs *regs);
void rkp_optprobe_post_callback(unsigned long ret, struct pt_regs *regs);

#endif /* RKPROBES_UPCALLS_H */
