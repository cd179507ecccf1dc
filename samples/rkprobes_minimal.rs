// SPDX-License-Identifier: GPL-2.0

//! The smallest rkprobes sample: a module that loads and unloads.
//!
//! It is the template the probe samples start from (module boilerplate, log
//! prefix) and lets the guest tests check that sample modules build against the
//! test kernel and load beside `rkprobes.ko`.

use kernel::prelude::*;

module! {
    type: Minimal,
    name: "rkprobes_minimal",
    author: "rkprobes developers",
    description: "rkprobes sample: load and unload",
    license: "GPL",
}

struct Minimal;

impl kernel::Module for Minimal {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("sample loaded\n");
        Ok(Minimal)
    }
}

impl Drop for Minimal {
    fn drop(&mut self) {
        pr_info!("sample unloaded\n");
    }
}
