// SPDX-License-Identifier: GPL-2.0

//! rkprobes: dynamic kernel probes for x86-64, written in Rust.
//!
//! This is the crate root of `rkprobes.ko`, a list of modules in layers: raw
//! FFI, all of it in `ffi` (the bindings rkprobes uses, every `extern`
//! declaration, the symbols found at run time with `kallsyms` and
//! `runtime`, and `ffi/glue.c` for inline kernel helpers and symbol
//! exports); small abstractions over it (`debugfs`, `text`, `slots`); the
//! probe logic, generic (`kprobe`, `blacklist`, `events`) and x86-64
//! (`arch`); and the pure logic shared with the host test crate (`pure`).
//! The module's lifetime owns the debugfs tree under
//! `/sys/kernel/debug/rkprobes/`.

use kernel::{c_str, prelude::*};

pub mod abi;
mod arch;
mod blacklist;
mod debugfs;
mod errno;
mod events;
mod ffi;
mod kprobe;
pub mod pure;
mod slots;
mod text;
mod vec;

module! {
    type: RkProbes,
    name: "rkprobes",
    author: "rkprobes developers",
    description: "Dynamic kernel probes (kprobes reimplemented in Rust)",
    license: "GPL",
}

/// The module's state.
///
/// Fields drop in declaration order: the debugfs tree goes first, and
/// `debugfs_remove` waits for readers, so no file callback can see the probe
/// core being torn down; the probe events go next, then the core removes any
/// probe left.
struct RkProbes {
    _debugfs: debugfs::Dir,
    _events: Pin<KBox<events::Events>>,
    _core: Pin<KBox<kprobe::Core>>,
}

impl kernel::Module for RkProbes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ksyms = ffi::kallsyms::Kallsyms::find().inspect_err(|_| {
            pr_err!("cannot find kallsyms_lookup_name; refusing to load\n");
        })?;
        let rt = ffi::runtime::Runtime::find(&ksyms)?;
        let blacklist = blacklist::Blacklist::new(&ksyms)?;
        let core = kprobe::Core::new(ksyms, rt, blacklist)?;
        let events = KBox::pin_init(events::Events::new(&core, core.ksyms())?, GFP_KERNEL)?;
        events.start()?;
        let dir = debugfs::Dir::create_root(c_str!("rkprobes"))?;
        // SAFETY: the core is pinned in a box and dropped after `dir` (field
        // order of `RkProbes`), so it outlives the files.
        unsafe {
            dir.create_file::<blacklist::BlacklistFile>(c_str!("blacklist"), core.blacklist())?;
            dir.create_file::<kprobe::ListFile>(c_str!("list"), &core)?;
            dir.create_rw_file::<kprobe::EnabledFile>(c_str!("enabled"), &core)?;
            dir.create_control_file::<events::KprobeEventsFile>(c_str!("kprobe_events"), &events)?;
            dir.create_file::<events::ErrorLogFile>(c_str!("error_log"), &events)?;
            dir.create_file::<events::ProfileFile>(c_str!("kprobe_profile"), &events)?;
        }
        pr_info!("loaded\n");
        Ok(RkProbes {
            _debugfs: dir,
            _events: events,
            _core: core,
        })
    }
}

impl Drop for RkProbes {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
