/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/ffi/glue.c, the wrappers of inline kernel helpers,
 * mirrored by the extern "C" block for glue.h in rust/ffi/glue.rs.
 */
#ifndef RKPROBES_GLUE_H
#define RKPROBES_GLUE_H

#include <linux/compiler_types.h>

struct list_head;

unsigned int rkp_smp_processor_id(void);
unsigned int rkp_irq_level(void);
int rkp_locked_down_kprobes(void);
void rkp_preempt_disable(void);
void rkp_preempt_enable(void);
unsigned int rkp_num_possible_cpus(void);
void *rkp_current_task(void);
const char *rkp_current_comm(void);
void *rkp_get_current_task(void);
void rkp_put_task(void *task);
int rkp_task_is_dead(void *task);
void rkp_module_get_self(void);
void rkp_module_put_self(void);
void rkp_list_add_tail_rcu(struct list_head *new, struct list_head *head);
void rkp_list_del_rcu(struct list_head *entry);

#endif /* RKPROBES_GLUE_H */
