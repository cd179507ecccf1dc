// SPDX-License-Identifier: GPL-2.0

//! rkprobes: dynamic kernel probes for x86-64, written in Rust.
//!
//! This is the crate root of `rkprobes.ko`. It is a list of modules: raw FFI
//! (`ffi`), small abstractions over it (`debugfs`, `kallsyms`), probe logic
//! (`blacklist`), and the pure logic shared with the host test crate (`pure`).
//! The module's lifetime owns the debugfs tree under `/sys/kernel/debug/rkprobes/`.

use kernel::{c_str, prelude::*};

mod blacklist;
mod debugfs;
mod ffi;
mod kallsyms;
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
/// `debugfs_remove` waits for readers, so no file callback can see the data
/// behind it being freed.
struct RkProbes {
    _debugfs: debugfs::Dir,
    _blacklist: KBox<blacklist::Blacklist>,
}

impl kernel::Module for RkProbes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ksyms = kallsyms::Kallsyms::find().inspect_err(|_| {
            pr_err!("cannot find kallsyms_lookup_name; refusing to load\n");
        })?;
        let blacklist = KBox::new(blacklist::Blacklist::new(&ksyms)?, GFP_KERNEL)?;
        let dir = debugfs::Dir::create_root(c_str!("rkprobes"))?;
        // SAFETY: `blacklist` is boxed, so its address is stable, and it is
        // dropped after `dir` (field order of `RkProbes`).
        unsafe { dir.create_file(c_str!("blacklist"), &*blacklist)? };
        pr_info!("loaded\n");
        Ok(RkProbes {
            _debugfs: dir,
            _blacklist: blacklist,
        })
    }
}

impl Drop for RkProbes {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
