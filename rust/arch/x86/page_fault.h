/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkprobes' probe on the page_fault_kernel tracepoint
 * (rust/arch/x86/page_fault.c), mirrored in rust/ffi/glue.rs for
 * page_fault.rs. The probe calls rkp_page_fault() of
 * rust/ffi/upcalls.h.
 */
#ifndef RKPROBES_ARCH_X86_PAGE_FAULT_H
#define RKPROBES_ARCH_X86_PAGE_FAULT_H

int rkp_page_fault_hook(void);
void rkp_page_fault_unhook(void);

#endif /* RKPROBES_ARCH_X86_PAGE_FAULT_H */
