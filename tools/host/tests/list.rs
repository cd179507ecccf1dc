// SPDX-License-Identifier: GPL-2.0

//! The intrusive lists (`rust/kernel_ext/list.rs`) against a `VecDeque` model:
//! random pushes at both ends and removals (of listed and unlisted
//! elements), for elements with a backward link (O(1) removal) and without
//! one (the C ABI's singly linked client chain), through `List` and through
//! a separate `Head` and `Tail`. After every step the forward walk, the
//! length and each element's membership agree with the model; a removed
//! element keeps its forward link for readers standing on it.
//!
//! A removal marks an element as on no list only after it has read its
//! links and relinked its neighbours: checked in sequence by a model of a
//! second CPU that tries to claim the element whenever the removal reaches
//! for another element's link, and by two threads that pass elements
//! between their lists.

mod common;

use common::Rng;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use rkprobes_host::impl_linked;
use rkprobes_host::list::{claim, is_listed, BorrowList, Head, Link, Linked, Links, List, Tail};
use std::cell::Cell;
use std::collections::VecDeque;

struct Node {
    id: usize,
    links: Links<Node>,
}
impl_linked!(Node, 0, links);

/// A second list kind on the same elements.
struct Two {
    id: usize,
    a: Links<Two>,
    b: Links<Two>,
}
impl_linked!(Two, 1, a);
impl_linked!(Two, 2, b);

/// An element with only a forward link, as `struct rkp_kprobe`.
struct Single {
    id: usize,
    next: AtomicPtr<Single>,
}

// SAFETY: `next` is the element's own field, used by the lists alone.
unsafe impl Linked for Single {
    unsafe fn next<'a>(this: NonNull<Self>) -> &'a AtomicPtr<Self> {
        // SAFETY: the caller's contract.
        unsafe { &(*this.as_ptr()).next }
    }
    unsafe fn prev<'a>(_: NonNull<Self>) -> Option<&'a AtomicPtr<Self>> {
        None
    }
}

fn walk<T: Linked<ID>, const ID: u64>(head: &Head<T, ID>, id: impl Fn(&T) -> usize) -> Vec<usize> {
    // SAFETY: the test is the only writer and reader.
    unsafe { head.iter() }
        .map(|e| id(unsafe { e.as_ref() }))
        .collect()
}

/// Random operations on `n` elements through a head and a tail.
fn run<T: Linked<ID>, const ID: u64>(
    elems: &[T],
    id: impl Fn(&T) -> usize + Copy,
    rng: &mut Rng,
    steps: usize,
) {
    let ptr = |i: usize| NonNull::from(&elems[i]);
    let head = Head::<T, ID>::new();
    let mut tail = Tail::<T, ID>::new();
    let mut model: VecDeque<usize> = VecDeque::new();
    for _ in 0..steps {
        let i = rng.below(elems.len());
        let listed = model.contains(&i);
        match rng.below(3) {
            0 if !listed => {
                // SAFETY: `elems` outlives the list; `i` is on no list.
                unsafe { tail.push_back(&head, ptr(i)) };
                model.push_back(i);
            }
            1 if !listed => {
                // SAFETY: as above.
                unsafe { tail.push_front(&head, ptr(i)) };
                model.push_front(i);
            }
            _ => {
                let next_before = unsafe { T::next(ptr(i)) }.load(Ordering::Relaxed);
                // SAFETY: `i` is valid and on this list or none.
                let was = unsafe { tail.remove(&head, ptr(i)) };
                assert_eq!(was, listed, "remove of {i}");
                if listed {
                    model.retain(|&x| x != i);
                    let next_after = unsafe { T::next(ptr(i)) }.load(Ordering::Relaxed);
                    assert_eq!(
                        next_before, next_after,
                        "a removed element keeps its forward link"
                    );
                }
            }
        }
        assert_eq!(walk(&head, id), model.iter().copied().collect::<Vec<_>>());
        assert_eq!(head.is_empty(), model.is_empty());
        for j in 0..elems.len() {
            // SAFETY: valid elements; the test is the writer.
            if unsafe { T::prev(ptr(j)) }.is_some() {
                assert_eq!(
                    unsafe { is_listed(ptr(j)) },
                    model.contains(&j),
                    "membership of {j}"
                );
            }
        }
    }
}

#[test]
fn doubly_linked_against_model() {
    let mut rng = Rng(0x11_57);
    for n in [1, 2, 3, 8, 40] {
        let elems: Vec<Node> = (0..n)
            .map(|id| Node {
                id,
                links: Links::new(),
            })
            .collect();
        run(&elems, |e| e.id, &mut rng, 4000);
    }
}

#[test]
fn singly_linked_against_model() {
    let mut rng = Rng(0x5_1e);
    for n in [1, 2, 5, 30] {
        let elems: Vec<Single> = (0..n)
            .map(|id| Single {
                id,
                next: AtomicPtr::new(core::ptr::null_mut()),
            })
            .collect();
        run(&elems, |e| e.id, &mut rng, 4000);
    }
}

#[test]
fn two_kinds_on_the_same_elements_are_independent() {
    let mut rng = Rng(0x7_70);
    let elems: Vec<Two> = (0..16)
        .map(|id| Two {
            id,
            a: Links::new(),
            b: Links::new(),
        })
        .collect();
    let mut a = List::<Two, 1>::new();
    let mut b = List::<Two, 2>::new();
    let (mut ma, mut mb) = (VecDeque::new(), VecDeque::new());
    for _ in 0..4000 {
        let i = rng.below(16);
        let p = NonNull::from(&elems[i]);
        if rng.below(2) == 0 {
            if ma.contains(&i) {
                // SAFETY: on `a`.
                assert!(unsafe { a.remove(p) });
                ma.retain(|&x| x != i);
            } else {
                // SAFETY: on no list of kind 1.
                unsafe { a.push_back(p) };
                ma.push_back(i);
            }
        } else if mb.contains(&i) {
            // SAFETY: on `b`.
            assert!(unsafe { b.remove(p) });
            mb.retain(|&x| x != i);
        } else {
            // SAFETY: on no list of kind 2.
            unsafe { b.push_front(p) };
            mb.push_front(i);
        }
        let ids = |l: &List<Two, 1>| {
            l.iter()
                .map(|e| unsafe { e.as_ref() }.id)
                .collect::<Vec<_>>()
        };
        let idsb = |l: &List<Two, 2>| {
            l.iter()
                .map(|e| unsafe { e.as_ref() }.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ma.iter().copied().collect::<Vec<_>>());
        assert_eq!(idsb(&b), mb.iter().copied().collect::<Vec<_>>());
    }
    let drained: Vec<usize> = a.drain().map(|e| unsafe { e.as_ref() }.id).collect();
    assert_eq!(drained, ma.iter().copied().collect::<Vec<_>>());
    assert!(a.iter().next().is_none());
    for e in &elems {
        // SAFETY: valid; the test is the writer.
        assert!(!unsafe { is_listed::<Two, 1>(NonNull::from(e)) });
    }
}

#[test]
fn iteration_survives_removing_the_yielded_element() {
    let elems: Vec<Node> = (0..10)
        .map(|id| Node {
            id,
            links: Links::new(),
        })
        .collect();
    let mut l = List::<Node>::new();
    for e in &elems {
        // SAFETY: `elems` outlives the list.
        unsafe { l.push_back(NonNull::from(e)) };
    }
    let mut seen = Vec::new();
    for e in l.iter() {
        let id = unsafe { e.as_ref() }.id;
        seen.push(id);
        if id % 2 == 0 {
            // SAFETY: on this list.
            assert!(unsafe { l.remove(e) });
        }
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    let left: Vec<usize> = l.iter().map(|e| unsafe { e.as_ref() }.id).collect();
    assert_eq!(left, vec![1, 3, 5, 7, 9]);
}

/// An element with a forward link alone on a `List` (a point's batch link).
struct Fwd {
    id: usize,
    link: Link<Fwd>,
}
impl_linked!(Fwd, 0, link);

#[test]
fn forward_only_list_knows_membership_against_model() {
    let mut rng = Rng(0xf0_4d);
    let elems: Vec<Fwd> = (0..12)
        .map(|id| Fwd {
            id,
            link: Link::new(),
        })
        .collect();
    let mut l = List::<Fwd>::new();
    let mut model: VecDeque<usize> = VecDeque::new();
    for _ in 0..4000 {
        let i = rng.below(12);
        let p = NonNull::from(&elems[i]);
        // SAFETY: valid; the test is the writer.
        assert_eq!(unsafe { is_listed(p) }, model.contains(&i));
        match rng.below(3) {
            0 if !model.contains(&i) => {
                // SAFETY: on no list of the kind; `elems` outlives `l`.
                unsafe { l.push_front(p) };
                model.push_front(i);
            }
            1 => {
                let first: Option<usize> = l.drain().next().map(|e| unsafe { e.as_ref() }.id);
                assert_eq!(first, model.pop_front());
            }
            _ => {
                // SAFETY: valid, on `l` or on no list.
                assert_eq!(unsafe { l.remove(p) }, model.contains(&i));
                model.retain(|&x| x != i);
            }
        }
        let ids: Vec<usize> = l.iter().map(|e| unsafe { e.as_ref() }.id).collect();
        assert_eq!(ids, model.iter().copied().collect::<Vec<_>>());
    }
}

/// A batch element: a forward link alone, as a point's batch link.
struct Batched {
    id: usize,
    link: Link<Batched>,
}
impl_linked!(Batched, 0, link);

#[test]
fn borrow_list_claims_its_elements() {
    let elems: Vec<Batched> = (0..6)
        .map(|id| Batched {
            id,
            link: Link::new(),
        })
        .collect();
    let mut a = BorrowList::<Batched, 0>::new();
    let mut b = BorrowList::<Batched, 0>::new();
    for e in &elems[..4] {
        assert!(a.push_front(e));
    }
    // On a list already: refused, by this list and by another.
    assert!(!a.push_front(&elems[0]));
    assert!(!b.push_front(&elems[1]));
    assert!(b.push_front(&elems[4]));
    assert_eq!(a.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 2, 1, 0]);
    assert_eq!(a.drain().next().map(|e| e.id), Some(3));
    // Off the list once drained: another list may take it.
    assert!(b.push_front(&elems[3]));
    drop(a);
    for e in &elems[..3] {
        // SAFETY: valid; the test is the writer.
        assert!(!unsafe { is_listed::<Batched, 0>(NonNull::from(e)) });
    }
    assert!(b.push_front(&elems[0]));
    assert_eq!(b.iter().map(|e| e.id).collect::<Vec<_>>(), [0, 3, 4]);
    // Elements with a backward link are claimed through it.
    let nodes: Vec<Node> = (0..3)
        .map(|id| Node {
            id,
            links: Links::new(),
        })
        .collect();
    let mut l = List::<Node>::new();
    // SAFETY: `nodes` outlives the list.
    unsafe { l.push_back(NonNull::from(&nodes[0])) };
    let mut c = BorrowList::<Node, 0>::new();
    assert!(!c.push_front(&nodes[0]));
    assert!(c.push_front(&nodes[1]));
    assert_eq!(c.iter().map(|e| e.id).collect::<Vec<_>>(), [1]);
    drop(c);
    // The first node is still on `l`, which outlives `c`.
    assert!(l.iter().next().is_some());
}

thread_local! {
    /// The element a removal is taking off, if the test watches one.
    static WATCHED: Cell<usize> = const { Cell::new(0) };
    /// How many times the model's second CPU tried to claim it.
    static TRIES: Cell<usize> = const { Cell::new(0) };
    /// Whether it claimed it: recorded, not asserted there, so that a list
    /// left inconsistent is not walked again while the test unwinds.
    static STOLEN: Cell<bool> = const { Cell::new(false) };
}

/// The model's second CPU, run whenever a list reaches for the links of
/// `this`: while a removal reaches for any element's links but those of the
/// element it takes off, that element must not be claimable.
fn second_cpu<T: Linked<ID>, const ID: u64>(this: NonNull<T>) {
    let w = WATCHED.get();
    if w == 0 || w == this.as_ptr() as usize {
        return;
    }
    TRIES.set(TRIES.get() + 1);
    let e = NonNull::new(w as *mut T).unwrap();
    // SAFETY: the watched element is one of the test's, valid throughout.
    if unsafe { claim::<T, ID>(e) } {
        STOLEN.set(true);
    }
}

/// Watches `e` while `f` runs; returns what `f` did, after checking that
/// the second CPU tried to claim `e` `tries` times at least, and never
/// could.
fn watching<T, R>(e: &T, tries: usize, f: impl FnOnce() -> R) -> R {
    TRIES.set(0);
    STOLEN.set(false);
    WATCHED.set(core::ptr::from_ref(e) as usize);
    let r = f();
    WATCHED.set(0);
    assert!(
        !STOLEN.get(),
        "claimed while its list still relinks around it"
    );
    assert!(TRIES.get() >= tries, "no other element's links reached");
    r
}

/// Elements whose link accessors run [`second_cpu`]: with a backward link
/// (`Links`) and with a forward link alone (`Link`).
macro_rules! watched {
    ($name:ident, $links:ty) => {
        struct $name {
            id: usize,
            links: $links,
        }

        // SAFETY: the links are the element's own field, used by the lists
        // alone; the hook only reads other elements' links through `claim`.
        unsafe impl Linked for $name {
            unsafe fn next<'a>(this: NonNull<Self>) -> &'a AtomicPtr<Self> {
                second_cpu(this);
                // SAFETY: the caller's contract.
                unsafe { (*this.as_ptr()).links.next() }
            }
            unsafe fn prev<'a>(this: NonNull<Self>) -> Option<&'a AtomicPtr<Self>> {
                second_cpu(this);
                // SAFETY: as above.
                unsafe { (*this.as_ptr()).links.prev_link() }
            }
        }
    };
}
watched!(Watched, Links<Watched>);
watched!(WatchedFwd, Link<WatchedFwd>);

/// Takes each of `n` listed elements off, at every position, with the
/// second CPU watching; then checks that the element can be claimed.
fn removal_marks_last<T: Linked>(make: impl Fn(usize) -> T, id: impl Fn(&T) -> usize) {
    for n in 1..=5 {
        for victim in 0..n {
            let elems: Vec<T> = (0..n).map(&make).collect();
            let mut l = List::<T>::new();
            for e in &elems {
                // SAFETY: `elems` outlives the list; each is on no list.
                unsafe { l.push_back(NonNull::from(e)) };
            }
            let e = NonNull::from(&elems[victim]);
            // With a neighbour, a removal relinks it, or walks past it.
            // SAFETY: on `l`.
            let was = watching(&elems[victim], usize::from(n > 1), || unsafe {
                l.remove(e)
            });
            assert!(was);
            let left: Vec<usize> = l.iter().map(|x| id(unsafe { x.as_ref() })).collect();
            let want: Vec<usize> = (0..n).filter(|&i| i != victim).collect();
            assert_eq!(left, want);
            // Off the list now: a second list may take it.
            // SAFETY: valid.
            assert!(unsafe { claim::<T, 0>(e) });
        }
    }
}

#[test]
fn removal_marks_an_element_off_only_after_relinking() {
    removal_marks_last(
        |id| Watched {
            id,
            links: Links::new(),
        },
        |e| e.id,
    );
    removal_marks_last(
        |id| WatchedFwd {
            id,
            links: Link::new(),
        },
        |e| e.id,
    );
}

#[test]
fn borrow_list_drop_marks_elements_off_only_after_relinking() {
    let elems: Vec<Watched> = (0..4)
        .map(|id| Watched {
            id,
            links: Links::new(),
        })
        .collect();
    let mut l = BorrowList::<Watched, 0>::new();
    for e in &elems {
        assert!(l.push_front(e));
    }
    // Draining takes the first off: its successor's backward link is
    // relinked, with the second CPU watching.
    let mut d = l.drain();
    for want in [3, 2, 1] {
        let got = watching(&elems[want], 1, || d.next().map(|e| e.id));
        assert_eq!(got, Some(want));
    }
}

/// Two threads, each with its own lists, claiming elements from one shared
/// set and letting them go: an element one thread lets go is claimed and
/// relinked by the other while the first may still be taking it off. Each
/// thread's list must hold exactly what it added, in order.
#[test]
fn two_threads_claim_what_the_other_lets_go() {
    const ELEMS: usize = 6;
    const ROUNDS: usize = 300_000;
    let elems: Vec<Node> = (0..ELEMS)
        .map(|id| Node {
            id,
            links: Links::new(),
        })
        .collect();
    let elems = &elems;
    std::thread::scope(|s| {
        for seed in [0x2_7e4d, 0x5_13a] {
            s.spawn(move || {
                let mut rng = Rng(seed);
                let mut added = 0usize;
                for _ in 0..ROUNDS {
                    let mut l = BorrowList::<Node, 0>::new();
                    let mut mine = Vec::new();
                    for _ in 0..3 {
                        let i = rng.below(ELEMS);
                        if l.push_front(&elems[i]) {
                            mine.push(i);
                        }
                    }
                    added += mine.len();
                    mine.reverse();
                    // Bounded: a list that took in another's elements is
                    // seen, not walked forever.
                    let got: Vec<usize> = l.drain().take(mine.len() + 1).map(|e| e.id).collect();
                    assert_eq!(got, mine);
                }
                // Both threads got elements: they did contend.
                assert!(added > ROUNDS);
            });
        }
    });
    for e in elems {
        // SAFETY: valid; no list is left.
        assert!(!unsafe { is_listed::<Node, 0>(NonNull::from(e)) });
    }
}
