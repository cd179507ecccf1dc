// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering kretprobes, and reclaiming their pools.
//!
//! Registration gives each kretprobe a pool, publishes the pools' stub
//! ranges and registers the entry probes; unregistration unregisters the
//! entry probes and retires the pools, which live on as zombies while
//! frames are out. The reclaim work ([`Kretprobes::gc`]) gives back the
//! instances of dead tasks and frees drained zombies; [`Kretprobes::drain`]
//! waits for the last of them at unload.
//!
//! Context: process context, may sleep. Everything here holds
//! `Kretprobes::pools`, which is taken before `Core::reg` (the lock table in
//! `rust/kprobe/mod.rs`), except `drain`'s waiting: the reclaim work that it
//! flushes takes `pools` itself.

use super::{pool::Pool, pre_handler, Kretprobes, Pools, Ranges};
use crate::{
    abi::{RkpKretprobe, KRETPROBE_MAXACTIVE_MAX, KRETPROBE_MAX_DATA_SIZE},
    ffi::runtime::Runtime,
    kernel_ext::{
        cpu, delay, module, reclaim,
        sync::{synchronize_rcu, synchronize_rcu_tasks},
        vec,
    },
    kprobe::{abi::RkpKprobe, Core},
};
use core::{pin::Pin, sync::atomic::Ordering};
use kernel::{ffi::c_int, prelude::*};

impl Kretprobes {
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
        if pools.is_empty() {
            // Nothing to wait for.
            return;
        }
        for &pool in pools {
            // SAFETY: listed pools are live while the mutex is held.
            unsafe { &*pool }
                .rp
                .store(core::ptr::null_mut(), Ordering::Release);
        }
        // No CPU is in a return handler that saw the client's structure after
        // this: return handlers run with preemption off, which the grace
        // period waits for.
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
                reclaim::kick_later();
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
            reclaim::kick_later();
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
        // Nothing queues reclaim work any more.
        reclaim::sync();
        // A task that returned through the trampoline may still be in its
        // last instructions, in rkprobes' text, possibly preempted there.
        synchronize_rcu_tasks(rt);
        synchronize_rcu();
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
