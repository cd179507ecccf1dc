// SPDX-License-Identifier: GPL-2.0

//! The static calls of `kcalls.c`: rkprobes' only way into kernel functions
//! that 6.12 does not export.
//!
//! An address found at run time is never called through a pointer: under
//! IBT the kernel seals the ENDBR of nearly every such function at boot, and
//! an indirect call to one faults (#CP) on a CPU that enforces IBT.
//! `rkp_kc_bind_<name>(addr)` makes this module's static call `<name>` a
//! direct jump to `addr`, and `rkp_kc_<name>(...)` calls it. [`super::runtime`]
//! and [`super::kallsyms`] are the only users: they set each one with the
//! start of the kernel function of that name, confirmed by `sprint_symbol()`,
//! and call it only after that, through `unsafe` methods that state the C
//! contract. The prototypes are `kcalls.c`'s `RKP_KCALLS`, from the 6.12
//! source.

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
};

/// `kallsyms_on_each_match_symbol()`'s callback.
pub(crate) type MatchFn = Option<unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int>;
/// `module_kallsyms_on_each_symbol()`'s and `kallsyms_on_each_symbol()`'s
/// callback.
pub(crate) type ModSymFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, c_ulong) -> c_int>;

/// Declares each call and its setter. A setter takes the confirmed start of
/// the kernel function of the same name, in process context; a call may be
/// made only after its setter, under the function's own C contract.
macro_rules! kcalls {
    ($($call:ident / $set:ident: fn($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        // Without lock debugging (the kernels users run) `struct
        // lockdep_map`, inside `struct module`, is empty, which rustc calls
        // not FFI-safe; only its address crosses the boundary.
        #[allow(improper_ctypes)]
        extern "C" {
            $(
                pub(crate) fn $call($($arg: $ty),*) $(-> $ret)?;
                pub(crate) fn $set(addr: c_ulong);
            )*
        }
    };
}

kcalls! {
    rkp_kc_kallsyms_lookup_name / rkp_kc_bind_kallsyms_lookup_name:
        fn(name: *const c_char) -> c_ulong;
    rkp_kc_text_poke / rkp_kc_bind_text_poke:
        fn(addr: *mut c_void, opcode: *const c_void, len: usize) -> *mut c_void;
    rkp_kc_text_poke_sync / rkp_kc_bind_text_poke_sync: fn();
    rkp_kc_text_poke_queue / rkp_kc_bind_text_poke_queue:
        fn(addr: *mut c_void, opcode: *const c_void, len: usize, emulate: *const c_void);
    rkp_kc_text_poke_finish / rkp_kc_bind_text_poke_finish: fn();
    rkp_kc_execmem_alloc / rkp_kc_bind_execmem_alloc: fn(ty: c_uint, size: usize) -> *mut c_void;
    rkp_kc_execmem_free / rkp_kc_bind_execmem_free: fn(ptr: *mut c_void);
    rkp_kc_set_memory_rox / rkp_kc_bind_set_memory_rox: fn(addr: c_ulong, numpages: c_int) -> c_int;
    rkp_kc_core_kernel_text / rkp_kc_bind_core_kernel_text: fn(addr: c_ulong) -> c_int;
    rkp_kc___module_text_address / rkp_kc_bind___module_text_address:
        fn(addr: c_ulong) -> *mut bindings::module;
    rkp_kc_search_exception_tables / rkp_kc_bind_search_exception_tables:
        fn(addr: c_ulong) -> *const c_void;
    rkp_kc_alternatives_text_reserved / rkp_kc_bind_alternatives_text_reserved:
        fn(start: *mut c_void, end: *mut c_void) -> c_int;
    rkp_kc_jump_label_text_reserved / rkp_kc_bind_jump_label_text_reserved:
        fn(start: *mut c_void, end: *mut c_void) -> c_int;
    rkp_kc_static_call_text_reserved / rkp_kc_bind_static_call_text_reserved:
        fn(start: *mut c_void, end: *mut c_void) -> c_int;
    rkp_kc_jump_label_lock / rkp_kc_bind_jump_label_lock: fn();
    rkp_kc_jump_label_unlock / rkp_kc_bind_jump_label_unlock: fn();
    rkp_kc_ftrace_location / rkp_kc_bind_ftrace_location: fn(ip: c_ulong) -> c_ulong;
    rkp_kc_synchronize_rcu_tasks / rkp_kc_bind_synchronize_rcu_tasks: fn();
    rkp_kc_wait_for_kprobe_optimizer / rkp_kc_bind_wait_for_kprobe_optimizer: fn();
    rkp_kc_get_kprobe / rkp_kc_bind_get_kprobe: fn(addr: *mut c_void) -> *mut c_void;
    rkp_kc_kallsyms_on_each_match_symbol / rkp_kc_bind_kallsyms_on_each_match_symbol:
        fn(f: MatchFn, name: *const c_char, data: *mut c_void) -> c_int;
    rkp_kc_module_kallsyms_on_each_symbol / rkp_kc_bind_module_kallsyms_on_each_symbol:
        fn(modname: *const c_char, f: ModSymFn, data: *mut c_void) -> c_int;
    rkp_kc_kallsyms_on_each_symbol / rkp_kc_bind_kallsyms_on_each_symbol:
        fn(f: ModSymFn, data: *mut c_void) -> c_int;
    rkp_kc_find_module / rkp_kc_bind_find_module: fn(name: *const c_char) -> *mut bindings::module;
    rkp_kc_stack_trace_save_regs / rkp_kc_bind_stack_trace_save_regs:
        fn(regs: *mut bindings::pt_regs, store: *mut c_ulong, size: c_uint, skipnr: c_uint) -> c_uint;
    rkp_kc_tracing_reset_all_online_cpus / rkp_kc_bind_tracing_reset_all_online_cpus: fn();
    rkp_kc_kallsyms_show_value / rkp_kc_bind_kallsyms_show_value:
        fn(cred: *const bindings::cred) -> bool;
    rkp_kc_notify_die / rkp_kc_bind_notify_die:
        fn(val: c_int, s: *const c_char, regs: *mut bindings::pt_regs, err: c_long, trap: c_int, sig: c_int) -> c_int;
    rkp_kc_kprobe_int3_handler / rkp_kc_bind_kprobe_int3_handler:
        fn(regs: *mut bindings::pt_regs) -> c_int;
    rkp_kc_fixup_exception / rkp_kc_bind_fixup_exception:
        fn(regs: *mut bindings::pt_regs, trapnr: c_int, error_code: c_ulong, fault_addr: c_ulong) -> c_int;
}

// Called from C alone (`../events/eprobe.c`): only their setters are
// Rust's.
extern "C" {
    pub(crate) fn rkp_kc_bind_trace_event_trigger_enable_disable(addr: c_ulong);
    pub(crate) fn rkp_kc_bind_update_cond_flag(addr: c_ulong);
    pub(crate) fn rkp_kc_bind_create_event_filter(addr: c_ulong);
    pub(crate) fn rkp_kc_bind_free_event_filter(addr: c_ulong);
}
