/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Storage of each CPU's probe state (rust/arch/x86/ctl.c), mirrored in
 * rust/ffi/glue.rs for rust/arch/x86/ctl.rs.
 */
#ifndef RKPROBES_ARCH_X86_CTL_H
#define RKPROBES_ARCH_X86_CTL_H

#include <linux/percpu-defs.h>

/* The size of each CPU's probe state, in words (rust/arch/x86/ctl.rs). */
#define RKP_CTL_AREA_WORDS 16

struct rkp_ctl_area {
	unsigned long words[RKP_CTL_AREA_WORDS];
} __aligned(64);

DECLARE_PER_CPU(struct rkp_ctl_area, rkp_ctl_area);
extern const unsigned int rkp_ctl_area_size;
void *rkp_ctl_area_this_cpu(void);
void rkp_ctl_area_reset(void);
void rkp_local_irq_disable(void);
void rkp_trace_hardirqs_on(void);

#endif /* RKPROBES_ARCH_X86_CTL_H */
