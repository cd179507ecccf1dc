// SPDX-License-Identifier: GPL-2.0

//! What rkprobes needs of `KVec` beyond the 6.12 kernel crate's API.

use kernel::prelude::*;

/// Removes element `i` by moving the last element into its place; returns it.
pub(crate) fn swap_remove<T>(v: &mut KVec<T>, i: usize) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    if i > last {
        return None;
    }
    v.as_mut_slice().swap(i, last);
    take(v, last)
}

/// Removes and returns element `i`, keeping the order of the others.
pub(crate) fn take<T>(v: &mut KVec<T>, i: usize) -> Option<T> {
    let len = v.len();
    if i >= len {
        return None;
    }
    let p = v.as_mut_ptr();
    // SAFETY: `i < len`: the element is read out once, the tail moved down
    // over it, and the length shortened, so it is neither dropped nor read
    // twice.
    unsafe {
        let item = p.add(i).read();
        core::ptr::copy(p.add(i + 1), p.add(i), len - i - 1);
        v.set_len(len - 1);
        Some(item)
    }
}
