// SPDX-License-Identifier: GPL-2.0

//! [`Kretprobe`]: a pinned return probe whose handlers implement
//! [`KretprobeHandler`]. The entry trampoline runs in int3 context with
//! interrupts off (or, at an ftrace site and once the entry probe is
//! optimized into a jump, in the function's context with preemption off),
//! the return trampoline in the return trampoline's with preemption off;
//! the rest in process context.

use super::{
    abi::{RkpKretprobe, RkpKretprobeInstance},
    batch::{register_batch, register_single, set_enabled_raw, unregister_batch, Batch},
    raw::*,
    Regs, Target,
};
use core::marker::PhantomPinned;
use kernel::{bindings, ffi::c_int, prelude::*, types::Opaque};

/// The handlers of a return probe. `ret` runs with preemption off and
/// interrupts as the function returned with them; `entry` with interrupts
/// off, or, at an ftrace site and once the entry probe is optimized, with
/// preemption off and interrupts as the function had them. Neither may
/// sleep, allocate with `GFP_KERNEL`, or take locks the probed code may
/// hold.
///
/// A `#[vtable]` trait, as the kernel crate's: the implementation is marked
/// `#[vtable]` too, which sets `HAS_ENTRY` when it defines `entry`.
#[vtable]
pub trait KretprobeHandler: Sync {
    /// Per-call data, shared by `entry` and `ret` of one call. It starts as
    /// `Default::default()` at every call.
    type Data: Default + Copy;

    /// At the function's entry. Returning `false` means no return handler
    /// for this call. A kretprobe without one (and without `Data`) is
    /// cheaper.
    fn entry(&self, _data: &mut Self::Data, _regs: &Regs) -> bool {
        true
    }

    /// When the function returns: `regs.ax()` is its return value and
    /// `regs.ip()` where it returns to.
    fn ret(&self, info: &RetInfo, data: &mut Self::Data, regs: &mut Regs);
}

/// What a return handler may know of its call.
pub struct RetInfo {
    ret_addr: usize,
    fp: usize,
}

impl RetInfo {
    /// The address the function returns to.
    pub fn ret_addr(&self) -> usize {
        self.ret_addr
    }

    /// Where the return address was on the stack.
    pub fn frame(&self) -> usize {
        self.fp
    }
}

/// A return probe. Create it pinned with [`Kretprobe::new`], then
/// [`Kretprobe::register`]; dropping it unregisters it.
///
/// # Invariants
///
/// `raw` is registered with rkprobes iff `registered`; while it is, `self`
/// does not move and `handler` is valid.
#[pin_data(PinnedDrop)]
pub struct Kretprobe<H: KretprobeHandler> {
    #[pin]
    raw: Opaque<RkpKretprobe>,
    handler: H,
    registered: bool,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: as for `Kprobe`.
unsafe impl<H: KretprobeHandler> Sync for Kretprobe<H> {}
// SAFETY: as for `Kprobe`.
unsafe impl<H: KretprobeHandler + Send> Send for Kretprobe<H> {}

impl<H: KretprobeHandler> Kretprobe<H> {
    const DATA_OK: () = assert!(core::mem::align_of::<H::Data>() <= 8);

    /// A return probe on the function at `target` (offset 0) with `maxactive`
    /// instances (0: rkprobes' default), not registered yet.
    pub fn new(target: Target, maxactive: u32, handler: H) -> impl PinInit<Self> {
        let () = Self::DATA_OK;
        let kp = target.raw_kprobe();
        let entry = H::HAS_ENTRY || core::mem::size_of::<H::Data>() > 0;
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |p: *mut RkpKretprobe| {
                // SAFETY: `p` is valid for writes during initialisation.
                unsafe {
                    p.write(RkpKretprobe::new(
                        kp,
                        Some(Self::ret_tramp),
                        if entry { Some(Self::entry_tramp) } else { None },
                        maxactive.min(i32::MAX as u32) as i32,
                        core::mem::size_of::<H::Data>(),
                    ))
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
        unsafe { (*self.raw.get()).kp.addr as usize }
    }

    /// The number of instances (the effective `maxactive` once registered).
    pub fn maxactive(&self) -> u32 {
        // SAFETY: rkprobes writes it only during registration.
        unsafe { (*self.raw.get()).maxactive as u32 }
    }

    /// Calls that found no free instance.
    pub fn nmissed(&self) -> u64 {
        // SAFETY: an aligned `int` that rkprobes updates atomically.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.raw.get()).nmissed)) as u64 }
    }

    /// The raw `struct rkp_kretprobe`, for code that calls the C ABI directly.
    pub fn raw_ptr(&self) -> *mut RkpKretprobe {
        self.raw.get()
    }

    /// Enables or disables the registered probe. Process context.
    pub fn set_enabled(&self, on: bool) -> Result {
        // SAFETY: only the address of the embedded kprobe is taken.
        set_enabled_raw(unsafe { core::ptr::addr_of_mut!((*self.raw.get()).kp) }, on)
    }

    /// The instance's kretprobe, and its data.
    ///
    /// # Safety
    ///
    /// `ri` is an instance rkprobes passed to a handler of a `Kretprobe<H>`.
    unsafe fn parts<'a>(ri: *mut RkpKretprobeInstance) -> (&'a Self, &'a mut H::Data) {
        // SAFETY: the instance's `rp` is the `raw` field of a live
        // `Kretprobe<H>` while its handlers run; its data area has
        // `size_of::<H::Data>()` bytes, aligned to 8 (`DATA_OK`).
        unsafe {
            let rp = (*ri).rp;
            let this = &*kernel::container_of!(rp, Self, raw);
            let data = &mut *core::ptr::addr_of_mut!((*ri).data).cast::<H::Data>();
            (this, data)
        }
    }

    /// The `entry_handler` given to rkprobes. int3 context.
    ///
    /// # Safety
    ///
    /// Called by rkprobes with an instance of this probe and the registers.
    unsafe extern "C" fn entry_tramp(
        ri: *mut RkpKretprobeInstance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: rkprobes passes an instance of this probe.
        let (this, data) = unsafe { Self::parts(ri) };
        *data = H::Data::default();
        // SAFETY: `Regs` is a transparent wrapper of the live `pt_regs`.
        let regs = unsafe { &*regs.cast::<Regs>() };
        if this.handler.entry(data, regs) {
            0
        } else {
            1
        }
    }

    /// The return `handler` given to rkprobes. Trampoline context,
    /// preemption off.
    ///
    /// # Safety
    ///
    /// As for `entry_tramp`.
    unsafe extern "C" fn ret_tramp(
        ri: *mut RkpKretprobeInstance,
        regs: *mut bindings::pt_regs,
    ) -> c_int {
        // SAFETY: as in `entry_tramp`.
        let (this, data) = unsafe { Self::parts(ri) };
        // SAFETY: as in `entry_tramp`.
        let info = unsafe {
            RetInfo {
                ret_addr: (*ri).ret_addr,
                fp: (*ri).fp as usize,
            }
        };
        // SAFETY: as in `entry_tramp`.
        let regs = unsafe { &mut *regs.cast::<Regs>() };
        this.handler.ret(&info, data, regs);
        0
    }
}

#[pinned_drop]
impl<H: KretprobeHandler> PinnedDrop for Kretprobe<H> {
    fn drop(self: Pin<&mut Self>) {
        if self.registered {
            // SAFETY: registered (type invariant); returns when no CPU runs
            // the handlers any more.
            unsafe { rkp_unregister_kretprobe(self.raw.get()) };
        }
    }
}

impl<H: KretprobeHandler> Batch for Kretprobe<H> {
    type Raw = RkpKretprobe;
    const REGISTER_ONE: unsafe extern "C" fn(*mut RkpKretprobe) -> c_int = rkp_register_kretprobe;
    const REGISTER: unsafe extern "C" fn(*mut *mut RkpKretprobe, c_int) -> c_int =
        rkp_register_kretprobes;
    const UNREGISTER: unsafe extern "C" fn(*mut *mut RkpKretprobe, c_int) =
        rkp_unregister_kretprobes;

    fn raw(&self) -> *mut RkpKretprobe {
        self.raw.get()
    }

    fn is_registered(&self) -> bool {
        self.registered
    }

    unsafe fn set_registered(self: Pin<&mut Self>, on: bool) {
        // SAFETY: as for `Kprobe`.
        // INVARIANT: the caller's contract.
        unsafe { self.get_unchecked_mut() }.registered = on;
    }
}

/// Registers return probes all or nothing (`rkp_register_kretprobes`).
/// Process context, may sleep.
pub fn register_kretprobes<H: KretprobeHandler>(probes: &mut [Pin<&mut Kretprobe<H>>]) -> Result {
    register_batch(probes)
}

/// Unregisters return probes (`rkp_unregister_kretprobes`). Process
/// context, may sleep.
pub fn unregister_kretprobes<H: KretprobeHandler>(probes: &mut [Pin<&mut Kretprobe<H>>]) -> Result {
    unregister_batch(probes)
}
