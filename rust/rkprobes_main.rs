// SPDX-License-Identifier: GPL-2.0

//! rkprobes: dynamic kernel probes for x86-64, written in Rust.
//!
//! This is the crate root of `rkprobes.ko`, a list of modules in layers:
//!
//! 1. `ffi`: raw FFI, all of it: the items of `kernel::bindings` rkprobes
//!    uses, every `extern` declaration, the kernel symbols found at run time
//!    (`ffi::kallsyms`, `ffi::runtime`), and `ffi/glue.c` for inline kernel
//!    helpers. `tools/testing/layers` checks that no other file names a
//!    binding or declares an `extern` block. The other C files sit beside
//!    the Rust that uses them, each with its header (`rust/Kbuild`).
//! 2. `kernel_ext`: small safe abstractions over it in the kernel crate's
//!    style (notifiers, kernel mutexes, preemption, interrupts and RCU,
//!    executable pages, text patching, debugfs files, ...).
//! 3. The probe logic: generic (`kprobe`, with its blacklist, slots and
//!    kretprobes; `events`, the kprobe_events interface) and x86-64
//!    (`arch`), written against layer 2, calling into `ffi` directly only
//!    where no abstraction fits yet.
//! 4. `pure`: the pure logic shared with the host test crate.
//!
//! `abi` (in `ffi/abi.rs`) is the C ABI's structures, shared with client
//! crates.
//! The module's lifetime owns the debugfs tree under
//! `/sys/kernel/debug/rkprobes/`.

use kernel::{c_str, prelude::*};

mod arch;
mod events;
mod ffi;
pub use ffi::abi;
mod kernel_ext;
mod kprobe;
pub mod pure;

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
    _debugfs: kernel_ext::debugfs::Dir,
    _events: Pin<KBox<events::Events>>,
    _core: Pin<KBox<kprobe::Core>>,
}

impl kernel::Module for RkProbes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ksyms = ffi::kallsyms::Kallsyms::find().inspect_err(|_| {
            pr_err!("cannot find kallsyms_lookup_name; refusing to load\n");
        })?;
        let rt = ffi::runtime::Runtime::find(&ksyms)?;
        kernel_ext::cpu::check_percpu()?;
        let blacklist = kprobe::blacklist::Blacklist::new(&ksyms, &rt)?;
        let core = kprobe::Core::new(ksyms, rt, blacklist)?;
        let events = KBox::pin_init(events::Events::new(&core, core.ksyms())?, GFP_KERNEL)?;
        events.start()?;
        let dir = kernel_ext::debugfs::Dir::create_root(c_str!("rkprobes"))?;
        // SAFETY: the core is pinned in a box and dropped after `dir` (field
        // order of `RkProbes`), so it outlives the files.
        unsafe {
            dir.create_file::<kprobe::blacklist::BlacklistFile>(c_str!("blacklist"), &core)?;
            dir.create_file::<kprobe::blacklist::Int3PathFile>(c_str!("int3_path"), &core)?;
            dir.create_file::<kprobe::ListFile>(c_str!("list"), &core)?;
            dir.create_rw_file::<kprobe::EnabledFile>(c_str!("enabled"), &core)?;
            dir.create_rw_file::<kprobe::OptimizationFile>(c_str!("optimization"), &core)?;
            dir.create_file::<kprobe::OptimizerFile>(c_str!("optimizer"), &core)?;
            dir.create_rw_file::<kprobe::TextSitesFile>(c_str!("text_sites"), &core)?;
            dir.create_control_file::<events::KprobeEventsFile>(c_str!("kprobe_events"), &events)?;
            dir.create_control_file::<events::DynamicEventsFile>(
                c_str!("dynamic_events"),
                &events,
            )?;
            dir.create_control_file::<events::ErrorLogFile>(c_str!("error_log"), &events)?;
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
