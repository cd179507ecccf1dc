// SPDX-License-Identifier: GPL-2.0

//! Probes on ftrace call sites, through ftrace.
//!
//! A function entry compiled with the function tracer starts (after ENDBR)
//! with a 5-byte call site that ftrace rewrites at will; an int3 there would
//! break it. As the kernel's kprobes do (`KPROBES_ON_FTRACE`), rkprobes asks
//! ftrace to call it at such a site instead: one `ftrace_ops` with
//! `SAVE_REGS | IPMODIFY`, filtered to the probed sites (`ftrace.c`). On a
//! hit the handlers see `ip` as after an int3 at the site, then, for the
//! post-handlers, as after the 5-byte NOP; a pre-handler that moves `ip`
//! (returns non-zero) makes ftrace return there.

use kernel::prelude::*;

#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
use super::ctl::{Ctl, Status};
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
use crate::ffi::{
    self, rkp_ftrace_filter_ip, rkp_ftrace_filter_ips, rkp_ftrace_register, rkp_ftrace_unregister,
};
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
use crate::kernel_ext::sync::{PreemptNotraceGuard, Rcu};
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
use crate::kprobe::Core;
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
use kernel::ffi::{c_int, c_uint, c_ulong};

/// Whether this kernel lets rkprobes probe ftrace call sites.
pub(crate) const FTRACE_PROBES: bool = cfg!(CONFIG_DYNAMIC_FTRACE_WITH_REGS);

/// The size of an ftrace call site (`MCOUNT_INSN_SIZE`).
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
const MCOUNT_INSN_SIZE: usize = 5;

/// Arms the ftrace site `addr`; `first` registers rkprobes' ftrace_ops after
/// the filter is set (never before: an ops with an empty filter traces every
/// function). The first arm sets the filter to `addr` alone, which drops any
/// site a failed removal left in it (see [`ftrace_disarm`]). Process context,
/// without `text_mutex` (ftrace takes it).
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
pub(crate) fn ftrace_arm(core: &Core, addr: usize, first: bool) -> Result {
    // SAFETY: process context; the ops is static in ftrace.c.
    kernel::error::to_result(unsafe {
        rkp_ftrace_filter_ip(addr as c_ulong, 0, c_int::from(first))
    })?;
    if first {
        // SAFETY: as above. The callback gets the core, which unregisters
        // the ops before it is freed (its drop disarms every point).
        let r = kernel::error::to_result(unsafe {
            rkp_ftrace_register(::core::ptr::from_ref(core).cast())
        });
        if r.is_err() {
            // SAFETY: as above. Undone so that nothing is half done; if
            // even that fails, the site stays in the filter of an ops that
            // is not registered, and the next first arm resets the filter.
            let _ = unsafe { rkp_ftrace_filter_ip(addr as c_ulong, 1, 0) };
        }
        return r;
    }
    Ok(())
}

/// Disarms the ftrace site `addr`; `last` unregisters the ops first, for the
/// reason given at [`ftrace_arm`]. Never fails, as unregistration must not:
/// removing a site from the filter copies ftrace's hash and so can fail
/// with `ENOMEM`, and then the site stays in the filter. That is harmless:
/// while the ops is registered, [`rkp_ftrace_hit`] finds the point disarmed
/// or gone and returns at once; once it is not, ftrace does not call it; and
/// the next first arm resets the filter. Process context.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
pub(crate) fn ftrace_disarm(addr: usize, last: bool) {
    if last {
        // SAFETY: process context; unregistering an ops that is not
        // registered does nothing (ftrace.c).
        unsafe { rkp_ftrace_unregister() };
    }
    // SAFETY: process context. A failure is harmless (above).
    let _ = unsafe { rkp_ftrace_filter_ip(addr as c_ulong, 1, 0) };
}

/// Arms the ftrace sites `addrs` in one change of ftrace's filter and of
/// the text, as [`ftrace_arm`] arms one (`first` as there). All or none.
/// Process context, without `text_mutex`.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
pub(crate) fn ftrace_arm_many(core: &Core, addrs: &mut [c_ulong], first: bool) -> Result {
    let n = c_uint::try_from(addrs.len()).map_err(|_| E2BIG)?;
    // SAFETY: process context; the ops is static in ftrace.c; `addrs` is
    // valid for `n` sites during the call.
    kernel::error::to_result(unsafe {
        rkp_ftrace_filter_ips(addrs.as_mut_ptr(), n, 0, c_int::from(first))
    })?;
    if first {
        // SAFETY: as in `ftrace_arm`.
        let r = kernel::error::to_result(unsafe {
            rkp_ftrace_register(::core::ptr::from_ref(core).cast())
        });
        if r.is_err() {
            // SAFETY: as above; a failure leaves sites that the next
            // first arm resets (see `ftrace_arm`).
            let _ = unsafe { rkp_ftrace_filter_ips(addrs.as_mut_ptr(), n, 1, 0) };
        }
        return r;
    }
    Ok(())
}

/// Disarms the ftrace sites `addrs` in one change, as [`ftrace_disarm`]
/// does one (`last` as there). Never fails; a failure to change the filter
/// is harmless for the reason given there. Process context.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
pub(crate) fn ftrace_disarm_many(addrs: &mut [c_ulong], last: bool) {
    if last {
        // SAFETY: process context; idempotent (ftrace.c).
        unsafe { rkp_ftrace_unregister() };
    }
    let Ok(n) = c_uint::try_from(addrs.len()) else {
        for &a in addrs.iter() {
            ftrace_disarm(a, false);
        }
        return;
    };
    // SAFETY: process context; `addrs` is valid for `n` sites.
    let _ = unsafe { rkp_ftrace_filter_ips(addrs.as_mut_ptr(), n, 1, 0) };
}

/// Without dynamic ftrace with registers there are no such probes.
#[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_REGS))]
pub(crate) fn ftrace_arm_many(
    _core: &crate::kprobe::Core,
    _addrs: &mut [kernel::ffi::c_ulong],
    _first: bool,
) -> Result {
    Err(EINVAL)
}

/// Without dynamic ftrace with registers there are no such probes.
#[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_REGS))]
pub(crate) fn ftrace_disarm_many(_addrs: &mut [kernel::ffi::c_ulong], _last: bool) {}

/// Without dynamic ftrace with registers there are no such probes.
#[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_REGS))]
pub(crate) fn ftrace_arm(_core: &crate::kprobe::Core, _addr: usize, _first: bool) -> Result {
    Err(EINVAL)
}

/// Without dynamic ftrace with registers there are no such probes.
#[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_REGS))]
pub(crate) fn ftrace_disarm(_addr: usize, _last: bool) {}

/// A hit at the ftrace call site `ip` (the kernel's
/// `kprobe_ftrace_handler()`), handed over by the probe core's ftrace
/// callback (`rkp_ftrace_hit`): preemption off, interrupts as the probed
/// code had them; may not sleep, allocate or take locks.
///
/// # Safety
///
/// `regs` are the registers ftrace saved for this call, writable (IPMODIFY).
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
unsafe fn ftrace_hit(core: &Core, rcu: Rcu<'_>, ip: usize, regs: *mut ffi::pt_regs) {
    let Some(point) = core.lookup(&rcu, ip) else {
        return;
    };
    // A disarmed point's site may still be in the filter (`ftrace_disarm`);
    // and only an ftrace point is armed through ftrace.
    if !point.is_ftrace_armed() {
        return;
    }
    // Preemption is off (the callback): the CPU stays. An interrupt or NMI that
    // comes in meanwhile and hits a probe finds this frame and counts a miss.
    if Ctl::this_cpu_depth() > 0 {
        point.missed(rcu);
        return;
    }
    Ctl::this_cpu_push_first(point);
    // SAFETY: ftrace's saved registers for this call (the caller's contract).
    let r = unsafe { &mut *regs };
    // Where ftrace returns to, restored after the handlers unless one moved
    // it. Not always the site plus `MCOUNT_INSN_SIZE`: another ftrace user
    // called before this one may have moved it (the kernel's kprobes at
    // the same site, whose ops is not IPMODIFY when no post-handler is
    // there, for `bpf_override_return()` or fail_function). Kept in the
    // frame: in a register it would be one more to save and restore.
    Ctl::this_cpu_save_first(r.ip);
    // As if an int3 at the site had trapped.
    r.ip = ip.wrapping_add(1);
    // The post-handler pass only when some client has one (the kernel's
    // `kprobe_ftrace_handler()` tests its one `post_handler`).
    if point.run_pre_handlers(rcu, regs) {
        if point.has_post() {
            // As if the NOP had run (the point's address is `ip`: one
            // register less kept across the handlers' calls).
            r.ip = point.addr().wrapping_add(MCOUNT_INSN_SIZE);
            super::ctl::this_cpu().top_set_status(Status::HitSsDone);
            point.run_post_handlers(rcu, regs, 0);
        }
        r.ip = Ctl::this_cpu_saved_first();
    }
    Ctl::this_cpu_pop_first();
}

/// rkprobes' ftrace callback (`rkp_ftrace_ops` in `ftrace.c`; on a kernel
/// with kCFI through a C adapter of the exact `ftrace_func_t` type): a hit
/// at the ftrace call site `ip`, with interrupts as the probed code had
/// them (the kernel's `kprobe_ftrace_handler()`). The architecture handles
/// it ([`ftrace_hit`]) with preemption off.
///
/// Unlike the kernel's handler, it takes no ftrace recursion lock
/// (`ftrace_test_recursion_trylock()`, about 25 instructions a hit): the
/// per-CPU control block is the recursion guard, as the BPF trampolines'
/// per-CPU `active` counters are theirs. Nothing here before the block's
/// depth test calls code that ftrace traces (it is rkprobes' own Rust,
/// which has no `__fentry__` call sites), so the only way back into this
/// callback before the test is an interrupt or NMI nesting on this CPU,
/// which the block's push protocol handles; after it, a hit from a handler
/// or from anything nesting finds the depth above zero and counts a miss,
/// as the kernel's handler does after its lock (`kprobe_running()`).
///
/// The core comes from the ops (`private`, set when the ops is registered),
/// not from [`Core::get`]: a load and a test fewer a hit.
///
/// # Safety
///
/// Called only by `rkp_ftrace_ops`' callback (`SAVE_REGS | IPMODIFY`), with
/// ftrace's arguments: `op` is that ops, whose `private` is the live core
/// while it is registered ([`ftrace_arm`]); `fregs` are the complete
/// registers ftrace saved for this call, writable. ftrace calls a
/// `SAVE_REGS` ops only with them: its regs caller saves all of them, and
/// its list function, which a call without them can reach while an ops is
/// being added, skips a `SAVE_REGS` ops then (`ftrace_ops_test()`). The
/// kernel's `kprobe_ftrace_handler()` relies on the same.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_ftrace_hit(
    ip: kernel::ffi::c_ulong,
    _parent_ip: kernel::ffi::c_ulong,
    op: *mut kernel::ffi::c_void,
    fregs: *mut kernel::ffi::c_void,
) {
    // `ftrace_get_regs()` without its test of `cs` (see the contract): x86's
    // `struct ftrace_regs` is a `struct pt_regs`, its only member (ftrace.c
    // asserts the offset).
    let regs = fregs.cast::<ffi::pt_regs>();
    // SAFETY: `op` is rkprobes' ops, whose `private` member, at the offset
    // checked at load (`check_ftrace_ops`), holds the core while the ops is
    // registered, which it is while ftrace calls it (the contract).
    let core = unsafe {
        &*op.cast::<u8>()
            .add(FTRACE_OPS_PRIVATE_OFF)
            .cast::<*const Core>()
            .read()
    };
    let preempt = PreemptNotraceGuard::new();
    // SAFETY: the caller's contract; preemption is off.
    unsafe { ftrace_hit(core, Rcu::of(&preempt), ip, regs) };
}

/// `offsetof(struct ftrace_ops, private)` in 6.12: after `func`, `next` and
/// `flags`, in every configuration.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
const FTRACE_OPS_PRIVATE_OFF: usize = 3 * 8;

/// Checks [`FTRACE_OPS_PRIVATE_OFF`] against the C side's. Process context,
/// before any probe exists.
pub(crate) fn check_ftrace_ops() -> Result {
    #[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
    // SAFETY: a constant of ftrace.c.
    if unsafe { ffi::rkp_ftrace_ops_private_off } as usize != FTRACE_OPS_PRIVATE_OFF {
        pr_err!("struct ftrace_ops' private member is not where rkprobes reads it\n");
        return Err(EINVAL);
    }
    Ok(())
}
