// SPDX-License-Identifier: GPL-2.0

//! The C ABI of rkprobes: `include/rkprobes.h`, seen from Rust.
//!
//! The exported functions are defined here with `#[no_mangle]` and exported
//! with `EXPORT_SYMBOL_GPL` in `exports.c`. They find the probe core through
//! [`super::Core::get`], which is set for exactly the lifetime of the module's
//! state; client modules depend on rkprobes' symbols, so rkprobes cannot be
//! unloaded while one is loaded.

use super::{
    client::{Client, RetClient},
    kretprobe::Growth,
    Core,
};
use kernel::{
    error::from_result,
    ffi::{c_int, c_uint, c_ulong},
    prelude::*,
};

use crate::abi::{RkpKprobe, RkpKretprobe, RkpKretprobeInstance};
use crate::kernel_ext::{
    objpool::{Owned, PoolItem, Slot},
    task::TaskRef,
};
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use core::{pin::Pin, ptr::addr_of_mut};

/// The core, while the module's state exists.
///
/// # Invariants
///
/// Non-null only from the end of [`Core::new`], which publishes the pinned
/// core it built ([`publish`]), to the start of the core's drop, which
/// unpublishes it ([`unpublish`]) before anything of it goes.
static CORE: AtomicPtr<Core> = AtomicPtr::new(core::ptr::null_mut());

/// Publishes the core for the exported functions and the upcalls. Only
/// [`Core::new`] calls it, with the core it built, which unpublishes
/// itself first thing when dropped.
pub(super) fn publish(core: &Pin<KBox<Core>>) {
    // INVARIANT: the pinned core, live until its drop unpublishes it.
    CORE.store(
        core::ptr::from_ref::<Core>(core).cast_mut(),
        Ordering::Release,
    );
}

/// Unpublishes the core: the start of its drop.
pub(super) fn unpublish() {
    CORE.store(core::ptr::null_mut(), Ordering::Release);
}

impl Core {
    /// The core, for the exported functions and the C upcalls (deferred
    /// work). `ENODEV` while rkprobes is being unloaded.
    pub(crate) fn get() -> Result<&'static Self> {
        let p = CORE.load(Ordering::Acquire);
        if p.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: `CORE` names the live pinned core while it is non-null
        // (its invariant). The callers outlive the core only where unload
        // allows them to: client modules, the exported functions' callers,
        // keep rkprobes loaded while they call in; the upcalls from deferred
        // work are cancelled and flushed by the core's drop before anything
        // is freed (`stop_optimizer`, the reclaim work's cancellation).
        Ok(unsafe { &*p })
    }
}

/// Converts a result to the C convention: 0 or a negative errno.
fn to_c(r: Result) -> c_int {
    from_result(|| r.map(|()| 0))
}

/// Whether a client built against ABI version `abi` may register: only
/// with this one, which `include/rkprobes.h` states; otherwise `ENOEXEC`,
/// as for a module built for another kernel, and a line in the log.
fn check_abi(abi: c_uint) -> Result {
    if abi == crate::abi::RKP_ABI_VERSION {
        return Ok(());
    }
    pr_err!(
        "a client built against rkprobes ABI version {} registers a probe; this rkprobes has version {}: rebuild the client against its include/rkprobes.h\n",
        abi,
        crate::abi::RKP_ABI_VERSION
    );
    Err(ENOEXEC)
}

/// `int rkp_register_kprobe_abi(struct rkp_kprobe *p, unsigned int abi)`,
/// which `rkp_register_kprobe()` calls with the client's
/// `RKP_ABI_VERSION`. Process context.
///
/// # Safety
///
/// `p` is a valid `struct rkp_kprobe` that stays allocated until unregistered.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_register_kprobe_abi(p: *mut RkpKprobe, abi: c_uint) -> c_int {
    // SAFETY: the caller's contract is `Client`'s.
    let p = unsafe { Client::from_raw(p) };
    to_c(check_abi(abi).and_then(|()| Core::get()?.register_many(&[p.ok_or(EINVAL)?])))
}

/// `void rkp_unregister_kprobe(struct rkp_kprobe *p)`. Process context; returns
/// when no CPU runs the probe's handlers any more.
///
/// # Safety
///
/// `p` is a valid `struct rkp_kprobe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_unregister_kprobe(p: *mut RkpKprobe) {
    // SAFETY: the caller's contract is `Client`'s.
    if let (Some(p), Ok(c)) = (unsafe { Client::from_raw(p) }, Core::get()) {
        c.unregister_many(&[p]);
    }
}

/// A C array of `num` probe pointers (`rkp_register_kprobes`,
/// `rkp_register_kretprobes` and their unregistrations), its null entries as
/// `None`.
///
/// # Safety
///
/// `H` is a transparent `NonNull<P>` (`Client` for `struct rkp_kprobe`,
/// `RetClient` for `struct rkp_kretprobe`); `ptrs` points to `num` pointers
/// when `num > 0`, each null or meeting `H`'s invariants.
unsafe fn c_array<'a, P, H>(ptrs: *mut *mut P, num: c_int) -> Result<&'a [Option<H>]> {
    let n = usize::try_from(num).map_err(|_| EINVAL)?;
    if n == 0 || ptrs.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: the caller provides `num` elements at `ptrs`; `Option<H>` has
    // the layout of a pointer, null for `None` (`H` is a transparent
    // `NonNull`), and the caller's contract is `H`'s.
    Ok(unsafe { core::slice::from_raw_parts(ptrs.cast::<Option<H>>(), n) })
}

/// The handles of a batch to register: `EINVAL` for a null entry.
fn all<H: Copy>(hs: &[Option<H>]) -> Result<KVec<H>> {
    let mut v = KVec::with_capacity(hs.len(), GFP_KERNEL)?;
    for h in hs {
        v.push(h.ok_or(EINVAL)?, GFP_KERNEL)?;
    }
    Ok(v)
}

/// `int rkp_register_kprobes_abi(struct rkp_kprobe **kps, int num,
/// unsigned int abi)`, behind `rkp_register_kprobes()`: all or nothing.
/// Process context.
///
/// # Safety
///
/// `kps` points to `num` valid probes that stay allocated until unregistered.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_register_kprobes_abi(
    kps: *mut *mut RkpKprobe,
    num: c_int,
    abi: c_uint,
) -> c_int {
    to_c(check_abi(abi).and_then(|()| {
        // SAFETY: the caller's contract.
        unsafe { c_array::<_, Client>(kps, num) }
            .and_then(|ps| Core::get()?.register_many(&all(ps)?))
    }))
}

/// `void rkp_unregister_kprobes(struct rkp_kprobe **kps, int num)`. Process
/// context; one synchronisation for the whole batch.
///
/// # Safety
///
/// `kps` points to `num` valid probes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_unregister_kprobes(kps: *mut *mut RkpKprobe, num: c_int) {
    // SAFETY: the caller's contract.
    if let (Ok(ps), Ok(c)) = (unsafe { c_array::<_, Client>(kps, num) }, Core::get()) {
        c.unregister_each(ps.iter().flatten().copied());
    }
}

/// `int rkp_enable_kprobe(struct rkp_kprobe *p)`. Process context.
///
/// # Safety
///
/// `p` is a valid `struct rkp_kprobe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_enable_kprobe(p: *mut RkpKprobe) -> c_int {
    // SAFETY: the caller's contract is `Client`'s.
    let p = unsafe { Client::from_raw(p) };
    to_c(Core::get().and_then(|c| c.set_enabled(p.ok_or(EINVAL)?, true)))
}

/// `int rkp_disable_kprobe(struct rkp_kprobe *p)`. Process context.
///
/// # Safety
///
/// `p` is a valid `struct rkp_kprobe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_disable_kprobe(p: *mut RkpKprobe) -> c_int {
    // SAFETY: the caller's contract is `Client`'s.
    let p = unsafe { Client::from_raw(p) };
    to_c(Core::get().and_then(|c| c.set_enabled(p.ok_or(EINVAL)?, false)))
}

/// `int rkp_register_kretprobe_abi(struct rkp_kretprobe *rp, unsigned int
/// abi)`, behind `rkp_register_kretprobe()`. Process context.
///
/// # Safety
///
/// `rp` is a valid `struct rkp_kretprobe` that stays allocated until
/// unregistered.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_register_kretprobe_abi(
    rp: *mut RkpKretprobe,
    abi: c_uint,
) -> c_int {
    // SAFETY: the caller's contract is `RetClient`'s.
    let rp = unsafe { RetClient::from_raw(rp) };
    to_c(check_abi(abi).and_then(|()| {
        let c = Core::get()?;
        c.kretprobes()
            .register(c, &[rp.ok_or(EINVAL)?], Growth::Fixed, false)
    }))
}

/// `void rkp_unregister_kretprobe(struct rkp_kretprobe *rp)`. Process
/// context; returns when no CPU runs its handlers any more. Frames still out
/// return through the trampoline without handlers.
///
/// # Safety
///
/// `rp` is a valid `struct rkp_kretprobe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_unregister_kretprobe(rp: *mut RkpKretprobe) {
    // SAFETY: the caller's contract is `RetClient`'s.
    if let (Some(rp), Ok(c)) = (unsafe { RetClient::from_raw(rp) }, Core::get()) {
        c.kretprobes().unregister(c, &[rp]);
    }
}

/// `int rkp_register_kretprobes_abi(struct rkp_kretprobe **rps, int num,
/// unsigned int abi)`, behind `rkp_register_kretprobes()`: all or nothing.
/// Process context.
///
/// # Safety
///
/// `rps` points to `num` valid kretprobes that stay allocated until
/// unregistered.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_register_kretprobes_abi(
    rps: *mut *mut RkpKretprobe,
    num: c_int,
    abi: c_uint,
) -> c_int {
    to_c(check_abi(abi).and_then(|()| {
        // SAFETY: the caller's contract.
        unsafe { c_array::<_, RetClient>(rps, num) }.and_then(|rs| {
            let c = Core::get()?;
            c.kretprobes().register(c, &all(rs)?, Growth::Fixed, false)
        })
    }))
}

/// `void rkp_unregister_kretprobes(struct rkp_kretprobe **rps, int num)`.
/// Process context.
///
/// # Safety
///
/// `rps` points to `num` valid kretprobes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_unregister_kretprobes(rps: *mut *mut RkpKretprobe, num: c_int) {
    // SAFETY: the caller's contract.
    if let (Ok(rs), Ok(c)) = (unsafe { c_array::<_, RetClient>(rps, num) }, Core::get()) {
        c.kretprobes()
            .unregister_each(c, rs.iter().flatten().copied());
    }
}

/// `unsigned long rkp_kretprobe_find_ret_addr(unsigned long addr)`. Caller
/// with preemption disabled.
#[no_mangle]
pub(crate) extern "C" fn rkp_kretprobe_find_ret_addr(addr: c_ulong) -> c_ulong {
    match Core::get() {
        Ok(c) => c.kretprobes().find_ret_addr(addr) as c_ulong,
        Err(_) => addr,
    }
}

/// `unsigned int rkp_stack_trace_save(unsigned long *store, unsigned int
/// size, unsigned int skipnr)`: `stack_trace_save()` through frames that
/// kretprobes hijacked. Caller with preemption disabled.
///
/// # Safety
///
/// `store` has room for `size` entries.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_stack_trace_save(
    store: *mut c_ulong,
    size: c_uint,
    skipnr: c_uint,
) -> c_uint {
    if store.is_null() || size == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let buf = unsafe { core::slice::from_raw_parts_mut(store, size as usize) };
    match Core::get() {
        Ok(c) => c.kretprobes().stack_trace(c.runtime(), buf, skipnr) as c_uint,
        Err(_) => crate::kernel_ext::task::stack_trace_save(buf, skipnr) as c_uint,
    }
}

// SAFETY: `struct rkp_kretprobe_instance` is integers and pointers, valid
// as zeroes, 8-byte aligned; `rkp_next` is an aligned `unsigned int` and
// `rkp_task` an aligned pointer, both rkprobes' own (`include/rkprobes.h`:
// clients do not touch them), used by the pool alone.
unsafe impl PoolItem for RkpKretprobeInstance {
    const LINK: usize = core::mem::offset_of!(RkpKretprobeInstance, rkp_next);
    const TOKEN: usize = core::mem::offset_of!(RkpKretprobeInstance, rkp_task);
    /// The task whose frame an instance is out for.
    type Token = TaskRef;
}

/// The fields of a kretprobe instance that rkprobes uses, reached from any
/// handle of it. Each is accessed atomically (a plain `mov` on x86-64), so
/// that no access is a data race whichever CPUs hold the instance; the
/// client's handlers, in C, read them through the pointer they are given.
impl<'a> Slot<'a, RkpKretprobeInstance> {
    fn rp_cell(self) -> &'a AtomicPtr<RkpKretprobe> {
        // SAFETY: an aligned pointer field of an instance valid for `'a`
        // (`Slot::as_ptr`), which Rust only accesses atomically.
        unsafe { AtomicPtr::from_ptr(addr_of_mut!((*self.as_ptr().as_ptr()).rp)) }
    }

    fn ret_addr_cell(self) -> &'a AtomicUsize {
        // SAFETY: as in `rp_cell`; `unsigned long` is `usize`.
        unsafe { AtomicUsize::from_ptr(addr_of_mut!((*self.as_ptr().as_ptr()).ret_addr).cast()) }
    }

    fn fp_cell(self) -> &'a AtomicUsize {
        // SAFETY: as in `rp_cell`; a pointer is `usize`.
        unsafe { AtomicUsize::from_ptr(addr_of_mut!((*self.as_ptr().as_ptr()).fp).cast()) }
    }

    /// Sets `rkp_index` to the instance's index, for the client's handlers.
    pub(crate) fn set_index(self) {
        // SAFETY: as in `rp_cell`, for an aligned `unsigned int`.
        let cell =
            unsafe { AtomicU32::from_ptr(addr_of_mut!((*self.as_ptr().as_ptr()).rkp_index)) };
        cell.store(self.index(), Ordering::Relaxed);
    }

    /// The kretprobe the instance was last taken for; `None` for an
    /// instance never taken. The handle is valid while that kretprobe is
    /// registered: its pool's [`RetCell`](crate::kprobe::client::RetCell)
    /// tells.
    #[inline(always)]
    pub(crate) fn rp(self) -> Option<RetClient> {
        // SAFETY: Rust writes the field only in `set_frame`, from a handle,
        // and instances start zeroed: null, or a kretprobe that met the
        // handle's invariants when the instance was taken, and meets them
        // until its unregistration returns.
        unsafe { RetClient::from_raw(self.rp_cell().load(Ordering::Relaxed)) }
    }

    /// The real return address the instance last recorded, and the stack
    /// word that held it.
    #[inline(always)]
    pub(crate) fn frame(self) -> (usize, usize) {
        (
            self.ret_addr_cell().load(Ordering::Relaxed),
            self.fp_cell().load(Ordering::Relaxed),
        )
    }

    /// The instance's structure, for the client's handlers.
    #[inline(always)]
    pub(crate) fn as_raw(self) -> *mut RkpKretprobeInstance {
        self.as_ptr().as_ptr()
    }
}

impl Owned<'_, RkpKretprobeInstance> {
    /// Records the frame: the kretprobe `rp`, the real return address `ret`
    /// and the stack word `fp` that holds it. Seen by whoever claims the
    /// instance after it is put out.
    #[inline(always)]
    pub(crate) fn set_frame(&mut self, rp: RetClient, ret: usize, fp: usize) {
        let s = self.slot();
        s.rp_cell().store(rp.as_ptr(), Ordering::Relaxed);
        s.ret_addr_cell().store(ret, Ordering::Relaxed);
        s.fp_cell().store(fp, Ordering::Relaxed);
    }
}

/// The layout of `include/rkprobes.h` as the C compiler sees it, generated
/// at build time from `rust/ffi/abi_layout.c` (see `rust/Kbuild`).
mod c_layout {
    include!("../ffi/abi_offsets.rs");
}

/// The Rust definitions of `rust/ffi/abi.rs`, shared with every Rust client,
/// checked field by field against the C header: the header is the contract,
/// and a field added, moved or resized on one side only fails the build.
mod layout_checks {
    use super::c_layout as c;
    use crate::abi::{flags, RkpKprobe, RkpKretprobe, RkpKretprobeInstance};
    use core::mem::{align_of, offset_of, size_of};
    use kernel::static_assert;

    static_assert!(crate::abi::RKP_ABI_VERSION as usize == c::ABI_VERSION);
    static_assert!(size_of::<RkpKprobe>() == c::KPROBE_SIZE);
    static_assert!(offset_of!(RkpKprobe, addr) == c::KPROBE_ADDR);
    static_assert!(offset_of!(RkpKprobe, symbol_name) == c::KPROBE_SYMBOL_NAME);
    static_assert!(offset_of!(RkpKprobe, offset) == c::KPROBE_OFFSET);
    static_assert!(offset_of!(RkpKprobe, pre_handler) == c::KPROBE_PRE_HANDLER);
    static_assert!(offset_of!(RkpKprobe, post_handler) == c::KPROBE_POST_HANDLER);
    static_assert!(offset_of!(RkpKprobe, fault_handler) == c::KPROBE_FAULT_HANDLER);
    static_assert!(offset_of!(RkpKprobe, flags) == c::KPROBE_FLAGS);
    static_assert!(offset_of!(RkpKprobe, nmissed) == c::KPROBE_NMISSED);
    static_assert!(offset_of!(RkpKprobe, rkp_private) == c::KPROBE_RKP_PRIVATE);
    static_assert!(offset_of!(RkpKprobe, rkp_next) == c::KPROBE_RKP_NEXT);

    static_assert!(size_of::<RkpKretprobe>() == c::KRETPROBE_SIZE);
    static_assert!(offset_of!(RkpKretprobe, kp) == c::KRETPROBE_KP);
    static_assert!(offset_of!(RkpKretprobe, handler) == c::KRETPROBE_HANDLER);
    static_assert!(offset_of!(RkpKretprobe, entry_handler) == c::KRETPROBE_ENTRY_HANDLER);
    static_assert!(offset_of!(RkpKretprobe, maxactive) == c::KRETPROBE_MAXACTIVE);
    static_assert!(offset_of!(RkpKretprobe, nmissed) == c::KRETPROBE_NMISSED);
    static_assert!(offset_of!(RkpKretprobe, data_size) == c::KRETPROBE_DATA_SIZE);
    static_assert!(offset_of!(RkpKretprobe, rkp_private) == c::KRETPROBE_RKP_PRIVATE);

    static_assert!(size_of::<RkpKretprobeInstance>() == c::KRETPROBE_INSTANCE_SIZE);
    static_assert!(align_of::<RkpKretprobeInstance>() == c::KRETPROBE_INSTANCE_ALIGN);
    static_assert!(offset_of!(RkpKretprobeInstance, rp) == c::KRETPROBE_INSTANCE_RP);
    static_assert!(offset_of!(RkpKretprobeInstance, ret_addr) == c::KRETPROBE_INSTANCE_RET_ADDR);
    static_assert!(offset_of!(RkpKretprobeInstance, fp) == c::KRETPROBE_INSTANCE_FP);
    static_assert!(offset_of!(RkpKretprobeInstance, rkp_task) == c::KRETPROBE_INSTANCE_RKP_TASK);
    static_assert!(offset_of!(RkpKretprobeInstance, rkp_next) == c::KRETPROBE_INSTANCE_RKP_NEXT);
    static_assert!(offset_of!(RkpKretprobeInstance, rkp_index) == c::KRETPROBE_INSTANCE_RKP_INDEX);
    static_assert!(
        offset_of!(RkpKretprobeInstance, rkp_reserved) == c::KRETPROBE_INSTANCE_RKP_RESERVED
    );
    static_assert!(offset_of!(RkpKretprobeInstance, data) == c::KRETPROBE_INSTANCE_DATA);

    static_assert!(flags::GONE as usize == c::FLAG_GONE);
    static_assert!(flags::DISABLED as usize == c::FLAG_DISABLED);
    static_assert!(flags::OPTIMIZED as usize == c::FLAG_OPTIMIZED);
    static_assert!(flags::FTRACE as usize == c::FLAG_FTRACE);
    static_assert!(crate::abi::KRETPROBE_MAXACTIVE_MAX == c::KRETPROBE_MAXACTIVE_MAX);
    static_assert!(crate::abi::KRETPROBE_MAX_DATA_SIZE == c::KRETPROBE_MAX_DATA_SIZE);
}
