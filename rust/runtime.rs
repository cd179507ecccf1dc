// SPDX-License-Identifier: GPL-2.0

//! Kernel functions and data that 6.12 does not export, found at run time.
//!
//! The kernel's kprobes patch text with `text_poke()` under `text_mutex` and
//! allocate out-of-line slots with `execmem_alloc()` and `set_memory_rox()`;
//! none of those is exported to modules. [`Runtime::find`] looks each one up
//! with [`Kallsyms`], which confirms every address with `sprint_symbol()`, and
//! fails the module load with `ENOENT` naming what is missing. The signatures
//! below are those of the 6.12 source; a kernel whose signatures differ is not
//! a kernel rkprobes supports.

use crate::kallsyms::{Kallsyms, SymbolBuf};
use kernel::{
    bindings, c_str,
    ffi::{c_int, c_uint, c_ulong, c_void},
    prelude::*,
    str::CStr,
};

/// `enum execmem_type`'s `EXECMEM_KPROBES` (`include/linux/execmem.h`).
pub(crate) const EXECMEM_KPROBES: c_uint = 1;

/// Functions and data of the kernel that rkprobes uses without an export.
///
/// # Invariants
///
/// Each field is the start of the kernel symbol of the same name, confirmed by
/// `sprint_symbol()`, with the type of its 6.12 declaration.
#[derive(Clone, Copy)]
pub(crate) struct Runtime {
    /// `void *text_poke(void *addr, const void *opcode, size_t len)`;
    /// caller holds `text_mutex`.
    pub(crate) text_poke: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
    /// `void text_poke_sync(void)`: serialises every CPU's instruction stream.
    pub(crate) text_poke_sync: unsafe extern "C" fn(),
    /// `struct mutex text_mutex`.
    pub(crate) text_mutex: *mut bindings::mutex,
    /// `void *execmem_alloc(enum execmem_type type, size_t size)`: RW, NX.
    pub(crate) execmem_alloc: unsafe extern "C" fn(c_uint, usize) -> *mut c_void,
    /// `void execmem_free(void *ptr)`.
    pub(crate) execmem_free: unsafe extern "C" fn(*mut c_void),
    /// `int set_memory_rox(unsigned long addr, int numpages)`.
    pub(crate) set_memory_rox: unsafe extern "C" fn(c_ulong, c_int) -> c_int,
    /// `int core_kernel_text(unsigned long addr)`: vmlinux text, init text
    /// while it exists.
    pub(crate) core_kernel_text: unsafe extern "C" fn(c_ulong) -> c_int,
    /// `struct module *__module_text_address(unsigned long addr)`; caller
    /// has preemption disabled.
    pub(crate) module_text_address: unsafe extern "C" fn(c_ulong) -> *mut bindings::module,
    /// `const struct exception_table_entry *search_exception_tables(unsigned long)`.
    pub(crate) search_exception_tables: unsafe extern "C" fn(c_ulong) -> *const c_void,
    /// `int alternatives_text_reserved(void *start, void *end)`; caller
    /// holds `text_mutex`.
    pub(crate) alternatives_text_reserved: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    /// `int jump_label_text_reserved(void *start, void *end)`, when the
    /// kernel has jump labels (without them there are no such sites).
    pub(crate) jump_label_text_reserved:
        Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    /// `int static_call_text_reserved(void *start, void *end)`, when the
    /// kernel patches static calls inline.
    pub(crate) static_call_text_reserved:
        Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    /// `unsigned long ftrace_location(unsigned long ip)`: the ftrace call site
    /// at `ip`, or 0; when the kernel has dynamic ftrace.
    pub(crate) ftrace_location: Option<unsafe extern "C" fn(c_ulong) -> c_ulong>,
    /// `void synchronize_rcu_tasks(void)`, when the kernel has Tasks RCU:
    /// waits until no task can be preempted inside a boosted slot.
    pub(crate) synchronize_rcu_tasks: Option<unsafe extern "C" fn()>,
    /// `void wait_for_kprobe_optimizer(void)`, when the kernel has its own
    /// optprobes: returns when the kernel's optimizer has finished its queued
    /// work, including the text it restores after a kprobe was removed.
    pub(crate) wait_for_kprobe_optimizer: Option<unsafe extern "C" fn()>,
    /// `struct kprobe *get_kprobe(void *addr)`, when the kernel has kprobes:
    /// the kernel's own probe at `addr`; caller in an RCU read-side section.
    pub(crate) get_kprobe: Option<unsafe extern "C" fn(*mut c_void) -> *mut c_void>,
    /// `int kallsyms_on_each_match_symbol(int (*fn)(void *, unsigned long),
    /// const char *name, void *data)`: calls `fn` for each vmlinux symbol
    /// named `name`.
    pub(crate) kallsyms_on_each_match_symbol: Option<
        unsafe extern "C" fn(
            Option<unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int>,
            *const kernel::ffi::c_char,
            *mut c_void,
        ) -> c_int,
    >,
    /// `int module_kallsyms_on_each_symbol(const char *modname,
    /// int (*fn)(void *, const char *, unsigned long), void *data)`: calls
    /// `fn` for each symbol of `modname`'s module, or of every module when
    /// NULL. Takes `module_mutex`.
    pub(crate) module_kallsyms_on_each_symbol: Option<
        unsafe extern "C" fn(
            *const kernel::ffi::c_char,
            Option<unsafe extern "C" fn(*mut c_void, *const kernel::ffi::c_char, c_ulong) -> c_int>,
            *mut c_void,
        ) -> c_int,
    >,
    /// `struct module *find_module(const char *name)`; caller with
    /// preemption disabled or `module_mutex` held.
    pub(crate) find_module:
        Option<unsafe extern "C" fn(*const kernel::ffi::c_char) -> *mut bindings::module>,
    /// `unsigned int stack_trace_save_regs(struct pt_regs *regs,
    /// unsigned long *store, unsigned int size, unsigned int skipnr)`, when
    /// the kernel has `CONFIG_STACKTRACE`.
    pub(crate) stack_trace_save_regs: Option<
        unsafe extern "C" fn(*mut bindings::pt_regs, *mut c_ulong, c_uint, c_uint) -> c_uint,
    >,
    /// `void tracing_reset_all_online_cpus(void)`, when the kernel has
    /// tracing: empties the buffers of the trace instances that had a
    /// removed event enabled. Takes `trace_types_lock`; process context.
    pub(crate) tracing_reset_all_online_cpus: Option<unsafe extern "C" fn()>,
}

// SAFETY: the fields are addresses of kernel functions and of a kernel mutex,
// valid for the kernel's lifetime and usable from any thread.
unsafe impl Send for Runtime {}
// SAFETY: as for `Send`; `Runtime` has no interior state.
unsafe impl Sync for Runtime {}

/// Converts the confirmed address of a function to a pointer of its type.
///
/// # Safety
///
/// `addr` is the start of a function whose C declaration `T` mirrors.
unsafe fn as_fn<T: Copy>(addr: usize) -> T {
    const { assert!(core::mem::size_of::<T>() == core::mem::size_of::<usize>()) };
    // SAFETY: `T` is a function pointer of the same size as `usize`, and the
    // caller guarantees that `addr` is a function of that type.
    unsafe { core::mem::transmute_copy(&addr) }
}

/// Looks `name` up, logging what is missing.
fn find(ksyms: &Kallsyms, buf: &mut SymbolBuf, name: &CStr) -> Result<usize> {
    ksyms.lookup(buf, name).ok_or_else(|| {
        pr_err!("kernel symbol {} not found\n", name.to_str().unwrap_or("?"));
        ENOENT
    })
}

impl Runtime {
    /// Finds everything. Process context, may sleep.
    pub(crate) fn find(ksyms: &Kallsyms) -> Result<Self> {
        let mut buf = SymbolBuf::new()?;
        let b = &mut *buf;
        let text_poke = find(ksyms, b, c_str!("text_poke"))?;
        let text_poke_sync = find(ksyms, b, c_str!("text_poke_sync"))?;
        let text_mutex = find(ksyms, b, c_str!("text_mutex"))?;
        let execmem_alloc = find(ksyms, b, c_str!("execmem_alloc"))?;
        let execmem_free = find(ksyms, b, c_str!("execmem_free"))?;
        let set_memory_rox = find(ksyms, b, c_str!("set_memory_rox"))?;
        let core_kernel_text = find(ksyms, b, c_str!("core_kernel_text"))?;
        let module_text_address = find(ksyms, b, c_str!("__module_text_address"))?;
        let search_exception_tables = find(ksyms, b, c_str!("search_exception_tables"))?;
        let alternatives_text_reserved = find(ksyms, b, c_str!("alternatives_text_reserved"))?;
        let jump_label_text_reserved = ksyms.lookup(b, c_str!("jump_label_text_reserved"));
        let static_call_text_reserved = ksyms.lookup(b, c_str!("static_call_text_reserved"));
        let ftrace_location = ksyms.lookup(b, c_str!("ftrace_location"));
        let synchronize_rcu_tasks = ksyms.lookup(b, c_str!("synchronize_rcu_tasks"));
        let stack_trace_save_regs = ksyms.lookup(b, c_str!("stack_trace_save_regs"));
        let wait_for_kprobe_optimizer = ksyms.lookup(b, c_str!("wait_for_kprobe_optimizer"));
        let get_kprobe = ksyms.lookup(b, c_str!("get_kprobe"));
        let each_match = ksyms.lookup(b, c_str!("kallsyms_on_each_match_symbol"));
        let mod_each = ksyms.lookup(b, c_str!("module_kallsyms_on_each_symbol"));
        let find_module = ksyms.lookup(b, c_str!("find_module"));
        let tracing_reset = ksyms.lookup(b, c_str!("tracing_reset_all_online_cpus"));
        // INVARIANT: every address was confirmed to start the symbol of the
        // same name; the types are the 6.12 declarations.
        Ok(Self {
            // SAFETY: a confirmed function address, as a pointer to a function
            // of that function's C signature.
            text_poke: unsafe { as_fn(text_poke) },
            // SAFETY: as above.
            text_poke_sync: unsafe { as_fn(text_poke_sync) },
            text_mutex: text_mutex as *mut bindings::mutex,
            // SAFETY: as above.
            execmem_alloc: unsafe { as_fn(execmem_alloc) },
            // SAFETY: as above.
            execmem_free: unsafe { as_fn(execmem_free) },
            // SAFETY: as above.
            set_memory_rox: unsafe { as_fn(set_memory_rox) },
            // SAFETY: as above.
            core_kernel_text: unsafe { as_fn(core_kernel_text) },
            // SAFETY: as above.
            module_text_address: unsafe { as_fn(module_text_address) },
            // SAFETY: as above.
            search_exception_tables: unsafe { as_fn(search_exception_tables) },
            // SAFETY: as above.
            alternatives_text_reserved: unsafe { as_fn(alternatives_text_reserved) },
            // SAFETY: as above.
            jump_label_text_reserved: jump_label_text_reserved.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            static_call_text_reserved: static_call_text_reserved.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            ftrace_location: ftrace_location.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            synchronize_rcu_tasks: synchronize_rcu_tasks.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            stack_trace_save_regs: stack_trace_save_regs.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            wait_for_kprobe_optimizer: wait_for_kprobe_optimizer.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            get_kprobe: get_kprobe.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            kallsyms_on_each_match_symbol: each_match.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            module_kallsyms_on_each_symbol: mod_each.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            find_module: find_module.map(|a| unsafe { as_fn(a) }),
            // SAFETY: as above.
            tracing_reset_all_online_cpus: tracing_reset.map(|a| unsafe { as_fn(a) }),
        })
    }
}
