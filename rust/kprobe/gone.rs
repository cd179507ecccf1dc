// SPDX-License-Identifier: GPL-2.0

//! Probes of unloaded code: the module notifier (the kernel's
//! `kprobes_module_callback()` and `kill_kprobe()`).
//!
//! As in the kernel, a probe holds no reference on the module it probes.
//! When a module's text goes, or its init text is about to be freed, the
//! points in that text are disarmed (the original bytes written back, or the
//! ftrace filter entry removed), unpublished, and their probes marked
//! `GONE`; they stay registered, and listed, until their clients unregister
//! them, which frees them.
//!
//! Context: the notifier runs in process context and may sleep; the module
//! loader calls it without `module_mutex`, under the notifier chain's
//! read lock. It takes `Core::reg`, and allocates nothing.

use super::{
    point::{Batch, Reg},
    Core,
};
use crate::abi::flags;
use crate::kernel_ext::{
    module::Module,
    notifier::{Handler, ModuleChain, ModuleEvent, ModuleState, Notify},
    sync::synchronize_rcu,
};
use kernel::prelude::*;

impl Handler<ModuleChain> for Core {
    /// A module's text goes (`MODULE_STATE_GOING`), or its init text is about
    /// to be freed (`MODULE_STATE_LIVE`). Process context.
    fn notify(&self, event: ModuleEvent<'_>) -> Notify {
        match event.state {
            ModuleState::Going => self.kill_module_points(event.module, true),
            ModuleState::Live => self.kill_module_points(event.module, false),
            ModuleState::Coming => {}
        }
        Notify::Done
    }
}

impl Core {
    /// The module notifier's work: when `module` goes (`going`), or when its
    /// init text is freed, the points in that text are disarmed, unpublished
    /// and their probes marked [GONE], as the kernel's `kill_kprobe()` does;
    /// they stay registered until their clients unregister them. Process
    /// context, may sleep.
    fn kill_module_points(&self, module: &Module, going: bool) {
        // The init text's bounds are only compared.
        let init = module.init_text();
        let in_init = |a: usize| init.contains(&a);
        let module = module.id();
        let mut locked = self.reg.lock();
        let Reg { points, reg } = &mut *locked;
        // Nothing here allocates: the batch runs through the points.
        let mut dying = Batch::new();
        for p in points.live() {
            if p.module == module && (going || in_init(p.addr())) {
                dying.add(p);
            }
        }
        if dying.iter().next().is_none() {
            return;
        }
        // The text is still there (it is freed after the notification);
        // restoring it leaves nothing of rkprobes in it, whatever still
        // runs there.
        let _ = self.set_armed(reg, &dying, false, |_| true);
        for p in dying.iter() {
            for kp in p.clients_w(reg) {
                kp.update_flags(flags::GONE, 0);
            }
            points.move_to_gone(&self.table, p);
        }
        let killed = dying.iter().count();
        drop(dying);
        // No CPU is in a handler of, or stepping, the points after this.
        synchronize_rcu();
        points.reclaim_table(&self.table);
        pr_info!("{} probes of unloaded code marked gone\n", killed);
    }
}
