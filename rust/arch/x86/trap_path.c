// SPDX-License-Identifier: GPL-2.0
/*
 * The int3 rkprobes traps on once at load to trace the kernel's int3 path
 * (rust/arch/x86/trap_path.rs), as the kernel's int3_selftest() traps on
 * its own. notrace: it runs while the path is traced.
 */
#include <linux/compiler.h>
#include <linux/objtool.h>

#include "trap_path.h"

extern void rkp_trap_path_site(void);

/* noinline: the label must be defined once. */
noinline notrace void rkp_trap_path_int3(void)
{
	asm volatile("rkp_trap_path_site:\n\t"
		     ANNOTATE_NOENDBR
		     "int3\n\t" ::: "memory");
}

notrace unsigned long rkp_trap_path_site_addr(void)
{
	return (unsigned long)&rkp_trap_path_site;
}
