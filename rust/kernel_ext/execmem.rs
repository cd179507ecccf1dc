// SPDX-License-Identifier: GPL-2.0

//! Executable pages for code rkprobes writes: out-of-line slots and return
//! stubs.
//!
//! Pages come from `execmem_alloc(EXECMEM_KPROBES)`, which places them within
//! ±2 GiB of kernel and module text so that RIP-relative operands and rel32
//! jumps and calls reach; they are filled while still writable and then made
//! read-only and executable at once (`set_memory_rox()`). Later changes go
//! through `text_poke()` like any other text (`super::text`).

use crate::ffi::runtime::Runtime;
use core::ops::Range;
use kernel::{
    ffi::{c_int, c_ulong},
    page::PAGE_SIZE,
    prelude::*,
};

/// `npages` read-only, executable pages, freed when dropped.
///
/// Built and dropped in process context; the code in them may run in any
/// context.
///
/// # Invariants
///
/// `base` is the page-aligned start of `npages` pages from
/// `execmem_alloc(EXECMEM_KPROBES)`, read-only and executable, freed once,
/// by `drop`. The owner drops them only when no CPU can execute in them.
pub(crate) struct ExecPages {
    base: usize,
    npages: usize,
    rt: Runtime,
}

impl ExecPages {
    /// Allocates `npages` pages, fills them with `fill` (the architecture's
    /// one-byte trap, so that a stray jump anywhere else traps), lets `init`
    /// write its code into them (it is
    /// given their address and their bytes), and makes them read-only and
    /// executable. Nothing is left allocated when `init` or a step fails.
    /// Process context, may sleep.
    pub(crate) fn new(
        rt: &Runtime,
        npages: usize,
        fill: u8,
        init: impl FnOnce(usize, &mut [u8]) -> Result,
    ) -> Result<Self> {
        let size = npages.checked_mul(PAGE_SIZE).ok_or(E2BIG)?;
        let rox_pages = c_int::try_from(npages).map_err(|_| E2BIG)?;
        // SAFETY: process context.
        let mem = unsafe { rt.execmem_alloc_kprobes(size) }.cast::<u8>();
        if mem.is_null() {
            return Err(ENOMEM);
        }
        let free = || {
            // SAFETY: allocated above and never made reachable.
            unsafe { rt.execmem_free(mem.cast()) };
        };
        // SAFETY: a fresh writable allocation of `size` bytes, not shared.
        let region = unsafe { core::slice::from_raw_parts_mut(mem, size) };
        region.fill(fill);
        if let Err(e) = init(mem as usize, region) {
            free();
            return Err(e);
        }
        // SAFETY: page-aligned execmem memory of `npages` pages.
        let ret = unsafe { rt.set_memory_rox(mem as c_ulong, rox_pages) };
        if ret != 0 {
            free();
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: allocated and made read-only and executable above.
        Ok(Self {
            base: mem as usize,
            npages,
            rt: *rt,
        })
    }

    /// The address of the first page.
    pub(crate) fn addr(&self) -> usize {
        self.base
    }

    /// The addresses the pages span.
    pub(crate) fn range(&self) -> Range<usize> {
        self.base..self.base + self.npages * PAGE_SIZE
    }
}

impl Drop for ExecPages {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`, freed only here; the owner drops the
        // pages only when no CPU can execute in them (type invariant).
        unsafe { self.rt.execmem_free(self.base as *mut _) };
    }
}
