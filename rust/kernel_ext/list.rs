// SPDX-License-Identifier: GPL-2.0

//! Intrusive lists: the one list of rkprobes, in the manner of the kernel's
//! `list.h` and `rculist.h`.
//!
//! The elements carry their own links, so adding or removing one needs no
//! memory and cannot fail: registering thousands of probes, the module
//! notifier and unregistration rely on that. A list owns none of its
//! elements; whoever adds one promises that it stays valid while it is on
//! the list and, where readers walk the list without a lock, for a grace
//! period after it was taken off.
//!
//! A list has two parts, as an RCU list in the kernel has:
//! - its [`Head`], which lock-free readers walk: the first link and the
//!   elements' forward links are published with release stores and read
//!   with acquire loads. Taking an element off redirects its predecessor
//!   and leaves the element's own forward link for readers that stand on it
//!   (`list_del_rcu()`);
//! - its [`Tail`], the writers' state (the last element and the length),
//!   changed only through `&mut`, so that it lives in the data the writers'
//!   lock owns and the type system, not a comment, says who may change the
//!   list.
//!
//! [`List`] holds both, for the lists that only their writer walks.
//!
//! Elements with a backward link ([`Linked::prev`]) are taken off in O(1)
//! and know whether they are on a list; those without one (the C ABI's
//! `struct rkp_kprobe`, which has only `rkp_next`) are taken off in the
//! length of the list, as from a singly linked list.
//!
//! Every link is an atomic pointer: writers use relaxed stores for what
//! readers do not follow, so that a link is never read and written at once
//! by two CPUs without atomics, whichever list kind it belongs to.
//!
//! The file imports only `core`: the host crate (`tools/host`) compiles it
//! unchanged and tests it against a model (`tools/host/tests/list.rs`).
//!
//! Length: one job, the one list in its views (head and tail, [`List`],
//! [`BorrowList`]), which share their links' rules and safety arguments.

use core::{
    marker::PhantomData,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};

/// The backward link of an element that is on no list of its kind: a
/// dangling, aligned address that no element has.
#[inline(always)]
const fn off<T>() -> *mut T {
    NonNull::dangling().as_ptr()
}

/// A proof that the CPU is in an RCU read-side critical section: the
/// readers' side of a list ([`Head::iter_rcu`]). Implemented by the
/// module's guards (preemption or interrupts off).
///
/// # Safety
///
/// While a value of the type lives, the CPU that made it is in an RCU
/// read-side critical section (one that `synchronize_rcu()` waits for),
/// and the value does not move to another CPU.
pub unsafe trait ReadSection {}

/// An element's links on one kind of list. `next` is what readers follow;
/// `prev` is the writers' alone.
pub struct Links<T> {
    next: AtomicPtr<T>,
    prev: AtomicPtr<T>,
}

impl<T> Links<T> {
    /// The links of an element on no list.
    pub const fn new() -> Self {
        Self {
            next: AtomicPtr::new(ptr::null_mut()),
            prev: AtomicPtr::new(off()),
        }
    }

    /// The forward link.
    #[inline(always)]
    pub fn next(&self) -> &AtomicPtr<T> {
        &self.next
    }

    /// The backward link, for [`impl_linked!`].
    #[inline(always)]
    pub fn prev_link(&self) -> Option<&AtomicPtr<T>> {
        Some(&self.prev)
    }
}

impl<T> Default for Links<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// How the lists of kind `ID` reach an element's links.
///
/// # Safety
///
/// For a valid `this`, [`Linked::next`] returns the same field for the
/// element's whole life, a different one for each `ID`, and so does
/// [`Linked::prev`], or it is `None` for every element of the type. Only the
/// lists of this module write those fields while the element is on a list.
pub unsafe trait Linked<const ID: u64 = 0>: Sized {
    /// The forward link.
    ///
    /// # Safety
    ///
    /// `this` is a valid element for `'a`.
    unsafe fn next<'a>(this: NonNull<Self>) -> &'a AtomicPtr<Self>;

    /// The backward link, if elements of this type have one.
    ///
    /// # Safety
    ///
    /// `this` is a valid element for `'a`.
    unsafe fn prev<'a>(this: NonNull<Self>) -> Option<&'a AtomicPtr<Self>>;
}

/// Implements [`Linked`] for a type whose field of type [`Links`] or
/// [`Link`] holds its links on the lists of kind `$id`. [`Linked`] must be
/// in scope.
#[macro_export]
macro_rules! impl_linked {
    ($ty:ty, $id:expr, $field:ident) => {
        // SAFETY: the links are the element's own `$field`, used by the
        // lists of kind `$id` alone.
        unsafe impl Linked<{ $id }> for $ty {
            #[inline(always)]
            unsafe fn next<'a>(
                this: ::core::ptr::NonNull<Self>,
            ) -> &'a ::core::sync::atomic::AtomicPtr<Self> {
                // SAFETY: `this` is valid for `'a` (the caller's contract).
                unsafe { (*this.as_ptr()).$field.next() }
            }

            #[inline(always)]
            unsafe fn prev<'a>(
                this: ::core::ptr::NonNull<Self>,
            ) -> ::core::option::Option<&'a ::core::sync::atomic::AtomicPtr<Self>> {
                // SAFETY: as above.
                unsafe { (*this.as_ptr()).$field.prev_link() }
            }
        }
    };
}

/// The part of a list that readers walk: its first link.
pub struct Head<T, const ID: u64 = 0> {
    first: AtomicPtr<T>,
}

impl<T: Linked<ID>, const ID: u64> Head<T, ID> {
    /// An empty list's head.
    pub const fn new() -> Self {
        Self {
            first: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Whether the list is empty. Any context.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.first.load(Ordering::Relaxed).is_null()
    }

    /// The elements, first to last, each read with an acquire load: an
    /// element's fields written before it was linked are seen. The walk
    /// reads an element's successor before yielding it, so the writer may
    /// take off, move or free the element it was given.
    ///
    /// # Safety
    ///
    /// The caller walks as a reader in an RCU read-side critical section
    /// (elements are freed only a grace period after they were taken off),
    /// or is the list's writer, for as long as it uses the iterator.
    #[inline(always)]
    pub unsafe fn iter(&self) -> Iter<T, ID> {
        Iter {
            next: NonNull::new(self.first.load(Ordering::Acquire)),
            _kind: PhantomData,
        }
    }

    /// The elements, first to last, for a lock-free reader, borrowed for
    /// as long as the reader's critical section `_rcu` lasts: an element is
    /// valid until a grace period after it was taken off (the contract of
    /// every way to add one to a list with a `Head` that readers can reach,
    /// [`Tail::push_back`], [`Tail::push_front`], [`Head::push_back_walk`]).
    /// Any context.
    ///
    /// Only for `T: Sync`: a `Head` is `Send` and `Sync` whatever `T` is (its
    /// link is an atomic pointer), so without the bound a `&T` to an element
    /// that may not be shared would reach any thread that can borrow the
    /// head. Lists of other elements (a point's clients, C structures) are
    /// walked with the unsafe [`Head::iter`], whose caller answers for them.
    #[inline(always)]
    pub fn iter_rcu<'a, G: ReadSection>(&'a self, _rcu: &'a G) -> impl Iterator<Item = &'a T> + 'a
    where
        T: Sync,
    {
        // SAFETY: the caller walks in an RCU read-side critical section
        // (`ReadSection`) for `'a`.
        let walk = unsafe { self.iter() };
        // SAFETY: an element reached in the section is valid until a grace
        // period after it is taken off, which the section holds off for
        // `'a`.
        walk.map(|e| unsafe { e.as_ref() })
    }
}

impl<T: Linked<ID>, const ID: u64> Head<T, ID> {
    /// Adds `e` at the end of a list kept without a [`Tail`], found by a
    /// walk: for short lists whose elements cost no memory of the list's
    /// owner (a point's clients).
    ///
    /// # Safety
    ///
    /// The caller is the list's writer (it holds the writers' lock); `e` as
    /// for [`Tail::push_back`].
    pub unsafe fn push_back_walk(&self, e: NonNull<T>) {
        let mut tail = Tail::new();
        // SAFETY: the caller is the writer.
        tail.last = unsafe { self.iter() }
            .last()
            .map_or(ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: `tail` is this list's, as just found; `e` as the caller
        // promises.
        unsafe { tail.push_back(self, e) }
    }

    /// Takes `e` off a list kept without a [`Tail`], as [`Tail::remove`]
    /// does.
    ///
    /// # Safety
    ///
    /// The caller is the list's writer; `e` as for [`Tail::remove`].
    pub unsafe fn remove_walk(&self, e: NonNull<T>) -> bool {
        // A tail kept for the call alone: removal finds `e`'s predecessor by
        // its own walk, and the last element it would update is not kept.
        let mut tail = Tail::new();
        // SAFETY: as in `push_back_walk`.
        unsafe { tail.remove(self, e) }
    }
}

impl<T: Linked<ID>, const ID: u64> Default for Head<T, ID> {
    fn default() -> Self {
        Self::new()
    }
}

/// A walk of a list ([`Head::iter`]).
pub struct Iter<T, const ID: u64> {
    next: Option<NonNull<T>>,
    _kind: PhantomData<*mut T>,
}

impl<T: Linked<ID>, const ID: u64> Iterator for Iter<T, ID> {
    type Item = NonNull<T>;

    #[inline(always)]
    fn next(&mut self) -> Option<NonNull<T>> {
        let e = self.next?;
        // SAFETY: a listed element, or one taken off whose forward link was
        // left for readers, is valid for the walk (`Head::iter`'s contract).
        self.next = NonNull::new(unsafe { T::next(e) }.load(Ordering::Acquire));
        Some(e)
    }
}

/// The part of a list that only its writer uses: the last element. Kept
/// in the data that the writers' lock owns, so that changing the list
/// takes `&mut` of it.
pub struct Tail<T, const ID: u64 = 0> {
    last: *mut T,
}

// A copy is only a value, whose use is `unsafe`: a writer may keep it in a `Cell`.
impl<T, const ID: u64> Clone for Tail<T, ID> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const ID: u64> Copy for Tail<T, ID> {}

// SAFETY: `last` is only followed through `&mut Tail` (the writers'
// exclusive access) or read through `&Tail`, as the element it points to is
// valid while listed; the tail may so move to and be shared by other CPUs
// as any writer-owned data is.
unsafe impl<T, const ID: u64> Send for Tail<T, ID> {}
// SAFETY: as above.
unsafe impl<T, const ID: u64> Sync for Tail<T, ID> {}

impl<T: Linked<ID>, const ID: u64> Tail<T, ID> {
    /// An empty list's tail.
    pub const fn new() -> Self {
        Self {
            last: ptr::null_mut(),
        }
    }

    /// Adds `e` at the end, published to readers by a release store.
    ///
    /// # Safety
    ///
    /// `head` is this tail's list's head. `e` is valid and on no list of
    /// kind `ID`, and stays valid until it is taken off, and a grace period
    /// after that if lock-free readers can reach `head`: they can reach
    /// any `Head` but a [`List`]'s, which is private ([`Head::iter_rcu`]).
    pub unsafe fn push_back(&mut self, head: &Head<T, ID>, e: NonNull<T>) {
        // SAFETY: `e` is valid (the caller's contract).
        let (next, prev) = unsafe { (T::next(e), T::prev(e)) };
        next.store(ptr::null_mut(), Ordering::Relaxed);
        if let Some(p) = prev {
            p.store(self.last, Ordering::Relaxed);
        }
        // Release: a reader that finds `e` sees its fields and links.
        match NonNull::new(self.last) {
            // SAFETY: the last element is listed, so valid.
            Some(l) => unsafe { T::next(l) }.store(e.as_ptr(), Ordering::Release),
            None => head.first.store(e.as_ptr(), Ordering::Release),
        }
        self.last = e.as_ptr();
    }

    /// Adds `e` at the front, published to readers by a release store.
    ///
    /// # Safety
    ///
    /// As [`Tail::push_back`].
    pub unsafe fn push_front(&mut self, head: &Head<T, ID>, e: NonNull<T>) {
        let first = head.first.load(Ordering::Relaxed);
        // SAFETY: `e` is valid (the caller's contract).
        let (next, prev) = unsafe { (T::next(e), T::prev(e)) };
        next.store(first, Ordering::Relaxed);
        if let Some(p) = prev {
            p.store(ptr::null_mut(), Ordering::Relaxed);
        }
        match NonNull::new(first) {
            Some(f) => {
                // SAFETY: the first element is listed, so valid.
                if let Some(p) = unsafe { T::prev(f) } {
                    p.store(e.as_ptr(), Ordering::Relaxed);
                }
            }
            None => self.last = e.as_ptr(),
        }
        // Release: a reader that finds `e` sees its fields and links.
        head.first.store(e.as_ptr(), Ordering::Release);
    }

    /// Takes `e` off the list, leaving its forward link for the readers
    /// that stand on it; returns whether it was on the list. Cannot fail,
    /// allocates nothing. `e` may be added to a list again, or freed, once
    /// no reader can stand on it (at once if only the writer walks).
    ///
    /// # Safety
    ///
    /// `head` is this tail's list's head; `e` is valid; if elements of its
    /// type have a backward link and `e` is on a list of kind `ID`, it is
    /// on this one.
    pub unsafe fn remove(&mut self, head: &Head<T, ID>, e: NonNull<T>) -> bool {
        // SAFETY: the caller's contract.
        unsafe { self.unlink(head, e, off()) }
    }

    /// [`Tail::remove`], leaving `e` claimed ([`claim`]) rather than marked
    /// as on no list, for a writer that adds it to another list next: no
    /// other list can claim it in between.
    ///
    /// # Safety
    ///
    /// As [`Tail::remove`].
    pub unsafe fn remove_claimed(&mut self, head: &Head<T, ID>, e: NonNull<T>) -> bool {
        // SAFETY: the caller's contract.
        unsafe { self.unlink(head, e, ptr::null_mut()) }
    }

    /// [`Tail::remove`], leaving `mark` in `e`'s backward link, if it has one.
    ///
    /// # Safety
    ///
    /// As [`Tail::remove`].
    unsafe fn unlink(&mut self, head: &Head<T, ID>, e: NonNull<T>, mark: *mut T) -> bool {
        // SAFETY: `e` is valid (the caller's contract).
        let (next_link, prev_link) = unsafe { (T::next(e), T::prev(e)) };
        let prev = match prev_link {
            Some(p) => {
                let prev = p.load(Ordering::Relaxed);
                if prev == off() {
                    return false;
                }
                prev
            }
            None => {
                // SAFETY: the caller is the writer.
                let mut walk = unsafe { head.iter() };
                let mut prev = ptr::null_mut();
                loop {
                    match walk.next() {
                        None => return false,
                        Some(x) if x == e => break,
                        Some(x) => prev = x.as_ptr(),
                    }
                }
                prev
            }
        };
        let next = next_link.load(Ordering::Relaxed);
        match NonNull::new(prev) {
            // SAFETY: `e`'s predecessor is listed, so valid.
            Some(p) => unsafe { T::next(p) }.store(next, Ordering::Release),
            None => head.first.store(next, Ordering::Release),
        }
        match NonNull::new(next) {
            Some(n) => {
                // SAFETY: `e`'s successor is listed, so valid.
                if let Some(p) = unsafe { T::prev(n) } {
                    p.store(prev, Ordering::Relaxed);
                }
            }
            None => self.last = prev,
        }
        // Last, and with release: once `e` reads as on no list, another
        // list may `claim` it and rewrite its links, so this list must be
        // done reading them and relinking around it. Its neighbours are
        // this list's and stay so.
        if let Some(p) = prev_link {
            p.store(mark, Ordering::Release);
        }
        true
    }
}

impl<T: Linked<ID>, const ID: u64> Default for Tail<T, ID> {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `e` is on a list of kind `ID`: known for an element with a
/// backward link, and for one with a forward link alone ([`Link`]) whose
/// lists of kind `ID` are [`List`]s (which mark an element they let go).
///
/// # Safety
///
/// `e` is valid; the caller is the writer of the lists of kind `ID` that
/// `e` may be on.
// The module's lists use `claim`; the host tests check both.
#[allow(dead_code)]
pub unsafe fn is_listed<T: Linked<ID>, const ID: u64>(e: NonNull<T>) -> bool {
    // SAFETY: `e` is valid (the caller's contract).
    match unsafe { T::prev(e) } {
        Some(p) => p.load(Ordering::Relaxed) != off(),
        // SAFETY: as above.
        None => unsafe { T::next(e) }.load(Ordering::Relaxed) != off(),
    }
}

/// Marks `e`, if it is on no list of kind `ID`, as on one, for a list that
/// adds it next: returns whether it did. Atomic: of two callers only one
/// succeeds. A list's links never hold the mark of an element on no list
/// ([`is_listed`]) while it is on one, and only this module writes them.
///
/// # Safety
///
/// `e` is valid.
pub unsafe fn claim<T: Linked<ID>, const ID: u64>(e: NonNull<T>) -> bool {
    // SAFETY: `e` is valid (the caller's contract).
    let link = match unsafe { T::prev(e) } {
        Some(p) => p,
        // SAFETY: as above.
        None => unsafe { T::next(e) },
    };
    // Acquire on success, pairing with the release of the mark (`unlink`,
    // `List::remove`): the list that let `e` go has finished with its links
    // before the caller writes them.
    link.compare_exchange(off(), ptr::null_mut(), Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// An element's forward link alone, on the [`List`]s of one kind: half the
/// size of [`Links`], for lists that are only ever emptied from the front.
pub struct Link<T> {
    next: AtomicPtr<T>,
}

impl<T> Link<T> {
    /// The link of an element on no list.
    pub const fn new() -> Self {
        Self {
            next: AtomicPtr::new(off()),
        }
    }

    /// The forward link.
    #[inline(always)]
    pub fn next(&self) -> &AtomicPtr<T> {
        &self.next
    }

    /// No backward link, for [`impl_linked!`].
    #[inline(always)]
    pub fn prev_link(&self) -> Option<&AtomicPtr<T>> {
        None
    }
}

impl<T> Default for Link<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A list that only its writer walks: head and tail together, changed
/// through `&mut`.
pub struct List<T, const ID: u64 = 0> {
    head: Head<T, ID>,
    tail: Tail<T, ID>,
}

impl<T: Linked<ID>, const ID: u64> List<T, ID> {
    /// An empty list.
    pub const fn new() -> Self {
        Self {
            head: Head::new(),
            tail: Tail::new(),
        }
    }

    /// Adds `e` at the end.
    ///
    /// # Safety
    ///
    /// `e` is valid and on no list of kind `ID`, and stays valid until it is
    /// taken off.
    // The module's owned lists push through their tails (`OwnedLists`); the
    // host tests use this one.
    #[allow(dead_code)]
    pub unsafe fn push_back(&mut self, e: NonNull<T>) {
        // SAFETY: the list's own head, which no reader can reach (private
        // to the list), so valid until taken off is enough; `e` as the
        // caller promises.
        unsafe { self.tail.push_back(&self.head, e) }
    }

    /// Adds `e` at the front.
    ///
    /// # Safety
    ///
    /// As [`List::push_back`].
    pub unsafe fn push_front(&mut self, e: NonNull<T>) {
        // SAFETY: as above.
        unsafe { self.tail.push_front(&self.head, e) }
    }

    /// Takes `e` off; returns whether it was on the list.
    ///
    /// # Safety
    ///
    /// `e` is valid; if elements of its type have a backward link and `e`
    /// is on a list of kind `ID`, it is on this one.
    ///
    /// No reader walks a `List`, so an element without a backward link has
    /// its forward link reset to mark it as off every list
    /// ([`is_listed`]).
    pub unsafe fn remove(&mut self, e: NonNull<T>) -> bool {
        // SAFETY: the list's own head; `e` as the caller promises.
        let was = unsafe { self.tail.remove(&self.head, e) };
        // SAFETY: `e` is valid (the caller's contract).
        if was && unsafe { T::prev(e) }.is_none() {
            // After the unlink, with release, as `Tail::unlink` marks an
            // element with a backward link (see `claim`).
            // SAFETY: as above.
            unsafe { T::next(e) }.store(off(), Ordering::Release);
        }
        was
    }

    /// The elements, first to last. The walk reads an element's successor
    /// before yielding it, so that the caller may take off, move or free
    /// the element it was given; it borrows nothing, so the caller may
    /// change the list meanwhile, and must not use an element it freed.
    pub fn iter(&self) -> Iter<T, ID> {
        // SAFETY: `&self` is the writer's (only the writer walks a `List`);
        // listed elements are valid (`push_back`'s contract), and one taken
        // off during the walk was read before (`Iter`).
        unsafe { self.head.iter() }
    }

    /// Takes every element off, first to last, each yielded after it is
    /// off (so the caller may free it or add it to another list).
    pub fn drain(&mut self) -> impl Iterator<Item = NonNull<T>> + '_ {
        core::iter::from_fn(move || {
            let e = NonNull::new(self.head.first.load(Ordering::Relaxed))?;
            // SAFETY: `e` is this list's first element, so valid and on it.
            unsafe { self.remove(e) };
            Some(e)
        })
    }
}

impl<T: Linked<ID>, const ID: u64> Default for List<T, ID> {
    fn default() -> Self {
        Self::new()
    }
}

/// A [`List`] of elements borrowed for `'a`, valid for as long as the list
/// can exist: adding, walking and emptying it are safe. Allocates nothing.
///
/// # Invariants
///
/// Every element of `list` was given as a `&'a T`, and was on no list of kind
/// `ID` then.
pub struct BorrowList<'a, T: Linked<ID>, const ID: u64> {
    list: List<T, ID>,
    _borrows: PhantomData<&'a T>,
}

impl<'a, T: Linked<ID>, const ID: u64> BorrowList<'a, T, ID> {
    /// An empty list.
    pub const fn new() -> Self {
        Self {
            list: List::new(),
            _borrows: PhantomData,
        }
    }

    /// Adds `e` at the front, unless it is on a list of kind `ID` (this one
    /// included): returns whether it was added.
    pub fn push_front(&mut self, e: &'a T) -> bool {
        let e = NonNull::from(e);
        // SAFETY: `e` is valid for `'a`.
        if !unsafe { claim::<T, ID>(e) } {
            return false;
        }
        // INVARIANT: `e` is borrowed for `'a`, and was on no list of kind
        // `ID` (claimed above).
        // SAFETY: `e` is valid for `'a`, which this list cannot outlive, and
        // it is taken off when the list is emptied or dropped; claimed, so
        // no other list takes it meanwhile.
        unsafe { self.list.push_front(e) };
        true
    }

    /// The elements, first to last.
    pub fn iter(&self) -> impl Iterator<Item = &'a T> + '_ {
        // SAFETY: elements are borrowed for `'a` (type invariant).
        self.list.iter().map(|e| unsafe { e.as_ref() })
    }

    /// Takes every element off, first to last, each yielded after it is off.
    pub fn drain(&mut self) -> impl Iterator<Item = &'a T> + '_ {
        // SAFETY: elements are borrowed for `'a` (type invariant).
        self.list.drain().map(|e| unsafe { e.as_ref() })
    }
}

impl<T: Linked<ID>, const ID: u64> Default for BorrowList<'_, T, ID> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Linked<ID>, const ID: u64> Drop for BorrowList<'_, T, ID> {
    /// Takes the elements off, so that they may be listed again.
    fn drop(&mut self) {
        for _ in self.list.drain() {}
    }
}
