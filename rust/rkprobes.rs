// SPDX-License-Identifier: GPL-2.0

//! rkprobes: dynamic kernel probes for x86-64, written in Rust.
//!
//! This is the crate root of `rkprobes.ko`. It is a list of modules: raw FFI
//! (`ffi`), small abstractions over it (`debugfs`), and the pure logic shared
//! with the host test crate (`pure`). The module's lifetime owns the debugfs
//! tree under `/sys/kernel/debug/rkprobes/`.

use kernel::{c_str, prelude::*};

mod debugfs;
mod ffi;
pub mod pure;

module! {
    type: RkProbes,
    name: "rkprobes",
    author: "rkprobes developers",
    description: "Dynamic kernel probes (kprobes reimplemented in Rust)",
    license: "GPL",
}

/// The module's state: everything here is torn down, in reverse order of
/// creation, when the module is unloaded.
struct RkProbes {
    _debugfs: debugfs::Dir,
}

impl kernel::Module for RkProbes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let dir = debugfs::Dir::create_root(c_str!("rkprobes"))?;
        pr_info!("loaded\n");
        Ok(RkProbes { _debugfs: dir })
    }
}

impl Drop for RkProbes {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
