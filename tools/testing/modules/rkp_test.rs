// SPDX-License-Identifier: GPL-2.0

//! rkp_test: the semantics of the kernel's kprobe KUnit tests
//! (lib/test_kprobes.c), and more, run against rkprobes at module load.
//!
//! Each check prints a KTAP line (`rkp_test: ok N desc` or `not ok`) that the
//! guest test turns into results; loading fails with `EINVAL` if any check
//! failed, so a broken run can never look like a passing one.

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use kernel::{c_str, prelude::*};

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

#[path = "ktap.rs"]
mod ktap;
use ktap::Ktap;

use rkprobes::{abi::RkpKprobe, Action, Kprobe, KprobeHandler, ProbeInfo, Regs, Target};

module! {
    type: RkpTest,
    name: "rkp_test",
    author: "rkprobes developers",
    description: "rkprobes tests run at load (semantics of lib/test_kprobes.c)",
    license: "GPL",
}

const DIV_FACTOR: u32 = 3;

/// The probed function (the kernel test's `kprobe_target`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_test_target(value: u32) -> u32 {
    core::hint::black_box(value) / DIV_FACTOR
}

/// A second target, for batches.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_test_target2(value: u32) -> u32 {
    core::hint::black_box(value) * DIV_FACTOR
}

/// Called from a handler, to count a missed (recursive) hit. Its body must
/// differ from `rkp_test_target`'s: LLVM merges identical functions, and two
/// symbols at one address would make one probe point.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_test_recursed_target(value: u32) -> u32 {
    (core::hint::black_box(value) ^ 1) / DIV_FACTOR
}

/// Calls `f` through a pointer the compiler cannot see through.
fn call(f: extern "C" fn(u32) -> u32, v: u32) -> u32 {
    core::hint::black_box(f)(v)
}

fn addr_of(f: extern "C" fn(u32) -> u32) -> usize {
    f as *const () as usize
}

static PRE: AtomicU32 = AtomicU32::new(0);
static POST: AtomicU32 = AtomicU32::new(0);
static ORDER: AtomicUsize = AtomicUsize::new(0);

/// Counts calls; the pre-handler also calls the recursion target, as the
/// kernel test does, and checks it runs with preemption off.
struct Counter {
    tag: usize,
    recurse: bool,
}

#[vtable]
impl KprobeHandler for Counter {
    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        PRE.fetch_add(1, Ordering::Relaxed);
        // Record the order in which probes at one address run: digits of
        // their tags.
        let o = ORDER.load(Ordering::Relaxed);
        ORDER.store(o * 10 + self.tag, Ordering::Relaxed);
        if self.recurse {
            let _ = call(rkp_test_recursed_target, 7);
        }
        Action::Continue
    }

    fn post(&self, _p: &ProbeInfo, _regs: &mut Regs, _flags: u64) {
        POST.fetch_add(1, Ordering::Relaxed);
    }
}

/// A pre-handler alone, counted apart.
struct PreOnly;

static PRE_ONLY: AtomicU32 = AtomicU32::new(0);

#[vtable]
impl KprobeHandler for PreOnly {
    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        PRE_ONLY.fetch_add(1, Ordering::Relaxed);
        Action::Continue
    }
}

/// A pre-handler that divides by zero, and a fault handler that steps over
/// the faulting `div`: the #DE reaches rkprobes through the die chain
/// (`DIE_TRAP`) while this CPU is in the probe's handler.
struct Faulty;

static FAULTS: AtomicU32 = AtomicU32::new(0);
static FAULT_TRAPNR: AtomicU32 = AtomicU32::new(u32::MAX);
static AFTER_FAULT: AtomicU32 = AtomicU32::new(0);

/// `div %ecx`: two bytes.
const DIV_LEN: usize = 2;

#[vtable]
impl KprobeHandler for Faulty {
    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        // SAFETY: divides by zero on purpose; the fault handler below moves
        // `ip` past the `div`, which clobbers only the registers named.
        unsafe {
            core::arch::asm!(
                "xor %ecx, %ecx",
                "div %ecx",
                out("eax") _,
                out("edx") _,
                out("ecx") _,
                options(att_syntax, nostack)
            )
        };
        AFTER_FAULT.fetch_add(1, Ordering::Relaxed);
        Action::Continue
    }

    fn fault(&self, _p: &ProbeInfo, regs: &mut Regs, trapnr: i32) -> bool {
        FAULTS.fetch_add(1, Ordering::Relaxed);
        FAULT_TRAPNR.store(trapnr as u32, Ordering::Relaxed);
        regs.set_ip(regs.ip() + DIV_LEN);
        true
    }
}

/// Makes the probed function return 42 without running: fault injection.
struct Inject;

#[vtable]
impl KprobeHandler for Inject {
    fn pre(&self, _p: &ProbeInfo, regs: &mut Regs) -> Action {
        regs.override_return(42);
        Action::Skip
    }
}

fn reset() {
    PRE.store(0, Ordering::Relaxed);
    POST.store(0, Ordering::Relaxed);
    ORDER.store(0, Ordering::Relaxed);
}

fn counter(target: Target, tag: usize, recurse: bool) -> Result<Pin<KBox<Kprobe<Counter>>>> {
    KBox::pin_init(Kprobe::new(target, Counter { tag, recurse }), GFP_KERNEL)
}

fn errno_of(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

fn run(t: &mut Ktap) -> Result {
    let target = Target::Addr(addr_of(rkp_test_target));

    // One probe: both handlers run once per call; the function still works.
    reset();
    let mut kp = counter(Target::Addr(addr_of(rkp_test_target)), 1, false)?;
    t.check_eq(errno_of(kp.as_mut().register()), 0, "register one probe");
    let v = call(rkp_test_target, 300);
    t.check_eq(v, 100, "probed function returns its value");
    t.check_eq(PRE.load(Ordering::Relaxed), 1, "pre-handler ran once");
    t.check_eq(POST.load(Ordering::Relaxed), 1, "post-handler ran once");
    t.check(
        kp.addr() >= addr_of(rkp_test_target),
        "probe address written back",
    );
    // Disabled: no handlers; enabled again: handlers.
    t.check_eq(errno_of(kp.set_enabled(false)), 0, "disable");
    let _ = call(rkp_test_target, 3);
    t.check_eq(PRE.load(Ordering::Relaxed), 1, "no handler while disabled");
    t.check_eq(errno_of(kp.set_enabled(true)), 0, "enable");
    let _ = call(rkp_test_target, 3);
    t.check_eq(PRE.load(Ordering::Relaxed), 2, "handler after enable");
    drop(kp);
    let _ = call(rkp_test_target, 3);
    t.check_eq(
        PRE.load(Ordering::Relaxed),
        2,
        "no handler after unregister",
    );

    // Missed counting: the pre-handler calls a probed function.
    reset();
    let mut rec = counter(Target::Addr(addr_of(rkp_test_recursed_target)), 2, false)?;
    let mut kp = counter(Target::Addr(addr_of(rkp_test_target)), 1, true)?;
    t.check_eq(
        errno_of(rec.as_mut().register()),
        0,
        "register recursion target",
    );
    t.check_eq(
        errno_of(kp.as_mut().register()),
        0,
        "register recursing probe",
    );
    let v = call(rkp_test_target, 30);
    t.check_eq(v, 10, "recursing: value");
    t.check_eq(
        PRE.load(Ordering::Relaxed),
        1,
        "recursing: only the outer pre-handler ran",
    );
    t.check_eq(
        rec.nmissed(),
        1,
        "recursing: hit inside a handler counted in nmissed",
    );
    t.check_eq(
        call(rkp_test_recursed_target, 9),
        2,
        "recursion target still works",
    );
    t.check_eq(
        PRE.load(Ordering::Relaxed),
        2,
        "recursion target probe runs outside handlers",
    );
    drop(kp);
    drop(rec);

    // Several probes at one address run in registration order.
    reset();
    let mut a = counter(Target::Addr(addr_of(rkp_test_target)), 1, false)?;
    let mut b = counter(Target::Addr(addr_of(rkp_test_target)), 2, false)?;
    let mut c = counter(Target::Addr(addr_of(rkp_test_target)), 3, false)?;
    t.check_eq(errno_of(a.as_mut().register()), 0, "aggregate: register 1");
    t.check_eq(errno_of(b.as_mut().register()), 0, "aggregate: register 2");
    t.check_eq(errno_of(c.as_mut().register()), 0, "aggregate: register 3");
    let _ = call(rkp_test_target, 3);
    t.check_eq(
        ORDER.load(Ordering::Relaxed),
        123,
        "aggregate: handlers in registration order",
    );
    drop(b);
    ORDER.store(0, Ordering::Relaxed);
    let _ = call(rkp_test_target, 3);
    t.check_eq(
        ORDER.load(Ordering::Relaxed),
        13,
        "aggregate: after removing the middle one",
    );
    drop(a);
    drop(c);

    // A point where one client has a post-handler: it runs after the
    // instruction; once that client is gone the point has none, and the
    // other client's handler and the instruction still run.
    reset();
    PRE_ONLY.store(0, Ordering::Relaxed);
    let mut a = counter(Target::Addr(addr_of(rkp_test_target)), 1, false)?;
    let mut b = KBox::pin_init(
        Kprobe::new(Target::Addr(addr_of(rkp_test_target)), PreOnly),
        GFP_KERNEL,
    )?;
    t.check_eq(
        errno_of(a.as_mut().register()),
        0,
        "post: register one with",
    );
    t.check_eq(errno_of(b.as_mut().register()), 0, "post: and one without");
    let v = call(rkp_test_target, 300);
    t.check(
        v == 100 && PRE_ONLY.load(Ordering::Relaxed) == 1 && POST.load(Ordering::Relaxed) == 1,
        "post: both pre-handlers, one post-handler, the function's value",
    );
    drop(a);
    let v = call(rkp_test_target, 300);
    t.check(
        v == 100 && PRE_ONLY.load(Ordering::Relaxed) == 2 && POST.load(Ordering::Relaxed) == 1,
        "post: after its client left, the other runs and no post-handler",
    );
    drop(b);

    // Fault injection: a pre-handler that changes ip skips the function.
    let mut inj = KBox::pin_init(
        Kprobe::new(Target::Addr(addr_of(rkp_test_target2)), Inject),
        GFP_KERNEL,
    )?;
    t.check_eq(
        errno_of(inj.as_mut().register()),
        0,
        "register injecting probe",
    );
    t.check_eq(call(rkp_test_target2, 5), 42, "injected return value");
    drop(inj);
    t.check_eq(
        call(rkp_test_target2, 5),
        15,
        "function restored after unregister",
    );

    // A fault in a handler goes to the probe's fault handler.
    let mut f = KBox::pin_init(
        Kprobe::new(Target::Addr(addr_of(rkp_test_target2)), Faulty),
        GFP_KERNEL,
    )?;
    t.check_eq(
        errno_of(f.as_mut().register()),
        0,
        "register faulting probe",
    );
    t.check_eq(
        call(rkp_test_target2, 5),
        15,
        "function runs after the handler's fault",
    );
    t.check_eq(
        FAULTS.load(Ordering::Relaxed),
        1,
        "fault handler called once",
    );
    t.check_eq(
        FAULT_TRAPNR.load(Ordering::Relaxed),
        0,
        "with trapnr 0 (#DE)",
    );
    t.check_eq(
        AFTER_FAULT.load(Ordering::Relaxed),
        1,
        "the pre-handler went on after the fault",
    );
    drop(f);

    // Bad requests, with the kernel's errors, and nothing left behind.
    let mut p = counter(Target::Symbol(c_str!("rkp_no_such_symbol"), 0), 0, false)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        ENOENT.to_errno(),
        "unknown symbol: ENOENT",
    );
    static DATA: AtomicU32 = AtomicU32::new(0);
    let mut p = counter(Target::Addr(core::ptr::addr_of!(DATA) as usize), 0, false)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        EINVAL.to_errno(),
        "module data, not text: EINVAL",
    );
    // notify_die: on the int3 path with or without the kernel's kprobes (where
    // do_int3 may be inlined into the noinstr exc_int3).
    let mut p = counter(Target::Symbol(c_str!("notify_die"), 0), 0, false)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        EINVAL.to_errno(),
        "blacklisted notify_die: EINVAL",
    );
    let mut p = counter(Target::Symbol(c_str!("exc_int3"), 0), 0, false)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        EINVAL.to_errno(),
        "noinstr exc_int3: EINVAL",
    );
    let mut p = counter(
        Target::Symbol(c_str!("rkp_register_kprobe_abi"), 0),
        0,
        false,
    )?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        EINVAL.to_errno(),
        "rkprobes' own code: EINVAL",
    );
    let mut p = counter(target, 0, false)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        0,
        "register for double registration",
    );
    // SAFETY: the raw probe of a registered `Kprobe`, registered again
    // through the C ABI, which must refuse it.
    let again = unsafe { rkprobes::raw::rkp_register_kprobe(kprobe_raw(&p)) };
    t.check_eq(again, EINVAL.to_errno(), "double registration: EINVAL");
    drop(p);
    Ok(())
}

/// The raw probe inside a `Kprobe`, for the double-registration check.
fn kprobe_raw<H: KprobeHandler>(k: &Kprobe<H>) -> *mut RkpKprobe {
    k.raw_ptr()
}

struct RkpTest;

impl kernel::Module for RkpTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut t = Ktap::new();
        let r = run(&mut t);
        t.finish(r)?;
        Ok(RkpTest)
    }
}
