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
        let pf_hook = arch::PageFaultHook::new()?;
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
                pf_hook <- new_mutex!(pf_hook, "rkprobes_pf_hook"),
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
