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
//! This file holds the hit path: the entry probe's [`pre_handler`], in int3
//! context or the ftrace callback, and the [`trampoline_handler`], in
//! whatever context the function returns in, NMI included; and the lookups
//! that see through hijacked frames ([`Kretprobes::find_ret_addr`],
//! [`Kretprobes::stack_trace`]), in any context with preemption off. None of
//! them takes a lock. The pools and their stubs are `pool`; registration,
//! unregistration and reclaim, in process context under `Kretprobes::pools`,
//! are `register` (whose work `kernel_ext/work.c` runs through [`rkp_kretprobe_gc`],
//! here).
//!
//! Lock order: see the table in `rust/kprobe/mod.rs`. `Kretprobes::pools`
//! is taken before the core's `Core::reg`, never under it or under
//! `event_mutex`.

mod gc;
mod pool;
mod register;
mod stubs;

use super::{
    client::{kretprobe_entry, Client, RetClient, RetEntry},
    Core,
};
use crate::{
    arch,
    ffi::{self, runtime::Runtime},
    kernel_ext::{
        nofault,
        rcu_list::{self, RcuList},
        sync::{NoPreempt, PreemptNotraceGuard},
        task,
        work::reclaim,
    },
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{c_str, ffi::c_ulong, prelude::*, static_lock_class};
pub(crate) use pool::{Growth, Pool};

/// The writer's hold on the pools' list: every pool, registered or zombie.
/// Readers walk the list without a lock, as an RCU list is walked
/// ([`Kretprobes::pools_rcu`]); writers change it with its mutex held, in
/// O(1) per pool: a pool is linked first, and freed only a grace period
/// after it was taken off (`kernel_ext/rcu_list.rs`).
type Pools<'a> = rcu_list::Guard<'a, Pool>;

/// The kretprobe part of the probe core.
#[pin_data(PinnedDrop)]
pub(crate) struct Kretprobes {
    /// The pools, which own their memory.
    #[pin]
    pools: RcuList<Pool>,
}

impl Kretprobes {
    /// No pools yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            pools <- RcuList::new(c_str!("rkprobes_kretprobes"), static_lock_class!()),
        })
    }

    /// The listed pools, for as long as `rcu`, an RCU read-side critical
    /// section, lasts: a pool reachable from the list is freed only a grace
    /// period after it was taken off (`RcuList`).
    fn pools_rcu<'a>(&'a self, rcu: &'a PreemptNotraceGuard) -> impl Iterator<Item = &'a Pool> {
        self.pools.iter_rcu(rcu)
    }

    /// The current task's innermost frame that returns into a stub, above
    /// the stack address `above`: its return address's stack word and the
    /// real return address. Any context.
    fn next_hijacked(&self, above: usize) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        let rcu = PreemptNotraceGuard::new();
        for pool in self.pools_rcu(&rcu) {
            for inst in pool.instances() {
                let Some((fp, ret)) = inst.current_frame() else {
                    continue;
                };
                if fp <= above || best.is_some_and(|(b, _)| b <= fp) {
                    continue;
                }
                // A frame returning right now has its real address back.
                if nofault::read_kernel_word(fp) == Ok(inst.stub()) {
                    best = Some((fp, ret));
                }
            }
        }
        best
    }

    /// `stack_trace_save()` that sees through hijacked frames: where the
    /// unwinder stops at a frame that returns into a stub, the walk goes on
    /// from the real return address. Returns the number of entries. Any
    /// context.
    pub(crate) fn stack_trace(&self, rt: &Runtime, store: &mut [c_ulong], skip: u32) -> usize {
        let mut n = task::stack_trace_save(store, skip);
        if !rt.has_stack_trace_save_regs() {
            return n;
        }
        let here = 0usize;
        let mut above = core::ptr::addr_of!(here) as usize;
        while n < store.len() {
            let Some((fp, ret)) = self.next_hijacked(above) else {
                break;
            };
            let rest = store.get_mut(n..).unwrap_or(&mut []);
            // The caller of the hijacked frame, as it will be after the
            // return.
            let m = task::stack_trace_save_from(rt, ret, fp.wrapping_add(8), rest);
            n += m.min(rest.len());
            above = fp;
        }
        n
    }

    /// The real return address of the current task's frame whose return
    /// address was replaced by `addr`, or `addr`. Caller with preemption off.
    pub(crate) fn find_ret_addr(&self, addr: usize) -> usize {
        let rcu = PreemptNotraceGuard::new();
        let real = self
            .pools_rcu(&rcu)
            .find(|p| {
                let (s, e) = p.stub_range();
                s <= addr && addr < e
            })
            .and_then(|p| p.instance_at(addr))
            .and_then(|inst| inst.current_frame());
        real.map_or(addr, |(_, ret)| ret)
    }
}

/// The entry probe's handler of every kretprobe `rp`, whose pool is `pool`:
/// takes an instance and hijacks the return address. Entered from the hit
/// path through [`kretprobe_entry`], which makes the handles. int3 context
/// with interrupts off, or the ftrace callback or a detour with preemption
/// off: may not sleep, allocate or take locks (the pool is lock-free, safe
/// against nesting).
///
/// [`kretprobe_entry`]: crate::kprobe::client::kretprobe_entry
#[inline(always)]
fn pre_handler(rp: RetClient, pool: &Pool, regs: arch::EntryRegs<'_>, rcu: &NoPreempt) {
    match pool.take_one() {
        Ok(ri) => enter(rp, ri, regs),
        Err(()) => enter_chain(rp, pool, regs, rcu),
    }
}

impl RetEntry for Kretprobes {
    type Pool = Pool;

    #[inline(always)]
    fn enter(rp: RetClient, pool: &Pool, regs: arch::EntryRegs<'_>, rcu: &NoPreempt) {
        pre_handler(rp, pool, regs, rcu);
    }
}

/// [`pre_handler`] for a pool that is a chain's first (growing or shared):
/// apart, so that the one-pool case keeps its instance in registers.
#[inline(never)]
fn enter_chain(rp: RetClient, pool: &Pool, regs: arch::EntryRegs<'_>, rcu: &NoPreempt) {
    enter(rp, pool.take_from_chain(rcu), regs)
}

/// Hijacks the return address of the function being entered, whose entry
/// registers are `regs`, with the instance `ri` taken for it from `rp`'s
/// pool, or counts a miss when there was none.
#[inline(always)]
fn enter(rp: RetClient, ri: Option<pool::Taken<'_>>, mut regs: arch::EntryRegs<'_>) {
    let Some(mut ri) = ri else {
        rp.inc_nmissed();
        // Perhaps instances are held by exited tasks.
        reclaim::kick();
        return;
    };
    let (fp, ret) = regs.return_address();
    ri.set_frame(rp, ret, fp);
    if rp.run_entry_handler(ri.as_ptr(), regs.as_ptr()) != 0 {
        ri.give_back();
        return;
    }
    regs.hijack(ri.put_out());
}

/// Called by the architecture's trampoline when a hijacked frame returned
/// into its stub, `frame` (`rethook_callback.rs`), with the trampoline's
/// `regs`. Takes the instance back, then writes the real return address
/// back into the frame, sets `ip` to it, runs the return handler and gives
/// the instance back.
///
/// Runs in whatever context the function returned in, NMI included; the
/// handler runs with preemption off (interrupts as the function returned
/// with them, as the kernel's x86 `rethook`), and may not sleep, allocate
/// or take locks.
#[inline(always)]
pub(crate) fn trampoline_handler(regs: &mut ffi::pt_regs, frame: arch::ReturnFrame<'_, Pool>) {
    let Some(ri) = Pool::returning(&frame) else {
        unknown_stub(frame.stub())
    };
    let at = frame.addr();
    // The frame takes the instance back before it reads it, so that what it
    // reads, and the handler's view of the instance, cannot change under it.
    let (real, ri) = match ri.take_out() {
        Ok(ri) => {
            let (real, fp) = ri.frame();
            if fp != at {
                frame_mismatch(fp, at);
            }
            (real, Some(ri))
        }
        Err(lost) => (returned_unowned(lost, at), None),
    };
    // Before the handler, so that a stack trace taken there is right.
    frame.set_return(real);
    regs.ip = real as _;
    let Some(ri) = ri else {
        return;
    };
    let regs_ptr = core::ptr::from_mut(regs);
    let pool = ri.pool();
    arch::run_busy(|free| {
        // Published, this CPU with preemption off: the instance's
        // kretprobe, one of the pool's, stays registered until preemption
        // is back on (its unregistration clears the cell and waits for a
        // grace period).
        if !pool.rp.is_set() {
            return;
        }
        // The instance's own kretprobe, set at entry: the pool's, or one of
        // a shared pool's.
        let Some(rp) = ri.rp() else {
            return;
        };
        if free {
            rp.run_handler(ri.as_ptr(), regs_ptr);
        } else {
            // This CPU is inside a probe: as a probe hit there, missed.
            rp.inc_nmissed();
        }
    });
    ri.release();
}

/// The trampoline was called from a stub that belongs to no pool: the stack
/// no longer says where to return, and nothing sane is left to do, as in
/// the kernel's `rethook_trampoline_handler()`.
#[cold]
#[inline(never)]
fn unknown_stub(stub: usize) -> ! {
    panic!("rkprobes: kretprobe trampoline called from an unknown stub {stub:#x}");
}

/// An instance's recorded stack word is not the one its frame returned at.
#[cold]
#[inline(never)]
fn frame_mismatch(recorded: usize, returned: usize) {
    pr_err!("kretprobe frame mismatch: {recorded:#x} returned at {returned:#x}\n");
}

/// The address a frame returns to when its stub's instance was not out
/// (a bug: only that frame takes it back, see [`pool::Returning::take_out`]):
/// the one the instance records. Warns once. Trampoline context, any,
/// NMI included.
///
/// The frame's real return address exists nowhere but in the instance (the
/// stack held the stub's), so it is read there without owning it: the
/// fields are atomics, so the read is sound, if possibly stale. When the
/// recorded stack word is `frame`, the address was recorded for this very
/// frame, as no other frame has its return address there while this one is
/// live. Otherwise the instance was reused and the address is another
/// frame's; nothing better is known, and the trampoline returns there as it
/// always did. The return handler is not run in either case: the instance
/// and its data are not this frame's, and no references are put, as none
/// were taken back.
#[cold]
#[inline(never)]
fn returned_unowned(lost: pool::Returning<'_>, frame: usize) -> usize {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let (real, fp) = lost.recorded_frame();
    if !WARNED.swap(true, Ordering::Relaxed) {
        pr_warn!(
            "kretprobe frame at {:#x} returned into a stub whose instance was not out; \
             to {:#x}, recorded for {:#x}, without its handler\n",
            frame,
            real,
            fp
        );
    }
    real
}

/// The reclaim work (`rust/kernel_ext/work.c`). Process context.
#[no_mangle]
pub(crate) extern "C" fn rkp_kretprobe_gc() {
    if let Ok(core) = Core::get() {
        core.kretprobes().gc(core.runtime());
    }
}

/// Whether `kp` is the entry probe of a kretprobe. Any context.
pub(crate) fn is_kretprobe(kp: Client) -> bool {
    kp.pre_handler()
        .is_some_and(|h| core::ptr::eq(h as *const (), kretprobe_entry::<Kretprobes> as *const ()))
}
