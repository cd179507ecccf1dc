// SPDX-License-Identifier: GPL-2.0

//! The core's debugfs files, `/sys/kernel/debug/rkprobes/enabled`, `list`
//! and `optimization` (the kernel's `kprobes/enabled`, `kprobes/list` and
//! the `debug.kprobes-optimization` sysctl), `optimizer` and `text_sites`.
//!
//! Context: process context (`seq_file` show and write), may sleep; each
//! takes `Core::reg`.

use super::{kretprobe, Core};
use crate::abi::flags;
use crate::{
    ffi::kallsyms::SymbolBuf,
    kernel_ext::{
        debugfs::{SeqFile, Show, Store},
        str::{kstrtobool, trim_ascii},
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
        let _ = writeln!(out, "{}", u8::from(core.reg.lock().reg.enabled));
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

/// `/sys/kernel/debug/rkprobes/optimizer`: the jump optimizer's state, a
/// `NAME VALUE` line each: the points `optimized` and `queued` (their
/// detours in use, the jumps not written yet), and the addresses `pending`
/// for its next pass (`all` when that pass looks at every point). Nothing
/// is pending while no pass can run (optimization off, every probe
/// disarmed).
pub(crate) struct OptimizerFile;

impl Show for OptimizerFile {
    type Data = Core;

    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let (optimized, queued, pending, all) = core.optimizer_state();
        let _ = writeln!(out, "optimized {optimized}\nqueued {queued}");
        let _ = if all {
            writeln!(out, "pending all")
        } else {
            writeln!(out, "pending {pending}")
        };
        Ok(())
    }
}

/// `/sys/kernel/debug/rkprobes/text_sites`: the jump-label and static-call
/// sites of vmlinux that rkprobes indexed (`kprobe::sites`), one
/// `0xSTART-0xEND` range a line (END exclusive) in address order, as
/// `blacklist` shows ranges; no probe may be placed in one. Writing `check [STRIDE]` asks the
/// index and the kernel's own checks the same questions about every
/// STRIDE-th site (default 1: all of them, about a millisecond a question
/// under TCG) and logs how many answers differ.
pub(crate) struct TextSitesFile;

impl Show for TextSitesFile {
    type Data = Core;

    fn show(core: &Core, out: &mut SeqFile) -> Result {
        core.sites().for_each(|start, end| {
            let _ = writeln!(out, "0x{start:016x}-0x{end:016x}");
        });
        Ok(())
    }
}

impl Store for TextSitesFile {
    fn store(core: &Core, input: &[u8]) -> Result {
        if let Some(name) = trim_ascii(input).strip_prefix(b"check module ") {
            let mut buf = [0u8; 64];
            let name = trim_ascii(name);
            buf.get_mut(..name.len())
                .ok_or(EINVAL)?
                .copy_from_slice(name);
            let name =
                kernel::str::CStr::from_bytes_with_nul(buf.get(..=name.len()).ok_or(EINVAL)?)
                    .map_err(|_| EINVAL)?;
            let res = core.sites().check_module(name).ok_or(ENOENT)?;
            pr_info!(
                "text sites of module {}: {} questions asked of the kernel ({} reserved), {} answers differ\n",
                name.to_str().unwrap_or("?"),
                res.checked,
                res.reserved,
                res.differ
            );
            return Ok(());
        }
        let rest = trim_ascii(input).strip_prefix(b"check").ok_or(EINVAL)?;
        if !rest.is_empty() && !rest.starts_with(b" ") {
            return Err(EINVAL);
        }
        let stride = match trim_ascii(rest) {
            b"" => 1,
            n => core::str::from_utf8(n)
                .ok()
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n > 0)
                .ok_or(EINVAL)?,
        };
        let (jump, calls, indexed) = core.sites().counts();
        let res = core.sites().check(stride);
        pr_info!(
            "text sites: {} jump-label and {} static-call sites indexed ({}); {} questions asked of the kernel ({} reserved), {} answers differ\n",
            jump,
            calls,
            if indexed { "yes" } else { "no" },
            res.checked,
            res.reserved,
            res.differ
        );
        Ok(())
    }
}

/// `/sys/kernel/debug/rkprobes/list`.
pub(crate) struct ListFile;

impl Show for ListFile {
    type Data = Core;

    /// The format of the kernel's `kprobes/list`: address, type,
    /// symbol+offset, module, flags.
    /// The address is 0 for an opener that may not see kernel addresses
    /// (`kallsyms_show_value()`), as in the kernel's list.
    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        let show_addr = out.opener_sees_addresses(core.runtime());
        let locked = core.reg.lock();
        for p in locked.points.all() {
            for kp in p.clients_w(&locked.reg) {
                let f = kp.flags();
                let kind = if kretprobe::is_kretprobe(kp) {
                    'r'
                } else {
                    'k'
                };
                let addr = if show_addr { p.addr() } else { 0 };
                let _ = write!(out, "{addr:016x}  {kind}  ");
                let _ = match buf.symbolise(p.addr()) {
                    Some(s) => write!(
                        out,
                        "{}+0x{:x}  {} ",
                        s.name,
                        s.offset,
                        s.module.unwrap_or(" ")
                    ),
                    None => write!(out, "0x{:x} ", p.addr()),
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
