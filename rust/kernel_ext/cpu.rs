// SPDX-License-Identifier: GPL-2.0

//! The CPU and context the code runs on.

use crate::ffi;

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
    ffi::percpu::cpu_number() as usize
}

/// The interrupt level of the current context: its NMI and hardirq nesting
/// and whether it serves a softirq, as bits of the preempt count. Code and an
/// exception it raises (#DE, #UD, #GP) share a level; an interrupt, an NMI,
/// an int3 (entered as an NMI) or a softirq that runs in between is at
/// another. Any context, NMI included.
#[inline]
pub(crate) fn irq_level() -> u32 {
    irq_level_of(preempt_count_raw())
}

/// The interrupt level that a [`preempt_count_raw`] of some context tells
/// ([`irq_level`]): a hit path keeps the raw count, and the rare reader
/// masks it.
#[inline]
pub(crate) fn irq_level_of(count: u32) -> u32 {
    // `count & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)`: the bits below
    // `PREEMPT_NEED_RESCHED`, which the mask leaves out anyway.
    const NMI_MASK: u32 = ((1 << ffi::NMI_BITS) - 1) << ffi::NMI_SHIFT;
    const HARDIRQ_MASK: u32 = ((1 << ffi::HARDIRQ_BITS) - 1) << ffi::HARDIRQ_SHIFT;
    count & (NMI_MASK | HARDIRQ_MASK | ffi::SOFTIRQ_OFFSET)
}

/// This CPU's preempt count as stored (x86's `PREEMPT_NEED_RESCHED` bit
/// inverted), one `%gs`-relative load. Any context.
#[inline(always)]
pub(crate) fn preempt_count_raw() -> u32 {
    ffi::percpu::preempt_count_raw()
}

/// Whether the current context may be preempted (the kernel's
/// `preemptible()`): a zero preempt count (x86 keeps `PREEMPT_NEED_RESCHED`
/// inverted in its top bit, which does not count) and interrupts enabled.
/// Any context.
#[inline]
pub(crate) fn preemptible() -> bool {
    const PREEMPT_NEED_RESCHED: u32 = 0x8000_0000;
    if ffi::percpu::preempt_count_raw() & !PREEMPT_NEED_RESCHED != 0 {
        return false;
    }
    ffi::percpu::save_flags() & crate::pure::emulate::FLAG_IF != 0
}

/// Checks the inline per-CPU reads that [`raw_smp_processor_id`],
/// [`irq_level`], `task::current_id` and the hit paths' control blocks use
/// (`ffi::percpu`) against the kernel's own `raw_smp_processor_id()`,
/// `preempt_count()`, `current` and `this_cpu_ptr()`, called through C: a
/// kernel whose per-CPU data differs from the one rkprobes was built
/// against is refused. Process context, at load.
pub(crate) fn check_percpu() -> Result<(), kernel::error::Error> {
    let _preempt = super::sync::PreemptGuard::new();
    // SAFETY: plain reads of this CPU's state; preemption is off, so the
    // CPU cannot change between the two reads of each pair.
    let (cpu, level, task, ctl) = unsafe {
        (
            ffi::rkp_smp_processor_id(),
            ffi::rkp_irq_level(),
            ffi::rkp_current_task(),
            ffi::rkp_ctl_area_this_cpu(),
        )
    };
    if cpu as usize != raw_smp_processor_id()
        || level != irq_level()
        || task != ffi::percpu::current_task()
        || ctl.cast::<u8>() != ffi::percpu::ctl_area()
    {
        kernel::pr_err!("this kernel's per-CPU data differs from the one rkprobes was built for\n");
        return Err(kernel::error::code::EINVAL);
    }
    Ok(())
}
