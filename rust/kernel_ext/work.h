/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe core's deferred work (rust/kernel_ext/work.c), mirrored in
 * rust/ffi/glue.rs for rust/kernel_ext/work.rs. The work items call
 * rkp_optimizer_work() and rkp_kretprobe_gc() of rust/ffi/upcalls.h.
 */
#ifndef RKPROBES_KERNEL_EXT_WORK_H
#define RKPROBES_KERNEL_EXT_WORK_H

void rkp_kick_optimizer(unsigned long delay);
void rkp_optimizer_cancel(void);
void rkp_kick_gc(void);
void rkp_kick_gc_later(void);
void rkp_gc_sync(void);
int rkp_fork_watch(int budget);
void rkp_fork_unwatch(void);
int rkp_nr_tasks(void);

#endif /* RKPROBES_KERNEL_EXT_WORK_H */
