// SPDX-License-Identifier: GPL-2.0

//! rkp_bench: the cost of a probe hit, rkprobes beside the kernel's kprobes.
//!
//! At load, two targets are called in a loop: a function of this module
//! (probed at its entry by an int3: Rust functions have no ftrace site) and
//! `kfree(NULL)` (probed at its entry, an ftrace call site, so both
//! implementations go through ftrace). Each loop runs with no probe, with a
//! kernel kprobe and with an rkprobes probe, both with the same empty
//! pre-handler, then with a kernel kretprobe and an rkprobes kretprobe, both
//! with the same empty return handler; the times per call are printed with
//! the ratio of the probe overheads. The kernel's kretprobe is registered by
//! `rkp_bench_native.c`. Last, the int3 case again with 10,000 other probes
//! registered (on never-called code), to show that finding the probe of a
//! hit does not depend on how many there are. This is a benchmark, not a test: it asserts nothing
//! about the numbers. `make bench` runs it in normal TCG and with
//! `-icount shift=0`, with both kernels' jump optimization off (the int3
//! rows), then, with `opt=1`, on: the same kind of target timed once both
//! optimizers have written their jumps.

use kernel::{bindings, c_str, prelude::*};

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{
    Action, Kprobe, KprobeHandler, Kretprobe, KretprobeHandler, ProbeInfo, Regs, RetInfo, Target,
};

module! {
    type: RkpBench,
    name: "rkp_bench",
    author: "rkprobes developers",
    description: "rkprobes benchmark: probe hit cost beside the kernel's kprobes",
    license: "GPL",
}

string_param!(ITERS, "iters", "20000", 12);
// opt=1: only the jump-optimized row (the guest script switches both
// kernels' optimization on for it, and off for the others).
string_param!(OPT, "opt", "0", 4);
// scale=1: only the registration rows (time against the number of probes);
// scale=2: rkprobes' batch registration alone, for a profile of it.
string_param!(SCALE, "scale", "0", 4);
// mem=rk|rk0|kp|kp0: the memory row. 10,000 probes on the NOP functions'
// sites, registered in one batch by rkprobes (rk) or by the kernel's
// register_kprobes() (kp), or only allocated (rk0, kp0: the baselines), and
// kept until rmmod; bench.sh reads /proc/meminfo around the load.
string_param!(MEM, "mem", "", 4);
// profile=1: print each timed loop's row number, for the instruction
// profile of tools/testing/insn-profile (the loops always carry its
// markers, which are NOPs).
string_param!(PROFILE, "profile", "0", 4);

/// The int3 target.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_bench_target(x: u64) -> u64 {
    core::hint::black_box(x).wrapping_mul(3)
}

fn call_target(n: u64) {
    let f = core::hint::black_box(rkp_bench_target as extern "C" fn(u64) -> u64);
    for i in 0..n {
        core::hint::black_box(f(i));
    }
}

/// The target of the jump-optimized row: its first instructions (a move
/// and a shift, 5 bytes or more, nothing jumping into them) can be replaced
/// by a jump, unlike `rkp_bench_target`'s, whose `lea` is followed by the
/// return thunk's `jmp`.
#[no_mangle]
#[inline(never)]
pub extern "C" fn rkp_bench_opt_target(x: u64) -> u64 {
    let x = core::hint::black_box(x);
    (x >> 7) ^ x.wrapping_mul(3)
}

fn call_opt_target(n: u64) {
    let f = core::hint::black_box(rkp_bench_opt_target as extern "C" fn(u64) -> u64);
    for i in 0..n {
        core::hint::black_box(f(i));
    }
}

/// Long enough for both optimizers (5 jiffies, then a Tasks RCU grace
/// period) to have written their jumps.
const OPTIMIZER_WAIT_MS: u32 = 500;

fn sleep_ms(ms: u32) {
    // SAFETY: process context (module init).
    unsafe { bindings::msleep(ms) };
}

/// The jump-optimized row: as `bench`, with each probe timed only once its
/// optimizer has run; whether rkprobes' probe is optimized is printed.
fn bench_opt(name: &str, n: u64, f: fn(u64), addr: usize) -> Result {
    let none = time(n, f);
    #[cfg(CONFIG_KPROBES)]
    let native = match native::Native::register(addr, core::ptr::null()) {
        Ok(kp) => {
            sleep_ms(OPTIMIZER_WAIT_MS);
            let t = time(n, f);
            drop(kp);
            Some(t)
        }
        Err(e) => {
            pr_info!("{}: kernel kprobe refused: {}\n", name, e);
            None
        }
    };
    #[cfg(not(CONFIG_KPROBES))]
    let native = None;
    let mut p = KBox::pin_init(Kprobe::new(Target::Addr(addr), Empty), GFP_KERNEL)?;
    p.as_mut().register()?;
    sleep_ms(OPTIMIZER_WAIT_MS);
    // SAFETY: the probed address is text of this module.
    let first = unsafe { core::ptr::read_volatile(p.addr() as *const u8) };
    pr_info!(
        "{}: rkprobes' probe optimized: {} (first byte {:#04x})\n",
        name,
        p.is_optimized(),
        first
    );
    let ours = time(n, f);
    drop(p);
    report(name, n, none, native, ours);
    Ok(())
}

fn call_kfree(n: u64) {
    for _ in 0..n {
        // SAFETY: kfree(NULL) does nothing.
        unsafe { bindings::kfree(core::hint::black_box(core::ptr::null())) };
    }
}

struct Empty;

#[vtable]
impl KprobeHandler for Empty {
    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        Action::Continue
    }
}

/// Never-called code for the scaling row: `NOP_FNS` functions of `NOPS`
/// one-byte NOPs each (an instruction boundary, and a probe site, at every
/// byte), laid out back to back from `rkp_bench_nops` with no padding. Small
/// functions keep registration cheap: rkprobes decodes a function from its
/// start to check a probe address.
const NOP_FNS: usize = 100;
const NOPS: usize = 100;
/// Each function: the NOPs, then `ud2` (2 bytes).
const NOP_FN_SIZE: usize = NOPS + 2;

core::arch::global_asm!(
    ".pushsection .text.rkp_bench_nops, \"ax\"",
    ".globl rkp_bench_nops",
    "rkp_bench_nops:",
    // Never called or jumped to: objtool's ANNOTATE_NOENDBR, so that taking
    // the address without an ENDBR is not reported.
    ".pushsection .discard.noendbr",
    ".long rkp_bench_nops",
    ".popsection",
    ".macro rkp_bench_nopfn",
    ".type rkp_bench_nopfn_\\@, @function",
    "rkp_bench_nopfn_\\@:",
    ".rept 100",
    "nop",
    ".endr",
    "ud2",
    ".size rkp_bench_nopfn_\\@, . - rkp_bench_nopfn_\\@",
    ".endm",
    ".rept 100",
    "rkp_bench_nopfn",
    ".endr",
    ".popsection",
);

extern "C" {
    /// The start of the never-called NOP functions.
    static rkp_bench_nops: [u8; NOP_FNS * NOP_FN_SIZE];
}

/// Calls `f` with the probes of `v`, pinned, for a batch operation.
fn with_pins(
    v: &mut KVec<Pin<KBox<Kprobe<Empty>>>>,
    f: impl FnOnce(&mut [Pin<&mut Kprobe<Empty>>]) -> Result,
) -> Result {
    let mut pins = KVec::with_capacity(v.len(), GFP_KERNEL)?;
    for p in v.iter_mut() {
        pins.push(p.as_mut(), GFP_KERNEL)?;
    }
    f(&mut pins)
}

/// `n` probes (not registered) on the first `n` sites of the NOP
/// functions, `NOPS` a function, as `rkp_bench_native.c` lays out the
/// kernel's.
fn nop_probes(n: usize) -> Result<KVec<Pin<KBox<Kprobe<Empty>>>>> {
    let base = core::ptr::addr_of!(rkp_bench_nops) as usize;
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for i in 0..n {
        let at = base + (i / NOPS) * NOP_FN_SIZE + i % NOPS;
        v.push(
            KBox::pin_init(Kprobe::new(Target::Addr(at), Empty), GFP_KERNEL)?,
            GFP_KERNEL,
        )?;
    }
    Ok(v)
}

/// The int3 row with 10,000 other probes registered.
fn bench_many(n: u64) -> Result {
    let mut others = nop_probes(NOP_FNS * NOPS)?;
    let target = rkp_bench_target as *const () as usize;
    let none = time(n, call_target);
    let mut one = KBox::pin_init(Kprobe::new(Target::Addr(target), Empty), GFP_KERNEL)?;
    one.as_mut().register()?;
    let alone = time(n, call_target);
    drop(one);
    let t = now();
    with_pins(&mut others, rkprobes::register_kprobes)?;
    let reg_ns = now() - t;
    let mut one = KBox::pin_init(Kprobe::new(Target::Addr(target), Empty), GFP_KERNEL)?;
    one.as_mut().register()?;
    let crowded = time(n, call_target);
    drop(one);
    let t = now();
    with_pins(&mut others, rkprobes::unregister_kprobes)?;
    let unreg_ns = now() - t;
    drop(others);
    let over = |t: u64| t.saturating_sub(none) / n;
    pr_info!(
        "int3 at rkp_bench_target entry, rkprobes alone: +{} ns per hit; with {} other probes registered: +{} ns per hit (registered in one batch in {} ms, removed in {} ms)\n",
        over(alone),
        NOP_FNS * NOPS,
        over(crowded),
        reg_ns / 1_000_000,
        unreg_ns / 1_000_000
    );
    Ok(())
}

extern "C" {
    fn rkp_bench_native_batch(
        base: usize,
        per_fn: i32,
        fn_size: i32,
        n: i32,
        reg_ns: *mut i64,
        unreg_ns: *mut i64,
    ) -> i32;
}

/// Registration at scale: time to register and unregister `n` probes on
/// the NOP functions' int3 sites, through rkprobes' batch API, one at a
/// time (up to 1,000: each unregistration waits for its own grace
/// periods), and through the kernel's `register_kprobes()`. One line per
/// count, microseconds, for `tools/testing/bench-plot`.
fn bench_scale(ours_only: bool) -> Result {
    let base = core::ptr::addr_of!(rkp_bench_nops) as usize;
    for n in [1usize, 10, 100, 1000, 10000] {
        if ours_only && n != 1000 {
            continue;
        }
        let mut v = nop_probes(n)?;
        let t = now();
        with_pins(&mut v, rkprobes::register_kprobes)?;
        let batch_reg = now() - t;
        let t = now();
        with_pins(&mut v, rkprobes::unregister_kprobes)?;
        let batch_unreg = now() - t;
        let (mut one_reg, mut one_unreg) = (-1i64, -1i64);
        if n <= 1000 && !ours_only {
            let t = now();
            for p in v.iter_mut() {
                p.as_mut().register()?;
            }
            one_reg = now() - t;
            let t = now();
            for p in v.iter_mut() {
                rkprobes::unregister_kprobes(&mut [p.as_mut()])?;
            }
            one_unreg = now() - t;
        }
        drop(v);
        let (mut kreg, mut kunreg) = (-1i64, -1i64);
        let ret = if ours_only {
            -1
        } else {
            // SAFETY: the NOP functions' sites, never called; the C side
            // checks nothing else and writes the two times.
            unsafe {
                rkp_bench_native_batch(
                    base,
                    NOPS as i32,
                    NOP_FN_SIZE as i32,
                    n as i32,
                    &mut kreg,
                    &mut kunreg,
                )
            }
        };
        if ret != 0 {
            (kreg, kunreg) = (-1, -1);
        }
        let us = |t: i64| if t < 0 { -1 } else { t / 1000 };
        pr_info!(
            "scale: {} probes (us): rkprobes batch register {} unregister {}, one at a time register {} unregister {}; kprobes register_kprobes {} unregister_kprobes {}\n",
            n,
            us(batch_reg),
            us(batch_unreg),
            us(one_reg),
            us(one_unreg),
            us(kreg),
            us(kunreg)
        );
    }
    Ok(())
}

/// The memory row's probes, kept until rmmod.
enum Held {
    None,
    Ours(#[allow(dead_code)] KVec<Pin<KBox<Kprobe<Empty>>>>),
    Native(*mut kernel::ffi::c_void),
}

// SAFETY: the native handle is used only by `drop`, in process context; the
// kernel's kprobes have no affinity to a thread.
unsafe impl Send for Held {}
// SAFETY: no method of `Held` takes `&self`.
unsafe impl Sync for Held {}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::Native(h) = *self {
            // SAFETY: `h` came from `rkp_bench_native_hold` and is released
            // once.
            unsafe { rkp_bench_native_release(h) };
        }
    }
}

extern "C" {
    fn rkp_bench_native_hold(
        base: usize,
        per_fn: i32,
        fn_size: i32,
        n: i32,
        reg: i32,
    ) -> *mut kernel::ffi::c_void;
    fn rkp_bench_native_release(held: *mut kernel::ffi::c_void);
    fn rkp_bench_native_kprobe_size() -> usize;
}

/// The number of probes of the memory row.
const MEM_PROBES: usize = 10_000;

/// The memory row (`mem=`): `MEM_PROBES` probes on the NOP functions'
/// sites, registered or only allocated, kept until rmmod.
fn hold(what: &[u8]) -> Result<Held> {
    let base = core::ptr::addr_of!(rkp_bench_nops) as usize;
    match what {
        b"rk" | b"rk0" => {
            let mut v = nop_probes(MEM_PROBES)?;
            if what == b"rk" {
                with_pins(&mut v, rkprobes::register_kprobes)?;
            }
            pr_info!(
                "mem: {} probes held by rkprobes ({}), {} bytes of caller's structure each\n",
                MEM_PROBES,
                if what == b"rk" {
                    "registered"
                } else {
                    "allocated"
                },
                core::mem::size_of::<Kprobe<Empty>>()
            );
            Ok(Held::Ours(v))
        }
        b"kp" | b"kp0" => {
            // SAFETY: the NOP functions' sites, never called.
            let h = unsafe {
                rkp_bench_native_hold(
                    base,
                    NOPS as i32,
                    NOP_FN_SIZE as i32,
                    MEM_PROBES as i32,
                    i32::from(what == b"kp"),
                )
            };
            if let Err(e) = kernel::error::from_err_ptr(h) {
                pr_info!("mem: kernel kprobes refused: {:?}\n", e);
                return Err(e);
            }
            pr_info!(
                "mem: {} probes held by kprobes ({}), {} bytes of caller's structure each\n",
                MEM_PROBES,
                if what == b"kp" {
                    "registered"
                } else {
                    "allocated"
                },
                // SAFETY: no arguments, no state.
                unsafe { rkp_bench_native_kprobe_size() }
            );
            Ok(Held::Native(h))
        }
        _ => Err(EINVAL),
    }
}

/// The same empty return handler as the kernel kretprobe's.
struct EmptyRet;

#[vtable]
impl KretprobeHandler for EmptyRet {
    type Data = ();

    fn ret(&self, _info: &RetInfo, _data: &mut (), _regs: &mut Regs) {}
}

extern "C" {
    fn rkp_bench_native_kretprobe(
        addr: *mut kernel::ffi::c_void,
        sym: *const kernel::ffi::c_char,
    ) -> *mut kernel::ffi::c_void;
    fn rkp_bench_native_kretprobe_free(rp: *mut kernel::ffi::c_void);
}

/// Times `f` under the kernel's kretprobe at `native_at`, if it takes one.
fn time_native_kretprobe(
    name: &str,
    n: u64,
    f: fn(u64),
    native_at: (usize, *const i8),
) -> Option<u64> {
    // SAFETY: `native_at` is an address or a NUL-terminated symbol name
    // that outlives the call; the probe is freed below.
    let rp = unsafe { rkp_bench_native_kretprobe(native_at.0 as *mut _, native_at.1.cast()) };
    // NULL or an `ERR_PTR` (-4095..-1).
    if rp.is_null() || (-4095..0).contains(&(rp as isize)) {
        pr_info!("{}: kernel kretprobe refused: {}\n", name, rp as isize);
        return None;
    }
    let t = time(n, f);
    // SAFETY: registered above.
    unsafe { rkp_bench_native_kretprobe_free(rp) };
    Some(t)
}

fn bench_ret(
    name: &str,
    n: u64,
    f: fn(u64),
    target: Target,
    native_at: (usize, *const i8),
) -> Result {
    let none = time(n, f);
    let native = time_native_kretprobe(name, n, f, native_at);
    let mut p = KBox::pin_init(Kretprobe::new(target, 0, EmptyRet), GFP_KERNEL)?;
    p.as_mut().register()?;
    let ours = time(n, f);
    let missed = p.nmissed();
    drop(p);
    if missed != 0 {
        pr_info!("{}: rkprobes missed {} returns\n", name, missed);
    }
    report(name, n, none, native, ours);
    Ok(())
}

/// The kernel's kprobes, through `rkp_bench_native.c`: the C compiler lays
/// `struct kprobe` out.
#[cfg(CONFIG_KPROBES)]
mod native {
    use kernel::ffi::{c_char, c_void};

    extern "C" {
        fn rkp_bench_native_kprobe(addr: *mut c_void, sym: *const c_char) -> *mut c_void;
        fn rkp_bench_native_kprobe_free(kp: *mut c_void);
    }

    /// A registered kernel kprobe with an empty pre-handler.
    ///
    /// # Invariants
    ///
    /// `0` is a probe registered by `rkp_bench_native_kprobe`.
    pub(crate) struct Native(*mut c_void);

    impl Native {
        /// Registers at `addr` or `sym`; the error's errno otherwise.
        pub(crate) fn register(addr: usize, sym: *const c_char) -> Result<Self, i32> {
            // SAFETY: `sym` is null or a C string that outlives the call.
            let kp = unsafe { rkp_bench_native_kprobe(addr as *mut c_void, sym) };
            // INVARIANT: a pointer that is not an error is a registered probe.
            kernel::error::from_err_ptr(kp)
                .map(Self)
                .map_err(|e| e.to_errno())
        }
    }

    impl Drop for Native {
        fn drop(&mut self) {
            // SAFETY: registered (the type invariant), freed once here.
            unsafe { rkp_bench_native_kprobe_free(self.0) };
        }
    }
}

fn now() -> i64 {
    // SAFETY: `ktime_get` may be called in any context.
    unsafe { bindings::ktime_get() }
}

/// The number of timed loops so far: each is a row of the instruction
/// profile (`tools/testing/insn-profile`).
static ROW: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// The profile marker `nopl ID(%rax)` with ID `0x524b0000 | row << 1 | end`,
/// which the QEMU plugin tools/testing/qemu-plugin/insn-profile.c looks for;
/// a 7-byte NOP otherwise.
macro_rules! marker {
    ($id:expr) => {
        // SAFETY: a NOP; the operand is not accessed.
        unsafe {
            core::arch::asm!(
                ".byte 0x0f, 0x1f, 0x80",
                ".long {id}",
                id = const $id,
                options(nomem, nostack, preserves_flags)
            )
        }
    };
}

/// Times `f(n)`, between two profile markers for row `row` (the marker ID
/// must be a constant: the start and end of each of 64 rows are expanded).
fn time(n: u64, f: fn(u64)) -> u64 {
    let row = ROW.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    if PROFILE.get().as_bytes() == b"1" {
        pr_info!("profile row {}\n", row);
    }
    macro_rules! rows {
        ($($r:literal)*) => {
            match row {
                $($r => {
                    marker!(0x524b_0000 | ($r << 1));
                    let t = now();
                    f(n);
                    let d = now() - t;
                    marker!(0x524b_0000 | ($r << 1) | 1);
                    d
                })*
                _ => {
                    let t = now();
                    f(n);
                    now() - t
                }
            }
        };
    }
    let d = rows!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23);
    d.max(0) as u64
}

fn report(name: &str, n: u64, none: u64, native: Option<u64>, ours: u64) {
    let per = |t: u64| t / n;
    let over = |t: u64| t.saturating_sub(none) / n;
    match native {
        Some(nat) => {
            let ratio = if over(nat) > 0 {
                over(ours) * 100 / over(nat)
            } else {
                0
            };
            pr_info!(
                "{}: {} calls: none {} ns/call, kprobes {} ns/call (+{} per hit), rkprobes {} ns/call (+{} per hit), rkprobes/kprobes {}.{:02}x\n",
                name, n, per(none), per(nat), over(nat), per(ours), over(ours), ratio / 100, ratio % 100
            );
        }
        None => pr_info!(
            "{}: {} calls: none {} ns/call, rkprobes {} ns/call (+{} per hit)\n",
            name,
            n,
            per(none),
            per(ours),
            over(ours)
        ),
    }
}

fn bench(name: &str, n: u64, f: fn(u64), target: Target, native_at: (usize, *const i8)) -> Result {
    let none = time(n, f);
    #[cfg(CONFIG_KPROBES)]
    let native = {
        match native::Native::register(native_at.0, native_at.1.cast()) {
            Ok(kp) => {
                let t = time(n, f);
                drop(kp);
                Some(t)
            }
            Err(e) => {
                pr_info!("{}: kernel kprobe refused: {}\n", name, e);
                None
            }
        }
    };
    #[cfg(not(CONFIG_KPROBES))]
    let native = {
        let _ = native_at;
        None
    };
    let mut p = KBox::pin_init(Kprobe::new(target, Empty), GFP_KERNEL)?;
    p.as_mut().register()?;
    let ours = time(n, f);
    drop(p);
    report(name, n, none, native, ours);
    Ok(())
}

struct RkpBench(#[allow(dead_code)] Held);

impl kernel::Module for RkpBench {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut n: u64 = 0;
        for &c in ITERS.get().as_bytes() {
            n = n
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c.wrapping_sub(b'0'))))
                .filter(|_| c.is_ascii_digit())
                .ok_or(EINVAL)?;
        }
        if n == 0 {
            return Err(EINVAL);
        }
        if !MEM.get().as_bytes().is_empty() {
            return Ok(RkpBench(hold(MEM.get().as_bytes())?));
        }
        if matches!(SCALE.get().as_bytes(), b"1" | b"2") {
            bench_scale(SCALE.get().as_bytes() == b"2")?;
            return Ok(RkpBench(Held::None));
        }
        if OPT.get().as_bytes() == b"1" {
            // Computed at run time: objtool warns about a relocation past ENDBR.
            let t = core::hint::black_box(rkp_bench_opt_target as *const () as usize);
            // Past ENDBR, where both kprobes put a probe at a function's entry.
            // SAFETY: the function's first bytes, text of this module.
            let endbr = unsafe { core::ptr::read_volatile(t as *const [u8; 4]) };
            let at = if endbr == [0xf3, 0x0f, 0x1e, 0xfa] {
                t + 4
            } else {
                t
            };
            bench_opt(
                "jump-optimized, rkp_bench_opt_target entry",
                n,
                call_opt_target,
                at,
            )?;
            return Ok(RkpBench(Held::None));
        }
        let target = rkp_bench_target as *const () as usize;
        bench(
            "int3 at rkp_bench_target entry",
            n,
            call_target,
            Target::Addr(target),
            (target, core::ptr::null()),
        )?;
        bench(
            "ftrace at kfree entry",
            n,
            call_kfree,
            Target::Symbol(c_str!("kfree"), 0),
            (0, c_str!("kfree").as_char_ptr().cast()),
        )?;
        bench_ret(
            "kretprobe, int3 at rkp_bench_target entry",
            n,
            call_target,
            Target::Addr(target),
            (target, core::ptr::null()),
        )?;
        bench_ret(
            "kretprobe, ftrace at kfree entry",
            n,
            call_kfree,
            Target::Symbol(c_str!("kfree"), 0),
            (0, c_str!("kfree").as_char_ptr().cast()),
        )?;
        bench_many(n)?;
        Ok(RkpBench(Held::None))
    }
}
