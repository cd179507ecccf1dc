// SPDX-License-Identifier: GPL-2.0

//! Storage the caller owns: what the pure code that keeps items (an event's
//! layout, the BTF reader's index) appends to without allocating itself,
//! a `KVec` in the module and a `Vec` in the host tests.

/// No room to store an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

/// Growable storage owned by the caller.
pub trait Store<T> {
    /// Appends `v`, or fails without memory.
    fn try_push(&mut self, v: T) -> Result<(), NoMemory>;
    /// The items stored so far.
    fn items(&self) -> &[T];
}
