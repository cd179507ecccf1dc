// SPDX-License-Identifier: GPL-2.0

//! The generic kprobe core, the counterpart of the kernel's
//! `kernel/kprobes.c`.
//!
//! It knows nothing of x86 encodings: preparing, arming and stepping an
//! instruction is the architecture's (`crate::arch`). This file holds the
//! probe core ([`Core`]): its state, its lifetime, and its die notifier and
//! ftrace entry, through which the architecture's hit path runs. The rest is
//! split as the kernel's file is sectioned:
//!
//! - `point`: a probe point (the kernel's aggregate kprobe), its client list,
//!   and the running of the clients' handlers on a hit;
//! - `address`: where a probe goes, and whether it may go there;
//! - `register`: registration, unregistration, enabling and arming;
//! - `gone`: the module notifier, which kills the points of unloaded code;
//! - `optimize`: the jump optimizer (the kernel's `kprobe_optimizer()`);
//! - `debugfs`: the `enabled`, `list`, `optimization`, `optimizer` and
//!   `text_sites` files;
//! - `table` (the lock-free address-to-point table), `slots` (out-of-line
//!   instruction slots), `blacklist`, `kretprobe` (return probes) and `abi`
//!   (the exported C ABI).
//!
//! Context: [`Core::new`] and the core's drop run in process context (module
//! init and exit); the die notifier and the ftrace callback
//! (`arch::ftrace`) are the hit path,
//! in exception context or the ftrace callback with preemption off, and may
//! not sleep, allocate or take locks; the accessors run in any context.
//!
//! # Lock order
//!
//! Every lock that rkprobes takes, and the kernel locks it takes or waits
//! on, outermost first. A lock is taken only with locks above it held, never
//! with one below it held. All in the table are sleeping mutexes, taken in
//! process context only. Nothing on the hit path (int3, #DB and fault
//! handling, the ftrace callback, the kretprobe pre-handler and trampoline)
//! takes or waits on any of them: it is lock-free (RCU, atomics and per-CPU
//! state).
//!
//! ```text
//!  1. Events::inner           rust/events/: kprobe_events writes, its module
//!                             notifier (module_coming), its debugfs files,
//!                             unload.
//!  2. event_mutex (kernel)    rust/events/, under 1, around the tracing core;
//!                             the tracing core holds it (and, when removing
//!                             a trace instance, trace_types_lock under it)
//!                             when it calls rkp_event_set_enabled().
//!  3. Kretprobes::pools       kretprobe/register.rs: register, unregister;
//!                             kretprobe/gc.rs: gc (the reclaim work), drain.
//!  4. Core::reg               register.rs, gone.rs, debugfs.rs, drop, and
//!                             the optimizer's work (optimize.rs).
//!  5. Under Core::reg, each alone: rkprobes never holds two of these
//!     together (the kernel takes 5d and 5e inside 5f).
//!     a. SlotCache's mutex    kernel_ext/slots.rs: alloc and free, from
//!                             arch::prepare and arch::prepare_optimized,
//!                             and when a point is freed; under it run only
//!                             execmem_alloc/free and set_memory_rox.
//!     b. kprobe_mutex         blacklist.rs, walking kprobe_blacklist, and
//!        (kernel)             adding and removing optimized probes'
//!                             regions there (Blacklist::reserve, release,
//!                             from optimize.rs); and
//!                             wait_for_kprobe_optimizer(), which also waits
//!                             for the optimizer worker, which takes
//!                             kprobe_mutex, cpus_read_lock, text_mutex.
//!     c. ftrace's locks       ftrace_set_filter_ip() and (un)register_
//!                             ftrace_function() (arch/x86/ftrace.rs, from
//!                             Core::set_armed): direct_mutex, regex_lock,
//!                             ftrace_lock, then text_mutex inside ftrace;
//!                             unregistering waits for a Tasks Rude RCU grace
//!                             period (cpus_read_lock, in its kthread).
//!     d. text_mutex (kernel)  TextGuard: arming and disarming int3 sites
//!                             (Core::set_armed), writing a slot
//!                             (SlotCache::write), the alternatives check
//!                             (arch::prepare, arch::prepare_optimized),
//!                             writing and removing optimized probes' jumps
//!                             (Core::optimize_pass, Core::unoptimize;
//!                             text_poke_finish() takes nothing more). No
//!                             lock of this table is taken under it.
//!     e. jump_label_lock      kprobe/sites.rs: reading the jump-label
//!        (kernel)             and static-call sites (TextSites::new, at
//!                             load, with no lock of rkprobes held;
//!                             TextSites::reserved from check_address_safe
//!                             and the optimizer's region check; the
//!                             text_sites file's checks). Only the kernel's
//!                             __module_text_address()/try_module_get()
//!                             and its reserved-text checks run under it.
//!                             The kernel takes text_mutex under it, so it
//!                             is never taken with text_mutex held.
//!     f. rkp_pf_mutex         the page-fault hook (arch/x86/page_fault.c):
//!                             registered from arch::prepare, unregistered at
//!                             unload; under it run only the kernel's
//!                             tracepoint (un)registration (tracepoints_mutex,
//!                             and the tracepoint's regfunc, whose
//!                             static_branch_inc() takes cpus_read_lock,
//!                             jump_label_lock and text_mutex: 5d and 5e
//!                             nest inside it, so it is never taken with
//!                             either held) and tracepoint_synchronize_
//!                             unregister().
//! ```
//!
//! The pairs, as the code takes them:
//!
//! - 1 -> 2: events' `create`, `delete`, `module_coming` and `destroy*`, and
//!   `rkp_tev_create()` and `rkp_tev_name_in_use()`, which take it themselves.
//! - 1 -> 2 -> 3 -> 4 and 1 -> 2 -> 4: `module_coming` registers an
//!   event's probes for a coming module under `event_mutex`, as the kernel's
//!   trace_kprobe_module_callback() does (and 2 -> 5b: `register_many`
//!   waits for the kernel's optimizer, as the kernel registers under it).
//! - 1 -> 3 -> 4: an event's kretprobe is (un)registered with `inner` held;
//!   `Kretprobes::register`/`unregister` call `Core::register_many`/
//!   `unregister_many` with `pools` held. 1 -> 4: an event's kprobe.
//!   1 -> 5b and 3 -> 5b: `register_many` waits for the kernel's optimizer
//!   before it takes `Core::reg`.
//! - 2 -> 4: `Core::set_enabled`, from `rkp_event_set_enabled()` and from
//!   events' `create` and `module_coming` under `event_mutex`.
//! - 2 and 3: never nested (`set_enabled` does not touch the pools).
//! - 4 -> 5a: `arch::prepare` allocates a slot (`new_point`);
//!   `free_removed` frees one.
//! - 4 -> 5b: `Blacklist::contains` in `check_address_safe` and
//!   `blacklisted_origin`; `wait_for_kprobe_optimizer()` in `set_armed`.
//!   The kernel's order, `kprobe_mutex` -> `text_mutex`, is its own:
//!   rkprobes never holds `text_mutex` when it takes or waits on
//!   `kprobe_mutex`, and takes nothing under `kprobe_mutex`.
//! - 4 -> 5c: `set_armed` handles ftrace sites after it has dropped its
//!   `TextGuard`: ftrace takes `text_mutex` itself.
//! - 4 -> 5d: `set_armed`, and `arch::prepare` (from `new_point`).
//! - 4 -> 5f: `arch::prepare` (from `new_point`), for an instruction with an
//!   exception-table entry, after its `TextGuard` is dropped.
//! - The optimizer's work (`optimize_pass`, run by a delayed work of
//!   `kernel_ext/work.c`) takes 4, then 5a (`arch::prepare_optimized` allocates and
//!   writes a detour: the slot cache, then `text_mutex`, never nested) and
//!   5d; it waits for Tasks RCU under 4 only. It is queued (never waited
//!   for) under 4, and cancelled with no lock held, at unload
//!   (`stop_optimizer`). `unoptimize` takes 5d under 4, from `set_armed`,
//!   `register_one` and the `optimization` file, then, after it, 5b (the
//!   blacklist reservations); `try_queue` takes 5a, 5d, then 5b, one at a
//!   time.
//! - 5a and 5d: never nested. `SlotCache::write` takes `text_mutex` after
//!   `SlotCache::alloc` has released the cache's mutex.
//! - `module_mutex`: never taken by the core. The module loader calls module
//!   notifiers without it (6.12's `kernel/module/main.c`), under the chain's
//!   read lock: -> 4 (`gone.rs`), -> 1 (events). Events take it under 1
//!   (`module_kallsyms_on_each_symbol()` while parsing).
//! - `cpus_read_lock`: taken by rkprobes only at load, with no lock of its
//!   own held, inside `static_call_update()` (`ffi::kcalls`), which takes
//!   it, then `static_call_mutex`, then `text_mutex`; waited on under 4
//!   (5b, 5c), so no CPU hotplug callback may take `Core::reg` (rkprobes
//!   has none).
//! - Grace periods: `synchronize_rcu()` and `synchronize_rcu_tasks()` are
//!   waited for under 4, `synchronize_rcu()` under 3. The kretprobe reclaim
//!   work takes 3, so it is flushed with no lock held (`Kretprobes::drain`).
//! - `seq_file`'s lock is outside: the debugfs files take 4 (`list`,
//!   `enabled`, `optimization`), 5b (`blacklist`) or 1 (events' files)
//!   under it.

pub(crate) mod abi;
pub(crate) mod blacklist;
pub(crate) mod kretprobe;
pub(crate) mod table;

mod address;
pub(crate) mod client;
mod debugfs;
mod gone;
mod hooks;
mod optimize;
mod point;
mod register;
mod sites;

pub(crate) use debugfs::{EnabledFile, ListFile, OptimizationFile, OptimizerFile, TextSitesFile};
use point::Reg;
pub(crate) use point::{OptState, Point, Registry};

use crate::{
    arch,
    ffi::{kallsyms::Kallsyms, runtime::Runtime},
    kernel_ext::{
        list::ReadSection,
        notifier::{DieChain, ModuleChain, Notifier},
        slots::SlotCache,
        sync::PreemptGuard,
    },
};
use blacklist::Blacklist;
use core::{pin::Pin, sync::atomic::AtomicUsize};
use kernel::{prelude::*, sync::Mutex};
use register::Removal;
use sites::TextSites;
use table::Table;

/// The cache of the architecture's out-of-line slots.
pub(crate) type Slots = SlotCache<{ arch::SLOT_SIZE }>;

/// The probe core: module-wide state.
#[pin_data(PinnedDrop)]
pub(crate) struct Core {
    #[pin]
    reg: Mutex<Reg>,
    table: Table<Point>,
    #[pin]
    slots: Slots,
    /// How many points have their jump in the text: while none has,
    /// reading original text needs no search for jumps.
    nr_optimized: AtomicUsize,
    rt: Runtime,
    ksyms: Kallsyms,
    blacklist: Blacklist,
    /// The jump-label and static-call sites no probe may be placed on.
    sites: TextSites,
    /// Return probes' pools.
    #[pin]
    kretprobes: kretprobe::Kretprobes,
    /// The die notifier, through which the architecture's int3 and fault
    /// handlers run (the kernel's `kprobe_exceptions_nb`).
    #[pin]
    die_nb: Notifier<DieChain, Core>,
    /// The module notifier, which kills the points of unloaded code.
    #[pin]
    module_nb: Notifier<ModuleChain, Core>,
}

impl Core {
    /// The symbol lookups.
    pub(crate) fn ksyms(&self) -> &Kallsyms {
        &self.ksyms
    }

    /// The blacklist, for debugfs.
    pub(crate) fn blacklist(&self) -> &Blacklist {
        &self.blacklist
    }

    /// The kernel functions found at run time.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The jump-label and static-call sites.
    pub(crate) fn sites(&self) -> &TextSites {
        &self.sites
    }

    /// The return probes.
    pub(crate) fn kretprobes(&self) -> &kretprobe::Kretprobes {
        &self.kretprobes
    }

    /// The slot cache.
    pub(crate) fn slots(&self) -> &Slots {
        &self.slots
    }

    /// The point at `addr`, for as long as the read section `rcu` lasts.
    /// Any context; the hit path's.
    #[inline(always)]
    pub(crate) fn lookup<'a, G: ReadSection>(
        &'a self,
        rcu: &'a G,
        addr: usize,
    ) -> Option<&'a Point> {
        self.table.lookup(rcu, addr)
    }

    /// Whether `p` is the point published at its address. Any context.
    pub(crate) fn is_published(&self, p: &Point) -> bool {
        let rcu = PreemptGuard::new();
        self.table
            .lookup(&rcu, p.addr())
            .is_some_and(|q| core::ptr::eq(q, p))
    }

    /// Whether a point is published at `addr`. Any context.
    pub(crate) fn has_point(&self, addr: usize) -> bool {
        let rcu = PreemptGuard::new();
        self.table.lookup(&rcu, addr).is_some()
    }
}

#[pinned_drop]
impl PinnedDrop for Core {
    fn drop(self: Pin<&mut Self>) {
        abi::unpublish();
        // Returns when no notification runs.
        self.module_nb.unregister();
        // Returns when no optimizer pass runs, and none is queued again.
        self.stop_optimizer();
        // Client modules depend on rkprobes, so none is loaded now; probes of
        // the events interface are gone with it. Whatever is left is removed
        // so that the original bytes are back before the module's text goes.
        {
            let mut locked = self.reg.lock();
            let Reg { points, reg } = &mut *locked;
            let mut removal = Removal::new();
            let mut left = 0usize;
            // Unlinking a client leaves its link for the walk, and its point
            // where it is until `finish_removal`. The walk is a reader's: the
            // unlinks need the registry exclusively.
            for p in points.all() {
                let rcu = PreemptGuard::new();
                for kp in p.clients(&rcu) {
                    self.unlink_client(points, reg, &mut removal, kp);
                    left += 1;
                }
            }
            if left > 0 {
                pr_warn!("{} probes still registered at unload; removed them\n", left);
            }
            let removed = self.finish_removal(points, reg, removal);
            self.free_removed(points, reg, removed);
        }
        // Zombie kretprobe pools hold rkprobes loaded, so none is left with
        // frames out unless a probe of rkprobes' own was just removed.
        self.kretprobes.drain(&self.rt);
        // No copy runs any more: returns when no CPU runs the page fault
        // hook.
        self.unhook_page_faults();
        // Every probe is disarmed: returns when no CPU runs the handler.
        self.die_nb.unregister();
    }
}
