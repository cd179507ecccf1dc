// SPDX-License-Identifier: GPL-2.0

//! A list that owns its elements, walked by lock-free readers under RCU and
//! changed by one writer at a time under the list's own mutex: the
//! `list_add_rcu()`, `list_del_rcu()` and `kfree_rcu()` pattern, with the
//! memory's lifetime enforced by types rather than by comments.
//!
//! An element is given to the list as a `KBox` ([`Guard::push_front`]) and
//! stays at its address until the list frees it. The writer reaches the
//! elements as references borrowed from its [`Guard`]; readers as
//! references borrowed from their read-side guard ([`RcuList::iter_rcu`]).
//! The writer frees an element in two steps: [`Guard::retire`] marks it,
//! through a shared borrow, so that the writer may hold references to
//! other elements meanwhile; [`Guard::free_retired`] takes the marked ones
//! off, waits for a grace period and frees them, and takes the guard
//! mutably, so that no reference to an element outlives its memory. Both
//! cost O(1) per element and allocate nothing.
//!
//! An element records the list that owns it ([`Owner`]), so that a writer
//! cannot retire another list's element.
//!
//! Context: the writer's operations are process context (the mutex sleeps;
//! [`Guard::free_retired`] waits for a grace period); readers walk in any
//! context in which they hold a [`ReadSection`].

use super::list::{is_listed, Head, Linked, List, ReadSection, Tail};
use super::sync::synchronize_rcu;
use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicPtr, AtomicUsize, Ordering},
};
use kernel::{
    ffi::c_void,
    prelude::*,
    str::CStr,
    sync::{
        lock::{mutex::MutexBackend, Guard as LockGuard},
        LockClassKey, Mutex,
    },
};

/// The kind of the lists on which retired elements wait
/// ([`Guard::free_retired`]).
pub(crate) const RETIRED: u64 = u64::from_le_bytes(*b"retired\0");

/// The words in which an element records the list that owns it, and how
/// many [`Next`] links name it. Only this module reads or writes them.
pub(crate) struct Owner(AtomicPtr<c_void>, AtomicUsize);

impl Owner {
    /// Owned by no list.
    pub(crate) const fn new() -> Self {
        Owner(AtomicPtr::new(core::ptr::null_mut()), AtomicUsize::new(0))
    }
}

/// A link from an element of an [`RcuList`] to another element of the same
/// list (a kretprobe pool to the next pool of its chain), beside the list's
/// own order. The writer sets and cuts it ([`Guard::link`],
/// [`Guard::unlink`]) and follows it under the mutex ([`Guard::next`]);
/// readers follow it in a read section ([`Next::get_rcu`]).
///
/// # Invariants
///
/// `to` is null, or an element of the list whose address `list` holds, not
/// retired, and counted in its [`Owner`] as linked to: [`Guard::retire`]
/// leaves alone an element that a link names, so it is freed only a grace
/// period after every link to it was cut. `to` and `list` change only with
/// that list's mutex held.
pub(crate) struct Next<T> {
    to: AtomicPtr<T>,
    list: AtomicPtr<c_void>,
}

impl<T: Element> Next<T> {
    /// A link to nothing.
    pub(crate) const fn new() -> Self {
        Next {
            to: AtomicPtr::new(core::ptr::null_mut()),
            list: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Whether the link names an element. Any context.
    #[inline(always)]
    pub(crate) fn is_set(&self) -> bool {
        !self.to.load(Ordering::Relaxed).is_null()
    }

    /// The element the link names, for as long as the read section `rcu`
    /// lasts. Any context in which the caller holds a [`ReadSection`].
    #[inline(always)]
    pub(crate) fn get_rcu<'a, G: ReadSection>(&'a self, _rcu: &'a G) -> Option<&'a T> {
        let to = NonNull::new(self.to.load(Ordering::Acquire))?;
        // SAFETY: when loaded, the link named an element not retired (the
        // type invariant): the writer takes it off its list only after
        // cutting every link to it and retiring it, and frees it a grace
        // period after that, which waits for `_rcu`'s section, begun before
        // the load, for `'a`.
        Some(unsafe { to.as_ref() })
    }
}

impl<T: Element> Default for Next<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl Default for Owner {
    fn default() -> Self {
        Self::new()
    }
}

/// An element of an [`RcuList`]: its links on the list (kind 0), on the
/// list of retired elements ([`RETIRED`]), and its [`Owner`] word.
///
/// # Safety
///
/// [`Element::owner`] returns the same field for the element's whole life.
pub(crate) unsafe trait Element: Linked + Linked<RETIRED> + Send + Sync {
    /// The element's owner word.
    fn owner(&self) -> &Owner;
}

/// Implements [`Element`] for a type whose field `$owner` is its
/// [`Owner`]; its links are given by [`crate::impl_linked!`].
#[macro_export]
macro_rules! impl_rcu_element {
    ($ty:ty, $owner:ident) => {
        // SAFETY: the element's own field, for its whole life.
        unsafe impl $crate::kernel_ext::rcu_list::Element for $ty {
            fn owner(&self) -> &$crate::kernel_ext::rcu_list::Owner {
                &self.$owner
            }
        }
    };
}

/// The writer's state.
struct Writer<T: Element> {
    tail: UnsafeCell<Tail<T>>,
    retired: UnsafeCell<List<T, RETIRED>>,
    /// The list owns its elements.
    _owns: PhantomData<KBox<T>>,
}

// SAFETY: the writer's state moves between threads with the mutex that
// holds it; it owns its elements, which are `Send`.
unsafe impl<T: Element> Send for Writer<T> {}

/// A list that owns its elements, for lock-free readers and one writer at
/// a time.
///
/// # Invariants
///
/// Every element reachable from `head` or on the retired list was leaked
/// from a `KBox` by [`Guard::push_front`], has this list's address in its
/// owner word, and is freed only by [`Guard::free_retired`], a grace period
/// after it was taken off `head`; the retired list holds listed elements.
#[pin_data(PinnedDrop)]
pub(crate) struct RcuList<T: Element> {
    head: Head<T>,
    #[pin]
    writer: Mutex<Writer<T>>,
}

impl<T: Element> RcuList<T> {
    /// An empty list, whose mutex is named `name` with the lock class `key`.
    pub(crate) fn new(name: &'static CStr, key: &'static LockClassKey) -> impl PinInit<Self> {
        pin_init!(Self {
            head: Head::new(),
            writer <- Mutex::new(
                Writer {
                    tail: UnsafeCell::new(Tail::new()),
                    retired: UnsafeCell::new(List::new()),
                    _owns: PhantomData,
                },
                name,
                key
            ),
        })
    }

    /// The elements, first to last, for a lock-free reader, borrowed for as
    /// long as its read-side section `rcu` lasts. Any context.
    #[inline(always)]
    pub(crate) fn iter_rcu<'a, G: ReadSection>(
        &'a self,
        rcu: &'a G,
    ) -> impl Iterator<Item = &'a T> + 'a {
        // Elements are freed a grace period after they are taken off (the
        // type invariant), as `iter_rcu` requires.
        self.head.iter_rcu(rcu)
    }

    /// Takes the writer's mutex. Process context, may sleep.
    pub(crate) fn lock(&self) -> Guard<'_, T> {
        Guard {
            list: self,
            writer: self.writer.lock(),
        }
    }

    /// The address that elements record as their owner's.
    fn id(&self) -> *mut c_void {
        core::ptr::from_ref(self).cast_mut().cast()
    }
}

#[pinned_drop]
impl<T: Element> PinnedDrop for RcuList<T> {
    fn drop(self: Pin<&mut Self>) {
        // Elements still listed are left: a reader may still reach them.
        self.lock().free_retired();
    }
}

/// The writer's hold on an [`RcuList`]. It is neither `Send` nor `Sync`,
/// so its shared borrows are all on one thread.
pub(crate) struct Guard<'a, T: Element> {
    list: &'a RcuList<T>,
    writer: LockGuard<'a, Writer<T>, MutexBackend>,
}

impl<T: Element> Guard<'_, T> {
    /// Adds `e` first, where readers find it at once, and returns it, at
    /// the address it keeps until the list frees it. O(1), allocates
    /// nothing.
    pub(crate) fn push_front(&self, e: KBox<T>) -> &T {
        let e = NonNull::from(KBox::leak(e));
        // SAFETY: a fresh leak, ours alone until it is published below.
        let owner = &unsafe { e.as_ref() }.owner().0;
        owner.store(self.list.id(), Ordering::Relaxed);
        // SAFETY: the writer's state, behind the mutex we hold; the guard
        // is not `Sync`, and no other borrow of the tail is alive (none
        // leaves a method).
        let tail = unsafe { &mut *self.writer.tail.get() };
        // SAFETY: the list's own head; `e` is on no list (a fresh box), and
        // is freed only a grace period after it is taken off (the type
        // invariant).
        unsafe { tail.push_front(&self.list.head, e) };
        // SAFETY: listed, so valid until `free_retired`, which needs
        // `&mut self`.
        unsafe { e.as_ref() }
    }

    /// The elements, first to last, retired ones included. Elements may be
    /// added while the walk goes on.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        // SAFETY: we are the writer (the mutex is held).
        let walk = unsafe { self.list.head.iter() };
        // SAFETY: listed elements are valid until `free_retired`, which
        // needs `&mut self`.
        walk.map(|e| unsafe { e.as_ref() })
    }

    /// The element at `e`.
    ///
    /// # Safety
    ///
    /// `e` points to an element of this list that is not freed yet.
    pub(crate) unsafe fn get(&self, e: NonNull<T>) -> &T {
        // SAFETY: valid (the caller's contract) until `free_retired`, which
        // needs `&mut self`.
        unsafe { e.as_ref() }
    }

    /// The element that `link` names, if it was set with this list's
    /// mutex; valid until [`Guard::free_retired`], which takes the guard
    /// mutably. Writer.
    pub(crate) fn next(&self, link: &Next<T>) -> Option<&T> {
        if link.list.load(Ordering::Relaxed) != self.list.id() {
            return None;
        }
        let to = NonNull::new(link.to.load(Ordering::Relaxed))?;
        // SAFETY: an element of this list, not retired (the type invariant
        // of `Next`, whose fields this list's mutex, held, keeps): freed
        // only by `free_retired`, after the borrow of `self` ends.
        Some(unsafe { to.as_ref() })
    }

    /// Sets `link`, which names nothing, to name `to`, an element of this
    /// list that is not retired. Returns whether it did: `false` (nothing
    /// changed) when `link` names an element already or `to` is not such
    /// an element. O(1). Writer.
    pub(crate) fn link(&self, link: &Next<T>, to: &T) -> bool {
        if link.is_set() || to.owner().0.load(Ordering::Relaxed) != self.list.id() {
            return false;
        }
        // SAFETY: valid (borrowed); we are the writer of the retired lists
        // of its kind.
        if unsafe { is_listed::<T, RETIRED>(NonNull::from(to)) } {
            return false;
        }
        // INVARIANT: counted before it is published; this list's element,
        // not retired, as checked.
        to.owner().1.fetch_add(1, Ordering::Relaxed);
        link.list.store(self.list.id(), Ordering::Relaxed);
        link.to
            .store(core::ptr::from_ref(to).cast_mut(), Ordering::Release);
        true
    }

    /// Cuts `link`, if this list's mutex set it: it names nothing from now
    /// on, and its element may be retired. Readers that loaded it before
    /// keep the element until their read sections end. O(1). Writer.
    pub(crate) fn unlink(&self, link: &Next<T>) {
        let Some(to) = self.next(link) else {
            return;
        };
        let count = &to.owner().1;
        link.to.store(core::ptr::null_mut(), Ordering::Relaxed);
        // INVARIANT: the link names nothing before its count goes.
        count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Marks `e` to be taken off and freed by the next
    /// [`Guard::free_retired`]. Returns whether it was marked now: `false`
    /// for an element already marked, not this list's, or named by a
    /// [`Next`] link (cut those first). O(1).
    pub(crate) fn retire(&self, e: &T) -> bool {
        if e.owner().0.load(Ordering::Relaxed) != self.list.id()
            || e.owner().1.load(Ordering::Relaxed) != 0
        {
            return false;
        }
        let e = NonNull::from(e);
        // SAFETY: valid (borrowed); we are the writer of the retired lists
        // of its kind: only this list's writer puts its elements there.
        if unsafe { is_listed::<T, RETIRED>(e) } {
            return false;
        }
        // SAFETY: as in `push_front`.
        let retired = unsafe { &mut *self.writer.retired.get() };
        // SAFETY: an element of this list (its owner word), on no retired
        // list (checked), valid until `free_retired` takes it off.
        unsafe { retired.push_back(e) };
        true
    }

    /// Takes the retired elements off the list, waits for a grace period if
    /// there are any, and frees them; returns how many. Process context,
    /// may sleep.
    pub(crate) fn free_retired(&mut self) -> usize {
        let writer = &mut *self.writer;
        let tail = writer.tail.get_mut();
        let retired = writer.retired.get_mut();
        let mut n = 0usize;
        for e in retired.iter() {
            // SAFETY: the list's own head; a retired element is listed on it
            // (the type invariant) and valid.
            unsafe { tail.remove(&self.list.head, e) };
            n += 1;
        }
        if n == 0 {
            return 0;
        }
        // Readers that stood on them have left.
        synchronize_rcu();
        for e in retired.drain() {
            // SAFETY: leaked from a `KBox` by `push_front`, off the list for
            // a grace period, so no reader reaches it, and no writer's
            // reference to it outlives this `&mut self`; freed once (drained
            // off the retired list).
            drop(unsafe { KBox::from_raw(e.as_ptr()) });
        }
        n
    }
}
