// SPDX-License-Identifier: GPL-2.0

//! Events and probes taken down: a probe unregistered from the probe core,
//! an event's trace event removed from the tracing core (refused with
//! `EBUSY` while a tracefs file of it is open) and freed after the grace
//! periods that let hits still inside it finish, and the trace buffers
//! reset so that a later event given a removed one's id never shows its
//! records.
//!
//! Process context, may sleep (grace periods, the kernel's `event_mutex`);
//! called with `Events::inner` held, or at unload.

use super::{Event, Events, Probe};
use crate::{
    ffi::{rkp_tev_free, rkp_tev_remove},
    kernel_ext::{module, mutex::KernelMutexGuard, sync::synchronize_rcu, vec},
    kprobe::client::{Client, RetClient},
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

impl Events {
    /// Registers one probe, every site of it in one batch. Process
    /// context.
    pub(super) fn register_probe(&self, p: &Probe) -> Result {
        // An event probe has no kprobe (`eprobe`).
        if p.eprobe.is_some() {
            return Ok(());
        }
        let core = self.core();
        if p.nr_sites() == 1 {
            return if p.is_return() {
                core.kretprobes()
                    .register(core, &[p.ret_client()], p.growth(), false)
            } else {
                core.register_many(&[p.client()])
            };
        }
        if p.is_return() {
            let mut rps = KVec::with_capacity(p.nr_sites(), GFP_KERNEL)?;
            for r in p.ret_clients() {
                rps.push(r, GFP_KERNEL)?;
            }
            core.kretprobes().register(core, &rps, p.growth(), true)
        } else {
            let mut kps = KVec::with_capacity(p.nr_sites(), GFP_KERNEL)?;
            for c in p.clients() {
                kps.push(c, GFP_KERNEL)?;
            }
            core.register_many(&kps)
        }
    }

    /// Unregisters one probe, every site of it (in one batch, allocating
    /// nothing).
    pub(super) fn unregister_probe(&self, p: &Probe) {
        if p.eprobe.is_some() {
            return;
        }
        if p.is_return() {
            self.core()
                .kretprobes()
                .unregister_each(self.core(), p.ret_clients());
        } else {
            self.core().unregister_each(p.clients());
        }
    }

    /// Unregisters every probe of `ev`, one at a time (for errors and
    /// allocation failures; `destroy_many` batches).
    pub(super) fn unregister_probes(&self, ev: &mut Pin<KBox<Event>>) {
        // SAFETY: `probes` is not structurally pinned.
        let evm = unsafe { ev.as_mut().get_unchecked_mut() };
        for p in evm.probes.iter() {
            self.unregister_probe(p);
        }
    }

    /// Removes the trace events and the probes of `evs`, with a few grace
    /// periods for the whole batch; gives back, with the error, the events
    /// whose trace event is in use (`EBUSY`), and with `stop_at_busy` every
    /// event after the first of those too, untouched (a write's `-:`
    /// commands, which stop at the first that fails). Writer.
    pub(super) fn destroy_many(
        &self,
        evs: KVec<Pin<KBox<Event>>>,
        stop_at_busy: bool,
    ) -> (KVec<Pin<KBox<Event>>>, Option<Error>) {
        let n = evs.len();
        if n == 0 {
            return (evs, None);
        }
        let (Ok(mut removed), Ok(mut busy)) = (
            KVec::<Pin<KBox<Event>>>::with_capacity(n, GFP_KERNEL),
            KVec::<Pin<KBox<Event>>>::with_capacity(n, GFP_KERNEL),
        ) else {
            // Without memory for the batch, one at a time, in place: nothing
            // here allocates, so no event can be dropped while registered.
            let mut evs = evs;
            let mut err = None;
            // Each turn takes the first event not tried yet.
            for _ in 0..n {
                if stop_at_busy && err.is_some() {
                    break;
                }
                let Some(ev) = vec::take(&mut evs, 0) else {
                    break;
                };
                if let Err((ev, e)) = self.destroy(ev) {
                    err.get_or_insert(e);
                    // Cannot fail: `take` left the room, and a push within
                    // the capacity does not allocate. At the end, after the
                    // events not tried yet: the loop does not meet it again.
                    let _ = evs.push(ev, GFP_KERNEL);
                }
            }
            return (evs, err);
        };
        // Events never enabled were never hit (`record` tests `enabled`
        // first, and the probes were registered disabled): their removal
        // waits for no hit. Enabling (by a trace instance or by perf) takes
        // `event_mutex`, so what is seen under it holds until the events are
        // removed under the same hold. The probes' unregistration keeps its
        // own grace period.
        let mut em = self.event_mutex.lock();
        let hit = evs.iter().any(|e| e.ever_enabled.load(Ordering::Acquire));
        if hit {
            // Hits that saw an instance's link before the events were
            // disabled may still be committing into its file.
            drop(em);
            synchronize_rcu();
            em = self.event_mutex.lock();
        }
        let mut err = None;
        {
            for ev in evs {
                if stop_at_busy && err.is_some() {
                    // Not tried: a command before it failed.
                    let _ = busy.push(ev, GFP_KERNEL);
                    continue;
                }
                let r = if ev.tev.is_null() {
                    0
                } else {
                    // SAFETY: a trace event made by `register_event`; the
                    // mutex is held.
                    unsafe { rkp_tev_remove(self.event_mutex.as_ptr(), ev.tev) }
                };
                // Cannot fail: room for all of them.
                if r == 0 {
                    let _ = removed.push(ev, GFP_KERNEL);
                } else {
                    err.get_or_insert(Error::from_errno(r));
                    let _ = busy.push(ev, GFP_KERNEL);
                }
            }
            self.reset_buffers(&em);
            drop(em);
        }
        // A hit may still read the removed events' C side.
        if hit {
            synchronize_rcu();
        }
        let mut kps: KVec<Client> = KVec::new();
        let mut rps: KVec<RetClient> = KVec::new();
        let mut batched = true;
        for ev in removed.iter_mut() {
            if !ev.tev.is_null() {
                // SAFETY: removed from the tracing core, past a grace period.
                unsafe { ev.as_mut().free_tev() };
            }
            // SAFETY: `probes` is not structurally pinned.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter() {
                if p.eprobe.is_some() {
                    continue;
                }
                let pushed = if p.is_return() {
                    p.ret_clients().all(|r| rps.push(r, GFP_KERNEL).is_ok())
                } else {
                    p.clients().all(|c| kps.push(c, GFP_KERNEL).is_ok())
                };
                if !pushed {
                    batched = false;
                }
            }
        }
        if batched {
            // Each waits for a grace period when it has something to take
            // away, and only then.
            if !kps.is_empty() {
                self.core().unregister_many(&kps);
            }
            if !rps.is_empty() {
                self.core().kretprobes().unregister(self.core(), &rps);
            }
        } else {
            for ev in removed.iter_mut() {
                self.unregister_probes(ev);
            }
        }
        drop(removed);
        (busy, err)
    }

    /// Removes the trace event and the probes of `ev`; gives it back with
    /// `EBUSY` when the trace event is in use.
    fn destroy(
        &self,
        mut ev: Pin<KBox<Event>>,
    ) -> core::result::Result<(), (Pin<KBox<Event>>, Error)> {
        if !ev.tev.is_null() {
            // See `destroy_many`.
            synchronize_rcu();
            let r = {
                let em = self.event_mutex.lock();
                // SAFETY: a trace event made by `register_event`; the mutex
                // is held.
                let r = unsafe { rkp_tev_remove(self.event_mutex.as_ptr(), ev.tev) };
                self.reset_buffers(&em);
                r
            };
            if r != 0 {
                return Err((ev, Error::from_errno(r)));
            }
            synchronize_rcu();
            // SAFETY: removed and past a grace period.
            unsafe { ev.as_mut().free_tev() };
        }
        self.unregister_probes(&mut ev);
        Ok(())
    }

    /// Empties the buffers of the trace instances that had an event just
    /// removed enabled (the tracing core marks them), as the kernel's
    /// `dyn_event_release()` does before it lets go of `event_mutex`: a
    /// later event may get a removed one's id, and must not be shown its
    /// records. Process context.
    fn reset_buffers(&self, _held: &KernelMutexGuard) {
        // SAFETY: the kernel's `tracing_reset_all_online_cpus()`, found and
        // confirmed at load; process context, called with `event_mutex` held
        // as the kernel calls it.
        unsafe { self.core().runtime().tracing_reset_all_online_cpus() };
    }
}

impl Event {
    /// Frees the event's trace event, clears `tev` and `perf_on` with it,
    /// and drops the module reference `register_event` took.
    ///
    /// # Safety
    ///
    /// `tev` is set, removed from the tracing core (`rkp_tev_remove`), and
    /// a grace period has passed since: no hit or tracefs reader can still
    /// see it.
    unsafe fn free_tev(self: Pin<&mut Self>) {
        // SAFETY: `tev` and `perf_on` are not structurally pinned.
        let e = unsafe { self.get_unchecked_mut() };
        // SAFETY: the caller's contract.
        unsafe { rkp_tev_free(e.tev) };
        // The reverse of `register_event`'s order: `tev` first.
        // SAFETY: plain fields of `e`, which is valid.
        unsafe {
            core::ptr::write_volatile(&mut e.tev, core::ptr::null_mut());
            core::ptr::write_volatile(&mut e.perf_on, core::ptr::null());
        }
        // SAFETY: the reference `register_event` took with `tev`.
        unsafe { module::put_self() };
    }
}
