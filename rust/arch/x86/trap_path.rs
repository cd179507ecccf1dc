// SPDX-License-Identifier: GPL-2.0

//! The kernel's int3 path, traced: every instruction that runs between a
//! kernel breakpoint and rkprobes' die notifier, and after it until the
//! trap returns.
//!
//! The kernel's kprobes take int3 in `exc_int3()` before the die chain;
//! a module's handler runs only at the chain's turn, after
//! `kprobe_int3_handler()`, `notify_die()`, `rcu_read_lock()` (with
//! PREEMPT_RCU the out-of-line `__rcu_read_lock()`), lockdep's
//! `lock_acquire()` when the kernel has it, and the notifiers ahead of
//! rkprobes'; `rcu_read_unlock()` follows it. A probe on any of that code
//! traps again inside the trap, before rkprobes can see that it is
//! nested: the CPU recurses until its stack overflows. The kernel's
//! blacklist does not name that code, because its own kprobes never run
//! it before their handler. Which functions these are depends on the
//! kernel's configuration and on the notifiers registered, so rkprobes
//! does not list them: it runs them once at load and records them.
//!
//! At load, a temporary die notifier at rkprobes' priority (where the
//! core's will be) takes an int3 of rkprobes' own
//! ([`ffi::rkp_trap_path_int3`]), so the trace runs in real int3 context
//! (interrupts off, NMI-entered: RCU and lockdep take their int3 branches).
//! Inside it, with the trap flag set, it calls what `exc_int3()` calls for
//! a breakpoint: `kprobe_int3_handler()` (on a kernel with kprobes) and
//! `notify_die(DIE_INT3)` with a copy of the trap's registers. The die
//! chain runs as it does for every probe hit, up to this notifier, which
//! stops it, and back out; each instruction raises a #DB, and the
//! notifier records its address. The entry and exit code around these
//! calls is `noinstr` and `.entry.text`, blacklisted whole.
//!
//! The trace sees the branches the path takes in int3 context with no
//! report pending; `Documentation/reliability.rst` says what that covers.

use crate::{
    ffi::{self, runtime::Runtime},
    kernel_ext::notifier::{Die, DieChain, DieEvent, Handler, Notifier, Notify},
};
use core::{
    arch::asm,
    sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering},
};
use kernel::{ffi::c_ulong, prelude::*};

/// The most instructions a trace records (a lockdep kernel's path runs a
/// few thousand).
const MAX_STEPS: usize = 1 << 16;

/// DR6's single-step bit (`DR_STEP`).
const DR_STEP: c_ulong = 1 << 14;

/// The trace's state: waiting for rkprobes' int3, tracing, done.
const ARMED: u8 = 1;
const TRACING: u8 = 2;
const DONE: u8 = 3;

/// The state of the one trace that can run at a time (at load, under the
/// module loader's lock), read by the notifier on the traced CPU.
static STATE: AtomicU8 = AtomicU8::new(0);
/// The recorded addresses: `BUF[..LEN]`, `MAX_STEPS` long.
static BUF: AtomicPtr<u64> = AtomicPtr::new(core::ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);

/// The temporary notifier's handler.
struct Tracer<'a> {
    rt: &'a Runtime,
    /// The address of rkprobes' int3.
    site: usize,
}

impl Handler<DieChain> for Tracer<'_> {
    /// Exception context (int3, #DB), NMI-like.
    fn notify(&self, event: DieEvent<'_>) -> Notify {
        // SAFETY: every member of the `cs` union holds the selector in its
        // low bits.
        if unsafe { event.regs.__bindgen_anon_1.cs } & 3 != 0 {
            return Notify::Done;
        }
        match event.die {
            Die::Int3 if event.regs.ip.wrapping_sub(1) == self.site => {
                match STATE.load(Ordering::Relaxed) {
                    ARMED => {
                        STATE.store(TRACING, Ordering::Relaxed);
                        self.trace(event.regs);
                        STATE.store(DONE, Ordering::Relaxed);
                        // `ip` is after the int3: the caller goes on.
                        Notify::Stop
                    }
                    // The traced notification, inside `trace`.
                    TRACING => Notify::Stop,
                    _ => Notify::Done,
                }
            }
            Die::Debug(dr6) if STATE.load(Ordering::Relaxed) == TRACING => {
                // SAFETY: the #DB handler's DR6 value, live during the call.
                if unsafe { dr6.read() } & DR_STEP == 0 {
                    return Notify::Done;
                }
                let i = LEN.load(Ordering::Relaxed);
                if i < MAX_STEPS {
                    let buf = BUF.load(Ordering::Relaxed);
                    // SAFETY: `buf` holds `MAX_STEPS` words while a trace
                    // runs (`trace_int3_path`); only this CPU writes.
                    unsafe { buf.add(i).write(event.regs.ip as u64) };
                }
                LEN.store(i.saturating_add(1), Ordering::Relaxed);
                // The interrupted flags keep TF: the next instruction traps.
                Notify::Stop
            }
            _ => Notify::Done,
        }
    }
}

impl Tracer<'_> {
    /// Runs what `exc_int3()` runs for a kernel breakpoint with the trap
    /// flag set, on a copy of `regs`. int3 context, interrupts off.
    fn trace(&self, regs: &ffi::pt_regs) {
        let mut copy = *regs;
        let copy = &mut copy as *mut ffi::pt_regs;
        // SAFETY: setting TF makes every following instruction of this CPU
        // raise a #DB, which the notifier (registered) takes and returns
        // from with TF still set, until it is cleared below. Interrupts are
        // off, so only this code, the #DBs' own handler (entered with TF
        // clear) and NMIs (likewise) run meanwhile.
        unsafe { asm!("pushfq", "orq $0x100, (%rsp)", "popfq", options(att_syntax)) };
        // SAFETY: int3 context with interrupts off; `copy` are the
        // registers of an int3 at rkprobes' site, where the kernel has no
        // kprobe and which only this notifier claims.
        unsafe {
            let _ = self.rt.kprobe_int3_handler(copy);
            self.rt.notify_die_int3(copy);
        }
        // SAFETY: clears TF, which this function set.
        unsafe {
            asm!(
                "pushfq",
                "andq $-0x101, (%rsp)",
                "popfq",
                options(att_syntax)
            )
        };
    }
}

/// Traces the kernel's int3 path (module doc): the addresses of the
/// instructions it ran, sorted, each once. Process context, may sleep; no
/// probe of rkprobes may exist yet (its notifier is not registered).
pub(crate) fn trace_int3_path(rt: &Runtime) -> Result<KVec<usize>> {
    let mut buf = VVec::<u64>::with_capacity(MAX_STEPS, GFP_KERNEL)?;
    // SAFETY: a function of trap_path.c without preconditions.
    let site = unsafe { ffi::rkp_trap_path_site_addr() } as usize;
    let tracer = Tracer { rt, site };
    let nb = Notifier::<DieChain, Tracer<'_>>::new(super::DIE_NOTIFIER_PRIORITY);
    BUF.store(buf.as_mut_ptr(), Ordering::Relaxed);
    LEN.store(0, Ordering::Relaxed);
    STATE.store(ARMED, Ordering::Release);
    // SAFETY: `nb` and `tracer` stay in place until `nb` is unregistered
    // below (or dropped, on the error path).
    let reg = unsafe { nb.register(&tracer) };
    if reg.is_ok() {
        // SAFETY: the int3 returns once the notifier took it, which it does
        // while `STATE` is `ARMED`.
        unsafe { ffi::rkp_trap_path_int3() };
    }
    nb.unregister();
    let state = STATE.swap(0, Ordering::Acquire);
    BUF.store(core::ptr::null_mut(), Ordering::Relaxed);
    reg?;
    let len = LEN.load(Ordering::Relaxed);
    if state != DONE || len == 0 {
        pr_err!("the int3 path could not be traced; refusing to load\n");
        return Err(EIO);
    }
    if len > MAX_STEPS {
        pr_err!("the int3 path runs over {MAX_STEPS} instructions; refusing to load\n");
        return Err(E2BIG);
    }
    // SAFETY: the notifier wrote the first `len` words, and no CPU writes
    // any more (unregistered, `STATE` idle).
    unsafe { buf.set_len(len) };
    crate::pure::sites::sort(&mut buf);
    let mut ips = KVec::new();
    for &ip in buf.iter() {
        let ip = ip as usize;
        if ips.last() != Some(&ip) {
            ips.push(ip, GFP_KERNEL)?;
        }
    }
    Ok(ips)
}
