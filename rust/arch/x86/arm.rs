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
    kernel_ext::{
        sync::PreemptGuard,
        text::{self, TextGuard},
    },
    kprobe::{Core, Point, Registry},
    pure::insn::analyze::JMP32_INSN_SIZE,
};

/// Writes int3 over the first byte of `p`'s instruction (`on`), or puts
/// the original byte back: the arming of an int3 probe. False, writing
/// nothing, unless `p` is published in `core`'s probe table, is not an
/// ftrace site's, no jump of the optimizer covers its first byte, and that
/// byte is the instruction's or an int3. Process
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
    if insn.is_ftrace() || p.jump_in_text() || !core.is_published(p) || covered(core, p) {
        return false;
    }
    // What is there is the instruction's first byte or an int3: nothing
    // else patched it.
    let mut now = [0u8];
    if text::read(p.addr(), &mut now).is_err()
        || !matches!(now, [b] if b == INT3 || b == insn.orig_byte())
    {
        return false;
    }
    let byte = if on { INT3 } else { insn.orig_byte() };
    // SAFETY: one byte at an instruction boundary of kernel text, int3 or
    // the instruction's original byte: `insn` was prepared for the
    // instruction at `p.addr()` (`Point`'s invariant), which `prepare`
    // found to start at a boundary; a point is published only while that
    // text is there (the module notifier unpublishes a module's points
    // before its text goes, under the registration mutex the caller
    // holds), and no jump of the optimizer is over it, the point's own or
    // one of the points before it (checked above, under the registration
    // mutex, which the optimizer holds while it writes or removes a jump
    // and records it).
    unsafe { guard.poke(p.addr(), &[byte]) };
    true
}

/// Whether the jump of a point before `p` covers `p`'s first byte.
fn covered(core: &Core, p: &Point) -> bool {
    let rcu = PreemptGuard::new();
    (1..JMP32_INSN_SIZE).any(|k| {
        p.addr()
            .checked_sub(k)
            .and_then(|a| core.lookup(&rcu, a))
            .is_some_and(|q| q.jump_in_text())
    })
}
