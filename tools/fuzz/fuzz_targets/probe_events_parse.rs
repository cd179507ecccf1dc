// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the kprobe_events parser: no write may panic, every accepted
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
    error::write_error_log,
    parse_command,
    print::{record_extent, write_print_fmt, write_record_args, NoSymbols},
    write_listing, ByteWrite, Command, SyntaxOnlyEnv, WriteLines,
};

struct Buf(Vec<u8>);

impl ByteWrite for Buf {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        self.0.extend_from_slice(b);
        Ok(())
    }
}

fn check(line: &[u8], data: &[u8]) {
    let env = SyntaxOnlyEnv;
    match parse_command(line, &env) {
        Err(e) => {
            let mut b = Buf(Vec::new());
            write_error_log(&mut b, "trace_kprobe", line, &e, &env).unwrap();
        }
        Ok(Command::Probe(def)) => {
            for a in def.args() {
                assert!(a.is_ok());
            }
            let mut b = Buf(Vec::new());
            write_listing(&mut b, &def, &env).unwrap();
            let listed = b.0;
            let mut fmt = Buf(Vec::new());
            write_print_fmt(&mut fmt, &def).unwrap();
            // The whole input as a record of this event.
            let mut out = Buf(Vec::new());
            write_record_args(&mut out, &def, data, 16, &NoSymbols).unwrap();
            let fixed_end = 16 + def.size as usize;
            if let Some(head) = data.get(..fixed_end) {
                assert!(record_extent(&def, head, 16, data.len()) <= data.len());
            }
            // Generated names of odd symbols may not be valid names, as in
            // the kernel; anything that parses back must list the same.
            if let Ok(Command::Probe(again)) = parse_command(&listed, &env) {
                let mut b = Buf(Vec::new());
                write_listing(&mut b, &again, &env).unwrap();
                assert_eq!(b.0, listed);
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
