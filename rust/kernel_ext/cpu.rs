// SPDX-License-Identifier: GPL-2.0

//! The CPU and context the code runs on.

use crate::ffi;

/// The number of CPU ids (`nr_cpu_ids`): every CPU id is below it. Any
/// context.
pub(crate) fn nr_cpu_ids() -> usize {
    // SAFETY: `nr_cpu_ids` is set at boot, before modules load, and never
    // changes afterwards.
    unsafe { ffi::nr_cpu_ids as usize }
}

/// The number of possible CPUs (`num_possible_cpus()`). Any context.
pub(crate) fn num_possible_cpus() -> usize {
    // SAFETY: no preconditions.
    unsafe { ffi::rkp_num_possible_cpus() as usize }
}

/// The id of the CPU this runs on (`raw_smp_processor_id()`). Any context;
/// the answer stays true only while the caller cannot migrate (interrupts
/// or preemption off).
#[inline]
pub(crate) fn raw_smp_processor_id() -> usize {
    // SAFETY: no preconditions.
    unsafe { ffi::rkp_smp_processor_id() as usize }
}

/// The interrupt level of the current context: its NMI and hardirq nesting
/// and whether it serves a softirq, as bits of the preempt count. Code and an
/// exception it raises (#DE, #UD, #GP) share a level; an interrupt, an NMI,
/// an int3 (entered as an NMI) or a softirq that runs in between is at
/// another. Any context, NMI included.
#[inline]
pub(crate) fn irq_level() -> u32 {
    // SAFETY: reads this CPU's preempt count; no preconditions.
    unsafe { ffi::rkp_irq_level() }
}
