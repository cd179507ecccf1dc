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
//!
//! Length: one job, the table of what was found and one thin wrapper per
//! function with its contract; split, the wrappers would be far from the
//! flags that say whether each may be called.
//!
//! Each function is reached through a static call of this module
//! ([`super::kcalls`]), never through a pointer (IBT seals most of them),
//! and only through the `unsafe` methods below, which state each one's C
//! contract; a function the running kernel does not have makes its method a
//! no-op (`None`, or nothing done), as the kernel's own callers behave
//! without that configuration.

use super::kallsyms::{Kallsyms, SymbolBuf};
use super::kcalls as kc;

mod sites;
mod traps;
use kernel::{
    bindings, c_str,
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
    prelude::*,
};
use sites::table_bounds;
pub(crate) use sites::{for_each_jump_entry, for_each_static_call_site};

/// `enum execmem_type`'s `EXECMEM_KPROBES` (`include/linux/execmem.h`).
const EXECMEM_KPROBES: c_uint = 1;

/// Functions and data of the kernel that rkprobes uses without an export.
///
/// # Invariants
///
/// Each function that is required, or whose flag is set, has had its static
/// call set to the start of the kernel function of the same name, confirmed
/// by `sprint_symbol()`; `text_mutex` and the tables are confirmed
/// addresses of the vmlinux symbols of those names.
#[derive(Clone, Copy)]
pub(crate) struct Runtime {
    /// `struct mutex text_mutex`.
    text_mutex: *mut bindings::mutex,
    /// `text_poke_queue()` and `text_poke_finish()`: the kernel's batched
    /// live patching of multi-byte instructions (int3 first, then the tail,
    /// then the head, each step synchronised), used to write optimized
    /// probes' jumps.
    text_poke_bp: bool,
    /// `jump_label_text_reserved()`, when the kernel has jump labels
    /// (without them there are no such sites).
    jump_label_text_reserved: bool,
    /// `static_call_text_reserved()`, when the kernel patches static calls
    /// inline.
    static_call_text_reserved: bool,
    /// `jump_label_lock()` and `jump_label_unlock()`: the mutex under which
    /// jump-label sites are patched, and under which the kernel's kprobes
    /// call `jump_label_text_reserved()` (which decodes every site's
    /// current bytes).
    jump_label_lock: bool,
    /// `__start___jump_table`..`__stop___jump_table`: vmlinux's `struct
    /// jump_entry` array, whole entries.
    jump_table: Option<(usize, usize)>,
    /// `__start_static_call_sites`..`__stop_static_call_sites`: vmlinux's
    /// `struct static_call_site` array, whole entries.
    static_call_sites: Option<(usize, usize)>,
    /// `ftrace_location()`, when the kernel has dynamic ftrace.
    ftrace_location: bool,
    /// `synchronize_rcu_tasks()`, when the kernel has Tasks RCU.
    synchronize_rcu_tasks: bool,
    /// `wait_for_kprobe_optimizer()`, when the kernel has its own optprobes.
    wait_for_kprobe_optimizer: bool,
    /// `get_kprobe()`, when the kernel has kprobes.
    get_kprobe: bool,
    /// `kallsyms_on_each_match_symbol()`.
    kallsyms_on_each_match_symbol: bool,
    /// `module_kallsyms_on_each_symbol()`.
    module_kallsyms_on_each_symbol: bool,
    /// `kallsyms_on_each_symbol()`.
    kallsyms_on_each_symbol: bool,
    /// `find_module()`.
    find_module: bool,
    /// `stack_trace_save_regs()`, when the kernel has `CONFIG_STACKTRACE`.
    stack_trace_save_regs: bool,
    /// `tracing_reset_all_online_cpus()`, when the kernel has tracing.
    tracing_reset_all_online_cpus: bool,
    /// `kallsyms_show_value()`.
    kallsyms_show_value: bool,
    /// `trace_event_trigger_enable_disable()`, `update_cond_flag()`,
    /// `create_event_filter()` and `free_event_filter()`, which
    /// `events/eprobe.c` calls to hook an event probe's trigger.
    trigger_calls: bool,
    /// `kprobe_int3_handler()`, when the kernel has kprobes.
    kprobe_int3_handler: bool,
}

// SAFETY: the fields are flags and addresses of kernel data, valid for the
// kernel's lifetime and usable from any thread.
unsafe impl Send for Runtime {}
// SAFETY: as for `Send`; `Runtime` has no interior state.
unsafe impl Sync for Runtime {}

/// Looks the kernel function `$name` up and, when it is found, sets its
/// static call with the setter `$set`; whether it was found.
macro_rules! bind {
    ($ksyms:expr, $buf:expr, $name:literal, $set:ident) => {{
        let addr = $ksyms.lookup($buf, c_str!($name));
        if let Some(addr) = addr {
            // SAFETY: `addr` is the start of the kernel function `$name`,
            // confirmed by `Kallsyms::lookup`, whose 6.12 prototype is the
            // one kcalls.c gives; process context, at load.
            unsafe { kc::$set(addr as c_ulong) };
        }
        addr.is_some()
    }};
}

/// [`bind!`] for a function rkprobes cannot work without: `ENOENT`, logged,
/// when it is missing.
macro_rules! bind_required {
    ($ksyms:expr, $buf:expr, $name:literal, $set:ident) => {
        if !bind!($ksyms, $buf, $name, $set) {
            pr_err!("kernel symbol {} not found\n", $name);
            return Err(ENOENT);
        }
    };
}

impl Runtime {
    /// Finds everything and sets the static calls. Process context, may
    /// sleep.
    pub(crate) fn find(ksyms: &Kallsyms) -> Result<Self> {
        let mut buf = SymbolBuf::new()?;
        let b = &mut *buf;
        bind_required!(ksyms, b, "text_poke", rkp_kc_bind_text_poke);
        bind_required!(ksyms, b, "text_poke_sync", rkp_kc_bind_text_poke_sync);
        let text_mutex = ksyms.lookup(b, c_str!("text_mutex")).ok_or_else(|| {
            pr_err!("kernel symbol text_mutex not found\n");
            ENOENT
        })?;
        let text_poke_queue = bind!(ksyms, b, "text_poke_queue", rkp_kc_bind_text_poke_queue);
        let text_poke_finish = bind!(ksyms, b, "text_poke_finish", rkp_kc_bind_text_poke_finish);
        bind_required!(ksyms, b, "execmem_alloc", rkp_kc_bind_execmem_alloc);
        bind_required!(ksyms, b, "execmem_free", rkp_kc_bind_execmem_free);
        bind_required!(ksyms, b, "set_memory_rox", rkp_kc_bind_set_memory_rox);
        bind_required!(ksyms, b, "core_kernel_text", rkp_kc_bind_core_kernel_text);
        bind_required!(ksyms, b, "notify_die", rkp_kc_bind_notify_die);
        bind_required!(
            ksyms,
            b,
            "__module_text_address",
            rkp_kc_bind___module_text_address
        );
        bind_required!(
            ksyms,
            b,
            "search_exception_tables",
            rkp_kc_bind_search_exception_tables
        );
        bind_required!(ksyms, b, "fixup_exception", rkp_kc_bind_fixup_exception);
        bind_required!(
            ksyms,
            b,
            "alternatives_text_reserved",
            rkp_kc_bind_alternatives_text_reserved
        );
        let jump_label_text_reserved = bind!(
            ksyms,
            b,
            "jump_label_text_reserved",
            rkp_kc_bind_jump_label_text_reserved
        );
        let static_call_text_reserved = bind!(
            ksyms,
            b,
            "static_call_text_reserved",
            rkp_kc_bind_static_call_text_reserved
        );
        let jl_lock = bind!(ksyms, b, "jump_label_lock", rkp_kc_bind_jump_label_lock);
        let jl_unlock = bind!(ksyms, b, "jump_label_unlock", rkp_kc_bind_jump_label_unlock);
        let jump_table = table_bounds::<bindings::jump_entry>(
            ksyms,
            b,
            c_str!("__start___jump_table"),
            c_str!("__stop___jump_table"),
        );
        let static_call_sites = table_bounds::<bindings::static_call_site>(
            ksyms,
            b,
            c_str!("__start_static_call_sites"),
            c_str!("__stop_static_call_sites"),
        );
        // INVARIANT: every static call set above and below was set with
        // the confirmed start of its function; each flag says its function
        // (or pair) was found and set.
        Ok(Self {
            text_mutex: text_mutex as *mut bindings::mutex,
            text_poke_bp: text_poke_queue && text_poke_finish,
            jump_label_text_reserved,
            static_call_text_reserved,
            jump_label_lock: jl_lock && jl_unlock,
            jump_table,
            static_call_sites,
            ftrace_location: bind!(ksyms, b, "ftrace_location", rkp_kc_bind_ftrace_location),
            synchronize_rcu_tasks: bind!(
                ksyms,
                b,
                "synchronize_rcu_tasks",
                rkp_kc_bind_synchronize_rcu_tasks
            ),
            stack_trace_save_regs: bind!(
                ksyms,
                b,
                "stack_trace_save_regs",
                rkp_kc_bind_stack_trace_save_regs
            ),
            wait_for_kprobe_optimizer: bind!(
                ksyms,
                b,
                "wait_for_kprobe_optimizer",
                rkp_kc_bind_wait_for_kprobe_optimizer
            ),
            get_kprobe: bind!(ksyms, b, "get_kprobe", rkp_kc_bind_get_kprobe),
            kallsyms_on_each_match_symbol: bind!(
                ksyms,
                b,
                "kallsyms_on_each_match_symbol",
                rkp_kc_bind_kallsyms_on_each_match_symbol
            ),
            kallsyms_on_each_symbol: bind!(
                ksyms,
                b,
                "kallsyms_on_each_symbol",
                rkp_kc_bind_kallsyms_on_each_symbol
            ),
            module_kallsyms_on_each_symbol: bind!(
                ksyms,
                b,
                "module_kallsyms_on_each_symbol",
                rkp_kc_bind_module_kallsyms_on_each_symbol
            ),
            find_module: bind!(ksyms, b, "find_module", rkp_kc_bind_find_module),
            tracing_reset_all_online_cpus: bind!(
                ksyms,
                b,
                "tracing_reset_all_online_cpus",
                rkp_kc_bind_tracing_reset_all_online_cpus
            ),
            kallsyms_show_value: bind!(
                ksyms,
                b,
                "kallsyms_show_value",
                rkp_kc_bind_kallsyms_show_value
            ),
            trigger_calls: bind!(
                ksyms,
                b,
                "trace_event_trigger_enable_disable",
                rkp_kc_bind_trace_event_trigger_enable_disable
            ) && bind!(ksyms, b, "update_cond_flag", rkp_kc_bind_update_cond_flag)
                && bind!(
                    ksyms,
                    b,
                    "create_event_filter",
                    rkp_kc_bind_create_event_filter
                )
                && bind!(ksyms, b, "free_event_filter", rkp_kc_bind_free_event_filter),
            kprobe_int3_handler: bind!(
                ksyms,
                b,
                "kprobe_int3_handler",
                rkp_kc_bind_kprobe_int3_handler
            ),
        })
    }
}

/// Each method calls its function's static call, which the type invariant
/// says was set to that function: a required one always, an optional one
/// when its flag is set (the method does nothing otherwise). The `SAFETY`
/// comments below rest on this and state only the C contract.
impl Runtime {
    /// `text_poke()`: writes `len` bytes at `addr` in text through a
    /// temporary writable alias.
    ///
    /// # Safety
    ///
    /// The caller holds `text_mutex`; `addr..addr + len` is mapped text that
    /// no CPU executes in a way a partial write breaks; `opcode` is valid for
    /// `len` bytes.
    pub(crate) unsafe fn text_poke(&self, addr: *mut c_void, opcode: *const c_void, len: usize) {
        // SAFETY: the caller's contract; the static call is set to
        // `text_poke` (type invariant).
        unsafe { kc::rkp_kc_text_poke(addr, opcode, len) };
    }

    /// `text_poke_sync()`: serialises every CPU's instruction stream (IPIs).
    ///
    /// # Safety
    ///
    /// Process context.
    pub(crate) unsafe fn text_poke_sync(&self) {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_text_poke_sync() };
    }

    /// Whether the kernel's batched live patching was found
    /// ([`Runtime::text_poke_queue`]).
    pub(crate) fn has_text_poke_bp(&self) -> bool {
        self.text_poke_bp
    }

    /// `text_poke_queue(addr, opcode, len, NULL)`: queues the live patching
    /// of one instruction, which [`Runtime::text_poke_finish`] (or a full
    /// queue) carries out; a CPU that meets the patch site meanwhile
    /// traps into the kernel's `poke_int3_handler()`, which emulates the new
    /// instruction. Does nothing without it.
    ///
    /// # Safety
    ///
    /// The caller holds `text_mutex` until the matching
    /// [`Runtime::text_poke_finish`]; `addr` starts an instruction of kernel
    /// or module text that may be replaced by `opcode` whole (`len` bytes,
    /// one instruction the kernel's `text_poke_loc_init()` accepts: a
    /// `jmp rel32` here), and no CPU can be inside its bytes after the
    /// first (they are not executed between instructions).
    pub(crate) unsafe fn text_poke_queue(&self, addr: *mut c_void, opcode: &[u8]) {
        if self.text_poke_bp {
            // SAFETY: the caller's contract; `opcode` outlives the call,
            // which copies it.
            unsafe {
                kc::rkp_kc_text_poke_queue(
                    addr,
                    opcode.as_ptr().cast(),
                    opcode.len(),
                    core::ptr::null(),
                )
            };
        }
    }

    /// `text_poke_finish()`: carries out what [`Runtime::text_poke_queue`]
    /// queued, with the kernel's three synchronisations.
    ///
    /// # Safety
    ///
    /// The caller holds `text_mutex`. Process context.
    pub(crate) unsafe fn text_poke_finish(&self) {
        if self.text_poke_bp {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_text_poke_finish() };
        }
    }

    /// The kernel's `text_mutex`.
    pub(crate) fn text_mutex(&self) -> *mut bindings::mutex {
        self.text_mutex
    }

    /// `execmem_alloc(EXECMEM_KPROBES, size)`: RW, NX memory within ±2 GiB of
    /// kernel text, or null.
    ///
    /// # Safety
    ///
    /// Process context.
    pub(crate) unsafe fn execmem_alloc_kprobes(&self, size: usize) -> *mut c_void {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_execmem_alloc(EXECMEM_KPROBES, size) }
    }

    /// `execmem_free()`.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Runtime::execmem_alloc_kprobes`] and no CPU can
    /// execute in it or reach it any more. Process context.
    pub(crate) unsafe fn execmem_free(&self, ptr: *mut c_void) {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_execmem_free(ptr) };
    }

    /// `set_memory_rox()`: 0 or a negative errno.
    ///
    /// # Safety
    ///
    /// `addr` starts `numpages` pages of an execmem allocation. Process
    /// context.
    pub(crate) unsafe fn set_memory_rox(&self, addr: c_ulong, numpages: c_int) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_set_memory_rox(addr, numpages) }
    }

    /// `core_kernel_text()`.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it compares `addr` with section bounds.
    pub(crate) unsafe fn core_kernel_text(&self, addr: c_ulong) -> c_int {
        // SAFETY: no preconditions (see above).
        unsafe { kc::rkp_kc_core_kernel_text(addr) }
    }

    /// `__module_text_address()`: the module whose text holds `addr`, or null.
    ///
    /// # Safety
    ///
    /// Preemption disabled, for as long as the result is used without a
    /// reference on the module.
    pub(crate) unsafe fn module_text_address(&self, addr: c_ulong) -> *mut bindings::module {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc___module_text_address(addr) }
    }

    /// `search_exception_tables()`: the fixup entry of `addr`, or null.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it reads sorted tables. The entry is
    /// only compared with null.
    pub(crate) unsafe fn search_exception_tables(&self, addr: c_ulong) -> *const c_void {
        // SAFETY: no preconditions (see above).
        unsafe { kc::rkp_kc_search_exception_tables(addr) }
    }

    /// `alternatives_text_reserved()`.
    ///
    /// # Safety
    ///
    /// The caller holds `text_mutex`.
    pub(crate) unsafe fn alternatives_text_reserved(
        &self,
        start: *mut c_void,
        end: *mut c_void,
    ) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_alternatives_text_reserved(start, end) }
    }

    /// `ftrace_location()`: the ftrace call site at `ip`, or 0; `None` without
    /// dynamic ftrace.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it searches ftrace's sorted site tables.
    pub(crate) unsafe fn ftrace_location(&self, ip: c_ulong) -> Option<c_ulong> {
        self.ftrace_location.then(|| {
            // SAFETY: see above.
            unsafe { kc::rkp_kc_ftrace_location(ip) }
        })
    }

    /// Whether the kernel has Tasks RCU (`synchronize_rcu_tasks()`).
    pub(crate) fn has_synchronize_rcu_tasks(&self) -> bool {
        self.synchronize_rcu_tasks
    }

    /// `synchronize_rcu_tasks()`, when the kernel has it.
    ///
    /// # Safety
    ///
    /// Process context; may sleep.
    pub(crate) unsafe fn synchronize_rcu_tasks(&self) {
        if self.synchronize_rcu_tasks {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_synchronize_rcu_tasks() };
        }
    }

    /// `wait_for_kprobe_optimizer()`, when the kernel has optprobes.
    /// Process context, may sleep: it takes the kernel's `kprobe_mutex` and
    /// `text_mutex`, so the caller must hold neither (a deadlock, not a
    /// memory error, if it does; rkprobes never takes them itself).
    pub(crate) fn wait_for_kprobe_optimizer(&self) {
        if self.wait_for_kprobe_optimizer {
            // SAFETY: found at load as the kernel's function of that name,
            // which takes no arguments and sleeps only in process context,
            // where every caller of this method runs (its documentation).
            unsafe { kc::rkp_kc_wait_for_kprobe_optimizer() };
        }
    }

    /// Whether the kernel has its own kprobes (`get_kprobe()`).
    pub(crate) fn has_get_kprobe(&self) -> bool {
        self.get_kprobe
    }

    /// `get_kprobe()`: the kernel's own probe at `addr`, or null; `None`
    /// without kprobes.
    ///
    /// # Safety
    ///
    /// The caller is in an RCU read-side critical section for as long as it
    /// uses the result.
    pub(crate) unsafe fn get_kprobe(&self, addr: *mut c_void) -> Option<*mut c_void> {
        self.get_kprobe.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_get_kprobe(addr) }
        })
    }

    /// Whether the kernel has both symbol iterators
    /// ([`Runtime::kallsyms_on_each_match_symbol`],
    /// [`Runtime::module_kallsyms_on_each_symbol`]).
    pub(crate) fn has_symbol_iterators(&self) -> bool {
        self.kallsyms_on_each_match_symbol && self.module_kallsyms_on_each_symbol
    }

    /// `kallsyms_on_each_match_symbol()`; `None` without it.
    ///
    /// # Safety
    ///
    /// `name` is NUL-terminated; `f` may be called with `data` during the
    /// call. Process context.
    pub(crate) unsafe fn kallsyms_on_each_match_symbol(
        &self,
        f: kc::MatchFn,
        name: *const c_char,
        data: *mut c_void,
    ) -> Option<c_int> {
        self.kallsyms_on_each_match_symbol.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_kallsyms_on_each_match_symbol(f, name, data) }
        })
    }

    /// `kallsyms_on_each_symbol()`: every symbol of vmlinux; `None`
    /// without it.
    ///
    /// # Safety
    ///
    /// `f` may be called with `data` during the call. Process context.
    pub(crate) unsafe fn kallsyms_on_each_symbol(
        &self,
        f: kc::ModSymFn,
        data: *mut c_void,
    ) -> Option<c_int> {
        self.kallsyms_on_each_symbol.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_kallsyms_on_each_symbol(f, data) }
        })
    }

    /// `module_kallsyms_on_each_symbol()`; `None` without it.
    ///
    /// # Safety
    ///
    /// `modname` is null or NUL-terminated; `f` may be called with `data`
    /// during the call. Process context; takes `module_mutex`.
    pub(crate) unsafe fn module_kallsyms_on_each_symbol(
        &self,
        modname: *const c_char,
        f: kc::ModSymFn,
        data: *mut c_void,
    ) -> Option<c_int> {
        self.module_kallsyms_on_each_symbol.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_module_kallsyms_on_each_symbol(modname, f, data) }
        })
    }

    /// Whether `trace_event_trigger_enable_disable()` and
    /// `update_cond_flag()` are bound: `events/eprobe.c` may hook triggers.
    pub(crate) fn has_trigger_calls(&self) -> bool {
        self.trigger_calls
    }

    /// Whether the kernel has `find_module()`.
    pub(crate) fn has_find_module(&self) -> bool {
        self.find_module
    }

    /// `find_module()`: the loaded module `name`, or null; `None` without it.
    ///
    /// # Safety
    ///
    /// `name` is NUL-terminated; preemption is disabled (or `module_mutex`
    /// held) for as long as the result is used.
    pub(crate) unsafe fn find_module(&self, name: *const c_char) -> Option<*mut bindings::module> {
        self.find_module.then(|| {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_find_module(name) }
        })
    }

    /// Whether the kernel has `stack_trace_save_regs()`.
    pub(crate) fn has_stack_trace_save_regs(&self) -> bool {
        self.stack_trace_save_regs
    }

    /// `stack_trace_save_regs()`: entries stored; 0 without it.
    ///
    /// # Safety
    ///
    /// `regs` describe a frame of the current task; `store` has room for
    /// `size` entries.
    pub(crate) unsafe fn stack_trace_save_regs(
        &self,
        regs: *mut bindings::pt_regs,
        store: *mut c_ulong,
        size: c_uint,
        skipnr: c_uint,
    ) -> c_uint {
        if !self.stack_trace_save_regs {
            return 0;
        }
        // SAFETY: the caller's contract.
        unsafe { kc::rkp_kc_stack_trace_save_regs(regs, store, size, skipnr) }
    }

    /// `tracing_reset_all_online_cpus()`, when the kernel has tracing.
    ///
    /// # Safety
    ///
    /// Process context, with `event_mutex` held as the kernel calls it.
    pub(crate) unsafe fn tracing_reset_all_online_cpus(&self) {
        if self.tracing_reset_all_online_cpus {
            // SAFETY: the caller's contract.
            unsafe { kc::rkp_kc_tracing_reset_all_online_cpus() };
        }
    }

    /// `kallsyms_show_value()`: whether a file opened with `cred` may show
    /// kernel addresses (`kptr_restrict`, `CAP_SYSLOG`), as the kernel's
    /// `kprobes/list` and `kprobes/blacklist` ask it. Without the function,
    /// no. Process context.
    ///
    /// # Safety
    ///
    /// `cred` is a live `struct cred`, such as an open file's `f_cred`.
    pub(crate) unsafe fn kallsyms_show_value(&self, cred: *const bindings::cred) -> bool {
        // SAFETY: the caller's contract.
        self.kallsyms_show_value && unsafe { kc::rkp_kc_kallsyms_show_value(cred) }
    }
}
