// SPDX-License-Identifier: GPL-2.0

//! Registration of one probe or of a batch through the C ABI, shared by
//! `Kprobe` and `Kretprobe` (each describes its C calls with [`Batch`]).
//! Process context, may sleep.

use super::{abi::RkpKprobe, raw::*};
use kernel::{ffi::c_int, prelude::*};

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
pub(super) fn register_single<P: Batch>(mut p: Pin<&mut P>) -> Result {
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
pub(super) fn set_enabled_raw(kp: *mut RkpKprobe, on: bool) -> Result {
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
pub(super) fn register_batch<P: Batch>(probes: &mut [Pin<&mut P>]) -> Result {
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
pub(super) fn unregister_batch<P: Batch>(probes: &mut [Pin<&mut P>]) -> Result {
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
