// SPDX-License-Identifier: GPL-2.0

//! Arming and disarming int3 probes: the int3 written over a probed
//! instruction's first byte, and the original byte put back (the kernel's
//! `arch_arm_kprobe()` and `arch_disarm_kprobe()`), for a point whose
//! instruction `insn` prepared.
//!
//! Context: process context, with the registration mutex and `text_mutex`
//! held.

use super::slot::INT3;
use crate::{
    kernel_ext::text::TextGuard,
    kprobe::{Core, Point, Registry},
};

/// Writes int3 over the first byte of `p`'s instruction (`on`), or puts
/// the original byte back: the arming of an int3 probe. False, writing
/// nothing, unless `p` is published in `core`'s probe table, is not an
/// ftrace site's, and has no jump of the optimizer in the text. Process
/// context, with the registration mutex (`reg`) and `text_mutex` (`guard`)
/// held.
pub(crate) fn set_int3(
    core: &Core,
    _reg: &Registry,
    guard: &TextGuard<'_>,
    p: &Point,
    on: bool,
) -> bool {
    let insn = p.arch();
    if insn.is_ftrace() || p.jump_in_text() || !core.is_published(p) {
        return false;
    }
    let byte = if on { INT3 } else { insn.orig_byte() };
    // SAFETY: one byte at an instruction boundary of kernel text, int3 or
    // the instruction's original byte: `insn` was prepared for the
    // instruction at `p.addr()` (`Point`'s invariant), which `prepare`
    // found to start at a boundary; a point is published only while that
    // text is there (the module notifier unpublishes a module's points
    // before its text goes, under the registration mutex the caller
    // holds), and the optimizer's jump is not over it (checked above,
    // under the registration mutex, which the optimizer holds while it
    // writes or removes a jump and records it).
    unsafe { guard.poke(p.addr(), &[byte]) };
    true
}
