/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkprobes' ftrace_ops (rust/arch/x86/ftrace.c, built with
 * CONFIG_DYNAMIC_FTRACE_WITH_REGS), mirrored in rust/ffi/glue.rs for
 * rust/arch/x86/ftrace.rs. Its callback, rkp_ftrace_hit(), is in
 * rust/ffi/upcalls.h.
 */
#ifndef RKPROBES_ARCH_X86_FTRACE_H
#define RKPROBES_ARCH_X86_FTRACE_H

int rkp_ftrace_filter_ip(unsigned long ip, int remove, int reset);
int rkp_ftrace_filter_ips(unsigned long *ips, unsigned int cnt, int remove,
			  int reset);
int rkp_ftrace_register(void *core);
extern const unsigned int rkp_ftrace_ops_private_off;
void rkp_ftrace_unregister(void);

#endif /* RKPROBES_ARCH_X86_FTRACE_H */
