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
    table::Table,
    Core, Slots,
};
use crate::{
    arch,
    ffi::{kallsyms::Kallsyms, runtime::Runtime},
    kernel_ext::notifier::{DieChain, DieEvent, Handler, Notifier, Notify},
};
use core::{pin::Pin, sync::atomic::AtomicUsize};
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
                slots <- Slots::new(rt, arch::TRAP_FILL),
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
        super::abi::publish(&core);
        Ok(core)
    }
}

impl Core {
    /// Makes sure that rkprobes sees page faults before the kernel handles
    /// them (`arch/x86/page_fault.rs`), as a probe on an instruction with an
    /// exception-table entry needs: the hook is registered the first time,
    /// and stays until unload ([`Core::unhook_page_faults`]). Process
    /// context, may sleep.
    pub(crate) fn hook_page_faults(&self) -> Result {
        arch::hook_page_faults()
    }

    /// Unregisters the page-fault hook; returns when no CPU runs it. At
    /// unload, once no probe is left. Process context, may sleep.
    pub(super) fn unhook_page_faults(&self) {
        arch::unhook_page_faults();
    }
}
