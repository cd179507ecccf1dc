// SPDX-License-Identifier: GPL-2.0

//! The core's debugfs files, `/sys/kernel/debug/rkprobes/enabled`, `list`
//! and `optimization` (the kernel's `kprobes/enabled`, `kprobes/list` and
//! the `debug.kprobes-optimization` sysctl).
//!
//! Context: process context (`seq_file` show and write), may sleep; each
//! takes `Core::reg`.

use super::{
    abi::{flags, RkpKprobe},
    kretprobe, Core,
};
use crate::{
    ffi::kallsyms::SymbolBuf,
    kernel_ext::{
        debugfs::{SeqFile, Show, Store},
        str::kstrtobool,
    },
};
use core::fmt::Write;
use kernel::prelude::*;

/// `/sys/kernel/debug/rkprobes/enabled`: arms (1) or disarms (0) every probe,
/// as the kernel's `kprobes/enabled`.
pub(crate) struct EnabledFile;

impl Show for EnabledFile {
    type Data = Core;

    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let _ = writeln!(out, "{}", u8::from(core.reg.lock().enabled));
        Ok(())
    }
}

impl Store for EnabledFile {
    fn store(core: &Core, input: &[u8]) -> Result {
        // As the kernel's own file does (y/n/1/0/on/off).
        core.set_all_armed(kstrtobool(input)?)
    }
}

/// `/sys/kernel/debug/rkprobes/optimization`: 1 lets the optimizer replace
/// int3 probes with jumps, 0 unoptimizes every probe at once, as the
/// kernel's `debug.kprobes-optimization` sysctl.
pub(crate) struct OptimizationFile;

impl Show for OptimizationFile {
    type Data = Core;

    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let _ = writeln!(out, "{}", u8::from(core.optimization()));
        Ok(())
    }
}

impl Store for OptimizationFile {
    fn store(core: &Core, input: &[u8]) -> Result {
        core.set_optimization(kstrtobool(input)?);
        Ok(())
    }
}

/// `/sys/kernel/debug/rkprobes/list`.
pub(crate) struct ListFile;

impl Show for ListFile {
    type Data = Core;

    /// The format of the kernel's `kprobes/list`: address, type,
    /// symbol+offset, module, flags.
    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        let reg = core.reg.lock();
        for &point in Iterator::chain(reg.points.iter(), reg.gone.iter()) {
            // SAFETY: registered points are live while the mutex is held.
            let p = unsafe { &*point };
            for kp in p.clients() {
                // SAFETY: registered clients are valid.
                let f = unsafe { RkpKprobe::flags(kp) };
                let kind = if kretprobe::is_kretprobe(kp) {
                    'r'
                } else {
                    'k'
                };
                let _ = write!(out, "{:016x}  {}  ", p.addr, kind);
                let _ = match buf.symbolise(p.addr) {
                    Some(s) => write!(
                        out,
                        "{}+0x{:x}  {} ",
                        s.name,
                        s.offset,
                        s.module.unwrap_or(" ")
                    ),
                    None => write!(out, "0x{:x} ", p.addr),
                };
                let _ = writeln!(
                    out,
                    "{}{}{}{}",
                    if f & flags::GONE != 0 { "[GONE]" } else { "" },
                    if f & flags::DISABLED != 0 && f & flags::GONE == 0 {
                        "[DISABLED]"
                    } else {
                        ""
                    },
                    if f & flags::OPTIMIZED != 0 {
                        "[OPTIMIZED]"
                    } else {
                        ""
                    },
                    if f & flags::FTRACE != 0 {
                        "[FTRACE]"
                    } else {
                        ""
                    },
                );
            }
        }
        Ok(())
    }
}
