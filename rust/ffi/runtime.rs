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
//! The functions are private fields, called only through the `unsafe`
//! methods below, which state each one's C contract; a function the running
//! kernel does not have makes its method a no-op (`None`, or nothing done),
//! as the kernel's own callers behave without that configuration.

use super::kallsyms::{Kallsyms, SymbolBuf};

mod sites;
use kernel::{
    bindings, c_str,
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
    prelude::*,
    str::CStr,
};
use sites::table_bounds;
pub(crate) use sites::{for_each_jump_entry, for_each_static_call_site};

/// `enum execmem_type`'s `EXECMEM_KPROBES` (`include/linux/execmem.h`).
const EXECMEM_KPROBES: c_uint = 1;

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
    text_poke: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void,
    /// `void text_poke_sync(void)`: serialises every CPU's instruction stream.
    text_poke_sync: unsafe extern "C" fn(),
    /// `struct mutex text_mutex`.
    text_mutex: *mut bindings::mutex,
    /// `void text_poke_queue(void *addr, const void *opcode, size_t len,
    /// const void *emulate)` and `void text_poke_finish(void)`: the
    /// kernel's batched live patching of multi-byte instructions (int3
    /// first, then the tail, then the head, each step synchronised), used
    /// to write optimized probes' jumps; caller holds `text_mutex`.
    text_poke_bp: Option<(
        unsafe extern "C" fn(*mut c_void, *const c_void, usize, *const c_void),
        unsafe extern "C" fn(),
    )>,
    /// `void *execmem_alloc(enum execmem_type type, size_t size)`: RW, NX.
    execmem_alloc: unsafe extern "C" fn(c_uint, usize) -> *mut c_void,
    /// `void execmem_free(void *ptr)`.
    execmem_free: unsafe extern "C" fn(*mut c_void),
    /// `int set_memory_rox(unsigned long addr, int numpages)`.
    set_memory_rox: unsafe extern "C" fn(c_ulong, c_int) -> c_int,
    /// `int core_kernel_text(unsigned long addr)`: vmlinux text, init text
    /// while it exists.
    core_kernel_text: unsafe extern "C" fn(c_ulong) -> c_int,
    /// `struct module *__module_text_address(unsigned long addr)`; caller
    /// has preemption disabled.
    module_text_address: unsafe extern "C" fn(c_ulong) -> *mut bindings::module,
    /// `const struct exception_table_entry *search_exception_tables(unsigned long)`.
    search_exception_tables: unsafe extern "C" fn(c_ulong) -> *const c_void,
    /// `int alternatives_text_reserved(void *start, void *end)`; caller
    /// holds `text_mutex`.
    alternatives_text_reserved: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    /// `int jump_label_text_reserved(void *start, void *end)`, when the
    /// kernel has jump labels (without them there are no such sites).
    jump_label_text_reserved: Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    /// `int static_call_text_reserved(void *start, void *end)`, when the
    /// kernel patches static calls inline.
    static_call_text_reserved: Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int>,
    /// `void jump_label_lock(void)` and `void jump_label_unlock(void)`: the
    /// mutex under which jump-label sites are patched, and under which the
    /// kernel's kprobes call `jump_label_text_reserved()` (which decodes
    /// every site's current bytes).
    jump_label_lock: Option<(unsafe extern "C" fn(), unsafe extern "C" fn())>,
    /// `__start___jump_table`..`__stop___jump_table`: vmlinux's `struct
    /// jump_entry` array, whole entries.
    jump_table: Option<(usize, usize)>,
    /// `__start_static_call_sites`..`__stop_static_call_sites`: vmlinux's
    /// `struct static_call_site` array, whole entries.
    static_call_sites: Option<(usize, usize)>,
    /// `unsigned long ftrace_location(unsigned long ip)`: the ftrace call site
    /// at `ip`, or 0; when the kernel has dynamic ftrace.
    ftrace_location: Option<unsafe extern "C" fn(c_ulong) -> c_ulong>,
    /// `void synchronize_rcu_tasks(void)`, when the kernel has Tasks RCU:
    /// waits until no task can be preempted inside a boosted slot.
    synchronize_rcu_tasks: Option<unsafe extern "C" fn()>,
    /// `void wait_for_kprobe_optimizer(void)`, when the kernel has its own
    /// optprobes: returns when the kernel's optimizer has finished its queued
    /// work, including the text it restores after a kprobe was removed.
    wait_for_kprobe_optimizer: Option<unsafe extern "C" fn()>,
    /// `struct kprobe *get_kprobe(void *addr)`, when the kernel has kprobes:
    /// the kernel's own probe at `addr`; caller in an RCU read-side section.
    get_kprobe: Option<unsafe extern "C" fn(*mut c_void) -> *mut c_void>,
    /// `int kallsyms_on_each_match_symbol(int (*fn)(void *, unsigned long),
    /// const char *name, void *data)`: calls `fn` for each vmlinux symbol
    /// named `name`.
    kallsyms_on_each_match_symbol: Option<
        unsafe extern "C" fn(
            Option<unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int>,
            *const c_char,
            *mut c_void,
        ) -> c_int,
    >,
    /// `int module_kallsyms_on_each_symbol(const char *modname,
    /// int (*fn)(void *, const char *, unsigned long), void *data)`: calls
    /// `fn` for each symbol of `modname`'s module, or of every module when
    /// NULL. Takes `module_mutex`.
    module_kallsyms_on_each_symbol: Option<
        unsafe extern "C" fn(
            *const c_char,
            Option<unsafe extern "C" fn(*mut c_void, *const c_char, c_ulong) -> c_int>,
            *mut c_void,
        ) -> c_int,
    >,
    /// `struct module *find_module(const char *name)`; caller with
    /// preemption disabled or `module_mutex` held.
    find_module: Option<unsafe extern "C" fn(*const c_char) -> *mut bindings::module>,
    /// `unsigned int stack_trace_save_regs(struct pt_regs *regs,
    /// unsigned long *store, unsigned int size, unsigned int skipnr)`, when
    /// the kernel has `CONFIG_STACKTRACE`.
    stack_trace_save_regs: Option<
        unsafe extern "C" fn(*mut bindings::pt_regs, *mut c_ulong, c_uint, c_uint) -> c_uint,
    >,
    /// `void tracing_reset_all_online_cpus(void)`, when the kernel has
    /// tracing: empties the buffers of the trace instances that had a
    /// removed event enabled. Takes `trace_types_lock`; process context.
    tracing_reset_all_online_cpus: Option<unsafe extern "C" fn()>,
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
        let text_poke_queue = ksyms.lookup(b, c_str!("text_poke_queue"));
        let text_poke_finish = ksyms.lookup(b, c_str!("text_poke_finish"));
        let execmem_alloc = find(ksyms, b, c_str!("execmem_alloc"))?;
        let execmem_free = find(ksyms, b, c_str!("execmem_free"))?;
        let set_memory_rox = find(ksyms, b, c_str!("set_memory_rox"))?;
        let core_kernel_text = find(ksyms, b, c_str!("core_kernel_text"))?;
        let module_text_address = find(ksyms, b, c_str!("__module_text_address"))?;
        let search_exception_tables = find(ksyms, b, c_str!("search_exception_tables"))?;
        let alternatives_text_reserved = find(ksyms, b, c_str!("alternatives_text_reserved"))?;
        let jump_label_text_reserved = ksyms.lookup(b, c_str!("jump_label_text_reserved"));
        let static_call_text_reserved = ksyms.lookup(b, c_str!("static_call_text_reserved"));
        let jl_lock = ksyms.lookup(b, c_str!("jump_label_lock"));
        let jl_unlock = ksyms.lookup(b, c_str!("jump_label_unlock"));
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
            text_poke_bp: text_poke_queue.zip(text_poke_finish).map(|(q, f)| {
                // SAFETY: as above, for both.
                unsafe { (as_fn(q), as_fn(f)) }
            }),
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
            jump_label_lock: jl_lock.zip(jl_unlock).map(|(l, u)| {
                // SAFETY: as above, for both.
                unsafe { (as_fn(l), as_fn(u)) }
            }),
            jump_table,
            static_call_sites,
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
        // SAFETY: the caller's contract; the field is `text_poke` (type
        // invariant).
        unsafe { (self.text_poke)(addr, opcode, len) };
    }

    /// `text_poke_sync()`: serialises every CPU's instruction stream (IPIs).
    ///
    /// # Safety
    ///
    /// Process context.
    pub(crate) unsafe fn text_poke_sync(&self) {
        // SAFETY: the caller's contract.
        unsafe { (self.text_poke_sync)() };
    }

    /// Whether the kernel's batched live patching was found
    /// ([`Runtime::text_poke_queue`]).
    pub(crate) fn has_text_poke_bp(&self) -> bool {
        self.text_poke_bp.is_some()
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
        if let Some((queue, _)) = self.text_poke_bp {
            // SAFETY: the caller's contract; `opcode` outlives the call,
            // which copies it.
            unsafe {
                queue(
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
        if let Some((_, finish)) = self.text_poke_bp {
            // SAFETY: the caller's contract.
            unsafe { finish() };
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
        unsafe { (self.execmem_alloc)(EXECMEM_KPROBES, size) }
    }

    /// `execmem_free()`.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Runtime::execmem_alloc_kprobes`] and no CPU can
    /// execute in it or reach it any more. Process context.
    pub(crate) unsafe fn execmem_free(&self, ptr: *mut c_void) {
        // SAFETY: the caller's contract.
        unsafe { (self.execmem_free)(ptr) };
    }

    /// `set_memory_rox()`: 0 or a negative errno.
    ///
    /// # Safety
    ///
    /// `addr` starts `numpages` pages of an execmem allocation. Process
    /// context.
    pub(crate) unsafe fn set_memory_rox(&self, addr: c_ulong, numpages: c_int) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { (self.set_memory_rox)(addr, numpages) }
    }

    /// `core_kernel_text()`.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it compares `addr` with section bounds.
    pub(crate) unsafe fn core_kernel_text(&self, addr: c_ulong) -> c_int {
        // SAFETY: no preconditions (see above).
        unsafe { (self.core_kernel_text)(addr) }
    }

    /// `__module_text_address()`: the module whose text holds `addr`, or null.
    ///
    /// # Safety
    ///
    /// Preemption disabled, for as long as the result is used without a
    /// reference on the module.
    pub(crate) unsafe fn module_text_address(&self, addr: c_ulong) -> *mut bindings::module {
        // SAFETY: the caller's contract.
        unsafe { (self.module_text_address)(addr) }
    }

    /// `search_exception_tables()`: the fixup entry of `addr`, or null.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it reads sorted tables. The entry is
    /// only compared with null.
    pub(crate) unsafe fn search_exception_tables(&self, addr: c_ulong) -> *const c_void {
        // SAFETY: no preconditions (see above).
        unsafe { (self.search_exception_tables)(addr) }
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
        unsafe { (self.alternatives_text_reserved)(start, end) }
    }

    /// `ftrace_location()`: the ftrace call site at `ip`, or 0; `None` without
    /// dynamic ftrace.
    ///
    /// # Safety
    ///
    /// None beyond a running kernel: it searches ftrace's sorted site tables.
    pub(crate) unsafe fn ftrace_location(&self, ip: c_ulong) -> Option<c_ulong> {
        self.ftrace_location.map(|f| {
            // SAFETY: see above.
            unsafe { f(ip) }
        })
    }

    /// Whether the kernel has Tasks RCU (`synchronize_rcu_tasks()`).
    pub(crate) fn has_synchronize_rcu_tasks(&self) -> bool {
        self.synchronize_rcu_tasks.is_some()
    }

    /// `synchronize_rcu_tasks()`, when the kernel has it.
    ///
    /// # Safety
    ///
    /// Process context; may sleep.
    pub(crate) unsafe fn synchronize_rcu_tasks(&self) {
        if let Some(f) = self.synchronize_rcu_tasks {
            // SAFETY: the caller's contract.
            unsafe { f() };
        }
    }

    /// `wait_for_kprobe_optimizer()`, when the kernel has optprobes.
    ///
    /// # Safety
    ///
    /// Process context; may sleep; takes the kernel's `kprobe_mutex` and
    /// `text_mutex`, so the caller holds neither.
    pub(crate) unsafe fn wait_for_kprobe_optimizer(&self) {
        if let Some(f) = self.wait_for_kprobe_optimizer {
            // SAFETY: the caller's contract.
            unsafe { f() };
        }
    }

    /// Whether the kernel has its own kprobes (`get_kprobe()`).
    pub(crate) fn has_get_kprobe(&self) -> bool {
        self.get_kprobe.is_some()
    }

    /// `get_kprobe()`: the kernel's own probe at `addr`, or null; `None`
    /// without kprobes.
    ///
    /// # Safety
    ///
    /// The caller is in an RCU read-side critical section for as long as it
    /// uses the result.
    pub(crate) unsafe fn get_kprobe(&self, addr: *mut c_void) -> Option<*mut c_void> {
        self.get_kprobe.map(|f| {
            // SAFETY: the caller's contract.
            unsafe { f(addr) }
        })
    }

    /// Whether the kernel has both symbol iterators
    /// ([`Runtime::kallsyms_on_each_match_symbol`],
    /// [`Runtime::module_kallsyms_on_each_symbol`]).
    pub(crate) fn has_symbol_iterators(&self) -> bool {
        self.kallsyms_on_each_match_symbol.is_some()
            && self.module_kallsyms_on_each_symbol.is_some()
    }

    /// `kallsyms_on_each_match_symbol()`; `None` without it.
    ///
    /// # Safety
    ///
    /// `name` is NUL-terminated; `f` may be called with `data` during the
    /// call. Process context.
    pub(crate) unsafe fn kallsyms_on_each_match_symbol(
        &self,
        f: Option<unsafe extern "C" fn(*mut c_void, c_ulong) -> c_int>,
        name: *const c_char,
        data: *mut c_void,
    ) -> Option<c_int> {
        self.kallsyms_on_each_match_symbol.map(|each| {
            // SAFETY: the caller's contract.
            unsafe { each(f, name, data) }
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
        f: Option<unsafe extern "C" fn(*mut c_void, *const c_char, c_ulong) -> c_int>,
        data: *mut c_void,
    ) -> Option<c_int> {
        self.module_kallsyms_on_each_symbol.map(|each| {
            // SAFETY: the caller's contract.
            unsafe { each(modname, f, data) }
        })
    }

    /// Whether the kernel has `find_module()`.
    pub(crate) fn has_find_module(&self) -> bool {
        self.find_module.is_some()
    }

    /// `find_module()`: the loaded module `name`, or null; `None` without it.
    ///
    /// # Safety
    ///
    /// `name` is NUL-terminated; preemption is disabled (or `module_mutex`
    /// held) for as long as the result is used.
    pub(crate) unsafe fn find_module(&self, name: *const c_char) -> Option<*mut bindings::module> {
        self.find_module.map(|f| {
            // SAFETY: the caller's contract.
            unsafe { f(name) }
        })
    }

    /// Whether the kernel has `stack_trace_save_regs()`.
    pub(crate) fn has_stack_trace_save_regs(&self) -> bool {
        self.stack_trace_save_regs.is_some()
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
        match self.stack_trace_save_regs {
            // SAFETY: the caller's contract.
            Some(f) => unsafe { f(regs, store, size, skipnr) },
            None => 0,
        }
    }

    /// `tracing_reset_all_online_cpus()`, when the kernel has tracing.
    ///
    /// # Safety
    ///
    /// Process context, with `event_mutex` held as the kernel calls it.
    pub(crate) unsafe fn tracing_reset_all_online_cpus(&self) {
        if let Some(f) = self.tracing_reset_all_online_cpus {
            // SAFETY: the caller's contract.
            unsafe { f() };
        }
    }
}
