// SPDX-License-Identifier: GPL-2.0

//! The safe Rust interface to rkprobes, for client modules.
//!
//! A Rust module cannot call another module's Rust API, so clients use
//! rkprobes' C ABI (`include/rkprobes.h`); this file wraps it. A client
//! includes it with
//!
//! ```ignore
//! #[path = "../rust/client/mod.rs"]
//! pub mod rkprobes;
//! ```
//!
//! and gets [`Kprobe`], a pinned probe that unregisters itself when dropped,
//! handlers written against the [`KprobeHandler`] trait, typed access to the
//! registers ([`Regs`]), and reads of kernel memory that fail instead of
//! faulting ([`read_kernel`]). A handler written against this interface
//! cannot fault through it.

#[path = "../abi.rs"]
pub mod abi;

use abi::{RkpKprobe, RkpKretprobe, RkpKretprobeInstance};
use core::marker::PhantomPinned;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong},
    prelude::*,
    str::CStr,
    types::Opaque,
};

extern "C" {
    fn rkp_register_kprobe(p: *mut RkpKprobe) -> c_int;
    fn rkp_unregister_kprobe(p: *mut RkpKprobe);
    fn rkp_enable_kprobe(p: *mut RkpKprobe) -> c_int;
    fn rkp_disable_kprobe(p: *mut RkpKprobe) -> c_int;
    fn rkp_register_kprobes(kps: *mut *mut RkpKprobe, num: c_int) -> c_int;
    fn rkp_unregister_kprobes(kps: *mut *mut RkpKprobe, num: c_int);
    fn rkp_register_kretprobe(rp: *mut RkpKretprobe) -> c_int;
    fn rkp_register_kretprobes(rps: *mut *mut RkpKretprobe, num: c_int) -> c_int;
    fn rkp_unregister_kretprobes(rps: *mut *mut RkpKretprobe, num: c_int);
    fn rkp_unregister_kretprobe(rp: *mut RkpKretprobe);
    fn rkp_kretprobe_find_ret_addr(addr: c_ulong) -> c_ulong;
    fn rkp_stack_trace_save(store: *mut c_ulong, size: u32, skipnr: u32) -> u32;
}

/// The registers at a probe hit.
#[repr(transparent)]
pub struct Regs(bindings::pt_regs);

impl Regs {
    /// The instruction pointer.
    pub fn ip(&self) -> usize {
        self.0.ip
    }

    /// Moves the instruction pointer; a pre-handler that does this returns
    /// [`Action::Skip`] so that the probed instruction does not run.
    pub fn set_ip(&mut self, ip: usize) {
        self.0.ip = ip as _;
    }

    /// The stack pointer.
    pub fn sp(&self) -> usize {
        self.0.sp
    }

    /// The flags register.
    pub fn flags(&self) -> u64 {
        self.0.flags as u64
    }

    /// `rax`: the return value after a function returned.
    pub fn ax(&self) -> u64 {
        self.0.ax as u64
    }

    /// Sets `rax`, e.g. to make a skipped function return a value.
    pub fn set_ax(&mut self, v: u64) {
        self.0.ax = v as _;
    }

    /// Argument `n` (0-based) of a function probed at its entry, by the
    /// x86-64 calling convention (`rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`);
    /// `None` beyond the sixth.
    pub fn arg(&self, n: usize) -> Option<u64> {
        let r = &self.0;
        let v = match n {
            0 => r.di,
            1 => r.si,
            2 => r.dx,
            3 => r.cx,
            4 => r.r8,
            5 => r.r9,
            _ => return None,
        };
        Some(v as u64)
    }

    /// For a pre-handler at a function's entry: makes the function return
    /// `value` to its caller without running (fault injection). The handler
    /// then returns [`Action::Skip`].
    ///
    /// As the kernel's `override_function_with_return()`, this moves `ip`
    /// to a function that only returns and leaves the stack alone, which
    /// works both for int3 probes and for probes through ftrace (whose
    /// return path cannot change the stack pointer).
    pub fn override_return(&mut self, value: u64) {
        self.0.ax = value as _;
        self.0.ip = rkp_just_return as *const () as _;
    }
}

/// The landing place of [`Regs::override_return`]: returns at once.
#[inline(never)]
extern "C" fn rkp_just_return() {
    // Keeps the function from being merged with another empty one.
    core::hint::black_box(());
}

/// Plain integer types that any bit pattern makes valid.
pub trait Plain: Copy + Default + private::Sealed {}
mod private {
    pub trait Sealed {}
}
macro_rules! plain {
    ($($t:ty),*) => { $(impl private::Sealed for $t {} impl Plain for $t {})* };
}
plain!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// Reads a `T` from kernel memory at `addr`; `EFAULT` instead of a fault when
/// it is not readable. Any context, including probe handlers.
pub fn read_kernel<T: Plain>(addr: usize) -> Result<T> {
    let mut v = T::default();
    // SAFETY: `v` is a valid destination of `size_of::<T>()` bytes, any bit
    // pattern is a valid `T`, and the copy checks the source without faulting.
    let ret = unsafe {
        bindings::copy_from_kernel_nofault(
            core::ptr::addr_of_mut!(v).cast(),
            addr as *const _,
            core::mem::size_of::<T>(),
        )
    };
    if ret == 0 {
        Ok(v)
    } else {
        Err(EFAULT)
    }
}

/// What a pre-handler asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the probed instruction and continue.
    Continue,
    /// The handler changed `ip`; do not run the probed instruction.
    Skip,
}

/// The handlers of a probe. They run in int3 exception context with
/// interrupts off: they must not sleep, allocate with `GFP_KERNEL`, or take
/// locks the probed code may hold.
pub trait KprobeHandler: Sync {
    /// Before the probed instruction.
    fn pre(&self, _probe: &ProbeInfo, _regs: &mut Regs) -> Action {
        Action::Continue
    }

    /// After the probed instruction ran out of line. Only called when
    /// [`KprobeHandler::HAS_POST`] is true.
    fn post(&self, _probe: &ProbeInfo, _regs: &mut Regs, _flags: u64) {}

    /// Whether `post` is implemented: a probe without a post-handler can be
    /// run more cheaply.
    const HAS_POST: bool = false;

    /// A fault (`trapnr`, the x86 trap number) was reported while this CPU
    /// ran the probe's handlers or its single-step; see
    /// Documentation/kprobes-api.rst for which faults reach it. Returning
    /// `true` means the handler dealt with it (for instance by moving `ip`
    /// past the faulting instruction) and the kernel must not. Only called
    /// when [`KprobeHandler::HAS_FAULT`] is true.
    fn fault(&self, _probe: &ProbeInfo, _regs: &mut Regs, _trapnr: i32) -> bool {
        false
    }

    /// Whether `fault` is implemented.
    const HAS_FAULT: bool = false;
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

/// Where to probe.
pub enum Target {
    /// A symbol (`"sym"` or `"module:sym"`) plus an offset.
    Symbol(&'static CStr, u32),
    /// An address.
    Addr(usize),
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
        let (addr, sym, offset) = match target {
            Target::Symbol(s, off) => (core::ptr::null_mut(), s.as_char_ptr(), off),
            Target::Addr(a) => (a as *mut _, core::ptr::null(), 0),
        };
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |p: *mut RkpKprobe| {
                // SAFETY: `p` is valid for writes during initialisation.
                unsafe {
                    p.write(RkpKprobe {
                        addr,
                        symbol_name: sym,
                        offset,
                        pre_handler: Some(Self::pre_tramp),
                        post_handler: if H::HAS_POST { Some(Self::post_tramp) } else { None },
                        fault_handler: if H::HAS_FAULT { Some(Self::fault_tramp) } else { None },
                        flags: 0,
                        nmissed: 0,
                        rkp_private: core::ptr::null_mut(),
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

/// The handlers of a return probe. Both run with interrupts off: they must
/// not sleep, allocate with `GFP_KERNEL`, or take locks the probed code may
/// hold.
pub trait KretprobeHandler: Sync {
    /// Per-call data, shared by `entry` and `ret` of one call. It starts as
    /// `Default::default()` at every call.
    type Data: Default + Copy;

    /// At the function's entry. Returning `false` means no return handler
    /// for this call.
    fn entry(&self, _data: &mut Self::Data, _regs: &Regs) -> bool {
        true
    }

    /// Whether `entry` is implemented (or `Data` must be initialised): a
    /// kretprobe without an entry handler is cheaper.
    const HAS_ENTRY: bool = false;

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

/// Maps an address of a stack trace of the current task that is the return
/// stub of a probed frame back to the real return address; other addresses
/// come back unchanged. Call it with preemption off, e.g. from a handler.
pub fn kretprobe_find_ret_addr(addr: usize) -> usize {
    // SAFETY: a pure lookup; the caller's context keeps the answer stable.
    unsafe { rkp_kretprobe_find_ret_addr(addr as c_ulong) as usize }
}

/// Saves a stack trace of the current task into `buf`, seeing through frames
/// whose return address a kretprobe replaced (where the kernel's own
/// `stack_trace_save()` stops); returns the number of entries. Call it with
/// preemption off, e.g. from a handler.
pub fn stack_trace(buf: &mut [usize]) -> usize {
    let len = buf.len().min(u32::MAX as usize) as u32;
    // SAFETY: `buf` has room for `len` entries; `usize` is `unsigned long`.
    unsafe { rkp_stack_trace_save(buf.as_mut_ptr().cast(), len, 0) as usize }
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
        let (addr, sym, offset) = match target {
            Target::Symbol(s, off) => (core::ptr::null_mut(), s.as_char_ptr(), off),
            Target::Addr(a) => (a as *mut _, core::ptr::null(), 0),
        };
        let entry = H::HAS_ENTRY || core::mem::size_of::<H::Data>() > 0;
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |p: *mut RkpKretprobe| {
                // SAFETY: `p` is valid for writes during initialisation.
                unsafe {
                    p.write(RkpKretprobe {
                        kp: RkpKprobe {
                            addr,
                            symbol_name: sym,
                            offset,
                            pre_handler: None,
                            post_handler: None,
                            fault_handler: None,
                            flags: 0,
                            nmissed: 0,
                            rkp_private: core::ptr::null_mut(),
                        },
                        handler: Some(Self::ret_tramp),
                        entry_handler: if entry { Some(Self::entry_tramp) } else { None },
                        maxactive: maxactive.min(i32::MAX as u32) as i32,
                        nmissed: 0,
                        data_size: core::mem::size_of::<H::Data>(),
                        rkp_private: core::ptr::null_mut(),
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

    /// The return `handler` given to rkprobes. Trampoline context, interrupts
    /// off.
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

/// A probe that can be registered in a batch.
pub trait Batch {
    /// The C structure's type.
    type Raw;

    /// The C ABI's registration of one probe of this kind.
    const REGISTER_ONE: unsafe extern "C" fn(*mut Self::Raw) -> c_int;

    /// The C ABI's batch registration of this kind of probe.
    const REGISTER: unsafe extern "C" fn(*mut *mut Self::Raw, c_int) -> c_int;

    /// The C ABI's batch unregistration of this kind of probe.
    const UNREGISTER: unsafe extern "C" fn(*mut *mut Self::Raw, c_int);

    /// The C structure.
    fn raw(&self) -> *mut Self::Raw;

    /// Whether it is registered.
    fn is_registered(&self) -> bool;

    /// Records a batch's registration or unregistration.
    ///
    /// # Safety
    ///
    /// The probe's C structure was just registered (`on`) or unregistered.
    unsafe fn set_registered(self: Pin<&mut Self>, on: bool);
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

/// The raw pointers of a batch; `EBUSY` if one is registered already
/// (`want_registered == false`) or one is not (`true`).
fn batch_raw<P: Batch>(probes: &[Pin<&mut P>], want_registered: bool) -> Result<KVec<*mut P::Raw>> {
    let mut raw = KVec::with_capacity(probes.len(), GFP_KERNEL)?;
    for p in probes {
        if p.is_registered() != want_registered {
            return Err(if want_registered { EINVAL } else { EBUSY });
        }
        raw.push(p.raw(), GFP_KERNEL)?;
    }
    Ok(raw)
}

/// Registers one probe through `P::REGISTER_ONE`. Process context, may
/// sleep.
fn register_single<P: Batch>(mut p: Pin<&mut P>) -> Result {
    if p.is_registered() {
        return Err(EBUSY);
    }
    // SAFETY: the probe's C structure is pinned inside it, and the probe
    // unregisters it on drop.
    let ret = unsafe { P::REGISTER_ONE(p.raw()) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    // SAFETY: registered just above.
    unsafe { p.as_mut().set_registered(true) };
    Ok(())
}

/// Enables or disables the registered probe whose kprobe is `kp`. Process
/// context.
fn set_enabled_raw(kp: *mut RkpKprobe, on: bool) -> Result {
    // SAFETY: `kp` is a probe's own structure; rkprobes checks that it is
    // registered.
    let ret = unsafe {
        if on {
            rkp_enable_kprobe(kp)
        } else {
            rkp_disable_kprobe(kp)
        }
    };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// Registers probes all or nothing through `P::REGISTER`. Process context,
/// may sleep.
fn register_batch<P: Batch>(probes: &mut [Pin<&mut P>]) -> Result {
    let mut raw = batch_raw(probes, false)?;
    let n = c_int::try_from(raw.len()).map_err(|_| EINVAL)?;
    // SAFETY: each pointer is the pinned C structure of a probe, which
    // unregisters it on drop.
    let ret = unsafe { P::REGISTER(raw.as_mut_ptr(), n) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    for p in probes.iter_mut() {
        // SAFETY: registered just above.
        unsafe { p.as_mut().set_registered(true) };
    }
    Ok(())
}

/// Unregisters probes through `P::UNREGISTER`. Process context, may sleep.
fn unregister_batch<P: Batch>(probes: &mut [Pin<&mut P>]) -> Result {
    let mut raw = batch_raw(probes, true)?;
    let n = c_int::try_from(raw.len()).map_err(|_| EINVAL)?;
    // SAFETY: registered probes (checked by `batch_raw`).
    unsafe { P::UNREGISTER(raw.as_mut_ptr(), n) };
    for p in probes.iter_mut() {
        // SAFETY: unregistered just above.
        unsafe { p.as_mut().set_registered(false) };
    }
    Ok(())
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

pub mod param;
