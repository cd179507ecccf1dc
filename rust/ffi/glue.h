/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of rust/ffi/glue.c (and of the Rust functions it calls),
 * mirrored by the extern "C" blocks in rust/ffi/glue.rs.
 */
#ifndef RKPROBES_GLUE_H
#define RKPROBES_GLUE_H

unsigned int rkp_smp_processor_id(void);
unsigned int rkp_irq_level(void);
int rkp_locked_down_kprobes(void);
void rkp_trap_path_int3(void);
unsigned long rkp_trap_path_site_addr(void);
void rkp_preempt_disable(void);
void rkp_preempt_enable(void);
/* The size of each CPU's probe state, in words (rust/arch/x86/ctl.rs). */
#define RKP_CTL_AREA_WORDS 16
extern const unsigned int rkp_ctl_area_size;
void *rkp_ctl_area_this_cpu(void);
void rkp_ctl_area_reset(void);
unsigned int rkp_num_possible_cpus(void);
void *rkp_current_task(void);
void *rkp_get_current_task(void);
void rkp_put_task(void *task);
int rkp_task_is_dead(void *task);
void rkp_module_get_self(void);
void rkp_module_put_self(void);
void rkp_kick_gc(void);
void rkp_kick_gc_later(void);
void rkp_gc_sync(void);
struct list_head;
void rkp_list_add_tail_rcu(struct list_head *new, struct list_head *head);
void rkp_list_del_rcu(struct list_head *entry);
void rkp_kick_optimizer(unsigned long delay);
void rkp_optimizer_cancel(void);

struct pt_regs;

const char *rkp_current_comm(void);
long rkp_strncpy_user_nofault(char *dst, const void __user *src, long count);
long rkp_strnlen_user_nofault(const void __user *src, long count);

/* rust/events/trace_event.c */
struct mutex;
struct rkp_field;
void rkp_tev_seq_write(void *seq, const char *buf, unsigned int len);
struct list_head;
void *rkp_tev_create(struct mutex *event_mutex, struct list_head *ftrace_events,
		     const char *group, const char *name,
		     const char *print_fmt, int is_return, const struct rkp_field *fields,
		     int nfields, void *owner);
int rkp_tev_remove(struct mutex *event_mutex, void *ev);
void rkp_tev_free(void *ev);
int rkp_tev_enabled(void *ev);
struct rkp_tev_rec;
void *rkp_tev_reserve(void *ev, struct rkp_tev_rec *rec);
void *rkp_tev_commit(void *ev, struct rkp_tev_rec *rec);
void rkp_tev_perf(void *ev, struct rkp_tev_rec *rec, void *ctx);

/* rkp_tev_wants(): what a hit of an event must build (rust/events/hit.rs). */
#define RKP_TEV_TRACE		1	/* a record in the trace instances */
#define RKP_TEV_PERF		2	/* one for perf and BPF */
#define RKP_TEV_PERF_RAN	4	/* ... whose BPF programs ran */
struct pt_regs;
unsigned int rkp_tev_wants(void *ev, struct pt_regs *regs);
void rkp_tev_init(unsigned long addr);
void rkp_tev_exit(void);
extern const unsigned int rkp_tev_wants_bits[3];
extern const unsigned int rkp_tev_perf_on_off;

/* rust/ffi/glue.c, for rust/kprobe/mod.rs. */
int rkp_page_fault_hook(void);
void rkp_page_fault_unhook(void);

/* rust/ffi/glue.c, for rust/arch/x86/ftrace.rs. */
int rkp_ftrace_filter_ip(unsigned long ip, int remove, int reset);
int rkp_ftrace_register(void *core);
extern const unsigned int rkp_ftrace_ops_private_off;
void rkp_ftrace_unregister(void);

#endif /* RKPROBES_GLUE_H */
