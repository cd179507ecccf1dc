// SPDX-License-Identifier: GPL-2.0

//! [`Kprobe`]: a pinned probe whose handlers implement [`KprobeHandler`].
//! Its trampolines run in int3 context with interrupts off, or, at a
//! function's ftrace site and once the probe is optimized into a jump, in
//! the context of the probed code with preemption off; the rest in process
//! context.

use super::{
    abi::RkpKprobe,
    batch::{register_batch, register_single, set_enabled_raw, unregister_batch, Batch},
    raw::*,
    Action, Regs, Target,
};
use core::marker::PhantomPinned;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong},
    prelude::*,
    types::Opaque,
};

/// The handlers of a probe. They run in int3 exception context with
/// interrupts off, or, at a function's ftrace site (through ftrace, as the
/// kernel's kprobes there) and when the probe is optimized (a probe without
/// a post-handler, a few milliseconds after registration, as the kernel's
/// optprobes), in the context of the probed code with preemption off and
/// interrupts as that code had them (usually on): they must not sleep,
/// allocate with `GFP_KERNEL`, or take locks the probed code may hold, and
/// must not assume that interrupts are off.
///
/// A `#[vtable]` trait, as the kernel crate's: the implementation is marked
/// `#[vtable]` too, which sets `HAS_POST` and `HAS_FAULT` for the handlers
/// it defines, so that none is dropped by a forgotten flag.
#[vtable]
pub trait KprobeHandler: Sync {
    /// Before the probed instruction. In an optimized probe, as in the
    /// kernel's, a change of `ip` is ignored, whatever the handler returns:
    /// a handler that changes the execution path (fault injection) must
    /// keep its probe from being optimized, by setting `HAS_POST` to true
    /// itself (as the kernel's `fail_function` adds a dummy post-handler).
    fn pre(&self, _probe: &ProbeInfo, _regs: &mut Regs) -> Action {
        Action::Continue
    }

    /// After the probed instruction ran out of line. A probe whose handler
    /// has no `post` (`HAS_POST` false) runs more cheaply and can be
    /// optimized into a jump.
    fn post(&self, _probe: &ProbeInfo, _regs: &mut Regs, _flags: u64) {}

    /// A fault (`trapnr`, the x86 trap number) was reported while this CPU
    /// ran the probe's handlers or its single-step; see
    /// Documentation/kprobes-api.rst for which faults reach it. Returning
    /// `true` means the handler dealt with it (for instance by moving `ip`
    /// past the faulting instruction) and the kernel must not.
    fn fault(&self, _probe: &ProbeInfo, _regs: &mut Regs, _trapnr: i32) -> bool {
        false
    }
}

/// What a handler may know of its probe.
pub struct ProbeInfo {
    addr: usize,
}

impl ProbeInfo {
    /// The probed address.
    pub fn addr(&self) -> usize {
        self.addr
    }
}

/// A probe. Create it pinned with [`Kprobe::new`], then [`Kprobe::register`];
/// dropping it unregisters it.
///
/// # Invariants
///
/// `raw` is registered with rkprobes iff `registered`; while it is, `self`
/// does not move (it is pinned) and `handler` is valid.
#[pin_data(PinnedDrop)]
pub struct Kprobe<H: KprobeHandler> {
    #[pin]
    raw: Opaque<RkpKprobe>,
    handler: H,
    registered: bool,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: rkprobes calls the handlers on any CPU; `H: Sync` allows that, and
// the raw probe is only changed by rkprobes through its own synchronisation.
unsafe impl<H: KprobeHandler> Sync for Kprobe<H> {}
// SAFETY: as above.
unsafe impl<H: KprobeHandler + Send> Send for Kprobe<H> {}

impl<H: KprobeHandler> Kprobe<H> {
    /// A probe at `target`, not registered yet.
    pub fn new(target: Target, handler: H) -> impl PinInit<Self> {
        let kp = target.raw_kprobe();
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |p: *mut RkpKprobe| {
                // SAFETY: `p` is valid for writes during initialisation.
                unsafe {
                    p.write(RkpKprobe {
                        pre_handler: Some(Self::pre_tramp),
                        post_handler: if H::HAS_POST { Some(Self::post_tramp) } else { None },
                        fault_handler: if H::HAS_FAULT { Some(Self::fault_tramp) } else { None },
                        ..kp
                    })
                };
            }),
            handler,
            registered: false,
            _pin: PhantomPinned,
        })
    }

    /// Registers the probe. Process context, may sleep.
    pub fn register(self: Pin<&mut Self>) -> Result {
        register_single(self)
    }

    /// The probed address, once registered.
    pub fn addr(&self) -> usize {
        // SAFETY: rkprobes writes `addr` only during registration.
        unsafe { (*self.raw.get()).addr as usize }
    }

    /// The raw `struct rkp_kprobe`, for code that calls the C ABI directly.
    pub fn raw_ptr(&self) -> *mut RkpKprobe {
        self.raw.get()
    }

    /// Hits whose handlers could not run.
    pub fn nmissed(&self) -> u64 {
        // SAFETY: an aligned word that rkprobes updates atomically.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.raw.get()).nmissed)) as u64 }
    }

    /// Enables or disables the registered probe. Process context.
    pub fn set_enabled(&self, on: bool) -> Result {
        set_enabled_raw(self.raw.get(), on)
    }

    /// Whether the probe is optimized (`RKP_FLAG_OPTIMIZED`): hits reach it
    /// through a jump into a detour buffer instead of an int3.
    pub fn is_optimized(&self) -> bool {
        // SAFETY: an aligned word that rkprobes updates atomically.
        let f = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.raw.get()).flags)) };
        f & super::abi::flags::OPTIMIZED != 0
    }

    /// The `Kprobe` containing `kp`.
    ///
    /// # Safety
    ///
    /// `kp` is the `raw` field of a live `Kprobe<H>`.
    unsafe fn from_raw<'a>(kp: *mut RkpKprobe) -> &'a Self {
        // SAFETY: `Opaque<T>` has the layout of `T`, so `kp` is the address of
        // the `raw` field.
        unsafe { &*kernel::container_of!(kp, Self, raw) }
    }

    /// The `pre_handler` given to rkprobes. int3 context.
    ///
    /// # Safety
    ///
    /// Called by rkprobes with this probe's `raw` field and the live registers.
    unsafe extern "C" fn pre_tramp(kp: *mut RkpKprobe, regs: *mut bindings::pt_regs) -> c_int {
        // SAFETY: rkprobes passes the registered probe, which is a `raw` field.
        let this = unsafe { Self::from_raw(kp) };
        let info = ProbeInfo { addr: this.addr() };
        // SAFETY: `Regs` is a transparent wrapper of the live `pt_regs`.
        let regs = unsafe { &mut *regs.cast::<Regs>() };
        match this.handler.pre(&info, regs) {
            Action::Continue => 0,
            Action::Skip => 1,
        }
    }

    /// The `post_handler` given to rkprobes. int3 context.
    ///
    /// # Safety
    ///
    /// As for `pre_tramp`.
    unsafe extern "C" fn post_tramp(
        kp: *mut RkpKprobe,
        regs: *mut bindings::pt_regs,
        flags: c_ulong,
    ) {
        // SAFETY: as in `pre_tramp`.
        let this = unsafe { Self::from_raw(kp) };
        let info = ProbeInfo { addr: this.addr() };
        // SAFETY: as in `pre_tramp`.
        let regs = unsafe { &mut *regs.cast::<Regs>() };
        this.handler.post(&info, regs, flags as u64);
    }

    /// The `fault_handler` given to rkprobes. Exception context.
    ///
    /// # Safety
    ///
    /// As for `pre_tramp`.
    unsafe extern "C" fn fault_tramp(
        kp: *mut RkpKprobe,
        regs: *mut bindings::pt_regs,
        trapnr: c_int,
    ) -> c_int {
        // SAFETY: as in `pre_tramp`.
        let this = unsafe { Self::from_raw(kp) };
        let info = ProbeInfo { addr: this.addr() };
        // SAFETY: as in `pre_tramp`.
        let regs = unsafe { &mut *regs.cast::<Regs>() };
        c_int::from(this.handler.fault(&info, regs, trapnr))
    }
}

#[pinned_drop]
impl<H: KprobeHandler> PinnedDrop for Kprobe<H> {
    fn drop(self: Pin<&mut Self>) {
        if self.registered {
            // SAFETY: registered (type invariant); returns when no CPU runs
            // the handlers any more, so `handler` may be dropped after it.
            unsafe { rkp_unregister_kprobe(self.raw.get()) };
        }
    }
}

impl<H: KprobeHandler> Batch for Kprobe<H> {
    type Raw = RkpKprobe;
    const REGISTER_ONE: unsafe extern "C" fn(*mut RkpKprobe) -> c_int = rkp_register_kprobe;
    const REGISTER: unsafe extern "C" fn(*mut *mut RkpKprobe, c_int) -> c_int =
        rkp_register_kprobes;
    const UNREGISTER: unsafe extern "C" fn(*mut *mut RkpKprobe, c_int) = rkp_unregister_kprobes;

    fn raw(&self) -> *mut RkpKprobe {
        self.raw.get()
    }

    fn is_registered(&self) -> bool {
        self.registered
    }

    unsafe fn set_registered(self: Pin<&mut Self>, on: bool) {
        // SAFETY: the flag is not structurally pinned; nothing moves.
        // INVARIANT: the caller's contract.
        unsafe { self.get_unchecked_mut() }.registered = on;
    }
}

/// Registers probes all or nothing, with one text synchronisation for the
/// batch (`rkp_register_kprobes`). Process context, may sleep.
pub fn register_kprobes<H: KprobeHandler>(probes: &mut [Pin<&mut Kprobe<H>>]) -> Result {
    register_batch(probes)
}

/// Unregisters probes registered by [`register_kprobes`] or one by one, with
/// one grace period for the batch. Process context, may sleep.
pub fn unregister_kprobes<H: KprobeHandler>(probes: &mut [Pin<&mut Kprobe<H>>]) -> Result {
    unregister_batch(probes)
}
