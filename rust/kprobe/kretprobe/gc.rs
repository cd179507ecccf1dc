// SPDX-License-Identifier: GPL-2.0

//! The kretprobe pools' reclaim work and unload: giving back the instances
//! of dead tasks, growing chains that asked for more, freeing drained
//! zombie pools, and waiting for the last frames at unload.
//!
//! Context: process context, may sleep; everything here holds
//! `Kretprobes::pools` but `drain`'s waiting (the lock table in
//! `rust/kprobe/mod.rs`).

use super::{pool::Pool, register::mark_drained, Kretprobes};
use crate::{
    ffi::runtime::Runtime,
    kernel_ext::{
        sync::{synchronize_rcu, synchronize_rcu_tasks},
        task,
        work::reclaim,
    },
};
use core::{pin::Pin, sync::atomic::Ordering};
use kernel::prelude::*;

impl Kretprobes {
    /// The reclaim work: gives back the instances of dead tasks and frees
    /// drained zombie pools; returns how many zombies are left. It walks
    /// every pool, off the registration paths. Process context, may sleep.
    pub(crate) fn gc(&self, rt: &Runtime) -> usize {
        let mut pools = self.pools.lock();
        let zombie = |p: &Pool| !p.rp.is_set();
        let mut wanting: KVec<&Pool> = KVec::new();
        for p in pools.iter() {
            // A zombie's chain was cut when it was retired: it grows no
            // more.
            if p.wants_more.load(Ordering::Relaxed)
                && !zombie(p)
                && wanting.push(p, GFP_KERNEL).is_err()
            {
                break;
            }
        }
        for &p in wanting.iter() {
            // As large as the chain so far.
            let total: usize = p.chain(&pools).map(|q| q.max).sum();
            self.grow(&pools, p, rt, total);
            // Cleared after the pool is linked: an entry that finds the
            // new last pool half taken asks again.
            p.wants_more.store(false, Ordering::Relaxed);
        }
        drop(wanting);
        for p in pools.iter() {
            p.reclaim_dead();
        }
        self.keep_up(&pools, rt);
        // Those with frames still out stay, and ask for another pass.
        mark_drained(&pools, pools.iter().filter(|&p| zombie(p)));
        pools.free_retired();
        pools.iter().filter(|&p| zombie(p)).count()
    }

    /// Waits until no frame can return into a stub any more and frees every
    /// pool. Called at unload, after every kretprobe was unregistered.
    /// Process context, may sleep.
    pub(crate) fn drain(&self, rt: &Runtime) {
        {
            // Pools still registered lost their entry probe with the rest of
            // the probes: unregister them as `unregister` would.
            let pools = self.pools.lock();
            let mut left: KVec<&Pool> = KVec::new();
            for pool in pools.iter() {
                if pool.rp.is_set() && !pool.extra && left.push(pool, GFP_KERNEL).is_err() {
                    // Retire what fits now.
                    break;
                }
            }
            if !left.is_empty() {
                pr_warn!("{} kretprobes still registered at unload\n", left.len());
                self.retire(&pools, &left);
            }
        }
        let mut waited = 0u32;
        while self.gc(rt) > 0 {
            if waited % 100 == 0 {
                pr_info!("waiting for kretprobe frames to return\n");
            }
            waited = waited.wrapping_add(1);
            task::msleep(100);
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
        for p in pools.iter() {
            // Cannot happen after `drain`; leaking beats freeing live stubs.
            pr_err!("kretprobe pool {:p} left at unload\n", p);
        }
    }
}
