// SPDX-License-Identifier: GPL-2.0

//! rkp_trapfree: one probe at a time, rkprobes' or the kernel's, at any
//! offset of any function, for the sweep rows of `make bench`
//! (tools/testing/bench.sh).
//!
//! The guest script writes commands to `/sys/kernel/debug/rkp_trapfree`
//! (`rkp_trapfree_native.c`, which owns the file and the kernel's kprobe):
//! a probe at `SYM+OFF` on one side, with an empty pre-handler that only
//! counts its hits and, on request, an empty post-handler; a wait for its
//! jump; its removal. Between commands the script times its workload
//! (tools/testing/vm/sweeploop.c), which reads the hit count before and
//! after its loop. This file is rkprobes' side, called by the C file under
//! its lock.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::ffi::{c_char, c_int, c_long, c_uint};
use kernel::prelude::*;
use kernel::str::CString;

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{Action, Kprobe, KprobeHandler, ProbeInfo, Regs, Target};

module! {
    type: RkpTrapfree,
    name: "rkp_trapfree",
    author: "rkprobes developers",
    description: "rkprobes benchmark: one probe at a time, either side, for the sweep rows",
    license: "GPL",
}

/// Hits of rkprobes' probes since load.
static HITS: AtomicU64 = AtomicU64::new(0);

/// Counts its hits (one atomic increment, as the C side's handler); with an
/// empty post-handler or none.
struct Count<const POST: bool>;

#[vtable]
impl<const POST: bool> KprobeHandler for Count<POST> {
    const HAS_POST: bool = POST;

    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        HITS.fetch_add(1, Ordering::Relaxed);
        Action::Continue
    }

    fn post(&self, _p: &ProbeInfo, _regs: &mut Regs, _flags: u64) {}
}

/// A registered probe of either kind; unregistered when dropped.
enum Probe {
    Post(#[allow(dead_code)] Pin<KBox<Kprobe<Count<true>>>>),
    NoPost(#[allow(dead_code)] Pin<KBox<Kprobe<Count<false>>>>),
}

impl Probe {
    fn is_optimized(&self) -> bool {
        match self {
            Probe::Post(p) => p.is_optimized(),
            Probe::NoPost(p) => p.is_optimized(),
        }
    }
}

/// Registers rkprobes' probe at `sym+off`; the probed address.
fn arm(sym: &'static CStr, off: u32, post: bool) -> Result<(Probe, usize)> {
    let t = Target::Symbol(sym, off);
    Ok(if post {
        let mut p = KBox::pin_init(Kprobe::new(t, Count::<true>), GFP_KERNEL)?;
        p.as_mut().register()?;
        let a = p.addr();
        (Probe::Post(p), a)
    } else {
        let mut p = KBox::pin_init(Kprobe::new(t, Count::<false>), GFP_KERNEL)?;
        p.as_mut().register()?;
        let a = p.addr();
        (Probe::NoPost(p), a)
    })
}

/// The name a probe was registered by, freed after the probe.
struct Name(*mut CString);

impl Drop for Name {
    fn drop(&mut self) {
        // SAFETY: from `KBox::into_raw` in `rkp_trapfree_rk_arm`, freed once.
        drop(unsafe { KBox::from_raw(self.0) });
    }
}

/// A copy of `name` that outlives the caller's buffer.
fn own(name: &CStr) -> Result<Name> {
    let b = KBox::new(CString::try_from(name)?, GFP_KERNEL)?;
    Ok(Name(KBox::into_raw(b)))
}

/// rkprobes' probe and the name it was registered by (rkprobes may read a
/// `Target::Symbol`'s name while the probe is registered).
struct Armed {
    /// Dropped first (fields drop in order): unregistered before its name
    /// is freed.
    _probe: Probe,
    _name: Name,
    optimized: fn(&Probe) -> bool,
}

/// The probe the C side's commands manage.
struct Slot(UnsafeCell<Option<Armed>>);

// SAFETY: only the functions below touch the cell, and the C side calls
// them under its `rkp_trapfree_lock` alone (and from module init and exit,
// which nothing else runs beside).
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot(UnsafeCell::new(None));

/// Registers rkprobes' probe at `sym+off` (with a post-handler if `post`
/// is not 0), replacing the slot's; the probed address or `-errno`. Process
/// context, under the C side's lock.
///
/// # Safety
///
/// `sym` is a NUL-terminated string that outlives the call. The caller
/// holds `rkp_trapfree_lock`.
#[no_mangle]
pub unsafe extern "C" fn rkp_trapfree_rk_arm(
    sym: *const c_char,
    off: c_uint,
    post: c_int,
) -> c_long {
    // SAFETY: the caller holds the lock (see `Slot`).
    let slot = unsafe { &mut *SLOT.0.get() };
    *slot = None;
    // SAFETY: `sym` is NUL-terminated (the caller's guarantee).
    let name = unsafe { CStr::from_char_ptr(sym) };
    let owned = match own(name) {
        Ok(n) => n,
        Err(e) => return e.to_errno() as c_long,
    };
    // SAFETY: `owned` lives until `Armed` drops it, after the probe.
    let target: &'static CStr = unsafe { &*owned.0 };
    match arm(target, off, post != 0) {
        Ok((p, at)) => {
            *slot = Some(Armed {
                _probe: p,
                _name: owned,
                optimized: Probe::is_optimized,
            });
            at as c_long
        }
        Err(e) => e.to_errno() as c_long,
    }
}

/// Unregisters the slot's probe, if any. Process context, under the C
/// side's lock.
///
/// # Safety
///
/// The caller holds `rkp_trapfree_lock`.
#[no_mangle]
pub unsafe extern "C" fn rkp_trapfree_rk_disarm() {
    // SAFETY: the caller holds the lock (see `Slot`).
    unsafe { *SLOT.0.get() = None };
}

/// Whether the slot's probe is optimized (queued for its jump or jumped
/// to). Under the C side's lock.
///
/// # Safety
///
/// The caller holds `rkp_trapfree_lock`.
#[no_mangle]
pub unsafe extern "C" fn rkp_trapfree_rk_optimized() -> c_int {
    // SAFETY: the caller holds the lock (see `Slot`).
    let slot = unsafe { &*SLOT.0.get() };
    c_int::from(slot.as_ref().is_some_and(|a| (a.optimized)(&a._probe)))
}

/// The hits of rkprobes' probes since load. Any context.
#[no_mangle]
pub extern "C" fn rkp_trapfree_rk_hits() -> c_long {
    HITS.load(Ordering::Relaxed) as c_long
}

extern "C" {
    fn rkp_trapfree_native_init() -> c_int;
    fn rkp_trapfree_native_exit();
}

struct RkpTrapfree;

impl kernel::Module for RkpTrapfree {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once, at load.
        kernel::error::to_result(unsafe { rkp_trapfree_native_init() })?;
        Ok(RkpTrapfree)
    }
}

impl Drop for RkpTrapfree {
    fn drop(&mut self) {
        // SAFETY: after a successful `rkp_trapfree_native_init()`; removes
        // the file, then the probe, under the lock.
        unsafe { rkp_trapfree_native_exit() };
    }
}
