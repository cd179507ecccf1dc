// SPDX-License-Identifier: GPL-2.0
/*
 * Calls into kernel functions that 6.12 does not export, found at run time
 * (rust/ffi/runtime.rs, rust/ffi/kallsyms.rs).
 *
 * Such a function cannot be called through a pointer. A kernel built with
 * CONFIG_X86_KERNEL_IBT seals at boot every function whose address it
 * never takes (apply_seal_endbr() turns its ENDBR into a NOP, whether or
 * not the CPU enforces IBT), and nearly all of these are sealed: 21 of
 * the first 25 below in the 6.12 test kernel, kallsyms_lookup_name,
 * execmem_alloc and text_poke_sync among them (and trace_call_bpf, which
 * events/trace_event.c calls the same way). On a CPU that enforces IBT (and
 * with eIBRS, which every such CPU has, the retpoline thunks become plain
 * indirect jumps) an indirect call to one of them raises #CP: the kernel
 * oopses. Under kCFI the call would fail its type-hash check as well.
 *
 * So each one is a static call of this module, as KVM makes its vendor
 * calls: DEFINE_STATIC_CALL_NULL() here, static_call_update() once its
 * address is confirmed, and from then on every call site in this file is
 * a direct call (or jump) to the kernel function, which needs no ENDBR and
 * no hash, and no retpoline either. rkp_kc_bind_<name>(addr) sets it; Rust
 * calls rkp_kc_<name>(), whose body is a tail jump to the function.
 *
 * RKP_KCALLS(X) lists each function as X(name, return type, parameters,
 * arguments) with the 6.12 prototype; rust/ffi/kcalls.rs mirrors it.
 */

#include <linux/static_call.h>
#include <linux/types.h>

struct cred;
struct module;
struct pt_regs;
struct trace_event_file;
struct trace_array;
struct trace_event_call;
struct event_filter;

typedef int (*rkp_kc_match_fn)(void *data, unsigned long addr);
typedef int (*rkp_kc_mod_fn)(void *data, const char *name, unsigned long addr);

#define RKP_KCALLS(X)							\
	X(kallsyms_lookup_name, unsigned long, (const char *name), (name))	\
	X(text_poke, void *, (void *addr, const void *opcode, size_t len),	\
	  (addr, opcode, len))						\
	X(text_poke_sync, void, (void), ())				\
	X(text_poke_queue, void,					\
	  (void *addr, const void *opcode, size_t len, const void *emulate), \
	  (addr, opcode, len, emulate))					\
	X(text_poke_finish, void, (void), ())				\
	X(execmem_alloc, void *, (unsigned int type, size_t size), (type, size)) \
	X(execmem_free, void, (void *ptr), (ptr))			\
	X(set_memory_rox, int, (unsigned long addr, int numpages),	\
	  (addr, numpages))						\
	X(core_kernel_text, int, (unsigned long addr), (addr))		\
	X(__module_text_address, struct module *, (unsigned long addr), (addr)) \
	X(search_exception_tables, const void *, (unsigned long addr), (addr)) \
	X(alternatives_text_reserved, int, (void *start, void *end),	\
	  (start, end))							\
	X(jump_label_text_reserved, int, (void *start, void *end),	\
	  (start, end))							\
	X(static_call_text_reserved, int, (void *start, void *end),	\
	  (start, end))							\
	X(jump_label_lock, void, (void), ())				\
	X(jump_label_unlock, void, (void), ())				\
	X(ftrace_location, unsigned long, (unsigned long ip), (ip))	\
	X(synchronize_rcu_tasks, void, (void), ())			\
	X(wait_for_kprobe_optimizer, void, (void), ())			\
	X(get_kprobe, void *, (void *addr), (addr))			\
	X(kallsyms_on_each_match_symbol, int,				\
	  (rkp_kc_match_fn fn, const char *name, void *data),		\
	  (fn, name, data))						\
	X(module_kallsyms_on_each_symbol, int,				\
	  (const char *modname, rkp_kc_mod_fn fn, void *data),		\
	  (modname, fn, data))						\
	X(kallsyms_on_each_symbol, int,					\
	  (rkp_kc_mod_fn fn, void *data), (fn, data))			\
	X(find_module, struct module *, (const char *name), (name))	\
	X(stack_trace_save_regs, unsigned int,				\
	  (struct pt_regs *regs, unsigned long *store, unsigned int size, \
	   unsigned int skipnr),					\
	  (regs, store, size, skipnr))					\
	X(tracing_reset_all_online_cpus, void, (void), ())		\
	X(kallsyms_show_value, bool, (const struct cred *cred), (cred))	\
	X(trace_event_trigger_enable_disable, int,			\
	  (struct trace_event_file *file, int trigger_enable),		\
	  (file, trigger_enable))					\
	X(update_cond_flag, void, (struct trace_event_file *file), (file)) \
	/* set_str is the kernel's bool, passed as 0 or 1 in an int: the  \
	 * wrapper stays one jump (a bool parameter would be re-extended). */ \
	X(create_event_filter, int,					\
	  (struct trace_array *tr, struct trace_event_call *call,	\
	   char *filter_str, int set_str, struct event_filter **filterp), \
	  (tr, call, filter_str, set_str, filterp))			\
	X(free_event_filter, void, (struct event_filter *filter), (filter)) \
	X(notify_die, int,						\
	  (int val, const char *str, struct pt_regs *regs, long err,	\
	   int trap, int sig),						\
	  (val, str, regs, err, trap, sig))				\
	X(kprobe_int3_handler, int, (struct pt_regs *regs), (regs))	\
	X(fixup_exception, int,						\
	  (struct pt_regs *regs, int trapnr, unsigned long error_code,	\
	   unsigned long fault_addr),					\
	  (regs, trapnr, error_code, fault_addr))

/*
 * For each function: its type, the static call (its trampoline is a bare
 * return until set), the call Rust makes and the setter. A setter is called
 * once, in process context at load, with the confirmed start of the
 * function of that name; a call is made only after its setter. The calls
 * are notrace, as glue.c's are: some are made on the hit paths.
 */
#define RKP_KCALL_DEFINE(name, ret, params, args)			\
	typedef ret rkp_kc_t_##name params;				\
	DEFINE_STATIC_CALL_NULL(rkp_sc_##name, *(rkp_kc_t_##name *)NULL); \
	ret rkp_kc_##name params;					\
	notrace ret rkp_kc_##name params				\
	{								\
		return static_call(rkp_sc_##name) args;			\
	}								\
	void rkp_kc_bind_##name(unsigned long addr);			\
	void rkp_kc_bind_##name(unsigned long addr)			\
	{								\
		static_call_update(rkp_sc_##name, (rkp_kc_t_##name *)addr); \
	}

RKP_KCALLS(RKP_KCALL_DEFINE)
