// SPDX-License-Identifier: GPL-2.0

//! rkprobes' own C and assembly as Rust sees them: one `extern` block per
//! header, each mirroring its header's prototypes: `glue.h` (one-line
//! wrappers of inline kernel helpers, `glue.c`), the x86 half's C
//! (`../arch/x86/{ctl,trap_path,ftrace,page_fault}.h`), the deferred work
//! (`../kernel_ext/work.h`), the race windows of test builds
//! (`../kernel_ext/race.h`), and the trampolines'
//! (`../arch/x86/*_trampoline.S`), whose only use is their address. The
//! trace events' C (`../events/trace_event.h`) is in `trace_event.rs`.

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
};

// `glue.h`: wrappers of inline kernel helpers.
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

    /// `preempt_disable()`.
    pub(crate) fn rkp_preempt_disable();

    /// `preempt_enable()`.
    pub(crate) fn rkp_preempt_enable();

    /// `num_possible_cpus()`.
    pub(crate) fn rkp_num_possible_cpus() -> c_uint;

    /// `current`, without a reference: only compared. Read inline on the
    /// hit paths, checked against this at load.
    pub(crate) fn rkp_current_task() -> *mut c_void;

    /// `current->comm`, for `$comm`. Any context.
    pub(crate) fn rkp_current_comm() -> *const c_char;

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

    /// `list_add_tail_rcu()`. The caller holds the list's writer lock.
    pub(crate) fn rkp_list_add_tail_rcu(
        new: *mut bindings::list_head,
        head: *mut bindings::list_head,
    );

    /// `list_del_rcu()`: readers may still stand on `entry` until a grace
    /// period has passed. The caller holds the list's writer lock.
    pub(crate) fn rkp_list_del_rcu(entry: *mut bindings::list_head);
}

// `../arch/x86/ctl.h`: each CPU's probe state.
extern "C" {
    /// `rkp_ctl_area`, the per-CPU storage of each CPU's probe state;
    /// only its address is used, by `percpu::ctl_area` and by the
    /// `%gs`-relative accesses (`percpu::this_cpu!`) of
    /// `../arch/x86/ctl.rs`.
    pub(crate) static rkp_ctl_area: u8;

    /// The size of `rkp_ctl_area`, each CPU's probe state storage.
    pub(crate) static rkp_ctl_area_size: c_uint;

    /// `this_cpu_ptr(&rkp_ctl_area)`; the hit paths compute it inline
    /// (`percpu::ctl_area`), checked against this at load.
    pub(crate) fn rkp_ctl_area_this_cpu() -> *mut c_void;

    /// Zeroes every possible CPU's `rkp_ctl_area`. Process context.
    pub(crate) fn rkp_ctl_area_reset();

    /// `local_irq_disable()`: interrupts off, as lockdep and the irq
    /// tracepoints see it. Any context.
    pub(crate) fn rkp_local_irq_disable();

    /// `trace_hardirqs_on()`: tells lockdep and the irq tracepoints that
    /// interrupts are about to be on again, before a `popf` turns them on.
    /// Interrupts off.
    pub(crate) fn rkp_trace_hardirqs_on();
}

// `../arch/x86/trap_path.h`: rkprobes' own int3.
extern "C" {
    /// Executes the int3 at [`rkp_trap_path_site_addr`]; returns when a
    /// die notifier has taken it (`rust/arch/x86/trap_path.rs`).
    pub(crate) fn rkp_trap_path_int3();

    /// The address of the int3 of [`rkp_trap_path_int3`].
    pub(crate) fn rkp_trap_path_site_addr() -> c_ulong;
}

// `../arch/x86/page_fault.h`: the `page_fault_kernel` tracepoint's probe.
extern "C" {
    /// Registers `rkp_page_fault` on the `page_fault_kernel` tracepoint,
    /// once: 0, or the tracepoint's errno (`EOPNOTSUPP` without it).
    /// Process context; the caller serialises calls.
    pub(crate) fn rkp_page_fault_hook() -> c_int;

    /// Unregisters what `rkp_page_fault_hook` registered, if it did, and
    /// waits until no CPU runs it. Process context, at unload.
    pub(crate) fn rkp_page_fault_unhook();
}

// `../kernel_ext/race.h`: race windows, in test builds only.
#[cfg(rkp_race_windows)]
extern "C" {
    /// Waits the chosen time if `window` is the race window a test chose.
    /// Any context but NMI.
    pub(crate) fn rkp_race_window(window: c_uint);
}

// `../kernel_ext/work.h`: the probe core's deferred work.
extern "C" {
    /// Queues the jump optimizer in `delay` jiffies, unless it is queued
    /// already. Any context but NMI.
    pub(crate) fn rkp_kick_optimizer(delay: c_ulong);

    /// Cancels a queued optimizer and waits for a running one. Process
    /// context.
    pub(crate) fn rkp_optimizer_cancel();

    /// Queues the reclaim of kretprobe instances. Any context, NMI included.
    pub(crate) fn rkp_kick_gc();

    /// Queues the reclaim of kretprobe instances in a second. Any context
    /// but NMI.
    pub(crate) fn rkp_kick_gc_later();

    /// Waits until no reclaim is queued or running. Process context.
    pub(crate) fn rkp_gc_sync();

    /// Asks for the reclaim work after `budget` more tasks are created,
    /// watching forks from now on. Process context.
    pub(crate) fn rkp_fork_watch(budget: c_int) -> c_int;

    /// Stops watching forks. Process context.
    pub(crate) fn rkp_fork_unwatch();

    /// The number of tasks, counted. Process context.
    pub(crate) fn rkp_nr_tasks() -> c_int;
}

// The trampolines of `../arch/x86/*_trampoline.S`, which have no header.
extern "C" {
    /// The kretprobe return trampoline (`kretprobe_trampoline.S`). Not a
    /// function to call from Rust: only its address is used.
    pub(crate) fn rkp_kretprobe_trampoline();

    /// The register-saving trampoline of optimized probes
    /// (`optprobe_trampoline.S`), called by the detour buffers. Not a
    /// function to call from Rust: only its address is used.
    pub(crate) fn rkp_optprobe_trampoline();

    /// The trampoline that the detour of a point with post-handlers calls
    /// first, for the pre-handlers (`optprobe_trampoline.S`). Only its
    /// address is used.
    pub(crate) fn rkp_optprobe_entry_post_trampoline();

    /// The trampoline that the detour of a point with post-handlers calls
    /// after its first instruction (`optprobe_trampoline.S`). Only its
    /// address is used.
    pub(crate) fn rkp_optprobe_post_trampoline();
}

// `../arch/x86/ftrace.h`: rkprobes' ftrace_ops, built with
// `CONFIG_DYNAMIC_FTRACE_WITH_REGS`.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
extern "C" {
    /// `ftrace_set_filter_ip()` on rkprobes' ftrace_ops; `reset` empties the
    /// filter first. Process context.
    pub(crate) fn rkp_ftrace_filter_ip(ip: c_ulong, remove: c_int, reset: c_int) -> c_int;

    /// `ftrace_set_filter_ips()` on rkprobes' ftrace_ops: the `cnt` sites at
    /// `ips` in one change of the filter and the text. Process context.
    pub(crate) fn rkp_ftrace_filter_ips(
        ips: *mut c_ulong,
        cnt: c_uint,
        remove: c_int,
        reset: c_int,
    ) -> c_int;

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
