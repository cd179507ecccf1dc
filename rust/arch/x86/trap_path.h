/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkprobes' own int3 (rust/arch/x86/trap_path.c), mirrored in
 * rust/ffi/glue.rs for rust/arch/x86/trap_path.rs.
 */
#ifndef RKPROBES_ARCH_X86_TRAP_PATH_H
#define RKPROBES_ARCH_X86_TRAP_PATH_H

void rkp_trap_path_int3(void);
unsigned long rkp_trap_path_site_addr(void);

#endif /* RKPROBES_ARCH_X86_TRAP_PATH_H */
