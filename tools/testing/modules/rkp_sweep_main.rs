// SPDX-License-Identifier: GPL-2.0

//! rkp_sweep: a probe at every offset 0..255 of a function, checked against
//! the kernel's own kprobes.
//!
//! At load, for each offset of `symbol=NAME` (below the function's size),
//! the kernel's `register_kprobe()` is tried first (and the probe removed
//! again), then rkprobes'; both answers are printed. rkprobes' probes stay
//! registered, all at once, until the module is unloaded, so that whatever
//! the guest test does next hits them. At unload the function's bytes are
//! compared with those read before the first probe.
//!
//! With `ats=0xADDR,0xADDR,...` it instead tries one probe at each address
//! (removing it again) and prints `rkp_sweep: at 0xADDR: ERRNO` for each,
//! 0 for an accepted probe: the guest tests check every blacklist entry that
//! way.
//!
//! Output lines (`rkp_sweep: ...`) are parsed by tools/testing/guest/.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

#[path = "../../../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{read_kernel, Action, Kprobe, KprobeHandler, ProbeInfo, Regs, Target};

module! {
    type: RkpSweep,
    name: "rkp_sweep",
    author: "rkprobes developers",
    description: "rkprobes test: probes at every offset of a function",
    license: "GPL",
}

string_param!(SYMBOL, "symbol", "kernel_clone", 128);
// compare=0 skips the kernel's kprobes (faster, for stress tests).
string_param!(COMPARE, "compare", "1", 4);
// post=0 registers probes without a post-handler, which run boosted where
// the instruction allows it.
string_param!(POST, "post", "1", 4);
// A list of addresses to try one by one instead of the sweep.
string_param!(ATS, "ats", "", 4096);

const OFFSETS: usize = 256;
/// Bytes compared before and after: every probed byte and the longest
/// instruction that can start at the last offset.
const SPAN: usize = OFFSETS + 16;

static HITS: AtomicU64 = AtomicU64::new(0);

/// Counts hits; with a post-handler (never boosted) or without.
struct Count<const POST: bool>;

#[vtable]
impl<const POST: bool> KprobeHandler for Count<POST> {
    const HAS_POST: bool = POST;

    fn pre(&self, _p: &ProbeInfo, _regs: &mut Regs) -> Action {
        HITS.fetch_add(1, Ordering::Relaxed);
        Action::Continue
    }

    fn post(&self, _p: &ProbeInfo, _regs: &mut Regs, _flags: u64) {
        HITS.fetch_add(1 << 32, Ordering::Relaxed);
    }
}

/// A probe of either kind.
enum Probe {
    Post(Pin<KBox<Kprobe<Count<true>>>>),
    NoPost(Pin<KBox<Kprobe<Count<false>>>>),
}

impl Probe {
    fn new(sym: &'static kernel::str::CStr, off: u32, post: bool) -> Result<Self> {
        let t = Target::Symbol(sym, off);
        Ok(if post {
            Probe::Post(KBox::pin_init(Kprobe::new(t, Count::<true>), GFP_KERNEL)?)
        } else {
            Probe::NoPost(KBox::pin_init(Kprobe::new(t, Count::<false>), GFP_KERNEL)?)
        })
    }

    fn register(&mut self) -> Result {
        match self {
            Probe::Post(p) => p.as_mut().register(),
            Probe::NoPost(p) => p.as_mut().register(),
        }
    }

    fn addr(&self) -> usize {
        match self {
            Probe::Post(p) => p.addr(),
            Probe::NoPost(p) => p.addr(),
        }
    }
}

/// The kernel's own `register_kprobe()`, through `rkp_sweep_native.c`: the
/// C compiler lays `struct kprobe` out.
#[cfg(CONFIG_KPROBES)]
mod native {
    use kernel::ffi::{c_char, c_uint, c_ulong, c_void};

    extern "C" {
        fn rkp_sweep_native_kprobe(
            sym: *const c_char,
            offset: c_uint,
            probed: *mut c_ulong,
        ) -> *mut c_void;
        fn rkp_sweep_native_kprobe_free(kp: *mut c_void);
    }

    /// Registers and unregisters a native probe at `sym+offset`; returns the
    /// error, or the address the kernel chose.
    pub(crate) fn try_probe(sym: *const c_char, offset: u32) -> Result<usize, i32> {
        let mut probed: c_ulong = 0;
        // SAFETY: `sym` is a C string that outlives the call; `probed` is
        // written before it returns.
        let kp = unsafe { rkp_sweep_native_kprobe(sym, offset, &mut probed) };
        let kp = kernel::error::from_err_ptr(kp).map_err(|e| e.to_errno())?;
        // SAFETY: registered just above.
        unsafe { rkp_sweep_native_kprobe_free(kp) };
        Ok(probed as usize)
    }
}

/// Parses `0x...` (hexadecimal).
fn parse_hex(s: &[u8]) -> Option<usize> {
    let digits = s.strip_prefix(b"0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut v: usize = 0;
    for &c in digits {
        let d = (c as char).to_digit(16)?;
        v = v.checked_mul(16)?.checked_add(d as usize)?;
    }
    Some(v)
}

/// Tries one probe at `addr`, removing it again, and prints the answer.
fn try_at(addr: usize) -> Result {
    let mut p = KBox::pin_init(Kprobe::new(Target::Addr(addr), Count::<false>), GFP_KERNEL)?;
    let r = p.as_mut().register().map_err(|e| e.to_errno());
    pr_info!("at {:#x}: {}\n", addr, r.err().unwrap_or(0));
    Ok(())
}

/// `ats=`: a probe at each address `0xA`, or at the first, middle and last
/// byte of each range `0xA-0xB` (B excluded).
fn try_ats(list: &[u8]) -> Result {
    for item in list.split(|&c| c == b',').filter(|a| !a.is_empty()) {
        let mut ends = item.splitn(2, |&c| c == b'-');
        let start = ends.next().and_then(parse_hex).ok_or(EINVAL)?;
        match ends.next() {
            None => try_at(start)?,
            Some(e) => {
                let end = parse_hex(e).filter(|&e| e > start).ok_or(EINVAL)?;
                try_at(start)?;
                try_at(start + (end - start) / 2)?;
                try_at(end - 1)?;
            }
        }
    }
    Ok(())
}

struct RkpSweep {
    probes: KVec<Probe>,
    func: usize,
    before: KBox<[u8; SPAN]>,
}

/// Reads `SPAN` bytes at `addr`.
fn read_span(addr: usize, out: &mut [u8; SPAN]) -> Result {
    for (i, b) in out.iter_mut().enumerate() {
        *b = read_kernel::<u8>(addr + i)?;
    }
    Ok(())
}

impl kernel::Module for RkpSweep {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ats = ATS.get().as_bytes();
        if !ats.is_empty() {
            try_ats(ats)?;
            return Ok(RkpSweep {
                probes: KVec::new(),
                func: 0,
                before: KBox::new([0u8; SPAN], GFP_KERNEL)?,
            });
        }
        let sym = SYMBOL.get();
        let name = sym.to_str().unwrap_or("?");
        // Where the function starts: the first probe that registers at an
        // offset past any ENDBR tells (its address is the start plus offset).
        let mut func = None;
        let post = POST.get().as_bytes() != b"0";
        for off in 5..64u32 {
            let mut p = Probe::new(sym, off, post)?;
            if p.register().is_ok() {
                func = Some(p.addr() - off as usize);
                break;
            }
        }
        let func = func.ok_or(EINVAL)?;
        let mut before = KBox::new([0u8; SPAN], GFP_KERNEL)?;
        read_span(func, &mut before)?;
        // The kernel's answers first, on text without rkprobes' int3s (each of
        // its probes is removed before the next is tried).
        let mut natives = KVec::with_capacity(OFFSETS, GFP_KERNEL)?;
        let compare = COMPARE.get().as_bytes() != b"0";
        for _off in 0..OFFSETS as u32 {
            #[cfg(CONFIG_KPROBES)]
            let native = if compare {
                native::try_probe(sym.as_char_ptr(), _off)
            } else {
                Err(0)
            };
            #[cfg(not(CONFIG_KPROBES))]
            let native: core::result::Result<usize, i32> = Err(0);
            natives.push(native, GFP_KERNEL)?;
        }
        let mut probes = KVec::with_capacity(OFFSETS, GFP_KERNEL)?;
        let (mut accepted, mut mismatches) = (0, 0);
        for (off, &native) in natives.iter().enumerate() {
            let off = off as u32;
            let mut p = Probe::new(sym, off, post)?;
            let ours = p.register().map_err(|e| e.to_errno());
            let ours = match ours {
                Ok(()) => {
                    accepted += 1;
                    let a = p.addr();
                    probes.push(p, GFP_KERNEL)?;
                    Ok(a)
                }
                Err(e) => Err(e),
            };
            let show = |r: &core::result::Result<usize, i32>| match r {
                Ok(a) => a.wrapping_sub(func) as i64,
                Err(e) => i64::from(*e) * 10000,
            };
            if cfg!(CONFIG_KPROBES) && compare && ours != native {
                mismatches += 1;
                // The five bytes where the kernel put its probe (else at the
                // offset), to tell ftrace's NOP call sites.
                let at = native.unwrap_or(func + off as usize);
                let mut b = [0u8; 5];
                for (i, x) in b.iter_mut().enumerate() {
                    *x = read_kernel(at + i).unwrap_or(0);
                }
                pr_info!(
                    "mismatch {} +{}: native {} rkprobes {} bytes {:02x?}\n",
                    name,
                    off,
                    show(&native),
                    show(&ours),
                    b
                );
            }
        }
        pr_info!(
            "swept {}: {} offsets accepted by rkprobes, {} differ from the kernel's kprobes\n",
            name,
            accepted,
            mismatches
        );
        Ok(RkpSweep {
            probes,
            func,
            before,
        })
    }
}

impl Drop for RkpSweep {
    fn drop(&mut self) {
        if self.func == 0 {
            return;
        }
        let n = self.probes.len();
        // Unregister every probe before comparing.
        drop(core::mem::replace(&mut self.probes, KVec::new()));
        let mut after = [0u8; SPAN];
        let same = read_span(self.func, &mut after).is_ok() && after == *self.before;
        let hits = HITS.load(Ordering::Relaxed);
        pr_info!(
            "unloaded {} probes after {} hits ({} post-handler calls); bytes restored: {}\n",
            n,
            hits & 0xffff_ffff,
            hits >> 32,
            if same { "yes" } else { "NO" }
        );
    }
}
