// SPDX-License-Identifier: GPL-2.0

//! The instances of one kretprobe and their return stubs.
//!
//! A [`Pool`] holds a kretprobe's instances in one block, and one return stub
//! per instance in executable pages, each page starting with a header that
//! names its pool: a stub's address alone leads to its pool and instance
//! ([`Pool::from_stub`]). Free instances form a lock-free stack of indices
//! with a generation tag against ABA.
//!
//! Context: a pool is built ([`Pool::new`]) and the instances of dead tasks
//! are reclaimed ([`Pool::reclaim_dead`]) in process context. Taking and
//! giving back instances, finding the instance of a stub and dropping
//! references are lock-free and run in any context, NMI included.

use crate::{
    abi::{RkpKretprobe, RkpKretprobeInstance},
    arch,
    ffi::runtime::Runtime,
    kernel_ext::{execmem::ExecPages, module, sync::PreemptGuard, task, work::reclaim},
};
use core::{
    cell::Cell,
    sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{ffi::c_void, page::PAGE_SIZE, prelude::*, static_assert};

/// Bytes of a stub page taken by its [`StubHeader`].
const STUB_HEADER: usize = 32;
/// Stubs in one page.
const STUBS_PER_PAGE: usize = (PAGE_SIZE - STUB_HEADER) / arch::RETHOOK_STUB_SIZE;
/// Marks a page of return stubs.
const STUB_MAGIC: u64 = u64::from_le_bytes(*b"rkpretst");

/// The start of every page of return stubs.
#[repr(C)]
struct StubHeader {
    magic: u64,
    pool: *const Pool,
    /// Index of the page's first stub's instance.
    first: u32,
    /// Stubs in this page.
    count: u32,
    _reserved: u64,
}

static_assert!(core::mem::size_of::<StubHeader>() <= STUB_HEADER);

/// The instances of one kretprobe and their return stubs.
///
/// # Invariants
///
/// `base` points to `max * stride` bytes owned by `_mem`, holding `max`
/// instances of `stride` bytes (an `RkpKretprobeInstance` and its data), each
/// with `rkp_index` set to its index. `stubs`, once the pool is built (it
/// is `None` only inside [`Pool::new`]), are executable pages holding a
/// `StubHeader` naming this pool at the start of each page and one stub per
/// instance. `refs` counts
/// the registration (while `rp` is non-null) and every instance out on a
/// stack; the pool is freed only when it is zero and no CPU can reach it.
/// `prev` and `retiring` are read and written only with
/// `Kretprobes::pools` held.
pub(super) struct Pool {
    /// The client's kretprobe; null once it is unregistered.
    pub(super) rp: AtomicPtr<RkpKretprobe>,
    /// The next pool on `Kretprobes`' list, which readers follow.
    pub(super) next: AtomicPtr<Pool>,
    /// The previous pool on the list, for an O(1) unlink; writers only.
    pub(super) prev: Cell<*mut Pool>,
    /// Taken by an unregistration batch: a second mention of the same
    /// kretprobe in the batch is skipped. Writers only.
    pub(super) retiring: Cell<bool>,
    pub(super) refs: AtomicUsize,
    /// Free list: low 32 bits the top instance's index plus one (0: empty),
    /// high 32 bits a generation tag.
    free: AtomicU64,
    pub(super) max: usize,
    stride: usize,
    base: *mut u8,
    _mem: KVVec<u64>,
    stubs: Option<ExecPages>,
}

// SAFETY: instances are handed out through the atomic free list, so each is
// used by one owner at a time; the cells are used only with the pools' mutex
// held; the rest is atomic or immutable after construction.
unsafe impl Sync for Pool {}
// SAFETY: as above; nothing is tied to a thread.
unsafe impl Send for Pool {}

impl Pool {
    /// A pool of `max` instances of `data_size` bytes of data, all free,
    /// with its stubs. Process context, may sleep.
    pub(super) fn new(
        rp: *mut RkpKretprobe,
        max: usize,
        data_size: usize,
        rt: Runtime,
    ) -> Result<KBox<Self>> {
        let data = data_size.checked_next_multiple_of(8).ok_or(E2BIG)?;
        let stride = core::mem::size_of::<RkpKretprobeInstance>() + data;
        let words = max.checked_mul(stride / 8).ok_or(E2BIG)?;
        let mut mem = KVVec::from_elem(0u64, words, GFP_KERNEL)?;
        let base = mem.as_mut_ptr().cast::<u8>();
        let npages = max.div_ceil(STUBS_PER_PAGE);
        let mut pool = KBox::new(
            Pool {
                rp: AtomicPtr::new(rp),
                next: AtomicPtr::new(core::ptr::null_mut()),
                prev: Cell::new(core::ptr::null_mut()),
                retiring: Cell::new(false),
                refs: AtomicUsize::new(1),
                free: AtomicU64::new(0),
                max,
                stride,
                base,
                _mem: mem,
                stubs: None,
            },
            GFP_KERNEL,
        )?;
        for i in (0..max as u32).rev() {
            // SAFETY: `i < max`; the pool is not shared yet.
            unsafe { (*pool.inst(i)).rkp_index = i };
            pool.push(i);
        }
        let this = core::ptr::from_ref::<Pool>(&pool);
        // A stray jump anywhere but a stub traps: the pages come filled
        // with int3.
        pool.stubs = Some(ExecPages::new(
            &rt,
            npages,
            arch::TRAP_FILL,
            |base, region| Self::write_stubs(this, max, base, region),
        )?);
        Ok(pool)
    }

    /// Writes the headers and stubs of the pool at `pool` into `region`,
    /// its writable stub pages at `base`. Process context.
    fn write_stubs(pool: *const Pool, max: usize, base: usize, region: &mut [u8]) -> Result {
        for (p, page) in region.chunks_exact_mut(PAGE_SIZE).enumerate() {
            let first = p * STUBS_PER_PAGE;
            let count = max.saturating_sub(first).min(STUBS_PER_PAGE);
            let header = StubHeader {
                magic: STUB_MAGIC,
                pool,
                first: first as u32,
                count: count as u32,
                _reserved: 0,
            };
            // SAFETY: the page is writable and page-aligned, so its start is
            // aligned for the header, which fits in `STUB_HEADER` bytes.
            unsafe { page.as_mut_ptr().cast::<StubHeader>().write(header) };
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

    /// The address of the first stub page.
    fn stubs_base(&self) -> usize {
        self.stubs.as_ref().map_or(0, ExecPages::addr)
    }

    /// Instance `i`.
    ///
    /// # Safety
    ///
    /// `i < self.max`.
    pub(super) unsafe fn inst(&self, i: u32) -> *mut RkpKretprobeInstance {
        // SAFETY: by the type invariant and the caller's bound, in bounds.
        unsafe { self.base.add(i as usize * self.stride) }.cast()
    }

    /// The free-list link of instance `i`.
    ///
    /// # Safety
    ///
    /// `i < self.max`.
    unsafe fn next(&self, i: u32) -> &AtomicU32 {
        // SAFETY: an aligned `u32` field of a live instance, only accessed
        // atomically.
        unsafe { AtomicU32::from_ptr(core::ptr::addr_of_mut!((*self.inst(i)).rkp_next)) }
    }

    /// The task of instance `i`: non-null while the instance is out.
    ///
    /// # Safety
    ///
    /// `i < self.max`.
    pub(super) unsafe fn task(&self, i: u32) -> &AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a live instance, only accessed
        // atomically.
        unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*self.inst(i)).rkp_task)) }
    }

    /// Takes a free instance. Any context, NMI included (lock-free).
    pub(super) fn pop(&self) -> Option<u32> {
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let top = (head & 0xffff_ffff) as u32;
            let i = top.checked_sub(1)?;
            if i as usize >= self.max {
                return None;
            }
            // SAFETY: `i < max`. The link may be stale if another CPU took
            // `i` meanwhile; the tag then makes the exchange fail.
            let next = unsafe { self.next(i) }.load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(i),
                Err(h) => head = h,
            }
        }
    }

    /// Gives instance `i` back. Any context, NMI included (lock-free).
    pub(super) fn push(&self, i: u32) {
        let mut head = self.free.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller owns `i < max`.
            unsafe { self.next(i) }.store((head & 0xffff_ffff) as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | (u64::from(i) + 1);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// The address of instance `i`'s return stub.
    pub(super) fn stub(&self, i: u32) -> usize {
        let i = i as usize;
        self.stubs_base()
            + (i / STUBS_PER_PAGE) * PAGE_SIZE
            + STUB_HEADER
            + (i % STUBS_PER_PAGE) * arch::RETHOOK_STUB_SIZE
    }

    /// The pool and instance of the stub at `stub`.
    ///
    /// # Safety
    ///
    /// `stub` is in a stub page of a live pool (the trampoline was called
    /// from there, or the caller checked the address against the registry).
    pub(super) unsafe fn from_stub<'a>(stub: usize) -> Option<(&'a Pool, u32)> {
        let page = stub & !(PAGE_SIZE - 1);
        let off = (stub - page).checked_sub(STUB_HEADER)?;
        if off % arch::RETHOOK_STUB_SIZE != 0 {
            return None;
        }
        // SAFETY: the page of a live pool starts with its header.
        let h = unsafe { &*(page as *const StubHeader) };
        let j = off / arch::RETHOOK_STUB_SIZE;
        if h.magic != STUB_MAGIC || j >= h.count as usize {
            return None;
        }
        // SAFETY: the header names the live pool it belongs to.
        let pool = unsafe { &*h.pool };
        let i = h.first.checked_add(j as u32)?;
        if i as usize >= pool.max {
            return None;
        }
        Some((pool, i))
    }

    /// Drops a reference; the last one of an unregistered pool releases
    /// rkprobes' module reference and asks for the pool to be freed. Any
    /// context. The pool may be freed as soon as this returns.
    pub(super) fn put_ref(&self) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            reclaim::kick();
            // SAFETY: the reference taken at unregistration for the frames
            // that were still out (`Kretprobes::retire`, which unregistration
            // and a failed registration call).
            unsafe { module::put_self() };
        }
    }

    /// Gives back instance `i` after its frame returned (`reclaim_dead`
    /// gives back those of tasks that died).
    ///
    /// # Safety
    ///
    /// `i < max` is out, the caller is its only user, and it runs as the
    /// instance's task.
    pub(super) unsafe fn release(&self, i: u32) {
        // SAFETY: the caller's contract.
        let task = unsafe { self.task(i) }.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !task.is_null() {
            // SAFETY: the reference taken at entry, put once (swapped out),
            // by the task itself: its frame just returned.
            unsafe { task::put_current_raw(task) };
        }
        self.push(i);
        self.put_ref();
    }

    /// Gives back the instances of tasks that will never run again. Process
    /// context.
    pub(super) fn reclaim_dead(&self) -> usize {
        let mut n = 0;
        for i in 0..self.max as u32 {
            // SAFETY: `i < max`.
            let slot = unsafe { self.task(i) };
            // The task may return through its frame right after the load,
            // putting the instance's reference ([`Pool::release`]), and
            // exit. Preemption off is an RCU read-side section: a task that
            // was alive at the load keeps its memory until the section
            // ends, since its last reference but ours is put by an RCU
            // callback queued when it dies (`put_task_struct_rcu_user()`).
            let guard = PreemptGuard::new();
            let t = slot.load(Ordering::Acquire);
            // SAFETY: a task loaded from the slot was referenced then, and
            // is kept by the RCU section since (above).
            if t.is_null() || !unsafe { task::is_dead(t) } {
                continue;
            }
            // A dead task never returns through its frames, so nobody else
            // releases this instance; the exchange only guards against a
            // second reclaim.
            let taken = slot
                .compare_exchange(
                    t,
                    core::ptr::null_mut(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok();
            drop(guard);
            if taken {
                // SAFETY: process context; the instance's reference, put
                // once (exchanged out).
                unsafe { task::put_raw(t) };
                self.push(i);
                self.put_ref();
                n += 1;
            }
        }
        n
    }

    /// The first and one-past-last address of the stubs.
    pub(super) fn stub_range(&self) -> (usize, usize) {
        self.stubs
            .as_ref()
            .map_or((0, 0), |s| (s.range().start, s.range().end))
    }
}
