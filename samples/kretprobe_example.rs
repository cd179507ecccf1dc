// SPDX-License-Identifier: GPL-2.0

//! kretprobe_example: what the kernel's samples/kprobes/kretprobe_example.c
//! does, on rkprobes.
//!
//! A return probe on `kernel_clone`, or on the function given as
//! `func=NAME`: the entry handler stamps the call with the time, the return
//! handler prints the function's return value and how long the call took.
//! At unload it reports how many calls it missed for want of an instance.

use kernel::{prelude::*, time::Ktime};

#[path = "../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{Kretprobe, KretprobeHandler, Regs, RetInfo, Target};

module! {
    type: KretprobeExample,
    name: "kretprobe_example",
    author: "rkprobes developers",
    description: "rkprobes sample: return value and duration of a function",
    license: "GPL",
}

string_param!(FUNC, "func", "kernel_clone", 128);

/// Instances: as the kernel's sample, enough for 20 concurrent calls.
const MAXACTIVE: u32 = 20;

struct Timer;

#[vtable]
impl KretprobeHandler for Timer {
    /// The entry time, in ns.
    type Data = i64;

    fn entry(&self, start: &mut i64, _regs: &Regs) -> bool {
        *start = Ktime::ktime_get().to_ns();
        true
    }

    fn ret(&self, _info: &RetInfo, start: &mut i64, regs: &mut Regs) {
        let now = Ktime::ktime_get().to_ns();
        pr_info!(
            "{} returned {} and took {} ns to execute\n",
            FUNC.get().to_str().unwrap_or("?"),
            regs.ax(),
            now - *start
        );
    }
}

struct KretprobeExample {
    probe: Pin<KBox<Kretprobe<Timer>>>,
}

impl kernel::Module for KretprobeExample {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut probe = KBox::pin_init(
            Kretprobe::new(Target::Symbol(FUNC.get(), 0), MAXACTIVE, Timer),
            GFP_KERNEL,
        )?;
        probe.as_mut().register().inspect_err(|e| {
            pr_err!("register_kretprobe failed, returned {}\n", e.to_errno());
        })?;
        pr_info!(
            "Planted return probe at {}: {:#x}\n",
            FUNC.get().to_str().unwrap_or("?"),
            probe.addr()
        );
        Ok(KretprobeExample { probe })
    }
}

impl Drop for KretprobeExample {
    fn drop(&mut self) {
        pr_info!(
            "kretprobe at {:#x} unregistered; missed probing {} instances of {}\n",
            self.probe.addr(),
            self.probe.nmissed(),
            FUNC.get().to_str().unwrap_or("?")
        );
    }
}
