// SPDX-License-Identifier: GPL-2.0

//! Out-of-line instruction slots (the kernel's `kprobe_insn_cache`).
//!
//! A probed instruction is copied into a slot in an executable page, where
//! it runs followed by an int3 (or by a jump back, when boosted).
//! Pages are `ExecPages` (within ±2 GiB of kernel and module text, so that
//! RIP-relative operands and rel32 jumps can reach back), filled with the
//! architecture's trap; the slot size is the architecture's (`arch::SLOT_SIZE`);
//! slot contents are then written with `text_poke()` like any other text.
//!
//! A slot is freed only after every CPU has left it: the probe core frees it
//! after the synchronisation of unregistration, never from a probe hit.
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): the cache's mutex is
//! taken under the core's `Core::reg`, and never together with `text_mutex`:
//! [`SlotCache::write`] takes `text_mutex` after [`SlotCache::alloc`] has
//! released the cache's mutex.

use crate::{
    arch,
    ffi::runtime::Runtime,
    kernel_ext::{execmem::ExecPages, text::TextGuard},
};
use kernel::{new_mutex, page::PAGE_SIZE, prelude::*, sync::Mutex};

/// Size of a slot, the architecture's.
pub(crate) use arch::SLOT_SIZE;
const SLOTS_PER_PAGE: usize = PAGE_SIZE / SLOT_SIZE;

/// One executable page and which of its slots are in use.
struct SlotPage {
    page: ExecPages,
    used: [bool; SLOTS_PER_PAGE],
    nused: usize,
}

/// An allocated slot: `SLOT_SIZE` executable bytes at `addr`. Never at
/// address 0, so that an `Option<Slot>` is one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Address of the slot's first byte.
    addr: core::num::NonZeroUsize,
}

impl Slot {
    /// Address of the slot's first byte.
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.addr.get()
    }
}

/// The slot allocator.
///
/// Its pages are freed when it drops.
#[pin_data]
pub(crate) struct SlotCache {
    #[pin]
    pages: Mutex<KVec<SlotPage>>,
    rt: Runtime,
}

impl SlotCache {
    /// A cache with no pages yet.
    pub(crate) fn new(rt: Runtime) -> impl PinInit<Self> {
        pin_init!(Self {
            pages <- new_mutex!(KVec::new(), "rkprobes_slots"),
            rt,
        })
    }

    /// Allocates a slot; its contents are undefined until
    /// [`SlotCache::write`] fills it. Process context, may sleep.
    pub(crate) fn alloc(&self) -> Result<Slot> {
        let mut pages = self.pages.lock();
        let found = pages.iter_mut().find_map(|p| {
            let i = p.used.iter().position(|u| !*u)?;
            Some((p, i))
        });
        let (page, index) = match found {
            Some(f) => f,
            None => {
                // Filled with the trap: a stray jump into an unused slot
                // traps.
                let page = SlotPage {
                    page: ExecPages::new(&self.rt, 1, arch::TRAP_FILL, |_, _| Ok(()))?,
                    used: [false; SLOTS_PER_PAGE],
                    nused: 0,
                };
                // A failed push drops (frees) the page.
                pages.push(page, GFP_KERNEL)?;
                (pages.last_mut().ok_or(ENOMEM)?, 0)
            }
        };
        let addr =
            core::num::NonZeroUsize::new(page.page.addr() + index * SLOT_SIZE).ok_or(ENOMEM)?;
        if let Some(u) = page.used.get_mut(index) {
            *u = true;
        }
        page.nused += 1;
        Ok(Slot { addr })
    }

    /// Writes `image`, the whole of `slot`, which no CPU may run yet.
    /// Process context, may sleep.
    ///
    /// No CPU-wide synchronisation follows, so that a batch of probes costs
    /// one (the kernel's `text_poke()` has written the bytes through the
    /// cache-coherent alias by the time it returns): a CPU only ever enters
    /// a slot through the int3 of its probe, whose exception return is
    /// serialising, after the arming that published the int3 synchronised
    /// every CPU.
    pub(crate) fn write(&self, slot: Slot, image: &[u8; SLOT_SIZE]) -> Result {
        let guard = TextGuard::lock(&self.rt);
        // SAFETY: the slot is ours and not published, so no CPU executes it;
        // it lies in an executable page of this cache.
        unsafe { guard.poke(slot.addr(), image) };
        Ok(())
    }

    /// Frees `slot`, and its page when that was its last slot.
    ///
    /// The caller guarantees that no CPU executes in the slot any more (the
    /// probe was unpublished and the grace period that follows has passed).
    /// Process context, may sleep.
    pub(crate) fn free(&self, slot: Slot) {
        let mut pages = self.pages.lock();
        let Some(pos) = pages
            .iter()
            .position(|p| p.page.range().contains(&slot.addr()))
        else {
            pr_err!("freeing a slot that is not ours: {:#x}\n", slot.addr());
            return;
        };
        let Some(page) = pages.get_mut(pos) else {
            return;
        };
        let index = (slot.addr() - page.page.addr()) / SLOT_SIZE;
        if let Some(used) = page.used.get_mut(index) {
            if *used {
                *used = false;
                page.nused -= 1;
            }
        }
        if page.nused == 0 {
            // Dropping the page frees it.
            drop(crate::kernel_ext::vec::swap_remove(&mut pages, pos));
        }
    }
}
