// SPDX-License-Identifier: GPL-2.0

//! The layout of a pool's return stubs: executable pages, each starting
//! with the architecture's stub page header (`arch::stub_page_header`),
//! which names the page's pool and its first instance, followed by one stub
//! per instance. A stub's address alone leads to its pool and instance
//! (`arch::ReturnFrame::owner`), and an instance's index to its stub
//! ([`stub_addr`]).
//!
//! Context: writing the pages is process context; the lookups run in any
//! context, NMI included.

use crate::arch::{self, STUB_HEADER};
use core::ptr::NonNull;
use kernel::{page::PAGE_SIZE, prelude::*};

/// Stubs in one page.
pub(super) const STUBS_PER_PAGE: usize = (PAGE_SIZE - STUB_HEADER) / arch::RETHOOK_STUB_SIZE;

/// Writes the headers and stubs of `max` instances of the pool at `pool`
/// into `region`, its writable stub pages, which will be at `base`.
/// Process context.
pub(super) fn write_pages<P>(
    pool: NonNull<P>,
    max: usize,
    base: usize,
    region: &mut [u8],
) -> Result {
    for (p, page) in region.chunks_exact_mut(PAGE_SIZE).enumerate() {
        let first = p * STUBS_PER_PAGE;
        let count = max.saturating_sub(first).min(STUBS_PER_PAGE);
        // `count` and `first` are at most `max`, a pool's size, which
        // fits a `u32` (instance indices are `u32`).
        let header = arch::stub_page_header(pool, first as u32, count as u32);
        if let Some(dst) = page.get_mut(..STUB_HEADER) {
            dst.copy_from_slice(&header);
        }
        for j in 0..count {
            let off = STUB_HEADER + j * arch::RETHOOK_STUB_SIZE;
            let at = base + p * PAGE_SIZE + off;
            let code = arch::rethook_stub(at)?;
            if let Some(dst) = page.get_mut(off..off + code.len()) {
                dst.copy_from_slice(&code);
            }
        }
    }
    Ok(())
}

/// The address of instance `i`'s stub, for stub pages at `base`: for an
/// instance of a pool, inside its stub pages, so that the sums cannot wrap
/// (wrapping arithmetic keeps overflow checks off the entry path).
#[inline(always)]
pub(super) fn stub_addr(base: usize, i: u32) -> usize {
    let i = i as usize;
    base.wrapping_add((i / STUBS_PER_PAGE) * PAGE_SIZE)
        .wrapping_add(STUB_HEADER + (i % STUBS_PER_PAGE) * arch::RETHOOK_STUB_SIZE)
}

/// The index of the instance whose stub is at `addr`, for stub pages at
/// `base`; `None` when `addr` is no stub's start.
pub(super) fn index_at(base: usize, addr: usize) -> Option<u32> {
    let off = addr.checked_sub(base)?;
    let in_page = (off % PAGE_SIZE).checked_sub(STUB_HEADER)?;
    if in_page % arch::RETHOOK_STUB_SIZE != 0 {
        return None;
    }
    let j = in_page / arch::RETHOOK_STUB_SIZE;
    if j >= STUBS_PER_PAGE {
        return None;
    }
    let i = (off / PAGE_SIZE)
        .checked_mul(STUBS_PER_PAGE)?
        .checked_add(j)?;
    u32::try_from(i).ok()
}
