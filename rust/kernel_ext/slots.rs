// SPDX-License-Identifier: GPL-2.0

//! Executable slots (the kernel's `kprobe_insn_cache`): fixed-size pieces
//! of [`ExecPages`] (within ±2 GiB of kernel and module text, so that
//! RIP-relative operands and rel32 jumps reach back), filled with a
//! one-byte trap, whose contents are written with `text_poke()` like any
//! other text, before anything can run them.
//!
//! A slot comes out of [`SlotCache::alloc`] as a [`NewSlot`], which alone
//! may be written ([`SlotCache::write`]): nothing can jump into it yet, as
//! its holder has not put its address anywhere that code runs. Once the
//! holder makes it reachable it keeps only the [`Slot`] ([`NewSlot::publish`]),
//! which can no longer be written. A slot is freed only after every CPU has
//! left it: the probe core frees it after the synchronisation of
//! unregistration, never from a probe hit.
//!
//! Lock order (the table in `rust/kprobe/mod.rs`): the cache's mutex is
//! taken under the core's `Core::reg`, and never together with `text_mutex`:
//! [`SlotCache::write`] takes `text_mutex` after [`SlotCache::alloc`] has
//! released the cache's mutex.

use crate::{
    ffi::runtime::Runtime,
    kernel_ext::{execmem::ExecPages, text::TextGuard},
};
use core::num::NonZeroUsize;
use kernel::{new_mutex, page::PAGE_SIZE, prelude::*, sync::Mutex};

/// One executable page and which of its slots are in use (bit `i` of
/// `used`: slot `i`).
struct SlotPage {
    page: ExecPages,
    used: [u64; 4],
    nused: usize,
}

impl SlotPage {
    /// Whether slot `i` is in use.
    fn is_used(&self, i: usize) -> bool {
        self.used
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Marks slot `i` in use or free.
    fn set_used(&mut self, i: usize, used: bool) {
        if let Some(w) = self.used.get_mut(i / 64) {
            if used {
                *w |= 1u64 << (i % 64);
            } else {
                *w &= !(1u64 << (i % 64));
            }
        }
    }
}

/// An allocated slot of `SIZE` executable bytes at `addr`, which code may
/// run. Never at address 0, so that an `Option<Slot>` is one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Address of the slot's first byte.
    addr: NonZeroUsize,
}

impl Slot {
    /// Address of the slot's first byte.
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.addr.get()
    }
}

/// A slot just allocated, which nothing can run yet.
///
/// # Invariants
///
/// The slot is allocated in its cache for this value's holder alone, and
/// no CPU can execute in it: the only value that names it is this one
/// (which is neither `Copy` nor `Clone`), until [`NewSlot::publish`].
#[derive(Debug)]
pub(crate) struct NewSlot(Slot);

impl NewSlot {
    /// Address of the slot's first byte, which the image written into it
    /// may need (relative operands).
    pub(crate) fn addr(&self) -> usize {
        self.0.addr()
    }

    /// The slot, for the holder to make reachable: it can no longer be
    /// written.
    pub(crate) fn publish(self) -> Slot {
        self.0
    }
}

/// The slot allocator for slots of `SIZE` bytes, filled with a trap byte.
///
/// Its pages are freed when it drops.
#[pin_data]
pub(crate) struct SlotCache<const SIZE: usize> {
    #[pin]
    pages: Mutex<KVec<SlotPage>>,
    rt: Runtime,
    fill: u8,
}

impl<const SIZE: usize> SlotCache<SIZE> {
    /// Slots per page.
    const PER_PAGE: usize = PAGE_SIZE / SIZE;
    const FITS: () = assert!(SIZE > 0 && PAGE_SIZE / SIZE <= 256 && PAGE_SIZE / SIZE > 0);

    /// A cache with no pages yet, whose unused bytes are `fill` (the
    /// architecture's one-byte trap, so that a stray jump into an unused
    /// slot traps).
    pub(crate) fn new(rt: Runtime, fill: u8) -> impl PinInit<Self> {
        let () = Self::FITS;
        pin_init!(Self {
            pages <- new_mutex!(KVec::new(), "rkprobes_slots"),
            rt,
            fill,
        })
    }

    /// Allocates a slot; its contents are the trap until
    /// [`SlotCache::write`] fills it. Process context, may sleep.
    pub(crate) fn alloc(&self) -> Result<NewSlot> {
        let mut pages = self.pages.lock();
        let found = pages.iter_mut().find_map(|p| {
            let i = (0..Self::PER_PAGE).find(|&i| !p.is_used(i))?;
            Some((p, i))
        });
        let (page, index) = match found {
            Some(f) => f,
            None => {
                let page = SlotPage {
                    page: ExecPages::new(&self.rt, 1, self.fill, |_, _| Ok(()))?,
                    used: [0; 4],
                    nused: 0,
                };
                // A failed push drops (frees) the page.
                pages.push(page, GFP_KERNEL)?;
                (pages.last_mut().ok_or(ENOMEM)?, 0)
            }
        };
        let addr = NonZeroUsize::new(page.page.addr() + index * SIZE).ok_or(ENOMEM)?;
        page.set_used(index, true);
        page.nused += 1;
        // INVARIANT: the slot was free and is now used; its address is in
        // this value only.
        Ok(NewSlot(Slot { addr }))
    }

    /// Writes `image`, the whole of `slot`. Process context, may sleep.
    ///
    /// No CPU-wide synchronisation follows, so that a batch of probes costs
    /// one (the kernel's `text_poke()` has written the bytes through the
    /// cache-coherent alias by the time it returns): a CPU only ever enters
    /// a slot through code that its holder makes reachable after this, and
    /// publishing that code (an int3 or a jump in kernel text) synchronises
    /// every CPU.
    pub(crate) fn write(&self, slot: &NewSlot, image: &[u8; SIZE]) -> Result {
        let guard = TextGuard::lock(&self.rt);
        // SAFETY: no CPU executes in the slot (`NewSlot`'s invariant), which
        // lies in an executable page of this cache, `SIZE` bytes long.
        unsafe { guard.poke(slot.addr(), image) };
        Ok(())
    }

    /// Frees a slot that was never published. Process context, may sleep.
    pub(crate) fn discard(&self, slot: NewSlot) {
        self.free(slot.0);
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
        let index = (slot.addr() - page.page.addr()) / SIZE;
        if page.is_used(index) {
            page.set_used(index, false);
            page.nused -= 1;
        }
        if page.nused == 0 {
            // Dropping the page frees it.
            drop(crate::kernel_ext::vec::swap_remove(&mut pages, pos));
        }
    }
}
