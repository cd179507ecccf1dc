// SPDX-License-Identifier: GPL-2.0

//! rkp_opt_test: jump optimization, checked at module load.
//!
//! The targets are assembly functions (`rkp_opt_targets.S`; the load threads are `rkp_opt_load.c`) whose bytes are
//! known. Each check prints a KTAP line (`rkp_opt_test: ok N desc`); the
//! module fails to load if any failed. What is checked:
//!
//! - a probe is optimized: `RKP_FLAG_OPTIMIZED`, and a `jmp rel32` (0xe9)
//!   at the probed address;
//! - a hit through the jump shows its handlers the registers an int3 hit
//!   shows (the same probe kept an int3 by a neighbour inside its region is
//!   the reference): ip, sp, IF, cs, orig_ax, the argument registers, and,
//!   for a post-handler, the registers after the first instruction; the
//!   stack trace above the probed function is the same;
//! - the function's result is unchanged, a RIP-relative instruction runs
//!   relocated from the detour, every hit counts once, and a hit from inside
//!   a handler counts in `nmissed`;
//! - a probe where a jump lands inside the region stays an int3;
//! - a post-handler joining the point, and a neighbour probe inside the
//!   region, unoptimize it; when they go it is optimized again; a
//!   kretprobe's entry is optimized and its return handler runs;
//! - the text is byte-identical after unregistration;
//! - churn: with one kthread per CPU calling the targets and checking every
//!   result, `churn=N` rounds of unoptimizing and optimizing again
//!   (neighbours, post-handlers, enable/disable); the kept probe counts every
//!   call exactly once (hits plus nmissed).
//!
//! With `dump=0xADDR` it only prints the 64 bytes at ADDR
//! (`rkp_opt_test: bytes 0xADDR: [..]`) and fails the load, so that a
//! guest test can compare a kernel function's text before and after.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use kernel::{bindings, prelude::*, str::CStr};

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

#[path = "ktap.rs"]
mod ktap;
use ktap::Ktap;

use rkprobes::{
    read_kernel, stack_trace, Action, Kprobe, KprobeHandler, Kretprobe, KretprobeHandler,
    ProbeInfo, Regs, RetInfo, Target,
};

module! {
    type: RkpOptTest,
    name: "rkp_opt_test",
    author: "rkprobes developers",
    description: "rkprobes test: jump optimization",
    license: "GPL",
}

string_param!(CHURN, "churn", "200", 12);
// churn_only=1: only the churn, for a guest test that switches the
// `optimization` knob meanwhile.
string_param!(CHURN_ONLY, "churn_only", "0", 4);
string_param!(DUMP, "dump", "", 32);

extern "C" {
    fn rkp_opt_target(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64;
    fn rkp_opt_target2(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64;
    fn rkp_opt_target_rip(a: u64) -> u64;
    fn rkp_opt_target_flags(a: u64, b: u64) -> u64;
    fn rkp_opt_target_jump(a: u64) -> u64;
    static rkp_opt_data: u64;
    fn rkp_opt_load_start() -> i32;
    fn rkp_opt_load_stop(calls: *mut u64, calls2: *mut u64, bad: *mut u64);
}

const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
const JMP32: u8 = 0xe9;
const INT3: u8 = 0xcc;
/// The flags a handler must see as at an int3 hit: CF, PF, AF, ZF, SF,
/// IF, DF, OF (the status flags, the interrupt and direction flags).
const FLAGS_COMPARED: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x200 | 0x400 | 0x800;
/// Room for the stack traces compared.
const TRACE: usize = 16;

fn sleep_ms(ms: u32) {
    // SAFETY: process context (module init).
    unsafe { bindings::msleep(ms) };
}

/// The first `N` bytes at `addr`.
fn bytes<const N: usize>(addr: usize) -> [u8; N] {
    let mut b = [0u8; N];
    for (i, x) in b.iter_mut().enumerate() {
        *x = read_kernel::<u8>(addr + i).unwrap_or(0);
    }
    b
}

/// The address of a function's first instruction after ENDBR.
fn entry(f: usize) -> usize {
    // Computed at run time: a relocation to after an ENDBR is one objtool
    // warns about.
    let f = core::hint::black_box(f);
    if bytes::<4>(f) == ENDBR64 {
        f + 4
    } else {
        f
    }
}

/// What a pre-handler saw at its last hit.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Seen {
    ip: usize,
    sp: usize,
    flags: u64,
    cs: u64,
    orig_ax: u64,
    ax: u64,
    args: [u64; 6],
}

impl Seen {
    const ZERO: Seen = Seen {
        ip: 0,
        sp: 0,
        flags: 0,
        cs: 0,
        orig_ax: 0,
        ax: 0,
        args: [0; 6],
    };

    /// The registers of `regs`.
    fn of(regs: &Regs) -> Seen {
        let r = core::ptr::from_ref(regs).cast::<bindings::pt_regs>();
        // SAFETY: `Regs` is a transparent `pt_regs`.
        let (cs, orig_ax) = unsafe { ((*r).__bindgen_anon_1.csx, (*r).orig_ax) };
        let mut args = [0u64; 6];
        for (i, a) in args.iter_mut().enumerate() {
            *a = regs.arg(i).unwrap_or(0);
        }
        Seen {
            ip: regs.ip(),
            sp: regs.sp(),
            flags: regs.flags() & FLAGS_COMPARED,
            cs,
            orig_ax: orig_ax as u64,
            ax: regs.ax(),
            args,
        }
    }
}

/// The stack trace at the last hit, from the probed function's frame up.
static TRACE_BUF: [AtomicUsize; TRACE] = [const { AtomicUsize::new(0) }; TRACE];

/// Records registers (and, when asked, a stack trace) and counts hits; may
/// call its own target once, recursively.
struct Recorder {
    hits: AtomicU64,
    seen: core::cell::Cell<Seen>,
    /// What the post-handler saw at its last call, and how many calls.
    post_seen: core::cell::Cell<Seen>,
    posts: AtomicU64,
    recurse: AtomicBool,
    trace: AtomicBool,
}

// SAFETY: `seen` is written only by the handler while the test waits for
// the call that triggers it, on the test's own CPU, and read after it.
unsafe impl Sync for Recorder {}

impl Recorder {
    const fn new() -> Self {
        Self {
            hits: AtomicU64::new(0),
            seen: core::cell::Cell::new(Seen::ZERO),
            post_seen: core::cell::Cell::new(Seen::ZERO),
            posts: AtomicU64::new(0),
            recurse: AtomicBool::new(false),
            trace: AtomicBool::new(false),
        }
    }

    fn record(&self, regs: &Regs) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        if self.trace.load(Ordering::Relaxed) {
            self.seen.set(Seen::of(regs));
            let mut buf = [0usize; 32];
            let n = stack_trace(&mut buf);
            // From the probed function's frame (its ip) up.
            let from = buf
                .iter()
                .take(n)
                .position(|&a| a == regs.ip())
                .unwrap_or(n);
            for (i, slot) in TRACE_BUF.iter().enumerate() {
                let v = buf
                    .get(from + i)
                    .copied()
                    .filter(|_| from + i < n)
                    .unwrap_or(0);
                slot.store(v, Ordering::Relaxed);
            }
        }
        if self.recurse.swap(false, Ordering::Relaxed) {
            // SAFETY: a plain function of the test.
            let _ = unsafe { rkp_opt_target(1, 2, 3, 4, 5, 6) };
        }
    }
}

/// A probe's handlers: with a post-handler (never optimized) or without.
struct Rec<const POST: bool>(&'static Recorder);

#[vtable]
impl<const POST: bool> KprobeHandler for Rec<POST> {
    const HAS_POST: bool = POST;

    fn pre(&self, _p: &ProbeInfo, regs: &mut Regs) -> Action {
        self.0.record(regs);
        Action::Continue
    }

    fn post(&self, _p: &ProbeInfo, regs: &mut Regs, _flags: u64) {
        self.0.posts.fetch_add(1, Ordering::Relaxed);
        if self.0.trace.load(Ordering::Relaxed) {
            self.0.post_seen.set(Seen::of(regs));
        }
    }
}

static REF: Recorder = Recorder::new();
static OPT: Recorder = Recorder::new();
static OTHER: Recorder = Recorder::new();
static RETS: AtomicU64 = AtomicU64::new(0);
static RETVAL: AtomicU64 = AtomicU64::new(0);

/// A pre-handler that tries to make its function return 42 without running
/// (fault injection), and has no post-handler: once optimized, its change
/// of `ip` is ignored, as the kernel documents for optimized probes.
struct Inject;

#[vtable]
impl KprobeHandler for Inject {
    fn pre(&self, _p: &ProbeInfo, regs: &mut Regs) -> Action {
        regs.override_return(42);
        Action::Skip
    }
}

/// A kretprobe that records the return value.
struct Ret;

#[vtable]
impl KretprobeHandler for Ret {
    type Data = ();

    fn ret(&self, _info: &RetInfo, _data: &mut (), regs: &mut Regs) {
        RETS.fetch_add(1, Ordering::Relaxed);
        RETVAL.store(regs.ax(), Ordering::Relaxed);
    }
}

/// The arguments of the register comparison.
const ARGS: [u64; 6] = [
    0x1111_0000_0000_0001,
    0x2222,
    0x3333_0000,
    0x4444,
    0x5555_5555,
    0x6666,
];

/// Calls `rkp_opt_target` with [`ARGS`] from one place, so that the stack
/// pointer and the frames above are the same at every call.
#[inline(never)]
fn call_target() -> u64 {
    let [a, b, c, d, e, f] = core::hint::black_box(ARGS);
    // SAFETY: a plain function of the test.
    core::hint::black_box(unsafe { rkp_opt_target(a, b, c, d, e, f) })
}

/// The arithmetic flags: CF, PF, AF, ZF, SF, OF.
const ARITH_FLAGS: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800;

/// The arithmetic flags of `cmp b, a` (`a - b`), as the Intel SDM
/// defines them.
fn cmp_flags(a: u64, b: u64) -> u64 {
    let r = a.wrapping_sub(b);
    let mut f = 0;
    if a < b {
        f |= 0x1;
    }
    if (r as u8).count_ones() % 2 == 0 {
        f |= 0x4;
    }
    if (a ^ b ^ r) & 0x10 != 0 {
        f |= 0x10;
    }
    if r == 0 {
        f |= 0x40;
    }
    if (r as i64) < 0 {
        f |= 0x80;
    }
    if (((a ^ b) & (a ^ r)) as i64) < 0 {
        f |= 0x800;
    }
    f
}

fn expected(a: [u64; 6]) -> u64 {
    (a[0] ^ a[1])
        .wrapping_add(a[2] ^ a[3])
        .wrapping_add(a[4] ^ a[5])
}

/// Waits up to 4 s for `addr` to hold a jump (`want`) or not.
fn wait_jump(addr: usize, want: bool) -> bool {
    for _ in 0..200 {
        if (bytes::<1>(addr)[0] == JMP32) == want {
            return true;
        }
        sleep_ms(20);
    }
    false
}

fn errno_of(r: Result) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

fn probe<const POST: bool>(
    target: Target,
    r: &'static Recorder,
) -> Result<Pin<KBox<Kprobe<Rec<POST>>>>> {
    KBox::pin_init(Kprobe::new(target, Rec::<POST>(r)), GFP_KERNEL)
}

fn parse_u32(s: &CStr) -> u32 {
    s.as_bytes()
        .iter()
        .try_fold(0u32, |n, &c| {
            c.is_ascii_digit()
                .then(|| n.saturating_mul(10).saturating_add(u32::from(c - b'0')))
        })
        .unwrap_or(0)
}

fn run(t: &mut Ktap) -> Result {
    let target = entry(rkp_opt_target as *const () as usize);
    let before = bytes::<16>(target);

    // The reference: an int3 hit, with a post-handler after the stepped
    // first instruction (a neighbour inside the region keeps the point an
    // int3).
    let mut nb = probe::<false>(Target::Addr(target + 3), &OTHER)?;
    t.check_eq(
        errno_of(nb.as_mut().register()),
        0,
        "register a neighbour inside the region",
    );
    let mut r = probe::<true>(Target::Addr(target), &REF)?;
    t.check_eq(
        errno_of(r.as_mut().register()),
        0,
        "register the int3 reference",
    );
    REF.trace.store(true, Ordering::Relaxed);
    t.check_eq(call_target(), expected(ARGS), "int3: result");
    let int3_seen = REF.seen.get();
    let int3_post = REF.post_seen.get();
    let int3_trace: [usize; TRACE] = core::array::from_fn(|i| TRACE_BUF[i].load(Ordering::Relaxed));
    sleep_ms(200);
    t.check(
        !r.is_optimized() && bytes::<1>(target)[0] == INT3,
        "a neighbour inside the region keeps the point an int3",
    );
    // The first instruction, `movq %rdi, %rax`, ran before the
    // post-handler: ip after it, ax the first argument, the rest as at the
    // pre-handler.
    t.check_eq(int3_post.ip, target + 3, "int3: the post-handler's ip");
    t.check(
        int3_post.ax == ARGS[0]
            && int3_post.args == ARGS
            && int3_post.sp == int3_seen.sp
            && int3_post.flags == int3_seen.flags,
        "int3: the post-handler's registers",
    );

    // Without the neighbour, the point with a post-handler is optimized:
    // its detour calls the post-handler after the first instruction.
    drop(nb);
    t.check(
        wait_jump(target, true) && r.is_optimized(),
        "a probe with a post-handler is optimized",
    );
    let (h, p0) = (
        REF.hits.load(Ordering::Relaxed),
        REF.posts.load(Ordering::Relaxed),
    );
    t.check_eq(
        call_target(),
        expected(ARGS),
        "optimized with a post-handler: result",
    );
    t.check(
        REF.hits.load(Ordering::Relaxed) == h + 1 && REF.posts.load(Ordering::Relaxed) == p0 + 1,
        "optimized with a post-handler: one pre- and one post-handler call",
    );
    t.check_eq(
        REF.post_seen.get(),
        int3_post,
        "optimized: the post-handler's registers as at an int3 hit",
    );
    t.check_eq(
        REF.seen.get(),
        int3_seen,
        "optimized with a post-handler: the pre-handler's registers",
    );
    let mut ok = true;
    for i in 0..100u64 {
        let a = [i, i + 1, i * 7, !i, i << 3, 42];
        // SAFETY: a plain function of the test.
        ok &= unsafe { rkp_opt_target(a[0], a[1], a[2], a[3], a[4], a[5]) } == expected(a);
    }
    t.check(
        ok && REF.posts.load(Ordering::Relaxed) == p0 + 101,
        "100 calls with a post-handler: results right, every post-handler called",
    );
    REF.trace.store(false, Ordering::Relaxed);
    drop(r);
    t.check_eq(
        bytes::<16>(target),
        before,
        "text restored after the int3 probe",
    );

    // The same address without a post-handler: optimized.
    let mut p = probe::<false>(Target::Addr(target), &OPT)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        0,
        "register a probe without post-handler",
    );
    t.check(
        wait_jump(target, true),
        "the optimizer writes a jmp (0xe9) at the probe",
    );
    t.check(p.is_optimized(), "RKP_FLAG_OPTIMIZED is set");
    OPT.trace.store(true, Ordering::Relaxed);
    t.check_eq(call_target(), expected(ARGS), "optimized: result unchanged");
    OPT.trace.store(false, Ordering::Relaxed);
    let opt_seen = OPT.seen.get();
    let opt_trace: [usize; TRACE] = core::array::from_fn(|i| TRACE_BUF[i].load(Ordering::Relaxed));
    t.check_eq(
        opt_seen.ip,
        int3_seen.ip,
        "optimized: regs->ip as an int3 hit's (addr + 1)",
    );
    t.check_eq(int3_seen.ip, target + 1, "int3: regs->ip is addr + 1");
    t.check_eq(
        opt_seen.sp,
        int3_seen.sp,
        "optimized: regs->sp as an int3 hit's",
    );
    t.check_eq(
        opt_seen.flags,
        int3_seen.flags,
        "optimized: the status flags, IF and DF as an int3 hit's",
    );
    t.check_eq(opt_seen.cs, int3_seen.cs, "optimized: cs as an int3 hit's");
    t.check_eq(
        opt_seen.orig_ax,
        int3_seen.orig_ax,
        "optimized: orig_ax as an int3 hit's",
    );
    t.check_eq(opt_seen.args, ARGS, "optimized: the argument registers");
    t.check_eq(int3_seen.args, ARGS, "int3: the argument registers");
    t.check(
        opt_trace[0] == target + 1 && opt_trace[1] != 0,
        "optimized: the stack trace walks through the detour",
    );
    // The third entry returns into `run`, from the call site of each case.
    let (mut a, mut b) = (opt_trace, int3_trace);
    a[2] = 0;
    b[2] = 0;
    t.check(
        int3_trace[2] != 0,
        "int3: the stack trace goes on above the caller",
    );
    t.check_eq(
        a,
        b,
        "optimized: the stack trace above the probe is an int3 hit's",
    );

    // Every hit counts once; a hit from inside the handler is missed.
    let h0 = OPT.hits.load(Ordering::Relaxed);
    let mut ok = true;
    for i in 0..100u64 {
        let a = [i, i + 1, i * 7, !i, i << 3, 42];
        // SAFETY: a plain function of the test.
        ok &= unsafe { rkp_opt_target(a[0], a[1], a[2], a[3], a[4], a[5]) } == expected(a);
    }
    t.check(ok, "100 optimized calls return the right value");
    t.check_eq(OPT.hits.load(Ordering::Relaxed) - h0, 100, "100 hits");
    OPT.recurse.store(true, Ordering::Relaxed);
    let _ = call_target();
    t.check_eq(p.nmissed(), 1, "a hit inside the handler counts in nmissed");

    // A post-handler joins: unoptimized at once, then optimized again with a
    // detour made anew, which calls it; when it goes, still optimized.
    let mut q = probe::<true>(Target::Addr(target), &OTHER)?;
    t.check_eq(
        errno_of(q.as_mut().register()),
        0,
        "a probe with a post-handler joins",
    );
    t.check(
        bytes::<1>(target)[0] == INT3 && !p.is_optimized(),
        "the point is unoptimized at once",
    );
    let h = (
        OPT.hits.load(Ordering::Relaxed),
        OTHER.hits.load(Ordering::Relaxed),
    );
    let _ = call_target();
    t.check(
        OPT.hits.load(Ordering::Relaxed) == h.0 + 1
            && OTHER.hits.load(Ordering::Relaxed) == h.1 + 1,
        "both pre-handlers run",
    );
    t.check(
        wait_jump(target, true) && p.is_optimized(),
        "optimized again with the post-handler",
    );
    let posts = OTHER.posts.load(Ordering::Relaxed);
    t.check_eq(
        call_target(),
        expected(ARGS),
        "result through the new detour",
    );
    t.check_eq(
        OTHER.posts.load(Ordering::Relaxed),
        posts + 1,
        "the post-handler runs through the jump",
    );
    drop(q);
    t.check(
        wait_jump(target, true) && p.is_optimized(),
        "optimized after it went",
    );

    // A neighbour inside the region: the same.
    let mut n = probe::<false>(Target::Addr(target + 3), &OTHER)?;
    t.check_eq(
        errno_of(n.as_mut().register()),
        0,
        "a neighbour probe inside the region",
    );
    t.check(
        bytes::<1>(target)[0] == INT3 && !p.is_optimized(),
        "the point is unoptimized for it",
    );
    let h = (
        OPT.hits.load(Ordering::Relaxed),
        OTHER.hits.load(Ordering::Relaxed),
    );
    t.check_eq(call_target(), expected(ARGS), "result with the neighbour");
    t.check(
        OPT.hits.load(Ordering::Relaxed) == h.0 + 1
            && OTHER.hits.load(Ordering::Relaxed) == h.1 + 1,
        "both probes hit",
    );
    sleep_ms(200);
    t.check(
        !p.is_optimized(),
        "not optimized again while the neighbour is there",
    );
    drop(n);
    t.check(
        wait_jump(target, true) && p.is_optimized(),
        "optimized again after the neighbour went",
    );

    // Disabled: the original text; enabled: optimized again.
    t.check_eq(errno_of(p.set_enabled(false)), 0, "disable");
    t.check_eq(bytes::<16>(target), before, "disabled: the original text");
    t.check_eq(errno_of(p.set_enabled(true)), 0, "enable");
    t.check(wait_jump(target, true), "enabled: optimized again");
    drop(p);
    t.check_eq(
        bytes::<16>(target),
        before,
        "unregistered: the text is byte-identical",
    );

    // A RIP-relative instruction runs relocated in the detour.
    let rip = entry(rkp_opt_target_rip as *const () as usize);
    let rip_before = bytes::<16>(rip);
    let mut p = probe::<false>(Target::Addr(rip), &OTHER)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        0,
        "register at a RIP-relative load",
    );
    t.check(wait_jump(rip, true), "RIP-relative load: optimized");
    // SAFETY: a static of the test, and a plain function.
    let (data, got) = unsafe {
        (
            core::ptr::read_volatile(core::ptr::addr_of!(rkp_opt_data)),
            rkp_opt_target_rip(5),
        )
    };
    t.check_eq(
        got,
        data + 5,
        "RIP-relative load: the right value from the detour",
    );
    drop(p);
    t.check_eq(
        bytes::<16>(rip),
        rip_before,
        "RIP-relative load: text restored",
    );

    // The probed code's flags survive the detour (read after the region).
    let ff = entry(rkp_opt_target_flags as *const () as usize);
    let ff_before = bytes::<16>(ff);
    // cmp %rsi,%rdi (3 bytes): the mov after it.
    let mut p = probe::<false>(Target::Addr(ff + 3), &OTHER)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        0,
        "register between a cmp and the setb that reads its flags",
    );
    t.check(wait_jump(ff + 3, true), "flags: optimized");
    // SAFETY: a plain function of the test.
    let got = unsafe { [rkp_opt_target_flags(1, 2), rkp_opt_target_flags(2, 1)] };
    t.check_eq(got, [1, 0], "flags: the cmp's carry reaches the setb");
    drop(p);
    t.check_eq(bytes::<16>(ff), ff_before, "flags: text restored");

    // A post-handler after the cmp sees its flags, at an int3 hit (kept so
    // by a neighbour in the region) and through the jump.
    let mut nb = probe::<false>(Target::Addr(ff + 3), &OTHER)?;
    let mut p = probe::<true>(Target::Addr(ff), &REF)?;
    t.check(
        errno_of(nb.as_mut().register()) == 0 && errno_of(p.as_mut().register()) == 0,
        "register a post-handler at a cmp, a neighbour after it",
    );
    REF.trace.store(true, Ordering::Relaxed);
    let post_flags = |a: u64, b: u64| {
        // SAFETY: a plain function of the test.
        let r = unsafe { rkp_opt_target_flags(a, b) };
        let (pre, post) = (REF.seen.get(), REF.post_seen.get());
        let want = (pre.flags & !ARITH_FLAGS) | cmp_flags(a, b);
        r == u64::from(a < b) && post.flags == want & FLAGS_COMPARED && post.ip == ff + 3
    };
    t.check(
        post_flags(1, 2) && post_flags(2, 1) && post_flags(7, 7),
        "int3: the post-handler sees the cmp's flags",
    );
    drop(nb);
    t.check(
        wait_jump(ff, true) && p.is_optimized(),
        "a post-handler at a cmp: optimized",
    );
    t.check(
        post_flags(1, 2) && post_flags(2, 1) && post_flags(7, 7) && post_flags(0, u64::MAX),
        "optimized: the post-handler sees the cmp's flags",
    );
    REF.trace.store(false, Ordering::Relaxed);
    drop(p);
    t.check_eq(
        bytes::<16>(ff),
        ff_before,
        "post-handler at a cmp: text restored",
    );

    // A jump into the region: never optimized.
    let jf = entry(rkp_opt_target_jump as *const () as usize);
    // test %rdi,%rdi (3 bytes); jz (2 bytes): the mov after them.
    let mut p = probe::<false>(Target::Addr(jf + 5), &OTHER)?;
    t.check_eq(
        errno_of(p.as_mut().register()),
        0,
        "register where a jump lands in the region",
    );
    sleep_ms(300);
    t.check(
        !p.is_optimized() && bytes::<1>(jf + 5)[0] == INT3,
        "a jump into the region: stays an int3",
    );
    // SAFETY: plain functions of the test.
    t.check(
        unsafe { rkp_opt_target_jump(0) == 2 && rkp_opt_target_jump(4) == 5 },
        "and the function works",
    );
    drop(p);

    // A pre-handler's change of ip: honoured at an int3 hit, ignored once
    // the probe is optimized (the kernel's documented behaviour).
    let rip_at = entry(rkp_opt_target_rip as *const () as usize);
    let mut inj = KBox::pin_init(Kprobe::new(Target::Addr(rip_at), Inject), GFP_KERNEL)?;
    t.check_eq(
        errno_of(inj.as_mut().register()),
        0,
        "register a probe that changes ip",
    );
    let queued = inj.is_optimized();
    t.check(
        wait_jump(rip_at, true),
        "the ip-changing probe is optimized",
    );
    // SAFETY: a static of the test, and a plain function.
    let (data, got) = unsafe {
        (
            core::ptr::read_volatile(core::ptr::addr_of!(rkp_opt_data)),
            rkp_opt_target_rip(5),
        )
    };
    t.check_eq(got, data + 5, "optimized: the change of ip is ignored");
    t.check_eq(errno_of(inj.set_enabled(false)), 0, "disable it");
    // A probe with a post-handler beside it keeps the point an int3.
    let mut keep = probe::<true>(Target::Addr(rip_at), &OTHER)?;
    t.check_eq(
        errno_of(keep.as_mut().register()),
        0,
        "a post-handler keeps the point an int3",
    );
    t.check_eq(errno_of(inj.set_enabled(true)), 0, "enable it again");
    // SAFETY: a plain function.
    t.check_eq(
        unsafe { rkp_opt_target_rip(5) },
        42,
        "int3: the change of ip is honoured",
    );
    pr_info!("# queued at registration: {}\n", queued);
    drop(keep);
    drop(inj);
    t.check_eq(
        bytes::<16>(rip_at),
        rip_before,
        "text restored after the ip-changing probe",
    );

    // A kretprobe's entry is optimized too.
    let t2 = rkp_opt_target2 as *const () as usize;
    let mut k = KBox::pin_init(Kretprobe::new(Target::Addr(t2), 0, Ret), GFP_KERNEL)?;
    t.check_eq(errno_of(k.as_mut().register()), 0, "register a kretprobe");
    t.check(
        wait_jump(entry(t2), true),
        "the kretprobe's entry is optimized",
    );
    // SAFETY: a plain function of the test.
    let v = unsafe { rkp_opt_target2(9, 1, 2, 3, 4, 5) };
    t.check(
        v == 8 + 1 - 1 && RETS.load(Ordering::Relaxed) == 1 && RETVAL.load(Ordering::Relaxed) == v,
        "its return handler sees the return value",
    );
    drop(k);

    churn(t, target, before)
}

/// Unoptimizes and optimizes under load: see the module documentation.
fn churn(t: &mut Ktap, target: usize, before: [u8; 16]) -> Result {
    let rounds = parse_u32(CHURN.get());
    let t2 = entry(rkp_opt_target2 as *const () as usize);
    let before2 = bytes::<16>(t2);
    let mut p = probe::<false>(Target::Addr(target), &OPT)?;
    let mut d = probe::<false>(Target::Addr(t2), &OTHER)?;
    t.check_eq(errno_of(p.as_mut().register()), 0, "churn: the kept probe");
    t.check_eq(
        errno_of(d.as_mut().register()),
        0,
        "churn: the toggled probe",
    );
    let m0 = p.nmissed();
    let h0 = OPT.hits.load(Ordering::Relaxed);
    // SAFETY: starts kthreads that call the targets; stopped below.
    let threads = unsafe { rkp_opt_load_start() };
    t.check(threads >= 1, "churn: load threads started");
    let mut optimized_seen = 0u32;
    let mut errors = 0u32;
    for i in 0..rounds {
        match i % 4 {
            0 => {
                let mut n = probe::<false>(Target::Addr(target + 3), &OTHER)?;
                errors += u32::from(n.as_mut().register().is_err());
                sleep_ms(1);
            }
            1 => {
                let mut q = probe::<true>(Target::Addr(target), &OTHER)?;
                errors += u32::from(q.as_mut().register().is_err());
                sleep_ms(1);
            }
            2 => {
                errors += u32::from(d.set_enabled(false).is_err());
                sleep_ms(1);
                errors += u32::from(d.set_enabled(true).is_err());
            }
            _ => {
                // Long enough, now and then, for the optimizer to run.
                sleep_ms(if i % 16 == 3 { 60 } else { 5 });
            }
        }
        optimized_seen += u32::from(bytes::<1>(target)[0] == JMP32);
    }
    let (mut calls, mut calls2, mut bad) = (0u64, 0u64, 0u64);
    // SAFETY: stops the threads started above.
    unsafe { rkp_opt_load_stop(&mut calls, &mut calls2, &mut bad) };
    pr_info!(
        "# churn: {} rounds, {} calls, {} calls of the toggled target, optimized in {} rounds\n",
        rounds,
        calls,
        calls2,
        optimized_seen
    );
    t.check_eq(errors, 0, "churn: every registration and enable succeeded");
    t.check_eq(bad, 0, "churn: every call returned the right value");
    t.check(calls > 0 && calls2 > 0, "churn: the targets were called");
    let counted = OPT.hits.load(Ordering::Relaxed) - h0 + (p.nmissed() - m0);
    t.check_eq(
        counted,
        calls,
        "churn: every call counted once (hits + nmissed)",
    );
    t.check(
        rounds < 16 || optimized_seen > 0,
        "churn: the probe was optimized in between",
    );
    drop(p);
    drop(d);
    t.check_eq(bytes::<16>(target), before, "churn: text restored");
    t.check_eq(
        bytes::<16>(t2),
        before2,
        "churn: the toggled target's text restored",
    );
    Ok(())
}

/// Parses `0x` and hex digits.
fn parse_hex(s: &CStr) -> Option<usize> {
    let h = s.as_bytes().strip_prefix(b"0x")?;
    h.iter().try_fold(0usize, |n, &c| {
        let d = (c as char).to_digit(16)? as usize;
        n.checked_mul(16)?.checked_add(d)
    })
}

/// `dump=0xADDR`: prints the 64 bytes there.
fn dump(addr: usize) {
    let b = bytes::<64>(addr);
    pr_info!("bytes {:#x}: {:02x?}\n", addr, b);
}

struct RkpOptTest;

impl kernel::Module for RkpOptTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        if let Some(addr) = parse_hex(DUMP.get()) {
            dump(addr);
            return Err(EINVAL);
        }
        let mut t = Ktap::new();
        let r = if CHURN_ONLY.get().as_bytes() == b"1" {
            let target = entry(rkp_opt_target as *const () as usize);
            churn(&mut t, target, bytes::<16>(target))
        } else {
            run(&mut t)
        };
        t.finish(r)?;
        Ok(RkpOptTest)
    }
}
