// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering kretprobes.
//!
//! Registration gives each kretprobe a pool, links the pools on the list
//! whose stubs the lookups know, and registers the entry probes;
//! unregistration unregisters the entry probes and retires the pools, which
//! are freed at once when no frame is out, and otherwise live on as zombies
//! until their frames return. Both cost O(1) per kretprobe: nothing walks
//! every pool on their way; the reclaim work (`gc.rs`), which does, frees
//! drained zombies. The pools' list owns their memory
//! (`kernel_ext/rcu_list.rs`): writers hold pools as references borrowed
//! from the list's guard, and a pool is freed only through the list, a
//! grace period after it was taken off.
//!
//! Context: process context, may sleep. Everything here holds
//! `Kretprobes::pools`, which is taken before `Core::reg` (the lock table in
//! `rust/kprobe/mod.rs`).

use super::{
    is_kretprobe,
    pool::{Growth, Pool, GROW_MAX, ZOMBIE_REFS},
    Kretprobes, Pools,
};
use crate::{
    abi::{KRETPROBE_MAXACTIVE_MAX, KRETPROBE_MAX_DATA_SIZE},
    ffi::runtime::Runtime,
    kernel_ext::{cpu, module::SelfRef, sync::synchronize_rcu, work::reclaim},
    kprobe::{
        client::{Client, RetClient},
        Core,
    },
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{ffi::c_int, prelude::*};

/// Makes `rp`, a kretprobe being registered, one of `pool`'s: its
/// `maxactive` the pool's size, its entry probe's handler rkprobes' own,
/// its `rkp_private` the pool. `pool` is boxed, or listed: it does not
/// move. Process context, with the pools' mutex held.
fn give_pool(rp: RetClient, pool: &Pool) -> Result {
    // SAFETY: a pool is freed only after the words that name it were
    // cleared, with the pools' mutex held: by a failed registration, before
    // any of its entry probes was registered (`register`), or, once listed,
    // by the pools' list, after the entry probes were unregistered and a
    // grace period passed (`leave`, `retire`).
    unsafe { rp.attach::<Kretprobes>(pool, pool.max as c_int) }
}

impl Kretprobes {
    /// Registers `rps`, all or nothing, their instances growing as
    /// `growth` says: each with a pool of its own, or with `shared` all
    /// with one (the sites of one probe on many functions, whose instances
    /// a task takes one at a time whichever function it is in, and which
    /// are unregistered together). Process context, may sleep.
    pub(crate) fn register(
        &self,
        core: &Core,
        rps: &[RetClient],
        growth: Growth,
        shared: bool,
    ) -> Result {
        let mut pools = self.pools.lock();
        let mut made: KVec<KBox<Pool>> = KVec::with_capacity(rps.len(), GFP_KERNEL)?;
        let mut listed: KVec<&Pool> = KVec::with_capacity(rps.len(), GFP_KERNEL)?;
        let mut kps: KVec<Client> = KVec::with_capacity(rps.len(), GFP_KERNEL)?;
        let mut result = Ok(());
        let mut given = 0;
        for &rp in rps {
            let r = match made.first() {
                Some(pool) if shared => self.join(core, rp, pool),
                _ => match self.prepare(core, rp, growth) {
                    Ok(mut pool) => {
                        pool.set_shared(shared);
                        // Cannot fail: capacity reserved.
                        let _ = made.push(pool, GFP_KERNEL);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
            };
            match r {
                Ok(()) => {
                    given += 1;
                    // Cannot fail: capacity reserved.
                    let _ = kps.push(rp.entry(), GFP_KERNEL);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if let Err(e) = result {
            for &rp in rps.iter().take(given) {
                rp.set_private(core::ptr::null_mut());
            }
            // Never listed or registered: no instance was out.
            drop(made);
            return Err(e);
        }
        // Listed before their entry probes can hit: the lookups know a
        // stub as soon as a frame can return into it.
        for pool in made {
            // Cannot fail: capacity reserved.
            let _ = listed.push(pools.push_front(pool), GFP_KERNEL);
        }
        if let Err(e) = core.register_many(&kps) {
            // A probe of the batch that joined an armed probe point was
            // live until `register_many` took it back: its pool may have
            // frames out. Retire the pools as unregistration does; those
            // with frames out wait as zombies.
            self.retire(&pools, &listed);
            for &rp in rps {
                rp.set_private(core::ptr::null_mut());
            }
            drop(listed);
            pools.free_retired();
            return Err(e);
        }
        drop(listed);
        if growth == Growth::Grow {
            self.keep_up(&pools, core.runtime());
        }
        Ok(())
    }

    /// Detaches `retired`, the pools of kretprobes whose entry probes are
    /// no longer registered, and the pools their chains grew by, from their
    /// kretprobes, and drops their registration references: from now on no
    /// handler sees the client's structure, and each pool is freed once its
    /// last frame has returned. Marks those already drained for the list to
    /// free ([`mark_drained`]; the caller's `free_retired`, or the reclaim
    /// work's), and cuts the chains. Writer, with the pools' mutex held.
    pub(super) fn retire(&self, pools: &Pools<'_>, retired: &[&Pool]) {
        if retired.is_empty() {
            // Nothing to wait for.
            return;
        }
        let chains = || retired.iter().flat_map(|&p| p.chain(pools));
        for pool in chains() {
            pool.rp.clear();
        }
        // No CPU is in a return handler that saw the client's structure after
        // this: return handlers run with preemption off, which the grace
        // period waits for.
        synchronize_rcu();
        for pool in chains() {
            // Frames still out hold rkprobes loaded; the last one returns
            // this reference (`Pool::put_ref`). The pool stays until the
            // mutex, held here, is dropped.
            ZOMBIE_REFS.add(SelfRef::get());
            pool.put_ref();
        }
        // Zombies ask for the reclaim work, which frees them when drained.
        // No entry handler walks the chains any more (the grace period
        // above): each link is cut as its pool is reached, so that the pool
        // after it, which the list does not retire while a link names it,
        // can be, and a zombie head does not name an extra pool that the
        // list frees before it.
        for &head in retired {
            let mut next = Some(head);
            let cut = core::iter::from_fn(|| {
                let p = next?;
                next = pools.next(&p.next);
                pools.unlink(&p.next);
                Some(p)
            });
            mark_drained(pools, cut);
        }
    }

    /// Keeps every growing chain at one instance per task at least, with
    /// room (a quarter more, and 64): a task is in a function once unless
    /// the function recurses, so that no return is missed for want of an
    /// instance while tasks are created faster than the work runs. Asks
    /// for the work again after new tasks have used half of the smallest
    /// room; stops watching forks when no chain grows. Writer, with the
    /// pools' mutex held; may sleep.
    pub(super) fn keep_up(&self, pools: &Pools<'_>, rt: &Runtime) {
        let mut heads: KVec<&Pool> = KVec::new();
        for pool in pools.iter() {
            if pool.growth == Growth::Grow
                && pool.rp.is_set()
                && heads.push(pool, GFP_KERNEL).is_err()
            {
                break;
            }
        }
        if heads.is_empty() {
            reclaim::stop_fork_watch();
            return;
        }
        let tasks = reclaim::nr_tasks();
        let want = tasks + tasks / 4 + 64;
        let mut room = usize::MAX;
        for &h in heads.iter() {
            let total: usize = h.chain(pools).map(|p| p.max).sum();
            if total < want {
                self.grow(pools, h, rt, (want - total).max(total / 2));
            }
            let total: usize = h.chain(pools).map(|p| p.max).sum();
            room = room.min(total.saturating_sub(tasks));
        }
        // Without the fork tracepoint the chains grow as they fill
        // (`Pool::take`) alone.
        let _ = reclaim::after_forks((room / 2).max(16));
    }

    /// Adds a pool of `n` instances to the chain that `head` starts, up to
    /// [`GROW_MAX`] instances in all. Writer, with the pools' mutex held;
    /// may sleep.
    pub(super) fn grow(&self, pools: &Pools<'_>, head: &Pool, rt: &Runtime, n: usize) {
        // Cleared, under the mutex held here, before its kretprobe's
        // unregistration returns: a kretprobe found there is registered.
        let Some(rp) = head.rp.get() else {
            return;
        };
        let total: usize = head.chain(pools).map(|p| p.max).sum();
        let n = n.min(GROW_MAX.saturating_sub(total));
        if n == 0 {
            return;
        }
        let Ok(mut pool) = Pool::new(rp, n, head.data_size, Growth::Fixed, *rt) else {
            // Asked for again by the next entry that finds the chain's last
            // pool half taken.
            return;
        };
        pool.extra = true;
        // Listed first, so that the lookups know its stubs before a frame
        // can return into one.
        let pool = pools.push_front(pool);
        if let Some(last) = head.chain(pools).last() {
            // Cannot fail: `last` names no pool, and `pool` is listed and
            // not retired.
            let _ = pools.link(&last.next, pool);
        }
    }

    /// Checks `rp` as the kernel's `register_kretprobe()` does and gives it
    /// a pool. Process context, with the pools' mutex held.
    fn prepare(&self, core: &Core, rp: RetClient, growth: Growth) -> Result<KBox<Pool>> {
        let r = rp.request()?;
        core.check_func_entry(rp.entry())?;
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
        let pool = Pool::new(rp, max, r.data_size, growth, *core.runtime())?;
        give_pool(rp, &pool)?;
        Ok(pool)
    }

    /// Checks `rp` as [`Kretprobes::prepare`] does and gives it `pool`, a
    /// pool of the same registration (`shared`). Process context, with the
    /// pools' mutex held.
    fn join(&self, core: &Core, rp: RetClient, pool: &Pool) -> Result {
        let r = rp.request()?;
        core.check_func_entry(rp.entry())?;
        // A shared pool's instances hold the data of any of its kretprobes.
        if r.data_size > pool.data_size {
            return Err(EINVAL);
        }
        give_pool(rp, pool)?;
        pool.members.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The pool of `rp` if `rp` is registered, found in O(1), as the
    /// kernel's `__get_valid_kprobe()` finds a kprobe by its address: its
    /// entry probe is registered, which only `register` does after giving
    /// `rkp_private` its pool, and that pool names it. Writer.
    fn registered_pool<'a>(
        &self,
        pools: &'a Pools<'_>,
        core: &Core,
        rp: RetClient,
    ) -> Option<&'a Pool> {
        let (pool, kp) = (NonNull::new(rp.private().cast::<Pool>())?, rp.entry());
        if !is_kretprobe(kp) || !core.is_registered(kp) {
            return None;
        }
        // SAFETY: a registered kretprobe's `rkp_private` is the pool that
        // `register` gave to the list, which frees it only after clearing
        // `rkp_private` (`leave`, and `register`'s failure), with the mutex
        // held.
        let p = unsafe { pools.get(pool) };
        // A shared pool names the first of its kretprobes.
        let names_it = p.rp.holds(rp) || (p.shared() && p.rp.is_set());
        names_it.then_some(p)
    }

    /// Takes `rp`, whose entry probe was registered with `pool` and has
    /// just been unregistered, off its pool: clears its `rkp_private` and
    /// returns the pool if `rp` was its last kretprobe, to be retired. A
    /// shared pool outlives its kretprobes but the last: the entries of the
    /// others still take its instances. `None` for a kretprobe already
    /// left. Writer, with the pools' mutex held.
    fn leave<'a>(&self, rp: RetClient, pool: &'a Pool) -> Option<&'a Pool> {
        if rp.private().is_null() {
            return None;
        }
        rp.set_private(core::ptr::null_mut());
        let members = &pool.members;
        let left = members.load(Ordering::Relaxed).saturating_sub(1);
        members.store(left, Ordering::Relaxed);
        (left == 0).then_some(pool)
    }

    /// Unregisters `rps`. Instances still out keep their pool alive as a
    /// zombie, and rkprobes loaded, until their frames return. Process
    /// context, may sleep; O(1) per kretprobe.
    pub(crate) fn unregister(&self, core: &Core, rps: &[RetClient]) {
        self.unregister_each(core, rps.iter().copied());
    }

    /// [`Kretprobes::unregister`] of the kretprobes `rps` yields.
    pub(crate) fn unregister_each(
        &self,
        core: &Core,
        rps: impl Iterator<Item = RetClient> + Clone,
    ) {
        let mut pools = self.pools.lock();
        let n = rps.clone().count();
        let (Ok(mut kps), Ok(mut mine), Ok(mut rks)) = (
            KVec::<Client>::with_capacity(n, GFP_KERNEL),
            KVec::<&Pool>::with_capacity(n, GFP_KERNEL),
            KVec::<(RetClient, &Pool)>::with_capacity(n, GFP_KERNEL),
        ) else {
            // Without memory for the batch, one at a time, with nothing to
            // allocate.
            drop(pools);
            for rp in rps {
                self.unregister_one(core, rp);
            }
            return;
        };
        for rp in rps {
            if let Some(pool) = self.registered_pool(&pools, core, rp) {
                // Cannot fail: capacity reserved.
                let _ = kps.push(rp.entry(), GFP_KERNEL);
                let _ = rks.push((rp, pool), GFP_KERNEL);
            }
        }
        // No CPU is in the entry handler of these after this.
        core.unregister_many(&kps);
        for &(rp, pool) in rks.iter() {
            // A kretprobe named twice in the batch is left once.
            if let Some(pool) = self.leave(rp, pool) {
                // Cannot fail: capacity reserved.
                let _ = mine.push(pool, GFP_KERNEL);
            }
        }
        // With the pools their chains grew by, freed below if drained; the
        // reclaim work frees the others (`retire` asked for it).
        self.retire(&pools, &mine);
        drop((mine, rks));
        pools.free_retired();
    }

    /// Unregisters one kretprobe without allocating; its pool is freed by
    /// the reclaim work. Process context.
    fn unregister_one(&self, core: &Core, rp: RetClient) {
        let pools = self.pools.lock();
        let Some(pool) = self.registered_pool(&pools, core, rp) else {
            return;
        };
        core.unregister_many(&[rp.entry()]);
        if let Some(pool) = self.leave(rp, pool) {
            self.retire(&pools, &[pool]);
        }
        reclaim::kick_later();
    }
}

/// Marks those of `retired` (unregistered pools) that have no frame out for
/// the list to free ([`rcu_list::Guard::free_retired`]); the others stay as
/// zombies until the reclaim work finds them drained, which this asks for.
/// Writer; O(1) per pool of `retired`.
///
/// [`rcu_list::Guard::free_retired`]: crate::kernel_ext::rcu_list::Guard::free_retired
pub(super) fn mark_drained<'a>(pools: &Pools<'_>, retired: impl Iterator<Item = &'a Pool>) {
    let mut zombies = false;
    for p in retired {
        // A pool whose last frame returns after this stays listed for the
        // reclaim work. The last returning frame dropped its reference as
        // its last access to the pool, and the list frees it a grace period
        // after it is taken off.
        if !p.rp.is_set() && p.refs.load(Ordering::Acquire) == 0 {
            pools.retire(p);
        } else {
            zombies = true;
        }
    }
    if zombies {
        // Zombies: their last frame asks for the reclaim work; tasks that
        // exited with frames out are found there.
        reclaim::kick_later();
    }
}
