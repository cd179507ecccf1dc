// SPDX-License-Identifier: GPL-2.0

//! Return probes: the kretprobe half of the kernel's `kernel/kprobes.c`.
//!
//! A kretprobe is a kprobe at a function's entry whose pre-handler (ours,
//! [`pre_handler`]) takes an instance from the probe's [`Pool`], saves the
//! real return address and replaces it on the stack with the address of the
//! instance's *return stub*. When the function returns, the stub calls the
//! architecture's trampoline, which saves the registers and calls
//! [`trampoline_handler`]: the stub's address identifies the pool and the
//! instance in O(1), without a per-task list (a module cannot add one to
//! `task_struct`). The real return address is written back into the frame
//! before the handler runs, so that a stack trace taken in the handler shows
//! it, and the instance goes back to the pool.
//!
//! Every pool has its own stubs, one per instance, in executable pages from
//! `execmem_alloc()`; each page starts with a header naming its pool, so the
//! trampoline needs no lookup structure at all. The free list is a lock-free
//! stack of instance indices with a generation tag against ABA, usable from
//! int3, NMI and any other context.
//!
//! Lifetimes. A pool holds one reference for its registration and one per
//! instance out on a stack. Unregistration clears the pool's `rp` (and waits
//! a grace period, so no handler can see the client's structure afterwards)
//! and drops the registration reference; a pool with frames still out stays
//! as a *zombie*, with a reference on rkprobes itself, so that rkprobes
//! cannot be unloaded while a frame can still return into its trampoline.
//! The last returning frame drops the module reference and asks for the pool
//! to be freed. A task that exits with frames out never returns through them:
//! the reclaim work ([`Kretprobes::gc`]) gives back the instances of tasks
//! that have run for the last time. It runs when a pool runs dry, when a
//! zombie waits, and at unregistration.
//!
//! Lock order: `Kretprobes::pools`, then the probe core's registration mutex.

use super::{abi::RkpKprobe, Core};
use crate::{
    abi::{RkpKretprobe, RkpKretprobeInstance, KRETPROBE_MAXACTIVE_MAX, KRETPROBE_MAX_DATA_SIZE},
    arch,
    ffi::{self, runtime::Runtime},
    kernel_ext::{
        cpu, delay,
        execmem::ExecPages,
        module,
        sync::{synchronize_rcu, synchronize_rcu_tasks},
        vec,
    },
};
use core::{
    pin::Pin,
    sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    ffi::{c_int, c_ulong, c_void},
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    static_assert,
    sync::Mutex,
};

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
pub(crate) struct Pool {
    /// The client's kretprobe; null once it is unregistered.
    rp: AtomicPtr<RkpKretprobe>,
    refs: AtomicUsize,
    /// Free list: low 32 bits the top instance's index plus one (0: empty),
    /// high 32 bits a generation tag.
    free: AtomicU64,
    max: usize,
    stride: usize,
    base: *mut u8,
    _mem: KVVec<u64>,
    stubs: Option<ExecPages>,
}

// SAFETY: instances are handed out through the atomic free list, so each is
// used by one owner at a time; the rest is immutable after construction.
unsafe impl Sync for Pool {}
// SAFETY: as above; nothing is tied to a thread.
unsafe impl Send for Pool {}

impl Pool {
    /// A pool of `max` instances of `data_size` bytes of data, all free,
    /// with its stubs. Process context, may sleep.
    fn new(rp: *mut RkpKretprobe, max: usize, data_size: usize, rt: Runtime) -> Result<KBox<Self>> {
        let data = data_size.checked_next_multiple_of(8).ok_or(E2BIG)?;
        let stride = core::mem::size_of::<RkpKretprobeInstance>() + data;
        let words = max.checked_mul(stride / 8).ok_or(E2BIG)?;
        let mut mem = KVVec::from_elem(0u64, words, GFP_KERNEL)?;
        let base = mem.as_mut_ptr().cast::<u8>();
        let npages = max.div_ceil(STUBS_PER_PAGE);
        let mut pool = KBox::new(
            Pool {
                rp: AtomicPtr::new(rp),
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
        pool.stubs = Some(ExecPages::new(&rt, npages, |base, region| {
            Self::write_stubs(this, max, base, region)
        })?);
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
    unsafe fn inst(&self, i: u32) -> *mut RkpKretprobeInstance {
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
    unsafe fn task(&self, i: u32) -> &AtomicPtr<c_void> {
        // SAFETY: an aligned pointer field of a live instance, only accessed
        // atomically.
        unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*self.inst(i)).rkp_task)) }
    }

    /// Takes a free instance. Any context, NMI included (lock-free).
    fn pop(&self) -> Option<u32> {
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
    fn push(&self, i: u32) {
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
    fn stub(&self, i: u32) -> usize {
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
    unsafe fn from_stub<'a>(stub: usize) -> Option<(&'a Pool, u32)> {
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
    fn put_ref(&self) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: no preconditions; NMI-safe.
            unsafe { ffi::rkp_kick_gc() };
            // SAFETY: the reference taken at unregistration for the frames
            // that were still out (`Kretprobes::unregister`).
            unsafe { module::put_self() };
        }
    }

    /// Gives back instance `i` after its frame returned or its task died.
    ///
    /// # Safety
    ///
    /// `i < max` is out, and the caller is its only user.
    unsafe fn release(&self, i: u32) {
        // SAFETY: the caller's contract.
        let task = unsafe { self.task(i) }.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !task.is_null() {
            // SAFETY: the reference taken at entry. The task is current (a
            // return) or dead and reclaimed in process context (`gc`).
            unsafe { ffi::rkp_put_task(task) };
        }
        self.push(i);
        self.put_ref();
    }

    /// Gives back the instances of tasks that will never run again. Process
    /// context.
    fn reclaim_dead(&self) -> usize {
        let mut n = 0;
        for i in 0..self.max as u32 {
            // SAFETY: `i < max`.
            let slot = unsafe { self.task(i) };
            let t = slot.load(Ordering::Acquire);
            // SAFETY: a non-null task is referenced by the instance.
            if t.is_null() || unsafe { ffi::rkp_task_is_dead(t) } == 0 {
                continue;
            }
            // A dead task never returns through its frames, so nobody else
            // releases this instance; the exchange only guards against a
            // second reclaim.
            if slot
                .compare_exchange(
                    t,
                    core::ptr::null_mut(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // SAFETY: process context; the instance's reference.
                unsafe { ffi::rkp_put_task(t) };
                self.push(i);
                self.put_ref();
                n += 1;
            }
        }
        n
    }

    /// The first and one-past-last address of the stubs.
    fn stub_range(&self) -> (usize, usize) {
        self.stubs
            .as_ref()
            .map_or((0, 0), |s| (s.range().start, s.range().end))
    }
}

/// Every pool and its stub range, for lookups outside the trampoline
/// ([`Kretprobes::find_ret_addr`], [`Kretprobes::stack_trace`]); replaced
/// whole and freed after a grace period.
struct Ranges {
    list: KVec<(usize, usize, *const Pool)>,
}

/// Every pool, registered or zombie.
struct Pools {
    list: KVec<*mut Pool>,
}

// SAFETY: the pointers are to pools owned by this list, used with its mutex.
unsafe impl Send for Pools {}

/// The kretprobe part of the probe core.
#[pin_data(PinnedDrop)]
pub(crate) struct Kretprobes {
    #[pin]
    pools: Mutex<Pools>,
    ranges: AtomicPtr<Ranges>,
}

impl Kretprobes {
    /// No pools yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            pools <- new_mutex!(Pools { list: KVec::new() }, "rkprobes_kretprobes"),
            ranges: AtomicPtr::new(core::ptr::null_mut()),
        })
    }

    /// Republishes the stub ranges after `pools` changed; returns the old
    /// ranges, to be freed after a grace period. Writer.
    fn republish(&self, pools: &Pools) -> Result<*mut Ranges> {
        let mut list = KVec::with_capacity(pools.list.len(), GFP_KERNEL)?;
        for &p in pools.list.iter() {
            // SAFETY: listed pools are live while the mutex is held.
            let (start, end) = unsafe { &*p }.stub_range();
            list.push((start, end, p.cast_const()), GFP_KERNEL)?;
        }
        let new = KBox::into_raw(KBox::new(Ranges { list }, GFP_KERNEL)?);
        Ok(self.ranges.swap(new, Ordering::AcqRel))
    }

    /// The published pools. Caller in an RCU read-side critical section
    /// (preemption or interrupts off), for as long as it uses the answer.
    fn ranges(&self) -> &[(usize, usize, *const Pool)] {
        let r = self.ranges.load(Ordering::Acquire);
        if r.is_null() {
            return &[];
        }
        // SAFETY: published ranges, and the pools they name, are freed only
        // after a grace period, which the caller's critical section holds off.
        unsafe { &(*r).list }
    }

    /// Whether `addr` is in some pool's stubs. Caller in an RCU read-side
    /// critical section.
    fn is_stub(&self, addr: usize) -> bool {
        self.ranges().iter().any(|&(s, e, _)| s <= addr && addr < e)
    }

    /// The current task's innermost frame that returns into a stub, above
    /// the stack address `above`: its return address's stack word and the
    /// real return address. Caller in an RCU read-side critical section.
    fn next_hijacked(&self, above: usize) -> Option<(usize, usize)> {
        // SAFETY: no preconditions; only compared.
        let cur = unsafe { ffi::rkp_current_task() };
        let mut best: Option<(usize, usize)> = None;
        for &(_, _, pool) in self.ranges() {
            // SAFETY: listed pools are live during the caller's section.
            let pool = unsafe { &*pool };
            for i in 0..pool.max as u32 {
                // SAFETY: `i < max`.
                if unsafe { pool.task(i) }.load(Ordering::Acquire) != cur {
                    continue;
                }
                // SAFETY: the instance is the current task's, which set
                // these fields before hijacking its frame.
                let (fp, ret) = unsafe { ((*pool.inst(i)).fp as usize, (*pool.inst(i)).ret_addr) };
                if fp <= above || best.is_some_and(|(b, _)| b <= fp) {
                    continue;
                }
                // A frame returning right now has its real address back.
                // SAFETY: `fp` is a word of the current task's stack, above
                // the current stack pointer.
                if unsafe { (fp as *const usize).read_volatile() } == pool.stub(i) {
                    best = Some((fp, ret));
                }
            }
        }
        best
    }

    /// `stack_trace_save()` that sees through hijacked frames: where the
    /// unwinder stops at a frame that returns into a stub, the walk goes on
    /// from the real return address. Returns the number of entries. Caller
    /// in an RCU read-side critical section (preemption off, as handlers).
    pub(crate) fn stack_trace(&self, rt: &Runtime, store: &mut [c_ulong], skip: u32) -> usize {
        let len = store.len().min(u32::MAX as usize) as u32;
        // SAFETY: `store` has room for `len` entries.
        let mut n = unsafe { ffi::stack_trace_save(store.as_mut_ptr(), len, skip) } as usize;
        if !rt.has_stack_trace_save_regs() {
            return n;
        }
        let here = 0usize;
        let mut above = core::ptr::addr_of!(here) as usize;
        while n < store.len() {
            let Some((fp, ret)) = self.next_hijacked(above) else {
                break;
            };
            // SAFETY: an all-zero `pt_regs` is valid.
            let mut regs: ffi::pt_regs = unsafe { core::mem::zeroed() };
            regs.ip = ret as _;
            regs.sp = (fp + 8) as _;
            let rest = store.get_mut(n..).unwrap_or(&mut []);
            // SAFETY: `regs` describe the caller of the hijacked frame as it
            // will be after the return; the unwinder checks every stack
            // access against the task's stacks. `rest` has room for its
            // length.
            let m = unsafe {
                rt.stack_trace_save_regs(
                    &mut regs,
                    rest.as_mut_ptr(),
                    rest.len().min(u32::MAX as usize) as u32,
                    0,
                )
            } as usize;
            n += m.min(rest.len());
            above = fp;
        }
        n
    }

    /// Frees `old` ranges after the grace period the caller waited for.
    fn free_ranges(old: *mut Ranges) {
        if !old.is_null() {
            // SAFETY: unpublished, and the caller waited for a grace period.
            drop(unsafe { KBox::from_raw(old) });
        }
    }

    /// Registers `rps`, all or nothing. Process context, may sleep.
    pub(crate) fn register(&self, core: &Core, rps: &[*mut RkpKretprobe]) -> Result {
        let mut pools = self.pools.lock();
        let mut made: KVec<*mut Pool> = KVec::with_capacity(rps.len(), GFP_KERNEL)?;
        pools.list.reserve(rps.len(), GFP_KERNEL)?;
        let mut kps: KVec<*mut RkpKprobe> = KVec::with_capacity(rps.len(), GFP_KERNEL)?;
        let mut result = Ok(());
        for &rp in rps {
            // SAFETY: the caller passes valid kretprobes.
            match unsafe { self.prepare(core, rp) } {
                Ok(pool) => {
                    // Cannot fail: capacity reserved.
                    let _ = made.push(pool, GFP_KERNEL);
                    // SAFETY: `rp` is valid.
                    let _ = kps.push(unsafe { core::ptr::addr_of_mut!((*rp).kp) }, GFP_KERNEL);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            for &p in made.iter() {
                let _ = pools.list.push(p, GFP_KERNEL);
            }
            result = match self.republish(&pools) {
                Ok(old) => {
                    // Nobody can have read the old ranges for the new pools;
                    // readers of the old ones are waited for below or later.
                    synchronize_rcu();
                    Self::free_ranges(old);
                    core.register_many(&kps)
                }
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                // A probe of the batch that joined an armed probe point was
                // live until `register_many` took it back: its pool may have
                // frames out. Retire the pools as unregistration does; those
                // with frames out wait as zombies.
                self.retire(&made);
                for &rp in rps.iter().take(made.len()) {
                    // SAFETY: `rp` is valid; it is not registered.
                    unsafe { (*rp).rkp_private = core::ptr::null_mut() };
                }
                drop(pools);
                self.gc();
                return Err(e);
            }
            return Ok(());
        }
        if let Err(e) = result {
            for (&rp, &pool) in rps.iter().zip(made.iter()) {
                // SAFETY: never listed or registered, so no instance was out.
                drop(unsafe { KBox::from_raw(pool) });
                // SAFETY: `rp` is valid; it is not registered.
                unsafe { (*rp).rkp_private = core::ptr::null_mut() };
            }
            return Err(e);
        }
        Ok(())
    }

    /// Detaches `pools` from their kretprobes, whose entry probes are no
    /// longer registered, and drops their registration references: from now
    /// on no handler sees the client's structure, and each pool is freed
    /// once its last frame has returned. Writer, with the pools' mutex held.
    fn retire(&self, pools: &[*mut Pool]) {
        for &pool in pools {
            // SAFETY: listed pools are live while the mutex is held.
            unsafe { &*pool }
                .rp
                .store(core::ptr::null_mut(), Ordering::Release);
        }
        // No CPU is in a return handler that saw the client's structure after
        // this: return handlers run with interrupts off.
        synchronize_rcu();
        for &pool in pools {
            // Frames still out hold rkprobes loaded; the last one returns
            // this reference (`Pool::put_ref`).
            module::get_self();
            // SAFETY: listed pools are live while the mutex is held.
            unsafe { &*pool }.put_ref();
        }
    }

    /// Checks `rp` as the kernel's `register_kretprobe()` does and gives it
    /// a pool. Process context.
    ///
    /// # Safety
    ///
    /// `rp` is valid.
    unsafe fn prepare(&self, core: &Core, rp: *mut RkpKretprobe) -> Result<*mut Pool> {
        if rp.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: the caller's contract.
        let r = unsafe { &mut *rp };
        if !r.rkp_private.is_null() || !r.kp.rkp_private.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `r.kp` is valid.
        unsafe { core.check_func_entry(&mut r.kp) }?;
        if r.data_size > KRETPROBE_MAX_DATA_SIZE {
            return Err(E2BIG);
        }
        let max = if r.maxactive <= 0 {
            let cpus = cpu::num_possible_cpus();
            10.max(2 * cpus).min(KRETPROBE_MAXACTIVE_MAX)
        } else {
            r.maxactive as usize
        };
        if max > KRETPROBE_MAXACTIVE_MAX {
            return Err(E2BIG);
        }
        let pool = KBox::into_raw(Pool::new(rp, max, r.data_size, *core.runtime())?);
        r.maxactive = max as c_int;
        r.nmissed = 0;
        r.kp.pre_handler = Some(pre_handler);
        r.kp.post_handler = None;
        r.kp.fault_handler = None;
        r.rkp_private = pool.cast();
        Ok(pool)
    }

    /// Unregisters `rps`. Instances still out keep their pool alive as a
    /// zombie, and rkprobes loaded, until their frames return. Process
    /// context, may sleep.
    pub(crate) fn unregister(&self, core: &Core, rps: &[*mut RkpKretprobe]) {
        let pools = self.pools.lock();
        let mut kps: KVec<*mut RkpKprobe> = KVec::new();
        let mut mine: KVec<*mut Pool> = KVec::new();
        let mut rks: KVec<*mut RkpKretprobe> = KVec::new();
        for &rp in rps {
            if rp.is_null() {
                continue;
            }
            // SAFETY: the caller passes valid kretprobes.
            let pool = unsafe { (*rp).rkp_private }.cast::<Pool>();
            if pool.is_null() || !pools.list.contains(&pool) || mine.contains(&pool) {
                continue;
            }
            // SAFETY: as above.
            let kp = unsafe { core::ptr::addr_of_mut!((*rp).kp) };
            if kps.push(kp, GFP_KERNEL).is_err()
                || mine.push(pool, GFP_KERNEL).is_err()
                || rks.push(rp, GFP_KERNEL).is_err()
            {
                // Without memory for the batch, one at a time, with nothing
                // to allocate.
                drop(pools);
                for &rp in rps {
                    self.unregister_one(core, rp);
                }
                return;
            }
        }
        // No CPU is in the entry handler of these after this.
        core.unregister_many(&kps);
        self.retire(&mine);
        for &rp in rks.iter() {
            // SAFETY: the caller's kretprobe, no longer registered.
            unsafe { (*rp).rkp_private = core::ptr::null_mut() };
        }
        drop(pools);
        self.gc();
    }

    /// Unregisters one kretprobe without allocating. Process context.
    fn unregister_one(&self, core: &Core, rp: *mut RkpKretprobe) {
        if rp.is_null() {
            return;
        }
        let pools = self.pools.lock();
        // SAFETY: the caller passes a valid kretprobe.
        let pool = unsafe { (*rp).rkp_private }.cast::<Pool>();
        if pool.is_null() || !pools.list.contains(&pool) {
            return;
        }
        // SAFETY: as above.
        let kp = unsafe { core::ptr::addr_of_mut!((*rp).kp) };
        core.unregister_many(&[kp]);
        self.retire(&[pool]);
        // SAFETY: the caller's kretprobe, no longer registered.
        unsafe { (*rp).rkp_private = core::ptr::null_mut() };
    }

    /// Reclaims the instances of dead tasks and frees drained zombie pools.
    /// Process context, may sleep.
    pub(crate) fn gc(&self) -> usize {
        let mut pools = self.pools.lock();
        for &p in pools.list.iter() {
            // SAFETY: listed pools are live while the mutex is held.
            unsafe { &*p }.reclaim_dead();
        }
        let drained = |p: &*mut Pool| {
            // SAFETY: as above.
            let p = unsafe { &**p };
            p.rp.load(Ordering::Acquire).is_null() && p.refs.load(Ordering::Acquire) == 0
        };
        let mut dead: KVec<*mut Pool> = KVec::new();
        for p in pools.list.iter() {
            if drained(p) && dead.push(*p, GFP_KERNEL).is_err() {
                break;
            }
        }
        if !dead.is_empty() {
            vec::remove_if(&mut pools.list, |p| dead.contains(p));
            let Ok(old) = self.republish(&pools) else {
                // The published ranges still name these pools: keep them
                // (listed, so that a later reclaim frees them).
                for p in dead {
                    let _ = pools.list.push(p, GFP_KERNEL);
                }
                // SAFETY: no preconditions.
                unsafe { ffi::rkp_kick_gc_later() };
                return pools.list.len();
            };
            // The last returning frame dropped its reference as its last
            // access to the pool; readers of the ranges are RCU readers.
            synchronize_rcu();
            Self::free_ranges(old);
            for p in dead {
                // SAFETY: unlisted, drained: nothing can reach it.
                drop(unsafe { KBox::from_raw(p) });
            }
        }
        let zombies = pools
            .list
            .iter()
            // SAFETY: as above.
            .filter(|&&p| unsafe { &*p }.rp.load(Ordering::Acquire).is_null())
            .count();
        if zombies > 0 {
            // Frames of exited tasks may be all that is left: look again.
            // SAFETY: no preconditions.
            unsafe { ffi::rkp_kick_gc_later() };
        }
        zombies
    }

    /// Waits until no frame can return into a stub any more and frees every
    /// pool. Called at unload, after every kretprobe was unregistered.
    /// Process context, may sleep.
    pub(crate) fn drain(&self, rt: &Runtime) {
        {
            // Pools still registered lost their entry probe with the rest of
            // the probes: unregister them as `unregister` would.
            let pools = self.pools.lock();
            let mut left: KVec<*mut Pool> = KVec::new();
            for &p in pools.list.iter() {
                // SAFETY: listed pools are live while the mutex is held.
                if !unsafe { &*p }.rp.load(Ordering::Acquire).is_null()
                    && left.push(p, GFP_KERNEL).is_err()
                {
                    // Retire what fits now.
                    break;
                }
            }
            if !left.is_empty() {
                pr_warn!("{} kretprobes still registered at unload\n", left.len());
                self.retire(&left);
            }
        }
        let mut waited = 0u32;
        while self.gc() > 0 {
            if waited % 100 == 0 {
                pr_info!("waiting for kretprobe frames to return\n");
            }
            waited = waited.wrapping_add(1);
            delay::msleep(100);
        }
        // SAFETY: process context; nothing queues reclaim work any more.
        unsafe { ffi::rkp_gc_sync() };
        // A task that returned through the trampoline may still be in its
        // last instructions, in rkprobes' text, possibly preempted there.
        synchronize_rcu_tasks(rt);
        synchronize_rcu();
    }

    /// The real return address of the current task's frame whose return
    /// address was replaced by `addr`, or `addr`. Caller with preemption off.
    pub(crate) fn find_ret_addr(&self, addr: usize) -> usize {
        if !self.is_stub(addr) {
            return addr;
        }
        // SAFETY: `addr` is in a listed pool's stubs, and the caller's
        // critical section keeps the pool listed.
        let Some((pool, i)) = (unsafe { Pool::from_stub(addr) }) else {
            return addr;
        };
        // SAFETY: `i < max`. Reading the fields of another task's instance is
        // harmless; only the current task's is answered.
        unsafe {
            // The reference is only compared, never used.
            let cur = ffi::rkp_current_task();
            if pool.task(i).load(Ordering::Acquire) == cur {
                (*pool.inst(i)).ret_addr
            } else {
                addr
            }
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Kretprobes {
    fn drop(self: Pin<&mut Self>) {
        let pools = self.pools.lock();
        for &p in pools.list.iter() {
            // Cannot happen after `drain`; leaking beats freeing live stubs.
            pr_err!("kretprobe pool {:p} left at unload\n", p);
        }
        Self::free_ranges(self.ranges.swap(core::ptr::null_mut(), Ordering::AcqRel));
    }
}

/// The pre-handler of every kretprobe's entry probe: takes an instance and
/// hijacks the return address. int3 context (or the ftrace callback):
/// interrupts off, may not sleep, allocate or take locks.
///
/// # Safety
///
/// Called by the hit path with the `kp` of a registered `RkpKretprobe` and the
/// registers of a hit at the function's entry.
pub(crate) unsafe extern "C" fn pre_handler(kp: *mut RkpKprobe, regs: *mut ffi::pt_regs) -> c_int {
    // SAFETY: `kp` is the first field of a registered kretprobe.
    let rp = unsafe { kernel::container_of!(kp, RkpKretprobe, kp) }.cast_mut();
    // SAFETY: a registered kretprobe's pool lives until after unregistration,
    // which waits for this handler.
    let pool = unsafe { &*(*rp).rkp_private.cast::<Pool>() };
    let Some(i) = pool.pop() else {
        // SAFETY: an aligned `int` of the live kretprobe, updated atomically.
        unsafe { AtomicI32::from_ptr(core::ptr::addr_of_mut!((*rp).nmissed)) }
            .fetch_add(1, Ordering::Relaxed);
        // Perhaps instances are held by exited tasks.
        // SAFETY: no preconditions; NMI-safe.
        unsafe { ffi::rkp_kick_gc() };
        return 0;
    };
    // SAFETY: `i` is ours now.
    let ri = unsafe { pool.inst(i) };
    // SAFETY: the registers of a hit at the entry, where the stack pointer
    // points to the return address.
    let (fp, ret) = unsafe { arch::rethook_prepare(&*regs) };
    // SAFETY: `ri` is ours.
    unsafe {
        (*ri).rp = rp;
        (*ri).ret_addr = ret as c_ulong;
        (*ri).fp = fp as *mut c_ulong;
    }
    // SAFETY: the client's handler, with its documented contract.
    if let Some(entry) = unsafe { (*rp).entry_handler } {
        // SAFETY: as above.
        if unsafe { entry(ri, regs) } != 0 {
            pool.push(i);
            return 0;
        }
    }
    pool.refs.fetch_add(1, Ordering::Relaxed);
    // SAFETY: takes a reference on the running task; any context.
    let task = unsafe { ffi::rkp_get_current_task() };
    // SAFETY: `i` is ours.
    unsafe { pool.task(i) }.store(task, Ordering::Release);
    // SAFETY: `fp` holds the return address of the function being entered.
    unsafe { arch::rethook_hijack(fp, pool.stub(i)) };
    0
}

/// Called by the architecture's trampoline when a hijacked frame returned
/// into the stub at `stub`; `frame` is the stack word that held the return
/// address. Writes the real return address back into `frame`, sets `ip` to
/// it, runs the return handler and frees the instance. Returns the real
/// return address.
///
/// Runs in whatever context the function returned in, NMI included; the
/// handler runs with interrupts off, and may not sleep, allocate or take
/// locks.
///
/// # Safety
///
/// `stub` is the stub the trampoline was called from; `frame` is the stack
/// word that holds the return address; `regs` are the trampoline's.
pub(crate) unsafe fn trampoline_handler(
    regs: &mut ffi::pt_regs,
    frame: *mut usize,
    stub: usize,
) -> usize {
    // SAFETY: the trampoline is only reached from a stub of a live pool: an
    // instance out on a stack holds its pool.
    let Some((pool, i)) = (unsafe { Pool::from_stub(stub) }) else {
        // The stack no longer says where to return; nothing sane is left
        // to do, as in the kernel's rethook_trampoline_handler().
        panic!("rkprobes: kretprobe trampoline called from an unknown stub {stub:#x}");
    };
    // SAFETY: `i` is out, and this frame is its only user.
    let ri = unsafe { pool.inst(i) };
    // SAFETY: as above.
    let (real, fp) = unsafe { ((*ri).ret_addr, (*ri).fp as usize) };
    if fp != frame as usize {
        pr_err!(
            "kretprobe frame mismatch: {:#x} returned at {:#x}\n",
            fp,
            frame as usize
        );
    }
    // Before the handler, so that a stack trace taken there is right.
    // SAFETY: the caller's contract: `frame` is the return address's word.
    unsafe { arch::rethook_fixup_return(frame, real) };
    regs.ip = real as _;
    if let Ok(core) = Core::get() {
        let regs_ptr = core::ptr::from_mut(regs);
        arch::run_busy(core, |free| {
            let rp = pool.rp.load(Ordering::Acquire);
            if rp.is_null() {
                return;
            }
            if !free {
                // This CPU is inside a probe: as a probe hit there, missed.
                // SAFETY: the kretprobe stays valid while `rp` is published
                // and this CPU has interrupts off (unregistration clears it
                // and waits for a grace period); `nmissed` is an aligned
                // `int` updated atomically.
                unsafe { AtomicI32::from_ptr(core::ptr::addr_of_mut!((*rp).nmissed)) }
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
            // SAFETY: as above.
            if let Some(h) = unsafe { (*rp).handler } {
                // SAFETY: the client's handler, with its contract.
                unsafe { h(ri, regs_ptr) };
            }
        });
    }
    // SAFETY: this frame was the instance's only user, and is done with it.
    unsafe { pool.release(i) };
    real
}

/// The reclaim work (`rust/glue.c`). Process context.
#[no_mangle]
pub(crate) extern "C" fn rkp_kretprobe_gc() {
    if let Ok(core) = Core::get() {
        core.kretprobes().gc();
    }
}

/// Whether `kp` is the entry probe of a kretprobe. Any context.
pub(crate) fn is_kretprobe(kp: *mut RkpKprobe) -> bool {
    // SAFETY: the caller passes a valid probe.
    unsafe { (*kp).pre_handler }
        .is_some_and(|h| core::ptr::eq(h as *const (), pre_handler as *const ()))
}
