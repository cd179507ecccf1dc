// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the kprobe_events parser, as `dynamic_events` takes commands
//! (`p`, `r`, `f`, `t`): no write may panic, every accepted
//! command's fetchargs parse again, its listing parses back to a probe that
//! lists the same, every error renders an error_log entry, and trace output
//! of any bytes taken as a record of an accepted command (a stale record of
//! another event, say) reads nothing beyond them.

#![no_main]

// The same files the module compiles.
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../../../rust/pure/mod.rs"]
mod pure;

use core::fmt;

use libfuzzer_sys::fuzz_target;
use pure::probe_events::{
    error_log::write_error_log,
    layout::{NoMemory, Store},
    parse_dyn_command,
    print::{record_extent, write_print_fmt, write_record_args, NoSymbols},
    write_listing, ByteWrite, Command, EventLayout, ProbeDef, ProbeKind, ProbeSpec, SyntaxOnlyEnv,
    WriteLines,
};

struct Buf(Vec<u8>);

/// A `Vec` as the storage of what an event keeps.
struct VecStore<T>(Vec<T>);

impl<T> Store<T> for VecStore<T> {
    fn try_push(&mut self, v: T) -> Result<(), NoMemory> {
        self.0.push(v);
        Ok(())
    }

    fn items(&self) -> &[T] {
        &self.0
    }
}

/// `cat kprobe_events` for `def`, from what the module keeps of it.
fn listing(def: &ProbeDef<'_>) -> Vec<u8> {
    let layout = EventLayout::new(def, VecStore(Vec::new()), VecStore(Vec::new())).unwrap();
    let spec = ProbeSpec::new(def, VecStore(Vec::new()), VecStore(Vec::new())).unwrap();
    let mut b = Buf(Vec::new());
    let names = (def.group, def.event.as_bytes());
    write_listing(
        &mut b,
        names,
        &layout.get(),
        &spec.get(),
        spec.get().maxactive,
        &SyntaxOnlyEnv,
    )
    .unwrap();
    b.0
}

impl ByteWrite for Buf {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        self.0.extend_from_slice(b);
        Ok(())
    }
}

fn check(line: &[u8], data: &[u8]) {
    let env = SyntaxOnlyEnv;
    match parse_dyn_command(line, &env) {
        Err(e) => {
            let kind = ProbeKind::of_command(line).unwrap_or(ProbeKind::Kprobe);
            for entry in e.entries() {
                let mut b = Buf(Vec::new());
                write_error_log(&mut b, kind.subsystem(), line, &entry, &env).unwrap();
            }
        }
        Ok(Command::Probe(def)) => {
            for a in def.args() {
                assert!(a.is_ok());
            }
            let listed = listing(&def);
            let kept = EventLayout::new(&def, VecStore(Vec::new()), VecStore(Vec::new())).unwrap();
            let layout = kept.get();
            let mut fmt = Buf(Vec::new());
            write_print_fmt(&mut fmt, &layout).unwrap();
            // The whole input as a record of this event.
            let mut out = Buf(Vec::new());
            write_record_args(&mut out, &layout, data, 16, &NoSymbols).unwrap();
            let fixed_end = 16 + def.size as usize;
            if let Some(head) = data.get(..fixed_end) {
                assert!(record_extent(&layout, head, 16, data.len()) <= data.len());
            }
            // Generated names of odd symbols may not be valid names, as in
            // the kernel; anything that parses back must list the same.
            if let Ok(Command::Probe(again)) = parse_dyn_command(&listed, &env) {
                assert_eq!(listing(&again), listed);
            }
        }
        Ok(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    for line in WriteLines::new(data) {
        match line {
            Ok(l) => check(l, data),
            Err(_) => break,
        }
    }
});
