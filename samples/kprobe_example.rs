// SPDX-License-Identifier: GPL-2.0

//! kprobe_example: what the kernel's samples/kprobes/kprobe_example.c does,
//! on rkprobes.
//!
//! A probe on `kernel_clone`, or on the symbol given as `symbol=NAME`, whose
//! pre-handler prints the probed address, the instruction pointer and the
//! flags, and whose post-handler prints the address and the flags after the
//! probed instruction ran out of line. Every `fork()` in the system hits it.

use kernel::prelude::*;

#[path = "../rust/client/mod.rs"]
pub mod rkprobes;

use rkprobes::{Action, Kprobe, KprobeHandler, ProbeInfo, Regs, Target};

module! {
    type: KprobeExample,
    name: "kprobe_example",
    author: "rkprobes developers",
    description: "rkprobes sample: pre and post handlers on kernel_clone",
    license: "GPL",
}

string_param!(SYMBOL, "symbol", "kernel_clone", 128);

struct Printer;

#[vtable]
impl KprobeHandler for Printer {
    fn pre(&self, p: &ProbeInfo, regs: &mut Regs) -> Action {
        pr_info!(
            "<{}> p->addr = {:#x}, ip = {:#x}, flags = {:#x}\n",
            SYMBOL.get().to_str().unwrap_or("?"),
            p.addr(),
            regs.ip(),
            regs.flags()
        );
        Action::Continue
    }

    fn post(&self, p: &ProbeInfo, regs: &mut Regs, _flags: u64) {
        pr_info!(
            "<{}> p->addr = {:#x}, flags = {:#x}\n",
            SYMBOL.get().to_str().unwrap_or("?"),
            p.addr(),
            regs.flags()
        );
    }
}

struct KprobeExample {
    probe: Pin<KBox<Kprobe<Printer>>>,
}

impl kernel::Module for KprobeExample {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut probe = KBox::pin_init(
            Kprobe::new(Target::Symbol(SYMBOL.get(), 0), Printer),
            GFP_KERNEL,
        )?;
        probe.as_mut().register().inspect_err(|e| {
            pr_err!("register_kprobe failed, returned {}\n", e.to_errno());
        })?;
        pr_info!("Planted kprobe at {:#x}\n", probe.addr());
        Ok(KprobeExample { probe })
    }
}

impl Drop for KprobeExample {
    fn drop(&mut self) {
        pr_info!(
            "kprobe at {:#x} unregistered, {} missed\n",
            self.probe.addr(),
            self.probe.nmissed()
        );
    }
}
