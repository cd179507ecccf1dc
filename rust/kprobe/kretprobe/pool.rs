// SPDX-License-Identifier: GPL-2.0

//! The instances of one kretprobe and their return stubs.
//!
//! A [`Pool`] holds a kretprobe's instances in one block, and one return stub
//! per instance in executable pages (`stubs.rs`): a stub's address alone
//! leads to its pool and instance ([`Pool::returning`]). Free instances
//! form a lock-free stack of indices with a generation tag against ABA.
//!
//! A pool that grows ([`Growth::Grow`]) is the head of a chain: when its
//! last pool is half taken, the entry handler asks the reclaim work for one
//! more, as large as the chain so far, which the work links at the chain's
//! end ([`Pool::next`]); the entry handler takes from the first pool of the
//! chain that has a free instance. Memory is allocated only in process
//! context, and an instance is never moved, so the lock-free paths stay as
//! they are.
//!
//! An instance is reached only through a handle whose type says what its
//! holder may do with it, so that the instance's unsafe accesses are argued
//! here, once: an [`Instance`] is an index checked against the pool's size,
//! whose atomic slots anyone may use; a [`Taken`] instance, off the free
//! list, is its taker's to fill in, put out for a frame or give back; a
//! [`Returning`] one is in the hands of the frame that returned into its
//! stub, which gives it back with its references.
//!
//! Context: a pool is built ([`Pool::new`]) and the instances of dead tasks
//! are reclaimed ([`Pool::reclaim_dead`]) in process context. Taking and
//! giving back instances, finding the instance of a stub and dropping
//! references are lock-free and run in any context, NMI included.

use super::stubs;
use crate::impl_linked;
use crate::kernel_ext::list::{Linked, Links};
use crate::{
    abi::{RkpKretprobe, RkpKretprobeInstance},
    arch,
    ffi::runtime::Runtime,
    kernel_ext::{
        execmem::ExecPages,
        module,
        race::{self, Window},
        sync::PreemptGuard,
        task,
        work::reclaim,
    },
    kprobe::client::RetClient,
};
use core::marker::PhantomData;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel::{ffi::c_void, prelude::*};

/// Whether a kretprobe's instances may grow past the number it registered
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Growth {
    /// `maxactive` instances, as the kernel's kretprobes: an entry that
    /// finds none free is missed.
    Fixed,
    /// More instances are added in process context whenever half of the
    /// last ones are out (see the module documentation).
    Grow,
}

/// The most instances a growing kretprobe's chain reaches.
pub(super) const GROW_MAX: usize = 1 << 20;

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
pub(super) struct Pool {
    /// The client's kretprobe; null once it is unregistered.
    pub(super) rp: AtomicPtr<RkpKretprobe>,
    /// The pool's links on `Kretprobes`' list, whose forward links readers
    /// follow.
    pub(super) links: Links<Pool>,
    /// How many registered kretprobes use the pool (more than one only if
    /// `shared`); the pool is retired when the last of them goes. Changed
    /// with `Kretprobes::pools` held; meaningless for a chain's `extra`
    /// pools.
    pub(super) members: AtomicUsize,
    pub(super) refs: AtomicUsize,
    /// Free list: low 32 bits the top instance's index plus one (0: empty),
    /// high 32 bits a generation tag.
    free: AtomicU64,
    pub(super) max: usize,
    /// Bytes of data per instance, for the pools a chain grows by.
    pub(super) data_size: usize,
    /// Whether the chain this pool heads may grow.
    pub(super) growth: Growth,
    /// The next pool of the chain, set once by the reclaim work.
    next: AtomicPtr<Pool>,
    /// The entry handler asked the reclaim work for another pool.
    pub(super) wants_more: AtomicBool,
    /// A pool a chain grew by, not its head.
    pub(super) extra: bool,
    /// The pool of several kretprobes (`Kretprobes::register`'s `shared`),
    /// which `rp` names the first of; an instance's `rp` names its own.
    shared: bool,
    /// Neither growing nor shared: an entry takes an instance with one
    /// `pop` ([`Pool::take`]).
    one_pop: bool,
    stride: usize,
    base: *mut u8,
    _mem: KVVec<u64>,
    stubs: Option<ExecPages>,
    /// The address of the first stub page (`stubs`), 0 while there is none.
    stubs_base: usize,
}

impl_linked!(Pool, 0, links);

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
        rp: RetClient,
        max: usize,
        data_size: usize,
        growth: Growth,
        rt: Runtime,
    ) -> Result<KBox<Self>> {
        let data = data_size.checked_next_multiple_of(8).ok_or(E2BIG)?;
        let stride = core::mem::size_of::<RkpKretprobeInstance>() + data;
        let words = max.checked_mul(stride / 8).ok_or(E2BIG)?;
        let mut mem = KVVec::from_elem(0u64, words, GFP_KERNEL)?;
        let base = mem.as_mut_ptr().cast::<u8>();
        let npages = max.div_ceil(stubs::STUBS_PER_PAGE);
        let mut pool = KBox::new(
            Pool {
                rp: AtomicPtr::new(rp.as_ptr()),
                links: Links::new(),
                members: AtomicUsize::new(1),
                refs: AtomicUsize::new(1),
                free: AtomicU64::new(0),
                max,
                data_size,
                growth,
                next: AtomicPtr::new(core::ptr::null_mut()),
                wants_more: AtomicBool::new(false),
                extra: false,
                shared: false,
                one_pop: growth == Growth::Fixed,
                stride,
                base,
                _mem: mem,
                stubs: None,
                stubs_base: 0,
            },
            GFP_KERNEL,
        )?;
        for inst in pool.instances().rev() {
            // SAFETY: a live instance (`Instance::as_ptr`) of a pool that is
            // not shared yet.
            unsafe { (*inst.as_ptr()).rkp_index = inst.i };
            // INVARIANT: the pool is not shared yet, and its task slots are
            // null (zeroed memory).
            pool.push(Taken(inst));
        }
        let this = core::ptr::from_ref::<Pool>(&pool);
        // A stray jump anywhere but a stub traps: the pages come filled
        // with int3.
        pool.stubs = Some(ExecPages::new(
            &rt,
            npages,
            arch::TRAP_FILL,
            |base, region| stubs::write_pages(this.cast(), max, base, region),
        )?);
        pool.stubs_base = pool.stubs.as_ref().map_or(0, ExecPages::addr);
        Ok(pool)
    }

    /// The next pool of this pool's chain. Any context, while the chain's
    /// kretprobe is registered or the caller holds the pools' mutex.
    pub(super) fn next(&self) -> Option<&Pool> {
        let next = self.next.load(Ordering::Acquire);
        // SAFETY: a pool of a chain is freed only after its kretprobe's
        // unregistration retired the whole chain, which no entry handler
        // outlives (the caller's context), and with the pools' mutex held.
        unsafe { next.as_ref() }
    }

    /// Links `pool` after this one, the last of its chain. Writer, with the
    /// pools' mutex held.
    ///
    /// # Safety
    ///
    /// `pool` lives until the chain's kretprobe is unregistered and retired.
    pub(super) unsafe fn set_next(&self, pool: &Pool) {
        self.next
            .store(core::ptr::from_ref(pool).cast_mut(), Ordering::Release);
    }

    /// The chain that starts here, this pool first.
    pub(super) fn chain(&self) -> impl Iterator<Item = &Pool> {
        core::iter::successors(Some(self), |p| p.next())
    }

    /// Takes a free instance from the first pool of this pool's chain that
    /// has one, and asks for more instances when a growing chain's last
    /// pool is half taken. Any context, NMI included (lock-free). The
    /// common case, a fixed pool with a free instance, is one `pop`.
    #[inline(always)]
    pub(super) fn take(&self) -> Option<Taken<'_>> {
        if self.one_pop {
            return self.pop();
        }
        self.take_from_chain()
    }

    /// [`Pool::take`] for a chain that may grow or be shared.
    #[inline(never)]
    fn take_from_chain(&self) -> Option<Taken<'_>> {
        let mut pool = self;
        loop {
            if let Some(t) = pool.pop() {
                if self.growth == Growth::Grow
                    && pool.next.load(Ordering::Relaxed).is_null()
                    && pool.refs.load(Ordering::Relaxed) > pool.max / 2
                    && !self.wants_more.swap(true, Ordering::Relaxed)
                {
                    reclaim::kick();
                }
                return Some(t);
            }
            pool = pool.next()?;
        }
    }

    /// The address of the first stub page.
    fn stubs_base(&self) -> usize {
        self.stubs_base
    }

    /// Whether the pool is several kretprobes' (`Kretprobes::register`'s
    /// `shared`).
    pub(super) fn shared(&self) -> bool {
        self.shared
    }

    /// Makes the pool several kretprobes' or one's. Writer, before the
    /// pool is published.
    pub(super) fn set_shared(&mut self, shared: bool) {
        self.shared = shared;
        self.one_pop = self.growth == Growth::Fixed && !shared;
    }

    /// Instance `i`, or `None` if the pool has no such instance.
    #[inline(always)]
    fn instance(&self, i: u32) -> Option<Instance<'_>> {
        if i as usize >= self.max {
            return None;
        }
        // SAFETY: `i < max`, so the offset is within the `max * stride`
        // bytes at `base` (the type invariant); that product was checked
        // at construction, so this one cannot wrap.
        let ptr = unsafe { self.base.add((i as usize).wrapping_mul(self.stride)) }.cast();
        // INVARIANT: `i < max`, checked, and `ptr` is its address.
        Some(Instance { pool: self, i, ptr })
    }

    /// Every instance, free or out.
    pub(super) fn instances(&self) -> impl DoubleEndedIterator<Item = Instance<'_>> {
        (0..self.max as u32).filter_map(move |i| self.instance(i))
    }

    /// Takes a free instance. Any context, NMI included (lock-free).
    pub(super) fn pop(&self) -> Option<Taken<'_>> {
        let mut head = self.free.load(Ordering::Acquire);
        loop {
            let top = (head & 0xffff_ffff) as u32;
            let inst = self.instance(top.checked_sub(1)?)?;
            // The link may be stale if another CPU took the instance
            // meanwhile; the tag then makes the exchange fail.
            let next = inst.next().load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::AcqRel, Ordering::Acquire)
            {
                // INVARIANT: the exchange took the instance off the free
                // list, whose task slot is null; no one else has it.
                Ok(_) => return Some(Taken(inst)),
                Err(h) => head = h,
            }
        }
    }

    /// Gives `inst` back. Any context, NMI included (lock-free).
    pub(super) fn push(&self, inst: Taken<'_>) {
        let inst = inst.0;
        let mut head = self.free.load(Ordering::Relaxed);
        loop {
            inst.next()
                .store((head & 0xffff_ffff) as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | (u64::from(inst.i) + 1);
            match self
                .free
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// The instance of the stub at `addr`, which is in this pool's stubs.
    pub(super) fn instance_at(&self, addr: usize) -> Option<Instance<'_>> {
        self.instance(stubs::index_at(self.stubs_base(), addr)?)
    }

    /// The instance whose frame returned into the stub at `stub`, found
    /// through the header of the stub's page, and handed to the caller.
    ///
    /// # Safety
    ///
    /// The trampoline was called from `stub`, as the frame that its
    /// instance hijacked returned into it: the stub is in a page of a live
    /// pool (an instance out holds its pool), and the caller runs as the
    /// instance's task, which holds the instance until it gives it back.
    pub(super) unsafe fn returning<'a>(stub: usize) -> Option<Returning<'a>> {
        // SAFETY: the stub is in a page of a live pool (the caller's
        // contract).
        let (pool, i) = unsafe { stubs::owner_of(stub) }?;
        // SAFETY: the header names the live pool it belongs to.
        let pool = unsafe { &*pool.cast::<Pool>() };
        let inst = pool.instance(i)?;
        // INVARIANT: the instance is out for the frame that returned, so it
        // holds a reference on its pool, and its task slot one on the task
        // that entered, the caller's (the caller's contract); that frame is
        // the instance's only user.
        Some(Returning {
            inst,
            _not_send: PhantomData,
        })
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

    /// Gives back the instances of tasks that will never run again. Process
    /// context.
    pub(super) fn reclaim_dead(&self) -> usize {
        let mut n = 0;
        for inst in self.instances() {
            let slot = inst.task();
            // The task may return through its frame right after the load,
            // putting the instance's reference ([`Returning::release`]), and
            // exit. Preemption off is an RCU read-side section: a task that
            // was alive at the load keeps its memory until the section
            // ends, since its last reference but ours is put by an RCU
            // callback queued when it dies (`put_task_struct_rcu_user()`).
            let guard = PreemptGuard::new();
            let t = slot.load(Ordering::Acquire);
            if t.is_null() {
                continue;
            }
            race::window(Window::ReclaimTask);
            // SAFETY: a task loaded from the slot was referenced then, and
            // is kept by the RCU section since (above).
            if !unsafe { task::is_dead(t) } {
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
                // INVARIANT: exchanged out of a dead task's hands, the
                // instance is ours alone, and its slot is null.
                self.push(Taken(inst));
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

/// Instance `i` of a pool.
///
/// # Invariants
///
/// `i < pool.max`, and `ptr` is the instance's address: it points to a
/// live `RkpKretprobeInstance` for as long as the pool lives.
#[derive(Clone, Copy)]
pub(super) struct Instance<'a> {
    pool: &'a Pool,
    i: u32,
    ptr: *mut RkpKretprobeInstance,
}

impl<'a> Instance<'a> {
    /// The instance's structure, for the client's handlers.
    #[inline(always)]
    fn as_ptr(self) -> *mut RkpKretprobeInstance {
        self.ptr
    }

    /// The free-list link: the next free instance's index plus one.
    #[inline(always)]
    fn next(self) -> &'a AtomicU32 {
        // SAFETY: an aligned `u32` field of a live instance (`as_ptr`), only
        // accessed atomically.
        unsafe { AtomicU32::from_ptr(addr_of_mut!((*self.as_ptr()).rkp_next)) }
    }

    /// The task slot: a referenced task while the instance is out, else
    /// null.
    #[inline(always)]
    fn task(self) -> &'a AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a live instance (`as_ptr`),
        // only accessed atomically.
        unsafe { AtomicPtr::from_ptr(addr_of_mut!((*self.as_ptr()).rkp_task)) }
    }

    /// The address of the instance's return stub.
    #[inline(always)]
    pub(super) fn stub(self) -> usize {
        stubs::stub_addr(self.pool.stubs_base(), self.i)
    }

    /// The stack word that holds the return address of the instance's
    /// frame, and the real return address, if the instance is out for the
    /// current task. Any context.
    pub(super) fn current_frame(self) -> Option<(usize, usize)> {
        if self.task().load(Ordering::Acquire) != task::current_id() {
            return None;
        }
        // SAFETY: fields of a live instance (`as_ptr`). It is out for the
        // current task, which wrote them before it published itself in the
        // task slot (seen by the acquire load above), and which alone gives
        // it back (the reclaim work takes only dead tasks' instances), when
        // the frame returns: after the caller's code, which that frame's
        // function called, directly or through an interrupt.
        let (fp, ret) = unsafe { ((*self.as_ptr()).fp, (*self.as_ptr()).ret_addr) };
        Some((fp as usize, ret))
    }
}

/// An instance in its taker's hands, off the free list and not out.
///
/// # Invariants
///
/// No one else uses the instance's fields or gives it back; its task slot
/// is null.
pub(super) struct Taken<'a>(Instance<'a>);

impl<'a> Taken<'a> {
    /// The instance's structure, for the entry handler.
    #[inline(always)]
    pub(super) fn as_ptr(&self) -> *mut RkpKretprobeInstance {
        self.0.as_ptr()
    }

    /// Gives the instance back to its pool without putting it out.
    #[inline(always)]
    pub(super) fn give_back(self) {
        let pool = self.0.pool;
        pool.push(self);
    }

    /// Records the frame: the kretprobe `rp`, the real return address `ret`
    /// and the stack word `fp` that holds it.
    #[inline(always)]
    pub(super) fn set_frame(&mut self, rp: RetClient, ret: usize, fp: usize) {
        let ri = self.0.as_ptr();
        // SAFETY: fields of a live instance (`as_ptr`) that no one else uses
        // (the type invariant).
        unsafe {
            (*ri).rp = rp.as_ptr();
            (*ri).ret_addr = ret as _;
            (*ri).fp = fp as _;
        }
    }

    /// Puts the instance out for the current task's frame: takes a
    /// reference on the pool and one on the task, and returns the address
    /// of the stub that the frame is to return into. Any context, NMI
    /// included.
    #[inline(always)]
    pub(super) fn put_out(self) -> usize {
        let inst = self.0;
        inst.pool.refs.fetch_add(1, Ordering::Relaxed);
        inst.task()
            .store(task::get_current_raw(), Ordering::Release);
        inst.stub()
    }
}

/// An instance whose frame is returning, in the hands of that frame.
///
/// # Invariants
///
/// As [`Taken`]'s, but the task slot holds a reference, from
/// [`task::get_current_raw`], on the task that holds this handle (the type
/// is `!Send`), and the instance holds one of its pool's references.
pub(super) struct Returning<'a> {
    inst: Instance<'a>,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> Returning<'a> {
    /// The instance's pool.
    #[inline(always)]
    pub(super) fn pool(&self) -> &'a Pool {
        self.inst.pool
    }

    /// The instance's structure, for the return handler.
    #[inline(always)]
    pub(super) fn as_ptr(&self) -> *mut RkpKretprobeInstance {
        self.inst.as_ptr()
    }

    /// The kretprobe the instance was taken for.
    #[inline(always)]
    pub(super) fn rp(&self) -> *mut RkpKretprobe {
        // SAFETY: a field of a live instance (`as_ptr`) that no one else
        // writes (the type invariant).
        unsafe { (*self.inst.as_ptr()).rp }
    }

    /// The real return address, and the stack word that held it.
    #[inline(always)]
    pub(super) fn frame(&self) -> (usize, usize) {
        let ri = self.inst.as_ptr();
        // SAFETY: fields of a live instance (`as_ptr`) that no one else
        // writes (the type invariant).
        let (ret, fp) = unsafe { ((*ri).ret_addr, (*ri).fp) };
        (ret, fp as usize)
    }

    /// Gives the instance back after its frame returned, with its task's
    /// and its pool's references. Any context, NMI included. The pool may
    /// be freed as soon as this returns.
    #[inline(always)]
    pub(super) fn release(self) {
        let inst = self.inst;
        let task = inst.task().swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !task.is_null() {
            // SAFETY: the reference taken at entry by the task that runs
            // this (the type invariant), put once (swapped out).
            unsafe { task::put_current_raw(task) };
        }
        // INVARIANT: the frame was the only user, and the slot is null.
        inst.pool.push(Taken(inst));
        inst.pool.put_ref();
    }
}
