// SPDX-License-Identifier: GPL-2.0

//! Decoding throughput of the Rust instruction decoder and of the kernel's C
//! decoder (`insn_decode()` from the kernel source named by `RKPROBES_KSRC`
//! at build time), side by side, over every function of a vmlinux.
//!
//! Usage: `insn-bench [VMLINUX] [ROUNDS]` (VMLINUX defaults to
//! `RKPROBES_VMLINUX`, ROUNDS to 5). Build with `--release`. This is a
//! measurement, not a test: it prints numbers and checks only that both
//! decoders found the same total length.

#[path = "../../tests/common/mod.rs"]
mod common;

use rkprobes_host::pure::insn::Insn;
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .cloned()
        .or_else(|| std::env::var("RKPROBES_VMLINUX").ok())
        .unwrap_or_else(|| {
            eprintln!("usage: insn-bench VMLINUX [ROUNDS] (or set RKPROBES_VMLINUX)");
            std::process::exit(2);
        });
    let rounds: u32 = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let funcs = common::elf_functions(&data).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });

    // Instruction start offsets per function, found once.
    let mut starts: Vec<(usize, usize)> = Vec::new();
    for (fi, f) in funcs.iter().enumerate() {
        let mut pos = 0;
        while pos < f.code.len() {
            let step = Insn::decode(&f.code[pos..]).map_or(1, |i| i.length());
            starts.push((fi, pos));
            pos += step;
        }
    }
    let n = starts.len() as f64;
    println!(
        "{path}: {} functions, {} instruction starts, {rounds} rounds",
        funcs.len(),
        starts.len()
    );

    let mut best_rust = f64::MAX;
    let mut best_c = f64::MAX;
    let mut best_walk = f64::MAX;
    let (mut sum_rust, mut sum_c) = (0u64, 0u64);
    for _ in 0..rounds {
        let t = Instant::now();
        sum_rust = 0;
        for &(fi, pos) in &starts {
            let buf = black_box(&funcs[fi].code[pos..]);
            sum_rust += Insn::decode(buf).map_or(0, |i| i.length() as u64);
        }
        best_rust = best_rust.min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        sum_c = 0;
        for &(fi, pos) in &starts {
            let buf = black_box(&funcs[fi].code[pos..]);
            sum_c += u64::try_from(common::c_length(buf)).unwrap_or(0);
        }
        best_c = best_c.min(t.elapsed().as_secs_f64());

        // The probe engine's use: walking functions with FuncCode.
        let t = Instant::now();
        let mut walked = 0u64;
        for f in &funcs {
            let fc = rkprobes_host::pure::insn::FuncCode::new(black_box(f.code), f.addr);
            walked += fc.insns().take_while(|r| r.is_ok()).count() as u64;
        }
        black_box(walked);
        best_walk = best_walk.min(t.elapsed().as_secs_f64());
    }
    assert_eq!(sum_rust, sum_c, "the decoders disagree on total length");
    println!(
        "Rust Insn::decode:     {:>8.1} M insn/s ({:.1} ns/insn)",
        n / best_rust / 1e6,
        best_rust / n * 1e9
    );
    println!(
        "C insn_decode():       {:>8.1} M insn/s ({:.1} ns/insn)",
        n / best_c / 1e6,
        best_c / n * 1e9
    );
    println!(
        "Rust FuncCode walk:    {:>8.1} M insn/s (whole functions, stops at a bad byte)",
        n / best_walk / 1e6
    );
    println!("Rust/C time ratio:     {:.2}", best_rust / best_c);
}
