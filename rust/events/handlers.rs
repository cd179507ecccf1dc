// SPDX-License-Identifier: GPL-2.0

//! The handlers the probe core calls for the events' probes: a kprobe
//! event's pre-handler, a return event's entry and return handlers, and the
//! same for the other sites of a probe on several functions ([`Site`]).
//! Each finds its probe from the structure the probe core passes and
//! records the hit ([`record`]).
//!
//! Probe-hit context: int3, the ftrace callback, a detour or the return
//! trampoline, with preemption or interrupts off; may not sleep, allocate
//! or take locks.

use super::{hit::record, EntryArgs, Probe, Site};
use crate::{
    abi::{RkpKprobe, RkpKretprobe, RkpKretprobeInstance},
    arch, ffi,
};
use kernel::{ffi::c_int, types::Opaque};

/// The pre-handler of a kprobe event's probe. int3 context.
///
/// # Safety
///
/// Called by the probe core with the `kp` of a registered `Probe`.
pub(super) unsafe extern "C" fn kprobe_handler(
    kp: *mut RkpKprobe,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: `kp` is the entry probe of a registered `Probe`'s `rp`, its
    // first field.
    let probe = unsafe { &*kernel::container_of!(kp.cast::<Opaque<RkpKretprobe>>(), Probe, rp) };
    record(probe, regs, None, || {
        // SAFETY: a registered probe's address is set.
        (unsafe { (*kp).addr } as usize, 0)
    });
    0
}

/// The entry handler of a kretprobe event's probe: saves the arguments for
/// `$argN` at return. int3 context.
///
/// # Safety
///
/// Called by the probe core with an instance of a registered `Probe`'s
/// kretprobe, whose data holds six words.
pub(super) unsafe extern "C" fn entry_handler(
    ri: *mut RkpKretprobeInstance,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the caller's contract.
    let (r, data) = unsafe {
        (
            &*regs,
            core::ptr::addr_of_mut!((*ri).data).cast::<EntryArgs>(),
        )
    };
    // The register arguments (an entry argument beyond them reads as 0).
    let args: EntryArgs =
        core::array::from_fn(|i| arch::regs_get_kernel_argument(r, i as u32, |_| 0));
    // SAFETY: the instance's data area has room for `EntryArgs`, 8-aligned.
    unsafe { data.write(args) };
    0
}

/// The return handler of a kretprobe event's probe. Trampoline context,
/// preemption off.
///
/// # Safety
///
/// As for `entry_handler`.
pub(super) unsafe extern "C" fn ret_handler(
    ri: *mut RkpKretprobeInstance,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the instance's kretprobe is the `rp` field of a registered
    // `Probe`.
    let (rp, ret, data) = unsafe {
        (
            (*ri).rp,
            (*ri).ret_addr,
            &*core::ptr::addr_of!((*ri).data).cast::<EntryArgs>(),
        )
    };
    // SAFETY: as above.
    let probe = unsafe { &*kernel::container_of!(rp, Probe, rp) };
    record(probe, regs, Some(data), || {
        // SAFETY: a registered probe's address is set.
        (unsafe { (*rp).kp.addr } as usize, ret)
    });
    0
}

/// The kprobe handler of a probe's other site ([`Site`]): as
/// [`kprobe_handler`], the probe found through the site.
///
/// # Safety
///
/// As for [`kprobe_handler`], with `kp` the entry probe of a registered
/// `Site`'s `rp`.
pub(super) unsafe extern "C" fn site_kprobe_handler(
    kp: *mut RkpKprobe,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the caller's contract: `rp` is the site's first field, and
    // the site names its probe, which outlives the site's registration.
    let probe =
        unsafe { &*(*kernel::container_of!(kp.cast::<Opaque<RkpKretprobe>>(), Site, rp)).probe };
    record(probe, regs, None, || {
        // SAFETY: a registered probe's address is set.
        (unsafe { (*kp).addr } as usize, 0)
    });
    0
}

/// The return handler of a probe's other site ([`Site`]): as
/// [`ret_handler`], the probe found through the site.
///
/// # Safety
///
/// As for [`ret_handler`], with a registered `Site`'s kretprobe.
pub(super) unsafe extern "C" fn site_ret_handler(
    ri: *mut RkpKretprobeInstance,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the instance's kretprobe is the `rp` field of a registered
    // `Site`, which names its probe.
    let (rp, ret, data) = unsafe {
        (
            (*ri).rp,
            (*ri).ret_addr,
            &*core::ptr::addr_of!((*ri).data).cast::<EntryArgs>(),
        )
    };
    // SAFETY: as above.
    let probe =
        unsafe { &*(*kernel::container_of!(rp.cast::<Opaque<RkpKretprobe>>(), Site, rp)).probe };
    record(probe, regs, Some(data), || {
        // SAFETY: a registered probe's address is set.
        (unsafe { (*rp).kp.addr } as usize, ret)
    });
    0
}
