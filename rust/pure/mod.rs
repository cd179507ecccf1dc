// SPDX-License-Identifier: GPL-2.0

//! Pure, allocation-free logic shared by the module and the host test crate.
//!
//! Code below this directory imports only `core`, never panics on any input,
//! never indexes out of bounds and returns its own error enums. The module
//! crate includes it through `#[path]`, and so does `tools/host`, which is where
//! its unit, property, differential and fuzz tests live.

pub mod btf;
pub mod elf;
pub mod emulate;
pub mod ksym;
pub mod moddep;
pub mod nokprobe;
pub mod sites;
pub mod store;

pub mod insn;
pub mod probe_events;
