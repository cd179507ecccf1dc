// SPDX-License-Identifier: GPL-2.0

//! Where the probe core meets the architecture's entry points: building
//! the core (the architecture's per-CPU state, the ftrace check, the die
//! notifier's priority) and the two hooks through which the kernel's traps
//! reach the architecture's handlers, the die notifier and the page-fault
//! probe. The architecture's handlers call the core (`Core::lookup`); the
//! files that define the core's types reach them only through this one,
//! so no file of either half imports a file that imports it back
//! (`Documentation/kprobes-design.rst`, "Layers").

use super::{blacklist::Blacklist, sites::TextSites};
use super::{
    kretprobe,
    point::{Points, Reg, Registry},
    slots::SlotCache,
    table::Table,
    Core, CORE,
};
use crate::{
    arch,
    ffi::{self, kallsyms::Kallsyms, runtime::Runtime},
    kernel_ext::notifier::{DieChain, DieEvent, Handler, Notifier, Notify},
};
use core::{
    pin::Pin,
    sync::atomic::{AtomicUsize, Ordering},
};
use kernel::{new_mutex, prelude::*};

impl Handler<DieChain> for Core {
    /// int3 and faults, handled by the architecture. Exception context,
    /// NMI-like. Inline into the notifier's callback: a call with the event
    /// built in memory costs 10 instructions of every int3 hit.
    #[inline(always)]
    fn notify(&self, event: DieEvent<'_>) -> Notify {
        arch::die_notify(self, event)
    }
}

/// rkprobes' probe on the `page_fault_kernel` tracepoint (`arch/x86/page_fault.c`),
/// registered by [`Core::hook_page_faults`]: a page fault, before the
/// kernel handles it, with the preemption the tracepoint disabled. The
/// architecture takes a faulting copy out of the way (`arch::page_fault`).
///
/// # Safety
///
/// Called only by that probe, with the fault's registers, valid and
/// writable (the exception's own).
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_page_fault(regs: *mut ffi::pt_regs) {
    // SAFETY: the caller's contract.
    if let Some(regs) = unsafe { regs.as_mut() } {
        arch::page_fault(regs);
    }
}

impl Core {
    /// Builds the core. Process context, may sleep.
    pub(crate) fn new(
        ksyms: Kallsyms,
        rt: Runtime,
        blacklist: Blacklist,
    ) -> Result<Pin<KBox<Self>>> {
        let (table, table_w) = Table::new()?;
        arch::init_ctl()?;
        arch::check_ftrace_ops()?;
        let sites = TextSites::new(rt)?;
        let core = KBox::try_pin_init(
            try_pin_init!(Self {
                reg <- new_mutex!(
                    Reg {
                        points: Points::new(table_w),
                        reg: Registry::new(),
                    },
                    "rkprobes_reg"
                ),
                table,
                slots <- SlotCache::new(rt),
                nr_optimized: AtomicUsize::new(0),
                rt,
                ksyms,
                blacklist,
                sites,
                kretprobes <- kretprobe::Kretprobes::new(),
                die_nb: Notifier::new(arch::DIE_NOTIFIER_PRIORITY),
                module_nb: Notifier::new(0),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the notifiers are pinned in the core, which unregisters
        // them before it is freed.
        unsafe {
            core.die_nb.register(&core)?;
            core.module_nb.register(&core)?;
        }
        CORE.store(
            core::ptr::from_ref::<Self>(&core).cast_mut(),
            Ordering::Release,
        );
        Ok(core)
    }
}
