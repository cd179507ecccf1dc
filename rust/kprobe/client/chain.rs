// SPDX-License-Identifier: GPL-2.0

//! A point's chain of client probes through their own `rkp_next`: part of
//! the C ABI's edge, as the structures it links are the clients'.

use super::Client;
use crate::abi::RkpKprobe;
use crate::kernel_ext::{
    list::{self, Head, ReadSection},
    owned::OwnedBy,
};
use core::ptr::NonNull;
use core::sync::atomic::Ordering;
use kernel::ffi::c_void;

/// A point's client probes (the kernel's aggregate probe's list), linked
/// through the clients' own `rkp_next`, in registration order, so that a
/// client costs the core no memory. Hits walk it lock-free in a read
/// section ([`ClientChain::iter`]); the writer, the owner `W` named at
/// creation (the core's registry), changes it through `&mut W` and walks it
/// through `&W`. A client is on one chain at most: the chain claims its
/// `rkp_private` when it links it, and gives the word back when it unlinks
/// it. Unlinking leaves the client's own link for a reader standing on it
/// (the kernel's `list_del_rcu()`).
///
/// The chain also keeps its owner's writer's state `S` (a point's), which
/// only the writer reaches ([`ClientChain::state`]): the check that a
/// writer is the chain's then costs no memory of its own.
///
/// # Invariants
///
/// Every structure on `head` is a [`Client`]'s, linked by
/// [`ClientChain::push_back`] while its `rkp_private` was null, which that
/// set to non-null; its `rkp_private` stays non-null, and only chains write
/// it, until [`ClientChain::remove`] has taken it off and cleared it.
/// `head` changes only through `&mut` of the owner `writer` names.
pub(crate) struct ClientChain<S, W> {
    head: Head<RkpKprobe>,
    writer: OwnedBy<S, W>,
}

impl<S, W> ClientChain<S, W> {
    /// An empty chain, changed through `&mut owner`, with the writer's state
    /// `state`.
    pub(crate) fn new(owner: &W, state: S) -> Self {
        // INVARIANT: empty; `owner` is its writer.
        Self {
            head: Head::new(),
            writer: OwnedBy::new(owner, state),
        }
    }

    /// The writer's state, to read. Panics if `w` is not the chain's
    /// writer.
    pub(crate) fn state<'a>(&'a self, w: &'a W) -> &'a S
    where
        S: Sync,
    {
        self.writer.access(w)
    }

    /// The writer's state, to change. Panics if `w` is not the chain's
    /// writer.
    pub(crate) fn state_mut<'a>(&'a self, w: &'a mut W) -> &'a mut S {
        self.writer.access_mut(w)
    }

    /// Whether the chain is empty. Any context.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_empty()
    }

    /// The clients, in registration order, for a reader in the read section
    /// `_rcu`. Any context; the hit path's: no locks, no allocation.
    #[inline(always)]
    pub(crate) fn iter<'a, G: ReadSection>(&'a self, _rcu: &'a G) -> Clients<'a> {
        Clients {
            // SAFETY: the walk lasts at most `'a`, in a read section: a client
            // taken off meanwhile stays valid until the grace period that its
            // unregistration waits for (`Client`'s invariant).
            walk: unsafe { self.head.iter() },
            _chain: core::marker::PhantomData,
        }
    }

    /// The clients, in registration order, for the writer `w`. Panics if
    /// `w` is not the chain's writer.
    pub(crate) fn iter_w<'a>(&'a self, w: &'a W) -> Clients<'a>
    where
        S: Sync,
    {
        let _: &S = self.writer.access(w);
        Clients {
            // SAFETY: `w`, the writer, is borrowed for the walk, so nobody
            // takes a client off meanwhile (type invariant): linked clients
            // are valid (`Client`'s invariant).
            walk: unsafe { self.head.iter() },
            _chain: core::marker::PhantomData,
        }
    }

    /// Appends `c`, published to readers at once, with `private` as its
    /// core's word; false, changing nothing, if `c` is registered (its word
    /// is not null). Panics if `w` is not the chain's writer. Allocates
    /// nothing.
    pub(crate) fn push_back(&self, w: &mut W, c: Client, private: NonNull<c_void>) -> bool {
        let _: &mut S = self.writer.access_mut(w);
        if c.private_cell()
            .compare_exchange(
                core::ptr::null_mut(),
                private.as_ptr(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        // INVARIANT: linked with its word claimed above.
        // SAFETY: `w`, the one writer, is borrowed exclusively (type
        // invariant). `c` is on no list: its word was null, and a chain
        // clears it only after taking it off (type invariant), and no reader
        // still stands on it from an earlier chain: taking it off is part of
        // its unregistration, which waits for a grace period before the
        // client may register again (`Client`'s invariant). It stays valid
        // until a grace period after it is taken off (the same).
        unsafe { self.head.push_back_walk(c.0) };
        true
    }

    /// Takes `c` off, leaving its own link for readers standing on it, and
    /// clears its core's word; returns whether it was on the chain. Panics
    /// if `w` is not the chain's writer. Allocates nothing.
    pub(crate) fn remove(&self, w: &mut W, c: Client) -> bool {
        let _: &mut S = self.writer.access_mut(w);
        // SAFETY: `w`, the one writer, is borrowed exclusively (type
        // invariant); `c` is valid (a handle), and its structure has no
        // backward link.
        if !unsafe { self.head.remove_walk(c.0) } {
            return false;
        }
        // INVARIANT: off the chain, so its word is free again.
        c.private_cell()
            .store(core::ptr::null_mut(), Ordering::Relaxed);
        true
    }
}

/// A walk of a [`ClientChain`], in a read section or by its writer, for
/// `'a`.
pub(crate) struct Clients<'a> {
    walk: list::Iter<RkpKprobe, 0>,
    _chain: core::marker::PhantomData<&'a ()>,
}

impl Iterator for Clients<'_> {
    type Item = Client;

    #[inline(always)]
    fn next(&mut self) -> Option<Client> {
        // A chain links only clients' structures (`ClientChain`'s
        // invariant), which a walk reaches while they are valid.
        self.walk.next().map(Client)
    }
}
