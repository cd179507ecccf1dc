// SPDX-License-Identifier: GPL-2.0

//! Sites of vmlinux that other text patchers own (jump labels, inline static
//! calls), as a sorted index instead of the kernel's table walks.
//!
//! The kernel's `jump_label_text_reserved()` and `static_call_text_reserved()`
//! walk every vmlinux site on each call, and the jump-label walk decodes each
//! site's instruction to learn its length: with about 2,800 jump-label sites
//! that is most of the time rkprobes spends registering a probe. vmlinux's
//! sites do not change once it has booted, so rkprobes reads them once into a
//! sorted array of packed `(offset << 8) | length` entries, and
//! [`overlaps`] answers the kernel's question in `O(log n)`.

/// Packs a site at `offset` from the index's base, `len` bytes long: the
/// index's entry, or `None` when the offset does not fit in 56 bits or the
/// length is zero.
pub fn pack(offset: u64, len: u8) -> Option<u64> {
    if len == 0 || offset >> 56 != 0 {
        return None;
    }
    Some(offset << 8 | u64::from(len))
}

/// The offset and length of a packed entry.
pub fn unpack(entry: u64) -> (u64, u8) {
    (entry >> 8, (entry & 0xff) as u8)
}

/// Whether a site of `sites` (packed entries sorted in increasing order,
/// offsets from `base`) overlaps `start..=end`, as the kernel's
/// `addr_conflict()` decides: `code <= end && code + len > start`.
pub fn overlaps(sites: &[u64], base: u64, start: u64, end: u64) -> bool {
    let Some(end) = end.checked_sub(base) else {
        return false;
    };
    // Below the base, every site starts after `start`.
    let start = start.saturating_sub(base);
    // The sites that start at or before `end`.
    let upto = sites.partition_point(|&e| unpack(e).0 <= end);
    let Some(candidates) = sites.get(..upto) else {
        return false;
    };
    for &e in candidates.iter().rev() {
        let (code, len) = unpack(e);
        if code + u64::from(len) > start {
            return true;
        }
        // No site further back, at most 255 bytes long, reaches `start`.
        if code + u64::from(u8::MAX) <= start {
            break;
        }
    }
    false
}

/// Sorts `v` in increasing order (heapsort: in place, `O(n log n)`, no
/// allocation, no panic path; `core`'s sorts leave panic paths in the
/// module's text that objtool reports).
pub fn sort(v: &mut [u64]) {
    let n = v.len();
    for start in (0..n / 2).rev() {
        sift_down(v, start, n);
    }
    for end in (1..n).rev() {
        swap(v, 0, end);
        sift_down(v, 0, end);
    }
}

/// Swaps `v[a]` and `v[b]` when both are in bounds.
fn swap(v: &mut [u64], a: usize, b: usize) {
    if let (Some(&x), Some(&y)) = (v.get(a), v.get(b)) {
        if let Some(p) = v.get_mut(a) {
            *p = y;
        }
        if let Some(p) = v.get_mut(b) {
            *p = x;
        }
    }
}

/// Restores the max-heap property of `v[..end]` below `root`.
fn sift_down(v: &mut [u64], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        if child + 1 < end && at(child) < at(child + 1) {
            child += 1;
        }
        if at(root) >= at(child) {
            return;
        }
        swap(v, root, child);
        root = child;
    }
}
