/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/glue.c, mirrored by the extern "C" block in rust/ffi.rs.
 */
#ifndef RKPROBES_GLUE_H
#define RKPROBES_GLUE_H

unsigned int rkp_smp_processor_id(void);
void rkp_preempt_disable(void);
void rkp_preempt_enable(void);

struct pt_regs;

/* Implemented in Rust (rust/arch/x86/ftrace.rs). */
void rkp_ftrace_hit(unsigned long ip, struct pt_regs *regs);
int rkp_ftrace_filter_ip(unsigned long ip, int remove);
int rkp_ftrace_register(void);
int rkp_ftrace_unregister(void);

#endif /* RKPROBES_GLUE_H */
