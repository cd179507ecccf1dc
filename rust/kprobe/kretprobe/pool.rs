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
//! end (`Pool::next`, an `rcu_list::Next`, which keeps the pool it names
//! listed); the entry handler takes from the first pool of the chain that
//! has a free instance. Memory is allocated only in process
//! context, and an instance is never moved, so the lock-free paths stay as
//! they are.
//!
//! The instances live in an [`ObjPool`] (`kernel_ext/objpool.rs`), which
//! owns their memory and hands them out as typed handles: an instance taken
//! off the free list is [`Owned`] by its taker, which fills it in and puts
//! it out for the current task's frame with a reference on the task as its
//! token; the frame that returns into its stub takes it back
//! ([`Returning::take_out`]) before it reads it, and the reclaim work claims it with a dead
//! task's identity ([`Pool::reclaim_dead`]). The instance's C fields are reached
//! through typed accessors at the ABI edge (`kprobe/abi.rs`).
//!
//! Context: a pool is built ([`Pool::new`]) and the instances of dead tasks
//! are reclaimed ([`Pool::reclaim_dead`]) in process context. Taking and
//! giving back instances, finding the instance of a stub and dropping
//! references are lock-free and run in any context, NMI included.

use super::{stubs, Pools};
use crate::kernel_ext::{
    list::{Link, Linked, Links},
    rcu_list::{Next, Owner, RETIRED},
};
use crate::{
    abi::RkpKretprobeInstance,
    arch,
    ffi::runtime::Runtime,
    kernel_ext::{
        execmem::ExecPages,
        module::SelfRefs,
        objpool::{ObjPool, Owned, Slot},
        race::{self, Window},
        sync::{NoPreempt, PreemptGuard},
        task::{self, TaskRef},
        work::reclaim,
    },
    kprobe::client::{RetCell, RetClient},
};
use crate::{impl_linked, impl_rcu_element};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::prelude::*;

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

/// The references on rkprobes that unregistered pools keep, one each, while
/// frames are out: those frames return into rkprobes' trampoline. Given by
/// `Kretprobes::retire`, taken back by the last frame ([`Pool::put_ref`])
/// without reading the pool, which may be freed by then.
pub(super) static ZOMBIE_REFS: SelfRefs = SelfRefs::new();

/// The most instances a growing kretprobe's chain reaches.
pub(super) const GROW_MAX: usize = 1 << 20;

/// The instances of one kretprobe and their return stubs.
///
/// # Invariants
///
/// `objs` holds `max` instances, each followed by `data_size` bytes of
/// data and with `rkp_index` set to its index. `stubs`, once the pool is
/// built (it is `None` only inside [`Pool::new`]), are executable pages
/// holding a header naming this pool (`arch::stub_page_header`) at the
/// start of each page and one stub per instance. `refs` counts the
/// registration (while `rp` is set) and every instance out on a stack; the
/// pool is freed only when it is zero and no CPU can reach it.
pub(crate) struct Pool {
    /// The client's kretprobe; cleared once it is unregistered.
    pub(super) rp: RetCell,
    /// The pool's links on `Kretprobes`' list, whose forward links readers
    /// follow.
    pub(super) links: Links<Pool>,
    /// The pool's link on the list of pools to be freed.
    retired: Link<Pool>,
    /// The list that owns the pool.
    owner: Owner,
    /// How many registered kretprobes use the pool (more than one only if
    /// `shared`); the pool is retired when the last of them goes. Changed
    /// with `Kretprobes::pools` held; meaningless for a chain's `extra`
    /// pools.
    pub(super) members: AtomicUsize,
    pub(super) refs: AtomicUsize,
    /// The instances and their free list.
    objs: ObjPool<RkpKretprobeInstance>,
    pub(super) max: usize,
    /// Bytes of data per instance, for the pools a chain grows by.
    pub(super) data_size: usize,
    /// Whether the chain this pool heads may grow.
    pub(super) growth: Growth,
    /// The next pool of the chain, linked once by the reclaim work and cut
    /// when the chain is retired.
    pub(super) next: Next<Pool>,
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
    stubs: Option<ExecPages>,
    /// The address of the first stub page (`stubs`), 0 while there is none.
    stubs_base: usize,
}

impl_linked!(Pool, 0, links);
impl_linked!(Pool, RETIRED, retired);
impl_rcu_element!(Pool, owner);

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
        let objs = ObjPool::new(max, data_size)?;
        for inst in objs.slots() {
            inst.set_index();
        }
        let npages = max.div_ceil(stubs::STUBS_PER_PAGE);
        let mut pool = KBox::new(
            Pool {
                rp: RetCell::new(rp),
                links: Links::new(),
                retired: Link::new(),
                owner: Owner::new(),
                members: AtomicUsize::new(1),
                refs: AtomicUsize::new(1),
                objs,
                max,
                data_size,
                growth,
                next: Next::new(),
                wants_more: AtomicBool::new(false),
                extra: false,
                shared: false,
                one_pop: growth == Growth::Fixed,
                stubs: None,
                stubs_base: 0,
            },
            GFP_KERNEL,
        )?;
        let this = NonNull::from(&*pool);
        // A stray jump anywhere but a stub traps: the pages come filled
        // with int3.
        pool.stubs = Some(ExecPages::new(
            &rt,
            npages,
            arch::TRAP_FILL,
            |base, region| stubs::write_pages(this, max, base, region),
        )?);
        pool.stubs_base = pool.stubs.as_ref().map_or(0, ExecPages::addr);
        Ok(pool)
    }

    /// The chain that starts here, this pool first. Writer, with the
    /// pools' mutex held.
    pub(super) fn chain<'g>(&'g self, pools: &'g Pools<'_>) -> impl Iterator<Item = &'g Pool> {
        core::iter::successors(Some(self), move |p| pools.next(&p.next))
    }

    /// Takes a free instance from a pool whose chain is this one pool
    /// (neither growing nor shared): one `pop`. `Err` when the pool is a
    /// chain's first, which [`Pool::take_from_chain`] takes from. Any
    /// context, NMI included (lock-free).
    #[inline(always)]
    pub(super) fn take_one(&self) -> Result<Option<Taken<'_>>, ()> {
        if self.one_pop {
            Ok(self.pop())
        } else {
            Err(())
        }
    }

    /// Takes a free instance from the first pool of this pool's chain that
    /// has one, and asks for more instances when a growing chain's last
    /// pool is half taken. Any context, NMI included (lock-free).
    #[inline(always)]
    pub(super) fn take_from_chain<'a>(&'a self, rcu: &'a NoPreempt) -> Option<Taken<'a>> {
        let mut pool = self;
        loop {
            if let Some(t) = pool.pop() {
                if self.growth == Growth::Grow
                    && !pool.next.is_set()
                    && pool.refs.load(Ordering::Relaxed) > pool.max / 2
                    && !self.wants_more.swap(true, Ordering::Relaxed)
                {
                    reclaim::kick();
                }
                return Some(t);
            }
            pool = pool.next.get_rcu(rcu)?;
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
        Some(Instance {
            pool: self,
            slot: self.objs.get(i)?,
        })
    }

    /// Every instance, free or out.
    pub(super) fn instances(&self) -> impl DoubleEndedIterator<Item = Instance<'_>> {
        self.objs
            .slots()
            .map(move |slot| Instance { pool: self, slot })
    }

    /// Takes a free instance. Any context, NMI included (lock-free).
    #[inline(always)]
    pub(super) fn pop(&self) -> Option<Taken<'_>> {
        Some(Taken {
            pool: self,
            inst: self.objs.pop()?,
        })
    }

    /// The instance of the stub at `addr`, which is in this pool's stubs.
    pub(super) fn instance_at(&self, addr: usize) -> Option<Instance<'_>> {
        self.instance(stubs::index_at(self.stubs_base(), addr)?)
    }

    /// The instance whose frame returned into the stub of `frame`, found
    /// through the header of the stub's page. Trampoline context.
    #[inline(always)]
    pub(super) fn returning<'a>(frame: &arch::ReturnFrame<'a, Pool>) -> Option<Returning<'a>> {
        let (pool, i) = frame.owner()?;
        let inst = pool.instance(i)?;
        Some(Returning {
            inst,
            _not_send: PhantomData,
        })
    }

    /// Drops a reference; the last one of an unregistered pool releases
    /// the reference on rkprobes that its retirement took ([`ZOMBIE_REFS`])
    /// and asks for the pool to be freed. Any context. The pool may be
    /// freed as soon as the reference is dropped: nothing here reads it
    /// after that.
    pub(super) fn put_ref(&self) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            reclaim::kick();
            // The reference taken at unregistration for the frames that
            // were still out (`Kretprobes::retire`, which unregistration and
            // a failed registration call).
            drop(ZOMBIE_REFS.take());
        }
    }

    /// Gives back the instances of tasks that will never run again. Process
    /// context.
    pub(super) fn reclaim_dead(&self) -> usize {
        let mut n = 0;
        for inst in self.objs.slots() {
            // The task may return through its frame right after the load,
            // claiming the instance back ([`Returning::release`]), and
            // exit. Preemption off is an RCU read-side section: a task that
            // was alive at the load keeps its memory until the section
            // ends, since its last reference but ours is put by an RCU
            // callback queued when it dies (`put_task_struct_rcu_user()`).
            let guard = PreemptGuard::new();
            let t = inst.out_with();
            if t.is_null() {
                continue;
            }
            race::window(Window::ReclaimTask);
            // SAFETY: a task loaded from the token word was referenced then,
            // and is kept by the RCU section since (above).
            if !unsafe { task::is_dead(t) } {
                continue;
            }
            // A dead task never returns through its frames, so nobody else
            // takes this instance back; the claim only guards against a
            // second reclaim. That holds for `__switch_to` too, the one
            // frame that returns as another task than the one that entered
            // it: `rkp_task_is_dead()` (glue.c) also wants the task off its
            // CPU (`!on_cpu`), and `on_cpu` is cleared, with a release
            // store, only by `finish_task_switch()`, after the task's last
            // `__switch_to` has returned through its stub and the
            // trampoline has taken the instance out (`Returning::take_out`).
            // The acquire load of `on_cpu` then also makes that exchange
            // seen here, so the claim fails.
            let claimed = inst.claim(t);
            drop(guard);
            if let Some((inst, task)) = claimed {
                // Process context: the task's last reference may go here.
                drop(task);
                inst.give_back();
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

/// Instance `i` of a pool, free or out.
#[derive(Clone, Copy)]
pub(super) struct Instance<'a> {
    pool: &'a Pool,
    slot: Slot<'a, RkpKretprobeInstance>,
}

impl Instance<'_> {
    /// The address of the instance's return stub.
    #[inline(always)]
    pub(super) fn stub(self) -> usize {
        stubs::stub_addr(self.pool.stubs_base(), self.slot.index())
    }

    /// The stack word that holds the return address of the instance's
    /// frame, and the real return address, if the instance is out for the
    /// current task. Any context.
    pub(super) fn current_frame(self) -> Option<(usize, usize)> {
        if self.slot.out_with() != task::current_id() {
            return None;
        }
        // Out for the current task, which wrote the fields before it put
        // the instance out (seen by the acquire load above), and which
        // alone claims it back (the reclaim work takes only dead tasks'
        // instances), when the frame returns: after the caller's code,
        // which that frame's function called, directly or through an
        // interrupt.
        let (ret, fp) = self.slot.frame();
        Some((fp, ret))
    }
}

/// An instance in its taker's hands, off the free list and not out.
pub(super) struct Taken<'a> {
    pool: &'a Pool,
    inst: Owned<'a, RkpKretprobeInstance>,
}

impl Taken<'_> {
    /// The instance's structure, for the entry handler.
    #[inline(always)]
    pub(super) fn as_ptr(&self) -> *mut RkpKretprobeInstance {
        self.inst.slot().as_raw()
    }

    /// Gives the instance back to its pool without putting it out.
    #[inline(always)]
    pub(super) fn give_back(self) {
        self.inst.give_back();
    }

    /// Records the frame: the kretprobe `rp`, the real return address `ret`
    /// and the stack word `fp` that holds it.
    #[inline(always)]
    pub(super) fn set_frame(&mut self, rp: RetClient, ret: usize, fp: usize) {
        self.inst.set_frame(rp, ret, fp);
    }

    /// Puts the instance out for the current task's frame: takes a
    /// reference on the pool and one on the task, and returns the address
    /// of the stub that the frame is to return into. Any context, NMI
    /// included.
    #[inline(always)]
    pub(super) fn put_out(self) -> usize {
        self.pool.refs.fetch_add(1, Ordering::Relaxed);
        let slot = self.inst.put_out(TaskRef::current());
        stubs::stub_addr(self.pool.stubs_base(), slot.index())
    }
}

/// An instance whose frame is returning, named by the stub the frame
/// returned into, and not yet taken back ([`Returning::take_out`]).
pub(super) struct Returning<'a> {
    inst: Instance<'a>,
    /// The frame's handle stays on the CPU it returned on.
    _not_send: PhantomData<*mut ()>,
}

impl<'a> Returning<'a> {
    /// Takes the instance back from the task it was put out for, which
    /// may be another task than the one that returns: `__switch_to` is
    /// entered as one task and returns as the next. The frame then owns the
    /// instance, its task's reference and its pool's, until
    /// [`Returned::release`]. Any context, NMI included.
    ///
    /// `Err` when the instance is not out: no one but this frame takes it
    /// back, as the reclaim work takes only the instances of tasks that
    /// have run for the last time ([`Pool::reclaim_dead`]), so that means
    /// a bug, and the instance is someone else's.
    #[inline(always)]
    pub(super) fn take_out(self) -> Result<Returned<'a>, Self> {
        match self.inst.slot.take_out() {
            Some((inst, task)) => Ok(Returned {
                pool: self.inst.pool,
                inst,
                task,
            }),
            None => Err(self),
        }
    }

    /// The real return address and the stack word that held it, as the
    /// instance records them now: without owning the instance, possibly
    /// another frame's.
    pub(super) fn recorded_frame(&self) -> (usize, usize) {
        self.inst.slot.frame()
    }
}

/// An instance whose frame returned, taken back by that frame: owned, with
/// the reference on the task it was out for and the one on its pool. Not
/// `Send` (the frame's handle stays on the CPU it returned on).
pub(super) struct Returned<'a> {
    pool: &'a Pool,
    inst: Owned<'a, RkpKretprobeInstance>,
    task: TaskRef,
}

impl<'a> Returned<'a> {
    /// The instance's pool, for as long as the frame owns the instance
    /// (the pool may be freed once [`Returned::release`] gave it back).
    #[inline(always)]
    pub(super) fn pool(&self) -> &Pool {
        self.pool
    }

    /// The instance's structure, for the return handler.
    #[inline(always)]
    pub(super) fn as_ptr(&self) -> *mut RkpKretprobeInstance {
        self.inst.slot().as_raw()
    }

    /// The kretprobe the instance was taken for: valid while the pool's
    /// [`Pool::rp`] is set, on this CPU with preemption off.
    #[inline(always)]
    pub(super) fn rp(&self) -> Option<RetClient> {
        self.inst.slot().rp()
    }

    /// The real return address, and the stack word that held it.
    #[inline(always)]
    pub(super) fn frame(&self) -> (usize, usize) {
        self.inst.slot().frame()
    }

    /// Puts the task's reference, gives the instance back and drops the
    /// pool's reference. Any context, NMI included. The pool may be freed
    /// as soon as this returns.
    ///
    /// A task reference that is not the returning task's (`__switch_to`'s
    /// `prev`) and would be the last may not be put here (interrupts off,
    /// the runqueue's lock held): the instance goes out again with it,
    /// holding the pool's reference, for the reclaim work, which claims a
    /// dead task's instances ([`Pool::reclaim_dead`]) and puts the
    /// reference in process context.
    #[inline(always)]
    pub(super) fn release(self) {
        let Returned { pool, inst, task } = self;
        match task.put_on_return() {
            None => {
                inst.give_back();
                pool.put_ref();
            }
            Some(last) => {
                let _ = inst.put_out(last);
                reclaim::kick();
            }
        }
    }
}
