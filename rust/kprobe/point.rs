// SPDX-License-Identifier: GPL-2.0

//! Probe points: one probed address and its client probes (the kernel's
//! aggregate kprobe), and the running of the clients' handlers.
//!
//! A point's client list is in registration order and runs through the
//! clients' own structures. Its links are published with release stores,
//! so that the hit path walks it lock-free; unregistration returns only
//! after a grace period. [`Batch`] and [`PointList`] chain points through
//! themselves, so that the writer can arm, disarm, list or free any number
//! of them without memory.
//!
//! Context: the handler-running functions ([`Point::run_pre_handlers`],
//! [`Point::run_post_handlers`], [`Point::run_fault_handlers`],
//! [`Point::missed`], [`Point::ran_boosted`]) are the hit path: int3, #DB or
//! fault context with interrupts off, or the ftrace callback or an optimized
//! probe's detour with preemption off; they may not
//! sleep, allocate or take locks. The rest is the writer's: process context
//! with `Core::reg` held.

use super::{blacklist::Reservation, client::Client, table::Chained};
use crate::abi::RkpKprobe;
use crate::{arch, ffi};
use core::{
    cell::Cell,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering},
};
use kernel::ffi::c_ulong;

// A client's link on its point's list is its own structure's (`Client::next`),
// as the kernel's `struct kprobe` is on its aggregate probe's list, so that a
// client costs rkprobes no memory. The links are published with release
// stores, so that the hit path walks the list lock-free. Unlinking a client
// only redirects its predecessor's link and leaves its own alone (the
// kernel's `list_del_rcu()`): a reader standing on it walks on.
// Unregistration returns only after a grace period, so the client's
// structure outlives every such reader.

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
/// `clients` is the head of a list of registered probes in registration
/// order, linked through their `rkp_next` (see [`Client::next`]), non-empty
/// while the point is in the table. `module` is the module
/// containing `addr` (null for vmlinux), only ever compared: as in the
/// kernel, a probe holds no reference on it, and the module notifier kills
/// the module's points when it goes (`Core::kill_module_points`). The
/// `Cell`s are the writer's, used only with the registration mutex held.
pub(crate) struct Point {
    /// The probed address.
    pub(crate) addr: usize,
    /// The start of the function containing it.
    pub(crate) func: usize,
    /// The architecture's copy of the instruction and how to run it.
    pub(crate) arch: arch::ArchInsn,
    clients: AtomicPtr<RkpKprobe>,
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
    /// Writer only: the optimizer found it can never be optimized.
    pub(super) opt_refused: Cell<bool>,
    /// Writer only: while queued or optimized, its region in the kernel's
    /// kprobe blacklist (see `Blacklist::reserve`).
    pub(super) reservation: Cell<Option<Reservation>>,
    pub(super) module: *mut ffi::module,
    /// Writer only: the next point of the batch being worked on.
    batch: Cell<*const Point>,
    in_batch: Cell<bool>,
    /// Writer only: which list of the registry holds the point
    /// (`Registry::points`, or `Registry::gone` once its code went), and its
    /// neighbours there, so that removing it costs O(1) and no memory.
    pub(super) listed: Cell<Listed>,
    prev: Cell<*mut Point>,
    next: Cell<*mut Point>,
    /// The probe table's links (`table::Chained`).
    chain: [AtomicPtr<Point>; 2],
}

// A point is a kmalloc-192 object: what it holds per probe is counted in
// Documentation/performance.rst ("Memory per probe").
const _: () = assert!(core::mem::size_of::<Point>() <= 192);

/// Which list of the registry holds a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Listed {
    /// In neither (being built, or removed).
    No,
    /// `Registry::points`.
    Live,
    /// `Registry::gone`.
    Gone,
}

// SAFETY: `addr` never changes, and `chain` is used by the table alone.
unsafe impl Chained for Point {
    #[inline(always)]
    fn key(&self) -> usize {
        self.addr
    }

    #[inline(always)]
    fn link(&self, parity: usize) -> &AtomicPtr<Self> {
        &self.chain[parity & 1]
    }
}

// SAFETY: a `Point` is shared between the writer (under `Core::reg`, which
// alone uses the `Cell`s) and lock-free readers on the hit path, which only
// read `addr`, `arch` and the published client list, and update counters
// atomically.
unsafe impl Sync for Point {}
// SAFETY: as above; a `Point` is freed by the writer after a grace period.
unsafe impl Send for Point {}

/// The client probes of a point, walked lock-free.
pub(super) struct ClientIter<'a> {
    next: Option<Client>,
    _point: core::marker::PhantomData<&'a Point>,
}

impl Iterator for ClientIter<'_> {
    type Item = Client;

    #[inline(always)]
    fn next(&mut self) -> Option<Client> {
        let c = self.next?;
        self.next = c.next();
        Some(c)
    }
}

impl Point {
    /// A point at `addr` in the function at `func`, in `module`, with no
    /// client yet, disarmed. Writer.
    pub(super) fn new(
        addr: usize,
        func: usize,
        arch: arch::ArchInsn,
        module: *mut ffi::module,
    ) -> Self {
        Self {
            addr,
            func,
            arch,
            clients: AtomicPtr::new(core::ptr::null_mut()),
            has_post: AtomicBool::new(false),
            armed: AtomicU8::new(ARMED_NO),
            was_boosted: AtomicBool::new(false),
            opt: AtomicU8::new(OptState::None as u8),
            optinsn: arch::OptInsn::new(),
            opt_refused: Cell::new(false),
            reservation: Cell::new(None),
            module,
            batch: Cell::new(core::ptr::null()),
            in_batch: Cell::new(false),
            listed: Cell::new(Listed::No),
            prev: Cell::new(core::ptr::null_mut()),
            next: Cell::new(core::ptr::null_mut()),
            chain: [
                AtomicPtr::new(core::ptr::null_mut()),
                AtomicPtr::new(core::ptr::null_mut()),
            ],
        }
    }

    /// The clients. Hit path or writer; the caller is in an RCU read-side
    /// critical section or holds `Core::reg`.
    pub(super) fn clients(&self) -> ClientIter<'_> {
        // SAFETY: only clients are linked (`append`), and a linked client
        // stays valid for the walker's RCU read-side critical section or the
        // writer's mutex (the type invariant of `Point`).
        let first = unsafe { Client::from_raw(self.clients.load(Ordering::Acquire)) };
        ClientIter {
            next: first,
            _point: core::marker::PhantomData,
        }
    }

    /// Runs the pre-handlers of the enabled clients, in registration order:
    /// false when one moved `ip` (returned non-zero), and the rest did not
    /// run. Whether a post-handler pass follows is [`Point::has_post`]'s,
    /// asked once, not a test per client.
    ///
    /// Hit context (int3 with interrupts off, ftrace or a detour with
    /// preemption off): may not sleep, allocate or take locks.
    #[inline(always)]
    pub(crate) fn run_pre_handlers(&self, regs: *mut ffi::pt_regs) -> bool {
        for c in self.clients() {
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

    /// Runs the post-handlers of the enabled clients. int3 context.
    pub(crate) fn run_post_handlers(&self, regs: *mut ffi::pt_regs, flags: c_ulong) {
        for c in self.clients() {
            c.run_post(regs, flags);
        }
    }

    /// Calls the fault handlers until one handles the fault. Exception context.
    pub(crate) fn run_fault_handlers(&self, regs: *mut ffi::pt_regs, trapnr: i32) -> bool {
        self.clients().any(|c| c.run_fault(regs, trapnr))
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

    /// Counts a hit whose handlers could not run. Exception context.
    pub(crate) fn missed(&self) {
        for c in self.clients() {
            c.inc_nmissed();
        }
    }

    /// Whether any client is enabled. Writer.
    pub(super) fn any_enabled(&self) -> bool {
        self.clients().any(|c| !c.is_disabled())
    }

    /// Whether no client is left: an unpublished point with no client is
    /// freed. Writer.
    pub(super) fn is_empty(&self) -> bool {
        self.clients.load(Ordering::Relaxed).is_null()
    }

    /// Appends `c`, published to the hit path at once. Writer.
    ///
    /// # Safety
    ///
    /// `c` is on no point's list, and stays valid until unlinked and a
    /// grace period has passed.
    pub(super) unsafe fn append(&self, c: Client) {
        // Not published yet.
        c.set_next(None);
        // Before the client is published (its link's release store, below).
        if c.has_post_handler() {
            self.has_post.store(true, Ordering::Relaxed);
        }
        match self.clients().last() {
            // Release: a reader that sees the client sees its link.
            Some(last) => last.set_next(Some(c)),
            None => self.clients.store(c.as_ptr(), Ordering::Release),
        }
    }

    /// Whether `c` is one of the clients. Writer.
    pub(super) fn has_client(&self, c: Client) -> bool {
        self.clients().any(|x| x == c)
    }

    /// Unlinks `c`, leaving its own link for readers standing on it. Writer;
    /// allocates nothing, cannot fail. Returns whether it was linked.
    pub(super) fn unlink(&self, c: Client) -> bool {
        let mut prev: Option<Client> = None;
        for x in self.clients() {
            if x != c {
                prev = Some(x);
                continue;
            }
            let next = c.next();
            match prev {
                Some(p) => p.set_next(next),
                None => self.clients.store(
                    next.map_or(core::ptr::null_mut(), Client::as_ptr),
                    Ordering::Release,
                ),
            }
            // A hit that ran the client's pre-handler may still read the old
            // value, or the new one and skip its post-handler: the race of
            // the kernel's aggregate probe, whose `post_handler` is cleared
            // the same way while a client leaves. Unregistration waits for
            // such hits to end.
            let post = self.clients().any(|x| x.has_post_handler());
            self.has_post.store(post, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// Points chained through their own `batch` links, so that arming,
/// disarming or freeing any number of them needs no memory. Writer: the
/// registration mutex is held for the batch's whole life.
pub(super) struct Batch {
    head: *const Point,
}

impl Batch {
    /// An empty batch.
    pub(super) fn new() -> Self {
        Self {
            head: core::ptr::null(),
        }
    }

    /// Adds `p` unless it is already in the batch.
    pub(super) fn add(&mut self, p: &Point) {
        if !p.in_batch.replace(true) {
            p.batch.set(self.head);
            self.head = p;
        }
    }

    /// The points, most recently added first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Point> + '_ {
        let mut next = self.head;
        core::iter::from_fn(move || {
            // SAFETY: batched points are live while the batch exists (the
            // registration mutex is held, and they are freed only after
            // `take`).
            let p = unsafe { next.as_ref() }?;
            next = p.batch.get();
            Some(p)
        })
    }

    /// Ends the batch; returns its points, most recently added first.
    pub(super) fn take(mut self) -> impl Iterator<Item = *mut Point> {
        let mut next = core::mem::replace(&mut self.head, core::ptr::null());
        core::iter::from_fn(move || {
            // SAFETY: as in `iter`; each point is read before the caller may
            // free it.
            let p = unsafe { next.as_ref() }?;
            next = p.batch.replace(core::ptr::null());
            p.in_batch.set(false);
            Some(core::ptr::from_ref(p).cast_mut())
        })
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for p in self.iter() {
            p.in_batch.set(false);
        }
    }
}

/// A list of the registry (`Registry::points` or `Registry::gone`), linked
/// through the points themselves: adding and removing a point is O(1) and
/// needs no memory, so that neither registration at scale nor the module
/// notifier allocates per point. Writer: the registration mutex is held.
pub(super) struct PointList {
    head: *mut Point,
    tail: *mut Point,
    which: Listed,
}

impl PointList {
    /// An empty list of points that are `which`.
    pub(super) const fn new(which: Listed) -> Self {
        Self {
            head: core::ptr::null_mut(),
            tail: core::ptr::null_mut(),
            which,
        }
    }

    /// Adds `p`, on no list yet, at the end: the list is in the order the
    /// points were added.
    pub(super) fn push(&mut self, p: &Point) {
        let me = core::ptr::from_ref(p).cast_mut();
        p.prev.set(self.tail);
        p.next.set(core::ptr::null_mut());
        // SAFETY: listed points are live while the mutex is held.
        match unsafe { self.tail.as_ref() } {
            Some(t) => t.next.set(me),
            None => self.head = me,
        }
        self.tail = me;
        p.listed.set(self.which);
    }

    /// Takes `p`, which this list holds, off it.
    pub(super) fn remove(&mut self, p: &Point) {
        let prev = p.prev.replace(core::ptr::null_mut());
        let next = p.next.replace(core::ptr::null_mut());
        // SAFETY: listed points are live while the mutex is held.
        match unsafe { prev.as_ref() } {
            Some(q) => q.next.set(next),
            None => self.head = next,
        }
        // SAFETY: as above.
        match unsafe { next.as_ref() } {
            Some(q) => q.prev.set(prev),
            None => self.tail = prev,
        }
        p.listed.set(Listed::No);
    }

    /// The points, in the order they were added. The iterator reads a
    /// point's successor before yielding it, so that the caller may move
    /// the point it was given to another list.
    pub(super) fn iter(&self) -> impl Iterator<Item = *mut Point> {
        let mut next = self.head;
        core::iter::from_fn(move || {
            let p = next;
            // SAFETY: listed points are live while the mutex is held.
            next = unsafe { p.as_ref() }?.next.get();
            Some(p)
        })
    }
}
