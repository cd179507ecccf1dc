// SPDX-License-Identifier: GPL-2.0

//! What an optimized probe point keeps on x86-64 (the kernel's
//! `arch_optimized_insn`): its detour buffer and the original bytes its jump
//! replaced. A leaf, so that the probe point can hold it; writing and
//! removing the jump is `opt.rs`'s.

use super::slot::SLOT_SIZE;
use crate::{
    kernel_ext::{slots::Slot, sync::TasksStamp, text::SyncStamp},
    pure::insn::analyze::JMP32_INSN_SIZE,
};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The most bytes a jump can make the copy cover: instructions are copied
/// until 5 bytes are, so the last starts at most 4 bytes in and is at most
/// 15 long.
pub(crate) const MAX_REGION: usize = JMP32_INSN_SIZE - 1 + 15;

/// `call rel32`.
pub(crate) const CALL_LEN: usize = 5;

/// The detour's layout as `detour.h` gives it to the trampoline too.
pub(super) mod detour_offsets {
    include!("detour_offsets.rs");
}
use detour_offsets::{DETOUR_COPY, DETOUR_IP};

/// What the hit path reads of an optimized probe's detour (the kernel's
/// `arch_optimized_insn`, whose other half is [`OptW`]).
///
/// # Invariants
///
/// `copy` is 0 until the detour is written, then the address of the
/// relocated copy in the point's [`OptW::slot`]; it stays so until the
/// detour is released.
pub(crate) struct OptInsn {
    pub(super) copy: AtomicUsize,
}

impl OptInsn {
    /// No detour yet.
    pub(crate) const fn new() -> Self {
        Self {
            copy: AtomicUsize::new(0),
        }
    }

    /// The return address of the post-handlers' call in the detour, or 0
    /// when it has none (or there is no detour). Hit path; the caller has
    /// seen the point's state say the detour is in use, or holds the frame
    /// that the detour's callback pushed.
    #[inline(always)]
    pub(crate) fn post_ret(&self) -> usize {
        let Some(copy) = self.copy() else {
            return 0;
        };
        // SAFETY: the detour's header word at `DETOUR_IP`, written with the
        // detour before it was published, and readable while the detour is
        // in use (the slot is freed a Tasks RCU grace period after its last
        // use).
        let word = unsafe { ((copy - DETOUR_COPY + DETOUR_IP) as *const usize).read_unaligned() };
        // A detour without the post call holds the probed address + 1
        // there, which is never inside its own slot.
        if word > copy + CALL_LEN && word <= copy - DETOUR_COPY + SLOT_SIZE {
            word
        } else {
            0
        }
    }

    /// The copy of the first instruction in a detour that calls the
    /// post-handlers after it, as an int3 hit's stepped copy. Hit path.
    pub(crate) fn post_step_range(&self) -> Option<(usize, usize)> {
        match (self.copy(), self.post_ret()) {
            (Some(c), r) if r > c + CALL_LEN => Some((c, r - CALL_LEN)),
            _ => None,
        }
    }

    /// The relocated copy of the region in the detour, once written. Hit
    /// path; the caller has seen the point's state say the detour is in use
    /// (an acquire load that orders this one).
    pub(crate) fn copy(&self) -> Option<usize> {
        match self.copy.load(Ordering::Relaxed) {
            0 => None,
            a => Some(a),
        }
    }
}

/// What only the writer knows of an optimized probe's detour: part of the
/// point's writer state, which the registration mutex owns.
///
/// # Invariants
///
/// `slot` is `None` until the detour is written, then holds the image
/// described in the module documentation for a region of `size` bytes
/// whose original bytes are `orig`. `detour` says whether int3 hits run the
/// region from the detour.
pub(crate) struct OptW {
    pub(super) slot: Option<Slot>,
    /// The detour calls the post-handlers after the first instruction.
    pub(super) post: bool,
    pub(super) size: u8,
    pub(super) orig: [u8; MAX_REGION],
    /// The end of the probed function, as an offset from the point.
    pub(super) to_func_end: u16,
    pub(super) detour: DetourUse,
}

/// What int3 hits do with a point's detour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DetourUse {
    /// They do not run the region from it.
    Unused,
    /// They run the region from it (the point queued or optimized), since
    /// the stamp.
    InUse(TasksStamp),
    /// They run the region from it, and the jump is being taken out: its
    /// int3 was written before the stamp.
    Unoptimizing(SyncStamp),
}

// A point, which holds its `OptW`, is a kmalloc-192 object.
const _: () = assert!(core::mem::size_of::<OptW>() <= 40);

impl OptW {
    /// No detour yet.
    pub(crate) const fn new() -> Self {
        Self {
            slot: None,
            post: false,
            size: 0,
            orig: [0; MAX_REGION],
            to_func_end: 0,
            detour: DetourUse::Unused,
        }
    }

    /// The text where the jump at `addr` changes what a decoder walking
    /// the function from its start sees: the region itself when the jump
    /// covers it exactly; to the end of the function when the region is
    /// longer than the jump, whose end then falls inside an instruction
    /// (the kernel's kprobes, which decode the jump, would misread what
    /// follows).
    pub(crate) fn decode_shadow(&self, addr: usize) -> (usize, usize) {
        if self.size() == JMP32_INSN_SIZE {
            (addr, addr + JMP32_INSN_SIZE)
        } else {
            let func_end = addr + self.to_func_end as usize;
            (addr, func_end.max(addr + self.size()))
        }
    }

    /// Whether the detour is written.
    pub(crate) fn is_prepared(&self) -> bool {
        self.slot.is_some()
    }

    /// Whether the detour calls the post-handlers after the first
    /// instruction.
    pub(crate) fn has_post(&self) -> bool {
        self.post
    }

    /// How many bytes the jump's region covers (0 before preparation).
    pub(crate) fn size(&self) -> usize {
        usize::from(self.size)
    }

    /// The original byte `offset` bytes into the region, when the jump has
    /// replaced it (bytes 1 to 4); `None` elsewhere.
    pub(crate) fn replaced_byte(&self, offset: usize) -> Option<u8> {
        if (1..JMP32_INSN_SIZE).contains(&offset) {
            self.orig.get(offset).copied()
        } else {
            None
        }
    }
}
