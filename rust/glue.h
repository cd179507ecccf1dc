/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/glue.c, mirrored by the extern "C" block in rust/ffi.rs.
 */
#ifndef RKPROBES_GLUE_H
#define RKPROBES_GLUE_H

unsigned int rkp_smp_processor_id(void);
void rkp_preempt_disable(void);
void rkp_preempt_enable(void);

#endif /* RKPROBES_GLUE_H */
