// SPDX-License-Identifier: GPL-2.0

//! rkprobes' own C: `glue.c` (one-line wrappers of inline kernel helpers,
//! the reclaim work and the ftrace callback's adapter), the C side of trace
//! events (`../events/trace_event.c`), and the kretprobe trampoline
//! (`../arch/x86/kretprobe_trampoline.S`). The prototypes are in `glue.h`
//! and `../events/trace_event.h`.

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
};

/// `struct rkp_field` of `../events/trace_event.c`: a field of a trace
/// event's record.
#[repr(C)]
pub(crate) struct RkpField {
    /// The C type, as the format file shows it.
    pub(crate) ty: *const c_char,
    /// The field's name.
    pub(crate) name: *const c_char,
    /// Offset in the record.
    pub(crate) offset: c_int,
    /// Size in the record.
    pub(crate) size: c_int,
    /// Whether the field is signed.
    pub(crate) is_signed: c_int,
}

/// `struct rkp_tev_rec` of `../events/trace_event.h`: a record being written
/// from Rust, reserved in one trace instance after another. Its layout is
/// checked against C's at compile time (`rust/events/mod.rs`).
#[repr(C)]
pub(crate) struct RkpTevRec {
    /// `__probe_ip`, or `__probe_func` of a return event.
    pub(crate) a0: c_ulong,
    /// `__probe_ret_ip` of a return event.
    pub(crate) a1: c_ulong,
    /// The hit's registers.
    pub(crate) regs: *mut bindings::pt_regs,
    /// C's: the instance being written.
    pub(crate) link: *mut c_void,
    /// The record's bytes after the header.
    pub(crate) size: c_uint,
    /// Whether perf and BPF want the record, and whether its BPF programs
    /// ran ([`RKP_TEV_PERF`], [`RKP_TEV_PERF_RAN`]), as [`rkp_tev_wants`]
    /// said.
    pub(crate) perf: c_int,
    /// C's: the kernel's `struct trace_event_buffer` (six words in 6.12).
    pub(crate) fb: core::mem::MaybeUninit<[u64; 6]>,
}

/// [`rkp_tev_wants`]: records in the trace instances.
pub(crate) const RKP_TEV_TRACE: c_uint = 1;
/// [`rkp_tev_wants`]: a record for perf and BPF.
pub(crate) const RKP_TEV_PERF: c_uint = 2;
/// [`rkp_tev_wants`]: for perf alone: the BPF programs ran.
pub(crate) const RKP_TEV_PERF_RAN: c_uint = 4;

extern "C" {
    /// `raw_smp_processor_id()`; the hit paths read it inline
    /// (`percpu`), checked against this at load.
    pub(crate) fn rkp_smp_processor_id() -> c_uint;

    /// The interrupt level of the current context: NMI and hardirq nesting
    /// and softirq service, as bits of the preempt count. Any context. Read
    /// inline on the hit paths, checked against this at load.
    pub(crate) fn rkp_irq_level() -> c_uint;

    /// `security_locked_down(LOCKDOWN_KPROBES)`: 0, or the errno (`-EPERM`)
    /// while lockdown forbids new probes. Process context.
    pub(crate) fn rkp_locked_down_kprobes() -> c_int;

    /// Executes the int3 at [`rkp_trap_path_site_addr`]; returns when a
    /// die notifier has taken it (`rust/arch/x86/trap_path.rs`).
    pub(crate) fn rkp_trap_path_int3();

    /// The address of the int3 of [`rkp_trap_path_int3`].
    pub(crate) fn rkp_trap_path_site_addr() -> c_ulong;

    /// `preempt_disable()`.
    pub(crate) fn rkp_preempt_disable();

    /// `preempt_enable()`.
    pub(crate) fn rkp_preempt_enable();

    /// The size of `rkp_ctl_area`, each CPU's probe state storage.
    pub(crate) static rkp_ctl_area_size: c_uint;

    /// `this_cpu_ptr(&rkp_ctl_area)`; the hit paths compute it inline
    /// (`percpu::ctl_area`), checked against this at load.
    pub(crate) fn rkp_ctl_area_this_cpu() -> *mut c_void;

    /// Zeroes every possible CPU's `rkp_ctl_area`. Process context.
    pub(crate) fn rkp_ctl_area_reset();

    /// `num_possible_cpus()`.
    pub(crate) fn rkp_num_possible_cpus() -> c_uint;

    /// `current`, without a reference: only compared. Read inline on the
    /// hit paths, checked against this at load.
    pub(crate) fn rkp_current_task() -> *mut c_void;

    /// `current->comm`, for `$comm`. Any context.
    pub(crate) fn rkp_current_comm() -> *const c_char;

    /// `strncpy_from_user_nofault()`: the length copied including the NUL
    /// (at most `count`, the string cut and NUL-terminated there), 0 for a
    /// `count` of 0, or `-EFAULT`. Any context.
    pub(crate) fn rkp_strncpy_user_nofault(
        dst: *mut c_char,
        src: *const c_void,
        count: c_long,
    ) -> c_long;

    /// `strnlen_user_nofault()`: the length of the user string at `src`
    /// including its NUL, more than `count` when it has none within
    /// `count` bytes, or 0 when it cannot be read. Any context.
    pub(crate) fn rkp_strnlen_user_nofault(src: *const c_void, count: c_long) -> c_long;

    /// `get_task_struct(current)`: the current task, with a reference taken.
    /// Any context.
    pub(crate) fn rkp_get_current_task() -> *mut c_void;

    /// `put_task_struct()`. Any context for a running task's reference;
    /// process context when it may be the last one.
    pub(crate) fn rkp_put_task(task: *mut c_void);

    /// Whether a referenced task has run for the last time.
    pub(crate) fn rkp_task_is_dead(task: *mut c_void) -> c_int;

    /// `__module_get(THIS_MODULE)`.
    pub(crate) fn rkp_module_get_self();

    /// `module_put(THIS_MODULE)`. Any context.
    pub(crate) fn rkp_module_put_self();

    /// Queues the reclaim of kretprobe instances. Any context, NMI included.
    pub(crate) fn rkp_kick_gc();

    /// Queues the reclaim of kretprobe instances in a second. Any context
    /// but NMI.
    pub(crate) fn rkp_kick_gc_later();

    /// Waits until no reclaim is queued or running. Process context.
    pub(crate) fn rkp_gc_sync();

    /// `list_add_tail_rcu()`. The caller holds the list's writer lock.
    pub(crate) fn rkp_list_add_tail_rcu(
        new: *mut bindings::list_head,
        head: *mut bindings::list_head,
    );

    /// `list_del_rcu()`: readers may still stand on `entry` until a grace
    /// period has passed. The caller holds the list's writer lock.
    pub(crate) fn rkp_list_del_rcu(entry: *mut bindings::list_head);

    /// Queues the jump optimizer in `delay` jiffies, unless it is queued
    /// already. Any context but NMI.
    pub(crate) fn rkp_kick_optimizer(delay: c_ulong);

    /// Cancels a queued optimizer and waits for a running one. Process
    /// context.
    pub(crate) fn rkp_optimizer_cancel();

    /// The kretprobe return trampoline (`kretprobe_trampoline.S`). Not a
    /// function to call from Rust: only its address is used.
    pub(crate) fn rkp_kretprobe_trampoline();

    /// The register-saving trampoline of optimized probes
    /// (`optprobe_trampoline.S`), called by the detour buffers. Not a
    /// function to call from Rust: only its address is used.
    pub(crate) fn rkp_optprobe_trampoline();

    /// Creates and registers a trace event (`trace_event.c`); an `ERR_PTR`
    /// on failure. Process context, takes `event_mutex`.
    pub(crate) fn rkp_tev_create(
        event_mutex: *mut bindings::mutex,
        ftrace_events: *mut bindings::list_head,
        group: *const c_char,
        name: *const c_char,
        print_fmt: *const c_char,
        is_return: c_int,
        fields: *const RkpField,
        nfields: c_int,
        owner: *mut c_void,
    ) -> *mut c_void;

    /// Unregisters a trace event, `-EBUSY` while it is in use; the caller
    /// holds `event_mutex`.
    pub(crate) fn rkp_tev_remove(event_mutex: *mut bindings::mutex, ev: *mut c_void) -> c_int;

    /// Frees an unregistered trace event after a grace period.
    pub(crate) fn rkp_tev_free(ev: *mut c_void);

    /// Whether some trace instance has the event enabled.
    pub(crate) fn rkp_tev_enabled(ev: *mut c_void) -> c_int;

    /// What a hit of the event must build, as `RKP_TEV_*` bits: records
    /// in the trace instances, and one for perf and BPF. BPF programs that
    /// read nothing of the record have run when it returns, on a context
    /// of zeroes of the kernel's full size; perf then gets one only if they
    /// asked for it ([`RKP_TEV_PERF_RAN`]). Probe-hit context.
    pub(crate) fn rkp_tev_wants(ev: *mut c_void, regs: *mut bindings::pt_regs) -> c_uint;

    /// Gives the events' C side `trace_call_bpf()`'s confirmed address (0:
    /// none), which becomes a static call. Process context, at load,
    /// before any event.
    pub(crate) fn rkp_tev_init(addr: c_ulong);

    /// Frees what [`rkp_tev_init`] allocated. Process context, at unload,
    /// once no event is left and no hit runs.
    pub(crate) fn rkp_tev_exit();

    /// glue.h's `RKP_TEV_TRACE`, `RKP_TEV_PERF` and `RKP_TEV_PERF_RAN`,
    /// checked at load against [`RKP_TEV_TRACE`] and its siblings.
    pub(crate) static rkp_tev_wants_bits: [c_uint; 3];

    /// `offsetof(struct rkp_tev, perf_on)`: a hit reads the flag itself,
    /// and asks [`rkp_tev_wants`] only when it is set.
    pub(crate) static rkp_tev_perf_on_off: c_uint;

    /// Reserves the first record of a hit, in the first trace instance
    /// that has the event enabled, its header written; null when there is
    /// none. Probe-hit context, with `rec`'s `a0`, `a1`, `regs` and `size`
    /// set.
    pub(crate) fn rkp_tev_reserve(ev: *mut c_void, rec: *mut RkpTevRec) -> *mut c_void;

    /// Commits the record the last reserve or commit gave and reserves the
    /// next instance's, as `rkp_tev_reserve`. Probe-hit context.
    pub(crate) fn rkp_tev_commit(ev: *mut c_void, rec: *mut RkpTevRec) -> *mut c_void;

    /// Writes the record into perf's buffer through `rkp_event_fill(ctx)`
    /// and hands it to BPF (unless `rec.perf` has `RKP_TEV_PERF_RAN`) and
    /// perf; for a `rec` whose `perf` has `RKP_TEV_PERF`. Probe-hit
    /// context.
    pub(crate) fn rkp_tev_perf(ev: *mut c_void, rec: *mut RkpTevRec, ctx: *mut c_void);

    /// `trace_seq_putmem()`. Trace output context.
    pub(crate) fn rkp_tev_seq_write(seq: *mut c_void, buf: *const c_char, len: c_uint);

    /// Whether an event `group/name` exists. Process context, takes
    /// `event_mutex`.
    pub(crate) fn rkp_tev_name_in_use(
        event_mutex: *mut bindings::mutex,
        ftrace_events: *mut bindings::list_head,
        group: *const c_char,
        name: *const c_char,
    ) -> c_int;

    /// `sprint_symbol()` of `addr` cut to `len` bytes; returns the length.
    /// Any context.
    pub(crate) fn rkp_tev_symstr(addr: c_ulong, room: *mut c_char, len: c_uint) -> c_uint;

    /// `TASK_SIZE` of the current task. Any context.
    pub(crate) fn rkp_tev_task_size() -> c_ulong;

    /// `__alloc_percpu(size, 64)`: zeroed per-CPU memory, or null.
    /// Process context.
    pub(crate) fn rkp_tev_scratch_alloc(size: c_ulong) -> *mut c_void;

    /// `free_percpu()` of what `rkp_tev_scratch_alloc` gave. Process
    /// context.
    pub(crate) fn rkp_tev_scratch_free(p: *mut c_void);

    /// Registers `rkp_page_fault` on the `page_fault_kernel` tracepoint,
    /// once: 0, or the tracepoint's errno (`EOPNOTSUPP` without it).
    /// Process context; the caller serialises calls.
    pub(crate) fn rkp_page_fault_hook() -> c_int;

    /// Unregisters what `rkp_page_fault_hook` registered, if it did, and
    /// waits until no CPU runs it. Process context, at unload.
    pub(crate) fn rkp_page_fault_unhook();
}

#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
extern "C" {
    /// `ftrace_set_filter_ip()` on rkprobes' ftrace_ops; `reset` empties the
    /// filter first. Process context.
    pub(crate) fn rkp_ftrace_filter_ip(ip: c_ulong, remove: c_int, reset: c_int) -> c_int;

    /// `register_ftrace_function()` of rkprobes' ftrace_ops, whose callback
    /// gets `core` (the ops' `private`). Process context.
    pub(crate) fn rkp_ftrace_register(core: *const c_void) -> c_int;

    /// `offsetof(struct ftrace_ops, private)`, checked at load against the
    /// offset the ftrace callback reads.
    pub(crate) static rkp_ftrace_ops_private_off: c_uint;

    /// `unregister_ftrace_function()` of rkprobes' ftrace_ops; idempotent,
    /// never fails. Process context.
    pub(crate) fn rkp_ftrace_unregister();
}
