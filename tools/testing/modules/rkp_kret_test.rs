// SPDX-License-Identifier: GPL-2.0

//! rkp_kret_test: the kretprobe cases of the kernel's lib/test_kprobes.c,
//! and more, run against rkprobes at module load.
//!
//! Without parameters it runs its checks and prints KTAP lines
//! (`rkp_kret_test: ok N desc`); loading fails with `EINVAL` if any check
//! failed. With `hold=FUNC` it instead keeps a kretprobe with
//! `maxactive=4` on FUNC while loaded and reports its counts at unload, for
//! guest tests of frames that never return (`hold=do_exit`).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use kernel::{c_str, prelude::*};

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

#[path = "ktap.rs"]
mod ktap;
use ktap::Ktap;

use rkprobes::{
    abi::{RkpKprobe, RkpKretprobe, RkpKretprobeInstance},
    kretprobe_find_ret_addr, raw, read_kernel, stack_trace, Kretprobe, KretprobeHandler, Regs,
    RetInfo, Target,
};

module! {
    type: RkpKretTest,
    name: "rkp_kret_test",
    author: "rkprobes developers",
    description: "rkprobes kretprobe tests run at load (lib/test_kprobes.c)",
    license: "GPL",
}

string_param!(HOLD, "hold", "", 128);

const DIV_FACTOR: u32 = 3;

/// The probed function (the kernel test's `kprobe_target`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_kret_target(value: u32) -> u32 {
    core::hint::black_box(value) / DIV_FACTOR
}

/// A second target, for batches.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_kret_target2(value: u32) -> u32 {
    core::hint::black_box(value) * DIV_FACTOR
}

/// The inner function of the nested case.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_kret_inner(value: u32) -> u32 {
    (core::hint::black_box(value) ^ 5) + 1
}

/// The outer function of the nested case: calls the inner one.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_kret_outer(value: u32) -> u32 {
    call(rkp_kret_inner, value).wrapping_mul(2)
}

/// Recurses `value` levels deep, returning the depth it was called at.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_kret_recurse(value: u32) -> u32 {
    if value == 0 {
        return 0;
    }
    call(rkp_kret_recurse, value - 1).wrapping_add(core::hint::black_box(1))
}

/// Calls `f` through a pointer the compiler cannot see through.
fn call(f: extern "C" fn(u32) -> u32, v: u32) -> u32 {
    core::hint::black_box(f)(v)
}

fn addr_of(f: extern "C" fn(u32) -> u32) -> usize {
    f as *const () as usize
}

extern "C" {
    fn stack_trace_save(store: *mut usize, size: u32, skipnr: u32) -> u32;
}

/// Whether interrupts are off on this CPU.
fn irqs_off() -> bool {
    let flags: u64;
    // SAFETY: reads the flags register through the stack; no other effect.
    unsafe { core::arch::asm!("pushfq", "pop {}", out(reg) flags) };
    flags & (1 << 9) == 0
}

/// Whether this context cannot be preempted, as the kernel's
/// `!preemptible()`: interrupts off, or the preempt count (x86's
/// `pcpu_hot.preempt_count`, read as its own `preempt_count()` does)
/// above zero in its preemption byte.
fn not_preemptible() -> bool {
    use kernel::bindings::{pcpu_hot, pcpu_hot__bindgen_ty_1__bindgen_ty_1 as Hot};
    let count: u32;
    // SAFETY: a `%gs`-relative load of this CPU's preempt count; no other
    // effect.
    unsafe {
        core::arch::asm!(
            "mov {c:e}, dword ptr gs:[{hot} + {off}]",
            c = out(reg) count,
            hot = sym pcpu_hot,
            off = const core::mem::offset_of!(Hot, preempt_count),
            options(nostack, readonly, preserves_flags)
        )
    };
    count & 0xff != 0 || irqs_off()
}

const TRACE_LEN: usize = 64;

/// What the handlers saw, checked by `run`.
struct Seen {
    entries: AtomicU32,
    returns: AtomicU32,
    /// Return values, in return order, as decimal digits (recursion).
    values: AtomicUsize,
    /// The return address at entry, and as the return handler saw it.
    entry_ret: AtomicUsize,
    info_ret: AtomicUsize,
    ip_at_ret: AtomicUsize,
    ret_val: AtomicUsize,
    order_ok: AtomicBool,
    no_preempt: AtomicBool,
    /// The stack trace taken in the return handler contained the real
    /// return address, raw or mapped.
    trace_has_ret: AtomicBool,
    trace_has_outer_raw: AtomicBool,
    trace_has_outer_mapped: AtomicBool,
    stitched_has_outer: AtomicBool,
    stitched_has_ret: AtomicBool,
}

static SEEN: Seen = Seen {
    entries: AtomicU32::new(0),
    returns: AtomicU32::new(0),
    values: AtomicUsize::new(0),
    entry_ret: AtomicUsize::new(0),
    info_ret: AtomicUsize::new(0),
    ip_at_ret: AtomicUsize::new(0),
    ret_val: AtomicUsize::new(0),
    order_ok: AtomicBool::new(true),
    no_preempt: AtomicBool::new(true),
    trace_has_ret: AtomicBool::new(false),
    trace_has_outer_raw: AtomicBool::new(false),
    trace_has_outer_mapped: AtomicBool::new(false),
    stitched_has_outer: AtomicBool::new(false),
    stitched_has_ret: AtomicBool::new(false),
};

/// The outer frame's real return address, for the nested case.
static OUTER_RET: AtomicUsize = AtomicUsize::new(0);

fn reset() {
    let s = &SEEN;
    s.entries.store(0, Ordering::Relaxed);
    s.returns.store(0, Ordering::Relaxed);
    s.values.store(0, Ordering::Relaxed);
    s.entry_ret.store(0, Ordering::Relaxed);
    s.info_ret.store(0, Ordering::Relaxed);
    s.ip_at_ret.store(0, Ordering::Relaxed);
    s.ret_val.store(0, Ordering::Relaxed);
    s.order_ok.store(true, Ordering::Relaxed);
    s.no_preempt.store(true, Ordering::Relaxed);
    s.trace_has_ret.store(false, Ordering::Relaxed);
    s.trace_has_outer_raw.store(false, Ordering::Relaxed);
    s.trace_has_outer_mapped.store(false, Ordering::Relaxed);
    s.stitched_has_outer.store(false, Ordering::Relaxed);
    s.stitched_has_ret.store(false, Ordering::Relaxed);
}

/// Per-call data: the entry's sequence number and return address.
#[derive(Clone, Copy, Default)]
struct Call {
    seq: u32,
    ret: usize,
}

/// Records everything; `skip` makes the entry handler refuse every call,
/// `trace` takes a stack trace in the return handler.
struct Recorder {
    skip: bool,
    trace: bool,
    outer: bool,
}

#[vtable]
impl KretprobeHandler for Recorder {
    type Data = Call;

    fn entry(&self, data: &mut Call, regs: &Regs) -> bool {
        data.seq = SEEN.entries.fetch_add(1, Ordering::Relaxed) + 1;
        data.ret = read_kernel::<usize>(regs.sp()).unwrap_or(0);
        if self.outer {
            OUTER_RET.store(data.ret, Ordering::Relaxed);
        } else {
            SEEN.entry_ret.store(data.ret, Ordering::Relaxed);
        }
        !self.skip
    }

    fn ret(&self, info: &RetInfo, data: &mut Call, regs: &mut Regs) {
        let s = &SEEN;
        s.returns.fetch_add(1, Ordering::Relaxed);
        if data.seq == 0 || data.ret != info.ret_addr() {
            s.order_ok.store(false, Ordering::Relaxed);
        }
        if !not_preemptible() {
            s.no_preempt.store(false, Ordering::Relaxed);
        }
        if self.outer {
            return;
        }
        let v = s.values.load(Ordering::Relaxed);
        s.values.store(
            v.wrapping_mul(10).wrapping_add(regs.ax() as usize % 10),
            Ordering::Relaxed,
        );
        s.info_ret.store(info.ret_addr(), Ordering::Relaxed);
        s.ip_at_ret.store(regs.ip(), Ordering::Relaxed);
        s.ret_val.store(regs.ax() as usize, Ordering::Relaxed);
        if self.trace {
            let mut buf = [0usize; TRACE_LEN];
            // SAFETY: `buf` has room for `TRACE_LEN` entries.
            let n = unsafe { stack_trace_save(buf.as_mut_ptr(), TRACE_LEN as u32, 0) } as usize;
            let entries = buf.get(..n).unwrap_or(&[]);
            let outer = OUTER_RET.load(Ordering::Relaxed);
            for &a in entries {
                if a == info.ret_addr() {
                    s.trace_has_ret.store(true, Ordering::Relaxed);
                }
                if outer != 0 && a == outer {
                    s.trace_has_outer_raw.store(true, Ordering::Relaxed);
                }
                if outer != 0 && kretprobe_find_ret_addr(a) == outer {
                    s.trace_has_outer_mapped.store(true, Ordering::Relaxed);
                }
            }
            let n = stack_trace(&mut buf);
            for &a in buf.get(..n).unwrap_or(&[]) {
                if a == info.ret_addr() {
                    s.stitched_has_ret.store(true, Ordering::Relaxed);
                }
                if outer != 0 && a == outer {
                    s.stitched_has_outer.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

fn recorder(
    f: extern "C" fn(u32) -> u32,
    maxactive: u32,
    r: Recorder,
) -> Result<Pin<KBox<Kretprobe<Recorder>>>> {
    KBox::pin_init(
        Kretprobe::new(Target::Addr(addr_of(f)), maxactive, r),
        GFP_KERNEL,
    )
}

const PLAIN: Recorder = Recorder {
    skip: false,
    trace: false,
    outer: false,
};

fn errno_of(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A raw kretprobe for the C ABI cases.
fn raw_kretprobe(addr: usize, sym: *const u8, offset: u32) -> RkpKretprobe {
    RkpKretprobe::new(
        RkpKprobe::new(addr as *mut _, sym.cast(), offset, 0),
        Some(count_return),
        None,
        0,
        0,
    )
}

static RAW_RETURNS: AtomicU32 = AtomicU32::new(0);

/// The return handler of the raw kretprobes.
///
/// # Safety
///
/// Called by rkprobes as a return handler; it touches neither argument.
unsafe extern "C" fn count_return(
    _ri: *mut RkpKretprobeInstance,
    _regs: *mut kernel::bindings::pt_regs,
) -> i32 {
    RAW_RETURNS.fetch_add(1, Ordering::Relaxed);
    0
}

fn run(t: &mut Ktap) -> Result {
    // One kretprobe: the entry handler runs before the return handler, which
    // sees the return value and the real return address.
    reset();
    let mut rp = recorder(
        rkp_kret_target,
        0,
        Recorder {
            trace: true,
            ..PLAIN
        },
    )?;
    t.check_eq(errno_of(rp.as_mut().register()), 0, "register a kretprobe");
    let v = call(rkp_kret_target, 300);
    t.check_eq(v, 100, "probed function returns its value");
    let s = &SEEN;
    t.check_eq(
        s.entries.load(Ordering::Relaxed),
        1,
        "entry handler ran once",
    );
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        1,
        "return handler ran once",
    );
    t.check(
        s.order_ok.load(Ordering::Relaxed),
        "entry handler before return handler, data shared",
    );
    t.check_eq(
        s.ret_val.load(Ordering::Relaxed),
        100,
        "return handler sees the return value",
    );
    let entry_ret = s.entry_ret.load(Ordering::Relaxed);
    t.check(entry_ret != 0, "return address read at entry");
    t.check_eq(
        s.info_ret.load(Ordering::Relaxed),
        entry_ret,
        "instance has the real return address",
    );
    t.check_eq(
        s.ip_at_ret.load(Ordering::Relaxed),
        entry_ret,
        "regs->ip at return is the real return address",
    );
    t.check(
        s.no_preempt.load(Ordering::Relaxed),
        "return handlers run with preemption off",
    );
    t.check(
        s.trace_has_ret.load(Ordering::Relaxed),
        "stack trace in the return handler has the real return address",
    );
    let cpus = {
        // The kernel's default: max(10, 2 x possible CPUs).
        // SAFETY: `nr_cpu_ids` is set at boot; on the test kernel every
        // possible CPU is one of `nr_cpu_ids`.
        let n = unsafe { kernel::bindings::nr_cpu_ids };
        (2 * n).max(10)
    };
    t.check_eq(
        rp.maxactive(),
        cpus,
        "maxactive 0 becomes max(10, 2 x CPUs)",
    );
    t.check_eq(rp.nmissed(), 0, "nmissed 0");
    for i in 0..50 {
        let _ = call(rkp_kret_target, i);
    }
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        51,
        "50 more calls, 50 more returns (instances are reused)",
    );
    t.check_eq(errno_of(rp.set_enabled(false)), 0, "disable");
    let _ = call(rkp_kret_target, 3);
    t.check_eq(
        s.entries.load(Ordering::Relaxed),
        51,
        "no entry while disabled",
    );
    t.check_eq(errno_of(rp.set_enabled(true)), 0, "enable");
    let _ = call(rkp_kret_target, 3);
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        52,
        "returns again after enable",
    );
    drop(rp);
    let _ = call(rkp_kret_target, 3);
    t.check_eq(
        s.entries.load(Ordering::Relaxed),
        52,
        "nothing after unregister",
    );

    // An entry handler that refuses: no return handler, instance given back.
    reset();
    let mut rp = recorder(
        rkp_kret_target,
        2,
        Recorder {
            skip: true,
            ..PLAIN
        },
    )?;
    t.check_eq(
        errno_of(rp.as_mut().register()),
        0,
        "register refusing kretprobe",
    );
    for i in 0..10 {
        let _ = call(rkp_kret_target, i);
    }
    t.check_eq(s.entries.load(Ordering::Relaxed), 10, "refusing: entries");
    t.check_eq(s.returns.load(Ordering::Relaxed), 0, "refusing: no returns");
    t.check_eq(rp.nmissed(), 0, "refusing: instances given back");
    drop(rp);

    // Recursion: each level has its own instance, returning innermost first.
    reset();
    let mut rp = recorder(rkp_kret_recurse, 10, PLAIN)?;
    t.check_eq(
        errno_of(rp.as_mut().register()),
        0,
        "register on a recursive function",
    );
    t.check_eq(call(rkp_kret_recurse, 4), 4, "recursion returns its value");
    t.check_eq(s.entries.load(Ordering::Relaxed), 5, "recursion: 5 entries");
    t.check_eq(s.returns.load(Ordering::Relaxed), 5, "recursion: 5 returns");
    t.check_eq(
        s.values.load(Ordering::Relaxed),
        1234,
        "recursion: innermost return first, each with its value",
    );
    t.check(
        s.order_ok.load(Ordering::Relaxed),
        "recursion: each frame's data its own",
    );
    drop(rp);

    // maxactive exhaustion: the calls beyond the pool are missed.
    reset();
    let mut rp = recorder(rkp_kret_recurse, 2, PLAIN)?;
    t.check_eq(
        errno_of(rp.as_mut().register()),
        0,
        "register with maxactive 2",
    );
    t.check_eq(rp.maxactive(), 2, "maxactive kept");
    t.check_eq(
        call(rkp_kret_recurse, 4),
        4,
        "exhausted: function still works",
    );
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        2,
        "exhausted: 2 returns probed",
    );
    t.check_eq(rp.nmissed(), 3, "exhausted: 3 calls counted in nmissed");
    t.check_eq(
        call(rkp_kret_recurse, 1),
        1,
        "after exhaustion: a shallow call",
    );
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        4,
        "after exhaustion: instances back",
    );
    drop(rp);

    // Nested kretprobes: both return handlers run, inner first; a stack
    // trace in the inner one has the inner real return address, and the
    // outer one once mapped back.
    reset();
    OUTER_RET.store(0, Ordering::Relaxed);
    let mut outer = recorder(
        rkp_kret_outer,
        0,
        Recorder {
            outer: true,
            ..PLAIN
        },
    )?;
    let mut inner = recorder(
        rkp_kret_inner,
        0,
        Recorder {
            trace: true,
            ..PLAIN
        },
    )?;
    t.check_eq(
        errno_of(outer.as_mut().register()),
        0,
        "nested: register outer",
    );
    t.check_eq(
        errno_of(inner.as_mut().register()),
        0,
        "nested: register inner",
    );
    t.check_eq(call(rkp_kret_outer, 8), ((8 ^ 5) + 1) * 2, "nested: value");
    t.check_eq(s.returns.load(Ordering::Relaxed), 2, "nested: both returns");
    t.check_eq(
        s.ret_val.load(Ordering::Relaxed),
        (8 ^ 5) + 1,
        "nested: inner return value",
    );
    t.check(
        s.trace_has_ret.load(Ordering::Relaxed),
        "nested: trace has the inner real return address",
    );
    // The kernel's unwinder stops at the outer frame, whose return address
    // is a stub outside kernel text (Documentation/kprobes-design.rst).
    pr_info!(
        "# nested: stack_trace_save() {} the outer real return address ({} once mapped)\n",
        if s.trace_has_outer_raw.load(Ordering::Relaxed) {
            "has"
        } else {
            "does not have"
        },
        if s.trace_has_outer_mapped.load(Ordering::Relaxed) {
            "has it"
        } else {
            "nor"
        }
    );
    t.check(
        s.stitched_has_ret.load(Ordering::Relaxed),
        "nested: rkprobes' stack trace has the inner real return address",
    );
    t.check(
        s.stitched_has_outer.load(Ordering::Relaxed),
        "nested: rkprobes' stack trace has the outer real return address",
    );
    drop(inner);
    drop(outer);

    // A batch through the Rust wrapper.
    reset();
    let mut a = recorder(rkp_kret_target, 0, PLAIN)?;
    let mut b = recorder(rkp_kret_target2, 0, PLAIN)?;
    t.check_eq(
        errno_of(rkprobes::register_kretprobes(&mut [a.as_mut(), b.as_mut()])),
        0,
        "Rust batch: register 2 kretprobes",
    );
    let _ = call(rkp_kret_target, 1);
    let _ = call(rkp_kret_target2, 1);
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        2,
        "Rust batch: both fire",
    );
    t.check_eq(
        errno_of(rkprobes::register_kretprobes(&mut [a.as_mut()])),
        EBUSY.to_errno(),
        "Rust batch: registering a registered probe: EBUSY",
    );
    t.check_eq(
        errno_of(rkprobes::unregister_kretprobes(&mut [
            a.as_mut(),
            b.as_mut(),
        ])),
        0,
        "Rust batch: unregister",
    );
    let _ = call(rkp_kret_target, 1);
    t.check_eq(
        s.returns.load(Ordering::Relaxed),
        2,
        "Rust batch: none after unregister",
    );
    drop(a);
    drop(b);

    // A batch through the C ABI, all or nothing.
    RAW_RETURNS.store(0, Ordering::Relaxed);
    let mut a = raw_kretprobe(addr_of(rkp_kret_target), core::ptr::null(), 0);
    let mut b = raw_kretprobe(addr_of(rkp_kret_target2), core::ptr::null(), 0);
    let mut list = [core::ptr::addr_of_mut!(a), core::ptr::addr_of_mut!(b)];
    // SAFETY: two valid kretprobes that outlive their registration.
    let r = unsafe { raw::rkp_register_kretprobes(list.as_mut_ptr(), 2) };
    t.check_eq(r, 0, "batch: register 2 kretprobes");
    let _ = call(rkp_kret_target, 1);
    let _ = call(rkp_kret_target2, 1);
    t.check_eq(RAW_RETURNS.load(Ordering::Relaxed), 2, "batch: both fire");
    // SAFETY: registered above.
    unsafe { raw::rkp_unregister_kretprobes(list.as_mut_ptr(), 2) };
    let _ = call(rkp_kret_target, 1);
    t.check_eq(
        RAW_RETURNS.load(Ordering::Relaxed),
        2,
        "batch: none after unregister",
    );
    // An unregistration batch that names one kretprobe twice, besides a
    // null and a never-registered one: the registered one goes once, the
    // rest is skipped, and its pool's place on the list is gone cleanly
    // (it registers and fires again).
    let mut c = raw_kretprobe(addr_of(rkp_kret_target), core::ptr::null(), 0);
    let mut d = raw_kretprobe(addr_of(rkp_kret_target2), core::ptr::null(), 0);
    // SAFETY: a valid kretprobe that outlives its registration.
    let r = unsafe { raw::rkp_register_kretprobe(&mut c) };
    t.check_eq(r, 0, "register one kretprobe");
    let mut list = [
        core::ptr::addr_of_mut!(c),
        core::ptr::null_mut(),
        core::ptr::addr_of_mut!(c),
        core::ptr::addr_of_mut!(d),
    ];
    // SAFETY: valid kretprobes or null.
    unsafe { raw::rkp_unregister_kretprobes(list.as_mut_ptr(), 4) };
    t.check(
        c.rkp_private.is_null() && c.kp.rkp_private.is_null() && d.rkp_private.is_null(),
        "batch naming a kretprobe twice: unregistered, nothing left behind",
    );
    let _ = call(rkp_kret_target, 1);
    t.check_eq(
        RAW_RETURNS.load(Ordering::Relaxed),
        2,
        "batch naming a kretprobe twice: none after unregister",
    );
    // SAFETY: as above.
    unsafe { raw::rkp_unregister_kretprobe(&mut c) };
    t.check(
        c.rkp_private.is_null(),
        "unregistering it again does nothing",
    );
    // SAFETY: as above.
    let r = unsafe { raw::rkp_register_kretprobe(&mut c) };
    t.check_eq(r, 0, "it registers again");
    let _ = call(rkp_kret_target, 1);
    t.check_eq(
        RAW_RETURNS.load(Ordering::Relaxed),
        3,
        "registered again, it fires",
    );
    // SAFETY: registered above.
    unsafe { raw::rkp_unregister_kretprobe(&mut c) };
    let mut good = raw_kretprobe(addr_of(rkp_kret_target), core::ptr::null(), 0);
    let mut bad = raw_kretprobe(addr_of(rkp_kret_target2) + 1, core::ptr::null(), 0);
    let mut list = [core::ptr::addr_of_mut!(good), core::ptr::addr_of_mut!(bad)];
    // SAFETY: as above.
    let r = unsafe { raw::rkp_register_kretprobes(list.as_mut_ptr(), 2) };
    t.check_eq(
        r,
        EINVAL.to_errno(),
        "batch with a non-entry address: EINVAL",
    );
    let _ = call(rkp_kret_target, 1);
    t.check_eq(
        RAW_RETURNS.load(Ordering::Relaxed),
        3,
        "failed batch registered nothing",
    );
    t.check(
        good.rkp_private.is_null() && good.kp.rkp_private.is_null(),
        "failed batch left nothing behind",
    );

    // Bad requests, with the kernel's errors.
    let mut r = raw_kretprobe(addr_of(rkp_kret_target), core::ptr::null(), 0);
    r.data_size = 4097;
    // SAFETY: a valid kretprobe; registration must refuse it.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, E2BIG.to_errno(), "data_size 4097: E2BIG");
    let mut r = raw_kretprobe(addr_of(rkp_kret_target), core::ptr::null(), 0);
    r.maxactive = 4097;
    // SAFETY: as above.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, E2BIG.to_errno(), "maxactive 4097: E2BIG");
    let mut r = raw_kretprobe(0, c_str!("rkp_kret_target").as_char_ptr().cast(), 1);
    // SAFETY: as above.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, EINVAL.to_errno(), "offset past the entry: EINVAL");
    let mut r = raw_kretprobe(0, c_str!("rkp_no_such_symbol").as_char_ptr().cast(), 0);
    // SAFETY: as above.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, ENOENT.to_errno(), "unknown symbol: ENOENT");
    // notify_die: on the int3 path with or without the kernel's kprobes (where
    // do_int3 may be inlined into the noinstr exc_int3).
    let mut r = raw_kretprobe(0, c_str!("notify_die").as_char_ptr().cast(), 0);
    // SAFETY: as above.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, EINVAL.to_errno(), "blacklisted notify_die: EINVAL");
    let mut r = raw_kretprobe(0, c_str!("vfs_read").as_char_ptr().cast(), 0);
    r.maxactive = 4096;
    // SAFETY: as above; unregistered below.
    let e = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(e, 0, "maxactive 4096 on vfs_read (a kernel function)");
    // SAFETY: as above.
    let again = unsafe { raw::rkp_register_kretprobe(&mut r) };
    t.check_eq(again, EINVAL.to_errno(), "double registration: EINVAL");
    if e == 0 {
        let mut list = [core::ptr::addr_of_mut!(r)];
        // SAFETY: registered above.
        unsafe { raw::rkp_unregister_kretprobes(list.as_mut_ptr(), 1) };
    }
    Ok(())
}

/// `hold=FUNC`: counts entries and returns of FUNC.
struct Holder;

static HOLD_ENTRIES: AtomicU32 = AtomicU32::new(0);
static HOLD_RETURNS: AtomicU32 = AtomicU32::new(0);

#[vtable]
impl KretprobeHandler for Holder {
    type Data = ();

    fn entry(&self, _data: &mut (), _regs: &Regs) -> bool {
        HOLD_ENTRIES.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn ret(&self, _info: &RetInfo, _data: &mut (), _regs: &mut Regs) {
        HOLD_RETURNS.fetch_add(1, Ordering::Relaxed);
    }
}

enum RkpKretTest {
    Tested,
    Holding(Pin<KBox<Kretprobe<Holder>>>),
}

impl kernel::Module for RkpKretTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let hold = HOLD.get();
        if !hold.is_empty() {
            let mut rp = KBox::pin_init(
                Kretprobe::new(Target::Symbol(hold, 0), 4, Holder),
                GFP_KERNEL,
            )?;
            rp.as_mut().register()?;
            pr_info!("holding {}\n", hold.to_str().unwrap_or("?"));
            return Ok(RkpKretTest::Holding(rp));
        }
        let mut t = Ktap::new();
        let r = run(&mut t);
        t.finish(r)?;
        Ok(RkpKretTest::Tested)
    }
}

impl Drop for RkpKretTest {
    fn drop(&mut self) {
        if let RkpKretTest::Holding(rp) = self {
            pr_info!(
                "hold: entries {} returns {} nmissed {}\n",
                HOLD_ENTRIES.load(Ordering::Relaxed),
                HOLD_RETURNS.load(Ordering::Relaxed),
                rp.nmissed()
            );
        }
    }
}
