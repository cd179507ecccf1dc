// SPDX-License-Identifier: GPL-2.0

//! The layout of a pool's return stubs: executable pages, each starting
//! with a [`StubHeader`] that names the page's pool and its first
//! instance, followed by one stub per instance. A stub's address alone
//! leads to its pool and instance ([`owner_of`]), and an instance's index
//! to its stub ([`stub_addr`]). A leaf: it knows a pool only as the
//! address its header stores.
//!
//! Context: writing the pages is process context; the lookups run in any
//! context, NMI included.

use crate::arch;
use core::mem::offset_of;
use kernel::{ffi::c_void, page::PAGE_SIZE, prelude::*, static_assert};

/// Bytes of a stub page taken by its [`StubHeader`].
const STUB_HEADER: usize = 32;
/// Stubs in one page.
pub(super) const STUBS_PER_PAGE: usize = (PAGE_SIZE - STUB_HEADER) / arch::RETHOOK_STUB_SIZE;
/// Marks a page of return stubs.
const STUB_MAGIC: u64 = u64::from_le_bytes(*b"rkpretst");

/// The start of every page of return stubs.
#[repr(C)]
struct StubHeader {
    magic: u64,
    /// The pool the page belongs to.
    pool: *const c_void,
    /// Index of the page's first stub's instance.
    first: u32,
    /// Stubs in this page.
    count: u32,
    _reserved: u64,
}

static_assert!(core::mem::size_of::<StubHeader>() <= STUB_HEADER);

/// Writes the headers and stubs of `max` instances of the pool at `pool`
/// into `region`, its writable stub pages, which will be at `base`.
/// Process context.
pub(super) fn write_pages(
    pool: *const c_void,
    max: usize,
    base: usize,
    region: &mut [u8],
) -> Result {
    for (p, page) in region.chunks_exact_mut(PAGE_SIZE).enumerate() {
        let first = p * STUBS_PER_PAGE;
        let count = max.saturating_sub(first).min(STUBS_PER_PAGE);
        // The header's fields at their offsets, as `owner_of` reads them.
        let fields: [(usize, &[u8]); 5] = [
            (offset_of!(StubHeader, magic), &STUB_MAGIC.to_ne_bytes()),
            (offset_of!(StubHeader, pool), &(pool as usize).to_ne_bytes()),
            (offset_of!(StubHeader, first), &(first as u32).to_ne_bytes()),
            (offset_of!(StubHeader, count), &(count as u32).to_ne_bytes()),
            (offset_of!(StubHeader, _reserved), &0u64.to_ne_bytes()),
        ];
        for (off, bytes) in fields {
            if let Some(dst) = page.get_mut(off..off + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
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

/// The pool named by the header of `stub`'s page, and the index of
/// `stub`'s instance; `None` when the page or the offset is not a stub's.
///
/// # Safety
///
/// `stub` is in a page of stubs that [`write_pages`] wrote and that is
/// still mapped (its pool is live).
#[inline(always)]
pub(super) unsafe fn owner_of(stub: usize) -> Option<(*const c_void, u32)> {
    let page = stub & !(PAGE_SIZE - 1);
    let off = (stub - page).checked_sub(STUB_HEADER)?;
    if off % arch::RETHOOK_STUB_SIZE != 0 {
        return None;
    }
    // SAFETY: such a page starts with its header (the caller's contract).
    let h = unsafe { &*(page as *const StubHeader) };
    let j = off / arch::RETHOOK_STUB_SIZE;
    if h.magic != STUB_MAGIC || j >= h.count as usize {
        return None;
    }
    Some((h.pool, h.first.checked_add(j as u32)?))
}
