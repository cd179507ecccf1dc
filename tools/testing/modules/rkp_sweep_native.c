// SPDX-License-Identifier: GPL-2.0
/* The kernel's kprobes for rkp_sweep (rkp_sweep_main.rs). */
#include "native_kprobe.h"

/* Called from rkp_sweep_main.rs. */
void *rkp_sweep_native_kprobe(const char *sym, unsigned int offset, unsigned long *probed);
void rkp_sweep_native_kprobe_free(void *kp);

void *rkp_sweep_native_kprobe(const char *sym, unsigned int offset, unsigned long *probed)
{
	return rkp_native_kprobe(NULL, sym, offset, probed);
}

void rkp_sweep_native_kprobe_free(void *kp)
{
	rkp_native_kprobe_free(kp);
}
