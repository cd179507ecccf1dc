// SPDX-License-Identifier: GPL-2.0

//! Host build of rkprobes' pure logic.
//!
//! Every module here is a `#[path]` include of a file under `rust/pure/`, the
//! same file the kernel module compiles. Nothing in those files may depend on
//! the kernel crate or on `std`: they import only `core`, so that what the host
//! tests exercise is byte for byte what runs in the kernel.

#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub, rust_2018_idioms)]

#[forbid(unsafe_code)]
#[path = "../../../rust/pure/mod.rs"]
pub mod pure;

/// The module's intrusive lists (`rust/kernel_ext/list.rs`), which import
/// only `core` but are `unsafe` by nature: the one file outside
/// `rust/pure/` that the host crate compiles.
#[allow(unsafe_code)]
#[path = "../../../rust/kernel_ext/list.rs"]
pub mod list;
