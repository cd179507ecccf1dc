// SPDX-License-Identifier: GPL-2.0

//! Shared helpers of the probe_events host tests: a kernel stand-in that
//! knows a few symbols, and byte sinks.

#![allow(dead_code)]

use std::fmt;

use rkprobes_host::pure::probe_events::{
    error::write_error_log, parse_command, print::write_listing, ByteWrite, Command, FuncEntry,
    ParseError, ProbeDef, ProbeEnv, SymbolCheck,
};

/// Symbols of the pretend vmlinux.
pub const VMLINUX: &[&str] = &[
    "vfs_read",
    "vfs_write",
    "do_exit",
    "kernel_clone",
    "_sdata",
    "jiffies",
    "tracefs_create_dir",
    "inet_csk_accept",
    "dput",
    "kfree",
    "do_sys_open",
    "foo.isra.0",
    "kprobe_trace_selftest_target",
];

/// Symbols of the pretend loaded module `ext4`.
pub const EXT4: &[&str] = &["ext4_sync_fs", "ext4_file_open"];

/// Kernel state for the tests: `dup_sym` exists twice; modules other
/// than `ext4` are not loaded.
pub struct MockEnv;

fn known(module: Option<&[u8]>, name: &[u8]) -> bool {
    match module {
        None => VMLINUX.iter().chain(EXT4).any(|s| s.as_bytes() == name) || name == b"dup_sym",
        Some(b"ext4") => EXT4.iter().any(|s| s.as_bytes() == name),
        Some(_) => false,
    }
}

impl ProbeEnv for MockEnv {
    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck {
        match module {
            Some(m) if m != b"ext4" => SymbolCheck::ModuleNotLoaded,
            _ if module.is_none() && symbol == b"dup_sym" => SymbolCheck::NotUnique,
            _ if known(module, symbol) => SymbolCheck::Unique,
            _ => SymbolCheck::NotFound,
        }
    }

    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry {
        let (module, name) = match symbol.iter().position(|&c| c == b':') {
            Some(c) => (Some(&symbol[..c]), &symbol[c + 1..]),
            None => (None, symbol),
        };
        if !known(module, name) {
            FuncEntry::Unknown
        } else if offset == 0 {
            FuncEntry::Entry
        } else {
            FuncEntry::NotEntry
        }
    }
}

/// A growable byte sink.
#[derive(Default)]
pub struct Buf(pub Vec<u8>);

impl ByteWrite for Buf {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        self.0.extend_from_slice(b);
        Ok(())
    }
}

impl Buf {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// Parses with [`MockEnv`].
pub fn parse(cmd: &str) -> Result<Command<'_>, ParseError> {
    parse_command(cmd.as_bytes(), &MockEnv)
}

/// Parses a command that must create a probe.
pub fn probe(cmd: &str) -> ProbeDef<'_> {
    match parse(cmd) {
        Ok(Command::Probe(def)) => def,
        other => panic!("{cmd:?} did not parse as a probe: {other:?}"),
    }
}

/// `cat kprobe_events` for one probe, without the newline.
pub fn listing(def: &ProbeDef<'_>) -> String {
    let mut b = Buf::default();
    write_listing(&mut b, def, &MockEnv).unwrap();
    let mut s = b.text();
    assert_eq!(s.pop(), Some('\n'));
    s
}

/// The error_log entry of a failed command.
pub fn error_log(cmd: &[u8], err: &ParseError) -> String {
    let mut b = Buf::default();
    write_error_log(&mut b, "trace_kprobe", cmd, err, &MockEnv).unwrap();
    b.text()
}

/// A small seeded generator (xorshift64*), so that runs are reproducible
/// without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len())]
    }
}
