// SPDX-License-Identifier: GPL-2.0

//! Shared helpers of the probe_events host tests: a kernel stand-in that
//! knows a few symbols, and byte sinks.

#![allow(dead_code)]

use std::fmt;

use rkprobes_host::pure::probe_events::{
    error_log::write_error_log,
    layout::{Field, NoMemory, TextRef},
    parse_command, parse_dyn_command,
    print::write_listing,
    ByteWrite, Command, DeleteCmd, EventLayout, FuncEntry, Layout, ParseError, ProbeDef, ProbeEnv,
    ProbeSpec, Spec, Store, SymbolCheck, TracepointCheck,
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

/// Tracepoints of the pretend kernel.
pub const TRACEPOINTS: &[&str] = &[
    "kfree",
    "kmem_cache_alloc",
    "kmem_cache_free",
    "sched_switch",
    "sys_enter",
];

/// Kernel state for the tests: `dup_sym` exists twice; modules other
/// than `ext4` are not loaded; tracepoints not in [`TRACEPOINTS`] may be
/// a module's.
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

    fn tracepoint(&self, name: &[u8]) -> TracepointCheck {
        tracepoint(name)
    }
}

/// [`MockEnv`]'s tracepoints.
pub fn tracepoint(name: &[u8]) -> TracepointCheck {
    if TRACEPOINTS.iter().any(|t| t.as_bytes() == name) {
        TracepointCheck::Loaded
    } else {
        TracepointCheck::NotLoaded
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

/// Parses with [`MockEnv`] as `dynamic_events` does (`f` and `t` too).
pub fn parse_dyn(cmd: &str) -> Result<Command<'_>, ParseError> {
    parse_dyn_command(cmd.as_bytes(), &MockEnv)
}

/// Parses a command that must create a probe.
pub fn probe(cmd: &str) -> ProbeDef<'_> {
    match parse(cmd) {
        Ok(Command::Probe(def)) => def,
        other => panic!("{cmd:?} did not parse as a probe: {other:?}"),
    }
}

/// A `Vec` as the storage of what an event keeps.
#[derive(Debug)]
pub struct VecStore<T>(pub Vec<T>);

impl<T> Default for VecStore<T> {
    fn default() -> Self {
        VecStore(Vec::new())
    }
}

impl<T> Store<T> for VecStore<T> {
    fn try_push(&mut self, v: T) -> Result<(), NoMemory> {
        self.0.push(v);
        Ok(())
    }

    fn items(&self) -> &[T] {
        &self.0
    }
}

/// What the module keeps of an accepted command: the event's names, its
/// layout and the probe's listing form.
pub struct Kept {
    pub group: Vec<u8>,
    pub event: Vec<u8>,
    pub layout: EventLayout<VecStore<Field>, VecStore<u8>>,
    pub spec: ProbeSpec<VecStore<TextRef>, VecStore<u8>>,
}

impl Kept {
    pub fn new(def: &ProbeDef<'_>) -> Kept {
        Kept {
            group: def.group.to_vec(),
            event: def.event.as_bytes().to_vec(),
            layout: EventLayout::new(def, VecStore::default(), VecStore::default()).unwrap(),
            spec: ProbeSpec::new(def, VecStore::default(), VecStore::default()).unwrap(),
        }
    }

    pub fn layout(&self) -> Layout<'_> {
        self.layout.get()
    }

    pub fn spec(&self) -> Spec<'_> {
        self.spec.get()
    }

    /// Whether `d` deletes this probe.
    pub fn deleted_by(&self, d: &DeleteCmd<'_>) -> bool {
        d.matches(
            (&self.group, &self.event),
            &self.layout(),
            &self.spec(),
            &MockEnv,
        )
    }

    /// `cat kprobe_events` for the probe, newline included.
    pub fn listing(&self) -> String {
        let mut b = Buf::default();
        write_listing(
            &mut b,
            (&self.group, &self.event),
            &self.layout(),
            &self.spec(),
            self.spec().maxactive,
            &MockEnv,
        )
        .unwrap();
        b.text()
    }
}

/// `cat kprobe_events` for one probe, without the newline.
pub fn listing(def: &ProbeDef<'_>) -> String {
    let mut s = Kept::new(def).listing();
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
