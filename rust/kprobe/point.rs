// SPDX-License-Identifier: GPL-2.0

//! Probe points: one probed address and its client probes (the kernel's
//! aggregate kprobe), and the running of the clients' handlers.
//!
//! A point's client list is in registration order and runs through the
//! clients' own structures (a `ClientChain`, `client.rs`), which the hit
//! path walks lock-free in its read section; unregistration returns only
//! after a grace period. A point's memory is its owner's ([`Points`], in
//! `point/registry.rs`), whose lists and a [`Batch`] chain points through
//! themselves, so that the writer can arm, disarm, list or free any number
//! of them without memory. All of them are `kernel_ext::list`'s lists.
//!
//! The writer's state of a point (what the optimizer decided, its
//! function, its detour's writer's half) is kept by its client chain for
//! the [`Registry`], which owns both: it is reached only with the
//! registration mutex's guard.
//!
//! Context: the handler-running functions ([`Point::run_pre_handlers`],
//! [`Point::run_post_handlers`], [`Point::run_fault_handlers`],
//! [`Point::missed`], [`Point::ran_boosted`]) are the hit path: int3, #DB or
//! fault context with interrupts off, or the ftrace callback or an optimized
//! probe's detour with preemption off, which the [`Rcu`] they take states;
//! they may not sleep, allocate or take locks. The rest is the writer's:
//! process context with `Core::reg` held.

use super::{
    blacklist::Reservation,
    client::{Client, ClientChain, Clients},
    table::{ChainLinks, Chained},
    Core,
};
use crate::kernel_ext::{
    list::{Link, Linked, Links, ReadSection},
    module::ModuleId,
    owned::Tag,
    sync::{PreemptGuard, Rcu},
};
use crate::{arch, ffi, impl_chained, impl_linked, impl_tagged};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use kernel::ffi::c_ulong;
use kernel::prelude::*;

mod registry;
pub(crate) use registry::{Batch, Points};
pub(crate) use registry::{Reg, Registry};

/// Where a point is in jump optimization (`rust/kprobe/optimize.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OptState {
    /// An int3 (or ftrace) probe.
    None = 0,
    /// Its detour is in use: int3 hits run the region from there while the
    /// optimizer waits to write the jump.
    Queued = 1,
    /// The jump into its detour is in the text (or being taken out: int3
    /// hits still run the region from the detour until it is).
    Optimized = 2,
}

/// [`Point`]'s arming states.
const ARMED_NO: u8 = 0;
/// Its int3, or the optimizer's jump, is in the text.
const ARMED_TEXT: u8 = 1;
/// Its ftrace site is in rkprobes' ftrace filter, with the ops registered.
const ARMED_FTRACE: u8 = 2;

/// One probed address and every probe registered there.
///
/// # Invariants
///
/// `clients` holds the registered probes in registration order, non-empty
/// while the point is in the table, and the point's writer's state; both
/// are changed through `&mut` of the registry named at creation. `module`
/// is the module containing `addr` (`ModuleId::VMLINUX` for vmlinux), only
/// ever compared: as in the kernel, a probe holds no reference on it, and
/// the module notifier kills the module's points when it goes
/// (`Core::kill_module_points`). `arch` was prepared by the architecture
/// for the instruction at `addr` (`arch::prepare`), and neither changes.
pub(crate) struct Point {
    /// The probed address.
    addr: usize,
    /// The architecture's copy of the instruction and how to run it.
    arch: arch::ArchInsn,
    /// The clients, and the writer's state.
    clients: ClientChain<PointW, Registry>,
    /// Some client has a post-handler (the kernel's aggregate probe has
    /// `aggr_post_handler` then): set before such a client is published,
    /// recomputed when one is unlinked (the kernel clears its aggregate's
    /// the same way, while the client may still be running). Read by the
    /// hit paths, which so need not test each client's.
    has_post: AtomicBool,
    /// `ARMED_*`: the point's int3 (or jump) is in the text, or ftrace calls
    /// rkprobes at its site. Written by the writer, read by the hit paths.
    armed: AtomicU8,
    /// A copy ran with interrupts on at some time (boosted, or the region
    /// from the detour): a task may be preempted inside the slot or the
    /// detour, so freeing them waits for Tasks RCU.
    pub(super) was_boosted: AtomicBool,
    /// An [`OptState`]; changed by the writer, read by the hit path.
    opt: AtomicU8,
    /// The detour of an optimized probe, once prepared.
    pub(crate) optinsn: arch::OptInsn,
    pub(super) module: ModuleId,
    /// The point's links on the lists of its owner ([`Points`]: the live
    /// points, those of unloaded code, those to free), so that moving it
    /// costs O(1) and no memory, and which of them holds it.
    reg_links: Links<Point>,
    reg_tag: Tag,
    /// Its link on the [`Batch`] being worked on.
    batch_link: Link<Point>,
    /// The probe table's links (`table::Chained`).
    chain: ChainLinks<Point>,
}

// A point is a kmalloc-192 object: what it holds per probe is counted in
// Documentation/performance.rst ("Memory per probe").
const _: () = assert!(core::mem::size_of::<Point>() <= 192);

/// The lists of the registry.
const REG_LIST: u64 = 0;
/// A [`Batch`].
const BATCH_LIST: u64 = 1;
impl_linked!(Point, REG_LIST, reg_links);
impl_tagged!(Point, REG_LIST, reg_tag);
impl_linked!(Point, BATCH_LIST, batch_link);

/// What only the writer of a point reads and writes: the [`Registry`]'s.
pub(super) struct PointW {
    /// How far into its function the address is: the function starts at
    /// `addr - func_off` ([`Point::func`]). Here, where the writer's state's
    /// padding has room for it, as only the writer asks.
    func_off: u32,
    /// The optimizer found the point can never be optimized.
    pub(super) opt_refused: bool,
    /// While queued or optimized, its region in the kernel's kprobe
    /// blacklist (see `Blacklist::reserve`).
    pub(super) reservation: Option<Reservation>,
    /// The writer's half of the detour of an optimized probe.
    pub(super) opt: arch::OptW,
}

impl_chained!(Point, addr, chain);

impl Point {
    /// A point at `addr` in the function at `func` (through ftrace if
    /// `ftrace`), in `module`, with no client yet, disarmed, whose writer's
    /// state `reg` owns: its instruction prepared there by the architecture
    /// (`arch::prepare`, which may allocate a slot; [`arch::release`] frees
    /// it). Writer, may sleep.
    pub(super) fn prepare(
        core: &Core,
        reg: &Registry,
        addr: usize,
        func: usize,
        ftrace: bool,
        module: ModuleId,
    ) -> Result<Self> {
        let arch = arch::prepare(core, reg, addr, func, ftrace)?;
        // INVARIANT: `arch` was prepared for `addr`.
        Ok(Self {
            addr,
            arch,
            clients: ClientChain::new(
                reg,
                PointW {
                    // A function's length fits in 32 bits (`Target` takes it
                    // from kallsyms).
                    func_off: (addr - func) as u32,
                    opt_refused: false,
                    reservation: None,
                    opt: arch::OptW::new(),
                },
            ),
            has_post: AtomicBool::new(false),
            armed: AtomicU8::new(ARMED_NO),
            was_boosted: AtomicBool::new(false),
            opt: AtomicU8::new(OptState::None as u8),
            optinsn: arch::OptInsn::new(),
            module,
            reg_links: Links::new(),
            reg_tag: Tag::new(),
            batch_link: Link::new(),
            chain: ChainLinks::new(),
        })
    }

    /// The probed address.
    #[inline(always)]
    pub(crate) fn addr(&self) -> usize {
        self.addr
    }

    /// The architecture's copy of the instruction at [`Point::addr`] and how
    /// to run it.
    #[inline(always)]
    pub(crate) fn arch(&self) -> &arch::ArchInsn {
        &self.arch
    }

    /// The start of the function containing the probed address. `reg` is
    /// the registration mutex's guard.
    pub(crate) fn func(&self, reg: &Registry) -> usize {
        self.addr - self.w(reg).func_off as usize
    }

    /// The writer's state, to read. `reg` is the registration mutex's
    /// guard.
    pub(super) fn w<'a>(&'a self, reg: &'a Registry) -> &'a PointW {
        self.clients.state(reg)
    }

    /// The writer's state, to change. `reg` is the registration mutex's
    /// guard.
    pub(super) fn w_mut<'a>(&'a self, reg: &'a mut Registry) -> &'a mut PointW {
        self.clients.state_mut(reg)
    }

    /// The writer's half of the point's detour, to read. `reg` is the
    /// registration mutex's guard.
    pub(crate) fn opt_w<'a>(&'a self, reg: &'a Registry) -> &'a arch::OptW {
        &self.clients.state(reg).opt
    }

    /// The writer's half of the point's detour, to change. `reg` is the
    /// registration mutex's guard.
    pub(crate) fn opt_w_mut<'a>(&'a self, reg: &'a mut Registry) -> &'a mut arch::OptW {
        &mut self.clients.state_mut(reg).opt
    }

    /// The clients, for a reader in the read section `rcu`. Any context.
    #[inline(always)]
    pub(crate) fn clients<'a, G: ReadSection>(&'a self, rcu: &'a G) -> Clients<'a> {
        self.clients.iter(rcu)
    }

    /// The clients, for the writer. `reg` is the registration mutex's
    /// guard.
    pub(super) fn clients_w<'a>(&'a self, reg: &'a Registry) -> Clients<'a> {
        self.clients.iter_w(reg)
    }

    /// Runs the pre-handlers of the enabled clients, in registration order:
    /// false when one moved `ip` (returned non-zero), and the rest did not
    /// run. Whether a post-handler pass follows is [`Point::has_post`]'s,
    /// asked once, not a test per client.
    ///
    /// Hit context (int3 with interrupts off, ftrace or a detour with
    /// preemption off), in the read section `rcu`: may not sleep, allocate
    /// or take locks.
    #[inline(always)]
    pub(crate) fn run_pre_handlers(&self, rcu: Rcu<'_>, regs: *mut ffi::pt_regs) -> bool {
        for c in self.clients(&rcu) {
            if c.run_pre(regs) != 0 {
                return false;
            }
        }
        true
    }

    /// Whether some client, enabled or not, has a post-handler: the hit
    /// paths' post-handler pass, and a point that is never optimized. Any
    /// context.
    #[inline(always)]
    pub(crate) fn has_post(&self) -> bool {
        self.has_post.load(Ordering::Relaxed)
    }

    /// Runs the post-handlers of the enabled clients. Hit context, in the
    /// read section `rcu`.
    pub(crate) fn run_post_handlers(&self, rcu: Rcu<'_>, regs: *mut ffi::pt_regs, flags: c_ulong) {
        for c in self.clients(&rcu) {
            c.run_post(regs, flags);
        }
    }

    /// Calls the fault handlers until one handles the fault. Exception
    /// context, in the read section `rcu`.
    pub(crate) fn run_fault_handlers(
        &self,
        rcu: Rcu<'_>,
        regs: *mut ffi::pt_regs,
        trapnr: i32,
    ) -> bool {
        self.clients(&rcu).any(|c| c.run_fault(regs, trapnr))
    }

    /// Notes that a copy is about to run boosted. Hit path.
    pub(crate) fn ran_boosted(&self) {
        if !self.was_boosted.load(Ordering::Relaxed) {
            self.was_boosted.store(true, Ordering::Relaxed);
        }
    }

    /// Where the point is in jump optimization. Any context.
    pub(crate) fn opt_state(&self) -> OptState {
        match self.opt.load(Ordering::Acquire) {
            1 => OptState::Queued,
            2 => OptState::Optimized,
            _ => OptState::None,
        }
    }

    /// Whether the optimizer's jump is in the text, or being taken out
    /// ([`OptState::Optimized`]). Any context; exact with the registration
    /// mutex held, which the optimizer holds while it writes or removes the
    /// jump and records it.
    pub(crate) fn jump_in_text(&self) -> bool {
        self.opt_state() == OptState::Optimized
    }

    /// Moves the point to `s`. Writer. Release: a hit that sees a detour in
    /// use sees it written.
    pub(super) fn set_opt_state(&self, s: OptState) {
        self.opt.store(s as u8, Ordering::Release);
    }

    /// Where an int3 hit runs the probed region from, when the point's
    /// detour is in use (queued, optimized, or being unoptimized). Hit path.
    pub(crate) fn detour(&self) -> Option<usize> {
        if self.opt_state() == OptState::None {
            return None;
        }
        self.optinsn.copy()
    }

    /// Whether the point is armed: its int3 is in the text, or ftrace calls
    /// rkprobes at it. Any context.
    pub(crate) fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed) != ARMED_NO
    }

    /// Whether the point is an ftrace site's and ftrace calls rkprobes at
    /// it: one compare on the ftrace hit, where the kind and the state were
    /// two tests. Any context.
    #[inline(always)]
    pub(crate) fn is_ftrace_armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed) == ARMED_FTRACE
    }

    /// Records that the point was armed (`on`) or disarmed. Writer.
    pub(super) fn set_armed_state(&self, on: bool) {
        let v = match (on, self.arch.is_ftrace()) {
            (false, _) => ARMED_NO,
            (true, false) => ARMED_TEXT,
            (true, true) => ARMED_FTRACE,
        };
        self.armed.store(v, Ordering::Relaxed);
    }

    /// Counts a hit whose handlers could not run. Hit context, in the read
    /// section `rcu`.
    pub(crate) fn missed(&self, rcu: Rcu<'_>) {
        for c in self.clients(&rcu) {
            c.inc_nmissed();
        }
    }

    /// Whether any client is enabled. Any context.
    pub(super) fn any_enabled(&self) -> bool {
        let rcu = PreemptGuard::new();
        self.clients(&rcu).any(|c| !c.is_disabled())
    }

    /// Whether no client is left: an unpublished point with no client is
    /// freed. Writer.
    pub(super) fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Appends `c`, published to the hit path at once, with the point as
    /// its core's word (`rkp_private`); false, changing nothing, if `c` is
    /// registered already. `reg` is the registration mutex's guard.
    pub(super) fn append(&self, reg: &mut Registry, c: Client) -> bool {
        if !c.private().is_null() {
            return false;
        }
        // Before the client is published (the chain's release store).
        if c.has_post_handler() {
            self.has_post.store(true, Ordering::Relaxed);
        }
        self.clients.push_back(reg, c, NonNull::from(self).cast())
    }

    /// Whether `c` is one of the clients. Any context.
    pub(super) fn has_client(&self, c: Client) -> bool {
        let rcu = PreemptGuard::new();
        self.clients(&rcu).any(|x| x == c)
    }

    /// Unlinks `c`, leaving its own link for readers standing on it, and
    /// clears its core's word. `reg` is the registration mutex's guard;
    /// allocates nothing, cannot fail. Returns whether it was linked.
    pub(super) fn unlink(&self, reg: &mut Registry, c: Client) -> bool {
        if !self.clients.remove(reg, c) {
            return false;
        }
        // A hit that ran the client's pre-handler may still read the old
        // value, or the new one and skip its post-handler: the race of the
        // kernel's aggregate probe, whose `post_handler` is cleared the same
        // way while a client leaves. Unregistration waits for such hits to
        // end.
        let post = self.clients_w(reg).any(|x| x.has_post_handler());
        self.has_post.store(post, Ordering::Relaxed);
        true
    }
}
