// SPDX-License-Identifier: GPL-2.0

//! Each CPU's scratch for the strings a hit stages
//! (`pure::probe_events::stage`): the strings of a record are read once,
//! into this scratch, while the size of the record is measured, and copied
//! from it into each trace instance's record and perf's, where the kernel
//! reads each string once to measure it and again for every copy.
//!
//! One per-CPU allocation, made when the first event with a string
//! argument is created and kept until rkprobes unloads: [`LEVELS`] slots
//! of [`SLOT`] bytes a CPU, as perf keeps one buffer a recursion context
//! for its trace events (`perf_trace_buf`). A hit takes the next free slot
//! of its CPU by a nesting count at the start of the area: a handler can
//! only be nested on its CPU by another that runs to its end first (an
//! interrupt or NMI whose kretprobe return handler runs, rkprobes'
//! `run_busy()`), so a count that every taker gives back before it returns
//! needs no atomic instruction, as a per-CPU count raised and lowered by
//! nesting contexts needs none. A hit nested deeper than [`LEVELS`], or
//! before the allocation, stages nothing and reads its strings twice.

use super::MAX_RECORD;
use crate::ffi;
use core::sync::atomic::{compiler_fence, AtomicPtr, Ordering};
use kernel::ffi::c_ulong;

/// Slots per CPU: a hit, and the handlers that may nest on it (in an
/// interrupt, and in an NMI of either).
const LEVELS: usize = 4;
/// Bytes of a slot: the dynamic data a record can hold.
const SLOT: usize = MAX_RECORD;
/// The nesting count's line, before the slots.
const HEADER: usize = 64;
/// Bytes per CPU.
const SIZE: usize = HEADER + LEVELS * SLOT;

/// The per-CPU area (an `alloc_percpu()` pointer), or null. Set once, from
/// process context, before the event whose probes read it is registered;
/// freed by [`free`] once no probe of an event is left.
static AREA: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// Allocates the per-CPU area unless it is there. Without memory, hits
/// read their strings twice. Process context.
pub(super) fn ensure() {
    if !AREA.load(Ordering::Acquire).is_null() {
        return;
    }
    // SAFETY: no preconditions; process context.
    let p = unsafe { ffi::rkp_tev_scratch_alloc(SIZE as c_ulong) }.cast::<u8>();
    if p.is_null() {
        return;
    }
    if AREA
        .compare_exchange(
            core::ptr::null_mut(),
            p,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        // SAFETY: ours, never published.
        unsafe { ffi::rkp_tev_scratch_free(p.cast()) };
    }
}

/// Frees the per-CPU area. Process context.
///
/// # Safety
///
/// No hit of a probe event runs or can start: every event's probes are
/// unregistered.
pub(super) unsafe fn free() {
    let p = AREA.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !p.is_null() {
        // SAFETY: from `rkp_tev_scratch_alloc`; no hit uses it (the
        // caller's contract).
        unsafe { ffi::rkp_tev_scratch_free(p.cast()) };
    }
}

/// A slot taken by a hit, given back when dropped.
pub(super) struct Scratch {
    count: *mut u32,
    slot: *mut u8,
}

impl Scratch {
    /// Takes this CPU's next free slot. Probe-hit context, with preemption
    /// or interrupts off until the slot is dropped.
    #[inline(always)]
    pub(super) fn take() -> Option<Scratch> {
        let area = AREA.load(Ordering::Acquire);
        if area.is_null() {
            return None;
        }
        let base = ffi::percpu::this_cpu_ptr(area);
        let count = base.cast::<u32>();
        // SAFETY: this CPU's copy of the area, `SIZE` bytes, 64-aligned;
        // its first word is the nesting count, which only this CPU touches
        // and every nested taker restores before it returns (module
        // comment): the read and the write need not be one instruction.
        let n = unsafe { count.read_volatile() } as usize;
        if n >= LEVELS {
            return None;
        }
        // SAFETY: as above.
        unsafe { count.write_volatile(n as u32 + 1) };
        compiler_fence(Ordering::SeqCst);
        Some(Scratch {
            count,
            slot: base.wrapping_add(HEADER + n * SLOT),
        })
    }

    /// The slot's bytes.
    #[inline(always)]
    pub(super) fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: slot `n` of this CPU's area, which is this taker's until
        // it drops (a nested taker takes the next one and gives it back
        // before this one resumes); the area lives until no hit can run.
        unsafe { core::slice::from_raw_parts_mut(self.slot, SLOT) }
    }
}

impl Drop for Scratch {
    #[inline(always)]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        // SAFETY: the count `take` raised, on the same CPU (the caller
        // cannot migrate while it holds the slot).
        unsafe {
            self.count
                .write_volatile(self.count.read_volatile().wrapping_sub(1))
        };
    }
}
