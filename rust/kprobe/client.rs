// SPDX-License-Identifier: GPL-2.0

//! A client's probe structure as the probe core holds it.
//!
//! Clients (C modules through `include/rkprobes.h`, Rust modules through
//! `rust/client/`, the events layer) own their `struct rkp_kprobe`; the core
//! keeps a pointer to it from registration until unregistration returns,
//! links it into its point's client list through the structure itself (as
//! the kernel's aggregate probe lists the clients' `struct kprobe`), and
//! reads and writes some of its fields while hits read others. [`Client`]
//! is that pointer, made once at the ABI edge from the raw pointer a client
//! passes, with the contract the C ABI states; from then on the core uses
//! it through safe methods whose accesses are argued here, once.

use crate::abi::{flags, PreHandler, RkpKprobe, RkpKretprobe, RkpKretprobeInstance};
use crate::arch::EntryRegs;
use crate::ffi;
use crate::kernel_ext::{list::Linked, sync::NoPreempt};
use core::ptr::NonNull;

mod chain;
pub(crate) use chain::{ClientChain, Clients};
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use kernel::{
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
    str::CStr,
};

/// A client's `struct rkp_kprobe`.
///
/// # Invariants
///
/// The structure is valid, and neither moved nor freed, from the handle's
/// creation until the probe's unregistration has returned (which waits
/// until no hit can still be reading it); its `symbol_name` is null or a
/// NUL-terminated string that lives as long. While it is registered its owner
/// writes none of its fields but the `DISABLED` flag, through
/// enable/disable; the core writes `addr`, `flags`, `nmissed`,
/// `rkp_private` and `rkp_next`, always atomically, and hits read them
/// atomically. The core's unregistration takes the structure off its
/// point's [`ClientChain`] before it waits for that grace period.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Client(NonNull<RkpKprobe>);

// SAFETY: `rkp_next` is the structure's link on its point's client list,
// which only the core writes (`include/rkprobes.h`), and through this list
// alone. The structure has no backward link: a client is unlinked by a walk
// of its point's few clients.
unsafe impl Linked for RkpKprobe {
    #[inline(always)]
    unsafe fn next<'a>(this: NonNull<Self>) -> &'a AtomicPtr<Self> {
        // SAFETY: an aligned pointer field of a valid structure (the
        // caller's contract); the list stores it with release and the hit
        // path loads it with acquire.
        unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*this.as_ptr()).rkp_next)) }
    }

    #[inline(always)]
    unsafe fn prev<'a>(_this: NonNull<Self>) -> Option<&'a AtomicPtr<Self>> {
        None
    }
}

impl Client {
    /// The handle of the structure at `kp`, or `None` for a null pointer.
    ///
    /// # Safety
    ///
    /// If not null, `kp` meets the type's invariants for as long as this
    /// handle, or a copy of it, is used: a client's structure passed to a
    /// registration stays valid until unregistered, as the C ABI requires.
    pub(crate) unsafe fn from_raw(kp: *mut RkpKprobe) -> Option<Client> {
        NonNull::new(kp).map(Client)
    }

    /// The entry probe of the kretprobe at `rp`.
    ///
    /// # Safety
    ///
    /// `rp` is valid and its entry probe meets the type's invariants for as
    /// long as the handle, or a copy of it, is used.
    pub(crate) unsafe fn entry_of(rp: *mut RkpKretprobe) -> Client {
        // SAFETY: the caller's contract: `rp` is valid, so the address of
        // its field is not null.
        Client(unsafe { NonNull::new_unchecked(core::ptr::addr_of_mut!((*rp).kp)) })
    }

    /// The structure, for the client's handlers and for messages.
    pub(crate) fn as_ptr(self) -> *mut RkpKprobe {
        self.0.as_ptr()
    }

    fn flags_cell(&self) -> &AtomicU32 {
        // SAFETY: an aligned `c_uint` of a valid structure (the type
        // invariant), accessed atomically by every concurrent user.
        unsafe { AtomicU32::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).flags)) }
    }

    /// The flags. Any context.
    #[inline(always)]
    pub(crate) fn flags(self) -> u32 {
        self.flags_cell().load(Ordering::Relaxed)
    }

    /// Sets, then clears, flag bits. Any context.
    pub(crate) fn update_flags(self, set: u32, clear: u32) {
        let _ = self
            .flags_cell()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some((v & !clear) | set)
            });
    }

    /// Whether the client is disabled. Any context.
    #[inline(always)]
    pub(crate) fn is_disabled(self) -> bool {
        self.flags() & flags::DISABLED != 0
    }

    /// Hits whose handlers could not run. Any context.
    pub(crate) fn nmissed(self) -> u64 {
        // SAFETY: as in `inc_nmissed`.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).nmissed).cast()) }
            .load(Ordering::Relaxed) as u64
    }

    /// Counts a hit whose handlers could not run. Any context, NMI included.
    pub(crate) fn inc_nmissed(self) {
        // SAFETY: an aligned `unsigned long` of a valid structure, accessed
        // atomically by the core (the owner only reads it).
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).nmissed).cast()) }
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The probed address: the one the owner set, or, once registered, the
    /// resolved one.
    pub(crate) fn addr(self) -> usize {
        // SAFETY: an aligned pointer field of a valid structure, written
        // atomically by the core and not by the owner while registered.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).addr).cast()) }
            .load(Ordering::Relaxed)
    }

    /// Sets the probed address. Writer.
    pub(crate) fn set_addr(self, addr: usize) {
        // SAFETY: as in `addr`.
        unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).addr).cast()) }
            .store(addr, Ordering::Relaxed);
    }

    /// The symbol the owner gave, if any, and the offset from it.
    pub(crate) fn symbol(&self) -> (Option<&CStr>, u32) {
        // SAFETY: fields of a valid structure that the owner does not change
        // while it is registered or being registered.
        let (sym, offset) = unsafe { ((*self.as_ptr()).symbol_name, (*self.as_ptr()).offset) };
        if sym.is_null() {
            return (None, offset);
        }
        // SAFETY: a non-null `symbol_name` is a NUL-terminated string that
        // lives as long as the structure (the type invariant).
        (Some(unsafe { CStr::from_char_ptr(sym) }), offset)
    }

    fn private_cell(&self) -> &AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a valid structure, accessed
        // atomically by the core alone.
        unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).rkp_private)) }
    }

    /// The core's word: the probe's point while registered, else null.
    /// Only a [`ClientChain`] writes it: non-null while the client is on one.
    pub(crate) fn private(self) -> *mut c_void {
        self.private_cell().load(Ordering::Relaxed)
    }

    /// Whether the client has a post-handler.
    pub(crate) fn has_post_handler(self) -> bool {
        // SAFETY: a field the owner does not change while registered.
        unsafe { (*self.as_ptr()).post_handler }.is_some()
    }

    /// Runs the pre-handler of an enabled client: its return value (non-zero
    /// when it changed `regs->ip`), or 0 without one. Hit context.
    #[inline(always)]
    pub(crate) fn run_pre(self, regs: *mut ffi::pt_regs) -> c_int {
        // SAFETY: a field the owner does not change while registered.
        let h = unsafe { (*self.as_ptr()).pre_handler };
        match h {
            Some(h) if !self.is_disabled() => {
                // SAFETY: the handler's contract of `include/rkprobes.h`: its
                // own probe and the hit's registers.
                unsafe { h(self.as_ptr(), regs) }
            }
            _ => 0,
        }
    }

    /// Runs the post-handler of an enabled client. int3 context.
    pub(crate) fn run_post(self, regs: *mut ffi::pt_regs, flags: c_ulong) {
        // SAFETY: as in `run_pre`.
        let h = unsafe { (*self.as_ptr()).post_handler };
        if let Some(h) = h {
            if !self.is_disabled() {
                // SAFETY: as in `run_pre`.
                unsafe { h(self.as_ptr(), regs, flags) };
            }
        }
    }

    /// Runs the fault handler: whether it handled the fault. Exception
    /// context.
    pub(crate) fn run_fault(self, regs: *mut ffi::pt_regs, trapnr: c_int) -> bool {
        // SAFETY: as in `run_pre`.
        let h = unsafe { (*self.as_ptr()).fault_handler };
        // SAFETY: as in `run_pre`.
        h.is_some_and(|h| unsafe { h(self.as_ptr(), regs, trapnr) } != 0)
    }

    /// The pre-handler, to tell one kind of client from another.
    pub(crate) fn pre_handler(self) -> Option<crate::abi::PreHandler> {
        // SAFETY: a field the owner does not change while registered.
        unsafe { (*self.as_ptr()).pre_handler }
    }
}

/// What a kretprobe's owner asks of its registration ([`RetClient::request`]).
pub(crate) struct RetRequest {
    /// Bytes of data per instance.
    pub(crate) data_size: usize,
    /// Instances; 0 or less for the default.
    pub(crate) maxactive: c_int,
}

/// A client's `struct rkp_kretprobe`.
///
/// # Invariants
///
/// As [`Client`]'s, for the kretprobe and its entry probe: valid and
/// unmoved from the handle's creation until its unregistration has
/// returned; while it is registered its owner writes none of its fields,
/// and the core writes `rkp_private` (under the kretprobe registration
/// mutex) and `nmissed` (atomically).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct RetClient(NonNull<RkpKretprobe>);

impl RetClient {
    /// The handle of the kretprobe at `rp`, or `None` for a null pointer.
    ///
    /// # Safety
    ///
    /// If not null, `rp` meets the type's invariants for as long as this
    /// handle, or a copy of it, is used.
    pub(crate) unsafe fn from_raw(rp: *mut RkpKretprobe) -> Option<RetClient> {
        NonNull::new(rp).map(RetClient)
    }

    /// The kretprobe whose entry probe is `kp`.
    ///
    /// # Safety
    ///
    /// `kp` is the entry probe of a kretprobe that meets the type's
    /// invariants for as long as the handle, or a copy of it, is used.
    #[inline(always)]
    pub(crate) unsafe fn of_entry(kp: *mut RkpKprobe) -> RetClient {
        // SAFETY: the caller's contract: `kp` is the `kp` field of a valid
        // kretprobe, whose address is therefore not null.
        RetClient(unsafe {
            NonNull::new_unchecked(kernel::container_of!(kp, RkpKretprobe, kp).cast_mut())
        })
    }

    /// The structure, for the pool's back pointer and the handlers.
    pub(crate) fn as_ptr(self) -> *mut RkpKretprobe {
        self.0.as_ptr()
    }

    /// The entry probe.
    pub(crate) fn entry(self) -> Client {
        // SAFETY: the entry probe of a kretprobe that meets the invariants
        // meets `Client`'s for as long.
        unsafe { Client::entry_of(self.as_ptr()) }
    }

    fn private_cell(&self) -> &AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a valid structure, written by
        // the core alone.
        unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).rkp_private)) }
    }

    /// Entries that found no free instance. Any context.
    pub(crate) fn nmissed(self) -> u64 {
        self.nmissed_cell().load(Ordering::Relaxed) as u32 as u64
    }

    /// The instances the kretprobe has: the owner's, or the default the
    /// core chose at registration. Process context, under the lock that
    /// serializes the owner's registration.
    pub(crate) fn maxactive(self) -> u32 {
        // SAFETY: a valid structure (the type invariant); the core writes
        // the field only while registering, which the caller's lock
        // excludes.
        let m = unsafe { (*self.as_ptr()).maxactive };
        m.max(0) as u32
    }

    fn nmissed_cell(&self) -> &AtomicI32 {
        // SAFETY: an aligned `int` of a valid structure, incremented
        // atomically by the core (the owner only reads it).
        unsafe { AtomicI32::from_ptr(core::ptr::addr_of_mut!((*self.as_ptr()).nmissed)) }
    }

    /// Counts an entry that found no free instance, or a return whose
    /// handler could not run. Any context, NMI included.
    #[inline(always)]
    pub(crate) fn inc_nmissed(self) {
        self.nmissed_cell().fetch_add(1, Ordering::Relaxed);
    }

    /// Runs the entry handler for the instance `ri`: its return value
    /// (non-zero: no return handler for this call), or 0 without one. Hit
    /// context at the function's entry.
    #[inline(always)]
    pub(crate) fn run_entry_handler(
        self,
        ri: *mut RkpKretprobeInstance,
        regs: *mut ffi::pt_regs,
    ) -> c_int {
        // SAFETY: a field the owner does not change while registered.
        match unsafe { (*self.as_ptr()).entry_handler } {
            // SAFETY: the handler's contract of `include/rkprobes.h`: an
            // instance of its own kretprobe and the hit's registers.
            Some(h) => unsafe { h(ri, regs) },
            None => 0,
        }
    }

    /// Runs the return handler for the instance `ri`. Return context, with
    /// preemption off.
    #[inline(always)]
    pub(crate) fn run_handler(self, ri: *mut RkpKretprobeInstance, regs: *mut ffi::pt_regs) {
        // SAFETY: a field the owner does not change while registered.
        if let Some(h) = unsafe { (*self.as_ptr()).handler } {
            // SAFETY: as in `run_entry_handler`, with the registers of the
            // return.
            unsafe { h(ri, regs) };
        }
    }

    /// What the owner asks of a registration: the bytes of data per
    /// instance and `maxactive` (0 or less for the default). `EINVAL` if
    /// the kretprobe or its entry probe is registered. Process context,
    /// registration.
    pub(crate) fn request(self) -> Result<RetRequest> {
        if !self.private().is_null() || !self.entry().private().is_null() {
            return Err(EINVAL);
        }
        let r = self.as_ptr();
        // SAFETY: fields of a valid structure (the type invariant) that its
        // owner does not write while it registers it, and that the core
        // writes only in `attach`, through atomics, which these plain
        // reads do not race with: `attach` is only reached from the same
        // registration, after this.
        let (data_size, maxactive) = unsafe { ((*r).data_size, (*r).maxactive) };
        Ok(RetRequest {
            data_size,
            maxactive,
        })
    }

    /// Gives the kretprobe, being registered, its core's word, `pool`, and
    /// `maxactive` instances, and makes `H`'s [`kretprobe_entry`] its entry
    /// probe's only handler, before the entry probe is registered. `EINVAL`
    /// if the kretprobe or its entry probe is registered, or another
    /// registration of it got there first. Process context.
    ///
    /// # Safety
    ///
    /// `pool` stays valid, and in place, while the kretprobe's core word
    /// names it: until the entry probe was unregistered, a grace period
    /// passed, and the word was cleared.
    pub(crate) unsafe fn attach<H: RetEntry>(self, pool: &H::Pool, maxactive: c_int) -> Result {
        let private = NonNull::from(pool).cast::<c_void>();
        let pre: PreHandler = kretprobe_entry::<H>;
        if !self.entry().private().is_null() {
            return Err(EINVAL);
        }
        // The claim: no other registration of this kretprobe writes its
        // fields from here on.
        self.private_cell()
            .compare_exchange(
                core::ptr::null_mut(),
                private.as_ptr(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .map_err(|_| EINVAL)?;
        let r = self.as_ptr();
        // SAFETY: fields of a valid structure (the type invariant). Its
        // entry probe is not registered (checked above: the core sets its
        // word before a hit can reach it, and clears it after none can), so
        // no hit reads its handlers; the exchange above keeps out any other
        // registration of the kretprobe; its owner writes none of them while
        // registering it (the C ABI). `maxactive` is read again only with
        // the registration mutex held (`maxactive`).
        unsafe {
            (*r).maxactive = maxactive;
            (*r).kp.pre_handler = Some(pre);
            (*r).kp.post_handler = None;
            (*r).kp.fault_handler = None;
        }
        self.nmissed_cell().store(0, Ordering::Relaxed);
        Ok(())
    }

    /// The core's word: the kretprobe's pool while registered, else null.
    pub(crate) fn private(self) -> *mut c_void {
        self.private_cell().load(Ordering::Relaxed)
    }

    /// Sets the core's word. Writer.
    pub(crate) fn set_private(self, p: *mut c_void) {
        self.private_cell().store(p, Ordering::Relaxed);
    }
}

/// A kretprobe pool's kretprobe, as the return path finds it.
///
/// # Invariants
///
/// Null, or a kretprobe that meets [`RetClient`]'s invariants: it is stored
/// from a handle, and cleared before that kretprobe's unregistration
/// returns, a grace period before, so that a handle loaded with preemption
/// off stays valid until preemption is back on.
pub(crate) struct RetCell(AtomicPtr<RkpKretprobe>);

impl RetCell {
    /// A cell holding `rp`.
    pub(crate) fn new(rp: RetClient) -> Self {
        RetCell(AtomicPtr::new(rp.as_ptr()))
    }

    /// The kretprobe, or `None` once cleared. Any context.
    #[inline(always)]
    pub(crate) fn get(&self) -> Option<RetClient> {
        NonNull::new(self.0.load(Ordering::Acquire)).map(RetClient)
    }

    /// Whether the cell still holds its kretprobe. Any context.
    #[inline(always)]
    pub(crate) fn is_set(&self) -> bool {
        !self.0.load(Ordering::Acquire).is_null()
    }

    /// Whether the cell holds `rp`. Any context.
    pub(crate) fn holds(&self, rp: RetClient) -> bool {
        core::ptr::eq(self.0.load(Ordering::Acquire), rp.as_ptr())
    }

    /// Clears the cell, before the kretprobe's unregistration waits for a
    /// grace period. Writer.
    pub(crate) fn clear(&self) {
        // INVARIANT: null.
        self.0.store(core::ptr::null_mut(), Ordering::Release);
    }
}

/// What a kretprobe's entry probe hit enters: the probe core's entry
/// handler, and the type of pool that [`RetClient::attach`] gives a
/// kretprobe as its core's word.
pub(crate) trait RetEntry: 'static {
    /// A kretprobe's instances, shared by the CPUs that hit its entry.
    type Pool: Sync;

    /// The entry handler of `rp`, whose pool is `pool`, for the hit whose
    /// registers are `regs`. int3 context with interrupts off, or the
    /// ftrace callback or a detour with preemption off (`rcu`): may not
    /// sleep, allocate or take locks.
    fn enter(rp: RetClient, pool: &Self::Pool, regs: EntryRegs<'_>, rcu: &NoPreempt);
}

/// The pre-handler of every kretprobe's entry probe, as the hit path calls
/// it: makes the raw kretprobe and registers safe handles and enters
/// [`RetEntry::enter`]. Context as that one's.
///
/// # Safety
///
/// Called by the hit path with the `kp` of a registered `RkpKretprobe`
/// whose pre-handler this is, and the registers of a hit at the function's
/// entry.
pub(crate) unsafe extern "C" fn kretprobe_entry<H: RetEntry>(
    kp: *mut RkpKprobe,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the caller's contract: the entry probe of a registered
    // kretprobe, which stays valid until after its unregistration, which
    // waits for this handler.
    let rp = unsafe { RetClient::of_entry(kp) };
    // SAFETY: the kretprobe's pre-handler is this function: its core's
    // word is an `H::Pool`, set with it by `attach::<H>` before its entry
    // probe was registered and kept until after its unregistration, which
    // waits for this handler; the pool is freed only after that.
    let pool = unsafe { &*rp.private().cast::<H::Pool>() };
    // SAFETY: the registers of a hit at the function's first instruction
    // (the caller's contract: registration checks that the probe is at a
    // function's entry), on the current task's stack, ours for the
    // handler's duration, before the function runs.
    let regs = unsafe { EntryRegs::new(&mut *regs) };
    // SAFETY: the hit path runs pre-handlers with interrupts off (int3) or
    // preemption off (the ftrace callback, a detour), for the whole call.
    let rcu = unsafe { NoPreempt::assume() };
    H::enter(rp, pool, regs, &rcu);
    0
}
