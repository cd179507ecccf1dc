// SPDX-License-Identifier: GPL-2.0

//! fault_inject_example: make a function fail on purpose.
//!
//! A probe at the entry of `symbol=NAME` (default `__x64_sys_chdir`) whose
//! pre-handler makes the function return `errno=N` (default 13, EACCES, as
//! a negative value) to its caller without running it, the way the kernel's
//! fault injection and `bpf_override_return()` work. With the default, every
//! `chdir()` fails with "Permission denied" while the module is loaded.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

#[path = "../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{Action, Kprobe, KprobeHandler, ProbeInfo, Regs, Target};

module! {
    type: FaultInject,
    name: "fault_inject_example",
    author: "rkprobes developers",
    description: "rkprobes sample: make a function return an error",
    license: "GPL",
}

string_param!(SYMBOL, "symbol", "__x64_sys_chdir", 128);
string_param!(ERRNO, "errno", "13", 8);

static INJECTED: AtomicU64 = AtomicU64::new(0);

struct Inject {
    value: u64,
}

#[vtable]
impl KprobeHandler for Inject {
    fn pre(&self, _p: &ProbeInfo, regs: &mut Regs) -> Action {
        INJECTED.fetch_add(1, Ordering::Relaxed);
        regs.override_return(self.value);
        Action::Skip
    }
}

struct FaultInject {
    probe: Pin<KBox<Kprobe<Inject>>>,
}

/// Parses a decimal errno between 1 and 4095.
fn parse_errno(s: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    if s.is_empty() {
        return None;
    }
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    (1..4096).contains(&v).then_some(v)
}

impl kernel::Module for FaultInject {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let errno = parse_errno(ERRNO.get().as_bytes()).ok_or(EINVAL)?;
        let value = (errno as i64).wrapping_neg() as u64;
        let mut probe = KBox::pin_init(
            Kprobe::new(Target::Symbol(SYMBOL.get(), 0), Inject { value }),
            GFP_KERNEL,
        )?;
        probe.as_mut().register()?;
        pr_info!(
            "{} now fails with -{}\n",
            SYMBOL.get().to_str().unwrap_or("?"),
            errno
        );
        Ok(FaultInject { probe })
    }
}

impl Drop for FaultInject {
    fn drop(&mut self) {
        pr_info!(
            "injected {} failures into {:#x}\n",
            INJECTED.load(Ordering::Relaxed),
            self.probe.addr()
        );
    }
}
