// SPDX-License-Identifier: GPL-2.0

//! rkprobe: source-level probe points and arguments from DWARF, written as
//! kprobe_events commands, as `perf probe` writes them.
//!
//! The crate is the library behind the `rkprobe` binary, so that its host
//! tests exercise exactly what the tool runs. Layers, bottom up:
//! `regs` and `fetcharg` are pure (register names, the fetcharg text),
//! `spec` parses what the user typed, `debuginfo` wraps gimli and object
//! over one ELF file, `translate` turns a variable's location and type into a
//! fetcharg, `finder` resolves probe points, and `event` names the events and
//! writes their command lines.

#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

pub mod buildid;
pub mod cli;
pub mod control;
pub mod debuginfo;
pub mod event;
pub mod fetcharg;
pub mod finder;
pub mod json;
pub mod kallsyms;
pub mod modfile;
pub mod regs;
pub mod show;
pub mod spec;
pub mod specgen;
pub mod strfilter;
pub mod translate;
