// SPDX-License-Identifier: GPL-2.0

//! kCFI type ids of the C ABI's handlers, Rust against C.
//!
//! On a `CONFIG_CFI_CLANG` kernel rkprobes calls a client's handler
//! through a pointer, and the call checks the callee's type id: what rustc
//! expects at rkprobes' call site must be what clang put before a C
//! client's handler. Both ids come from the compilers themselves, with
//! the kernel's flags (`-Zsanitizer=kcfi -Zsanitizer-cfi-normalize-integers`,
//! `-fsanitize=kcfi -fsanitize-cfi-icall-experimental-normalize-integers`):
//! `rust/ffi/abi.rs` is compiled with the configuration's cfg, each handler
//! type called through a pointer, and the id read from the call site;
//! `include/rkprobes.h` is compiled with a handler of each type whose
//! address is taken, and the id read from its preamble. Without the cfg
//! (the tree before `cfi_encoding`) the ids differ, which the test also
//! checks, so that it cannot pass by comparing nothing.
//!
//! Needs clang 17 or later (`clang-19`, which tools/setup installs) and
//! rustc's `-Zsanitizer=kcfi` (through `RUSTC_BOOTSTRAP`, as the kernel's
//! build uses it).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// The handler types: (Rust type in abi.rs, C typedef in rkprobes.h, a
/// call with null arguments).
const HANDLERS: &[(&str, &str, &str)] = &[
    (
        "PreHandler",
        "rkp_pre_handler_t",
        "f(null_mut(), null_mut());",
    ),
    (
        "PostHandler",
        "rkp_post_handler_t",
        "f(null_mut(), null_mut(), 0);",
    ),
    (
        "FaultHandler",
        "rkp_fault_handler_t",
        "f(null_mut(), null_mut(), 0);",
    ),
    (
        "KretprobeHandler",
        "rkp_kretprobe_handler_t",
        "f(null_mut(), null_mut());",
    ),
];

fn top() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn clang() -> &'static str {
    for c in ["clang-19", "clang-18", "clang-17"] {
        if Command::new(c).arg("--version").output().is_ok() {
            return c;
        }
    }
    panic!("kCFI with normalized integers needs clang 17 or later (tools/setup installs clang-19)");
}

/// The 32-bit immediates of `mov $imm, %reg` lines of `objdump -d` in the
/// function `func` whose destination is `reg`.
fn immediates(dis: &str, func: &str, reg: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in dis.lines() {
        if line.ends_with(">:") {
            inside = line.contains(&format!("<{func}>:"));
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(i) = line.find("mov    $0x") {
            let rest = &line[i + 10..];
            if let Some((hex, dst)) = rest.split_once(',') {
                if dst.trim() == reg {
                    out.push(u32::from_str_radix(hex, 16).unwrap());
                }
            }
        }
    }
    out
}

const RUST_KCFI: &[&str] = &[
    "--edition=2021",
    "-O",
    "-Cpanic=abort",
    "--target=x86_64-unknown-linux-gnu",
    "-Zsanitizer=kcfi",
    "-Zsanitizer-cfi-normalize-integers",
    "-Cunsafe-allow-abi-mismatch=sanitizer,sanitizer-cfi-normalize-integers",
];

/// The ids rkprobes' call sites expect, per handler type, with or without
/// `--cfg CONFIG_CFI_CLANG`.
fn rust_ids(dir: &Path, cfi: bool) -> Vec<u32> {
    let kernel = dir.join("kernel.rs");
    std::fs::write(
        &kernel,
        "#![no_std]\n\
         pub mod ffi { pub use core::ffi::{c_char, c_int, c_uint, c_ulong, c_void}; }\n\
         pub mod bindings { #[repr(C)] pub struct pt_regs { _opaque: [u8; 0] } }\n",
    )
    .unwrap();
    let mut src = format!(
        "#![no_std]\n#![feature(cfi_encoding)]\n#![allow(dead_code)]\n\
         #[path = \"{}\"]\npub mod abi;\nuse core::ptr::null_mut;\n",
        top().join("rust/ffi/abi.rs").display()
    );
    for (ty, _, call) in HANDLERS {
        src += &format!("#[no_mangle]\npub unsafe fn call_{ty}(f: abi::{ty}) {{ {call} }}\n");
    }
    let lib = dir.join(format!("abi_{cfi}.rs"));
    std::fs::write(&lib, src).unwrap();
    let krlib = dir.join("libkernel.rlib");
    run(Command::new("rustc")
        .env("RUSTC_BOOTSTRAP", "1")
        .args(RUST_KCFI)
        .args(["--crate-type=rlib", "--crate-name=kernel"])
        .arg(&kernel)
        .arg("-o")
        .arg(&krlib));
    let obj = dir.join(format!("abi_{cfi}.o"));
    let mut cmd = Command::new("rustc");
    cmd.env("RUSTC_BOOTSTRAP", "1")
        .args(RUST_KCFI)
        .args(["--crate-type=lib", "--emit=obj"])
        .arg(format!("--extern=kernel={}", krlib.display()))
        .arg(&lib)
        .arg("-o")
        .arg(&obj);
    if cfi {
        cmd.args(["--cfg", "CONFIG_CFI_CLANG"]);
    }
    run(&mut cmd);
    let dis = run(Command::new("objdump").arg("-d").arg(&obj));
    HANDLERS
        .iter()
        .map(|(ty, _, _)| {
            // The call site loads the negated id into %r10d.
            let v = immediates(&dis, &format!("call_{ty}"), "%r10d");
            assert_eq!(v.len(), 1, "one checked call in call_{ty}:\n{dis}");
            v[0].wrapping_neg()
        })
        .collect()
}

/// The ids of C handlers of each type, from their preambles.
fn c_ids(dir: &Path) -> Vec<u32> {
    let mut src = String::from("#include <stddef.h>\n#include <rkprobes.h>\n");
    for (i, (_, cty, _)) in HANDLERS.iter().enumerate() {
        let (ret, params) = match *cty {
            "rkp_pre_handler_t" => ("int", "struct rkp_kprobe *p, struct pt_regs *r"),
            "rkp_post_handler_t" => (
                "void",
                "struct rkp_kprobe *p, struct pt_regs *r, unsigned long f",
            ),
            "rkp_fault_handler_t" => ("int", "struct rkp_kprobe *p, struct pt_regs *r, int t"),
            _ => (
                "int",
                "struct rkp_kretprobe_instance *ri, struct pt_regs *r",
            ),
        };
        let body = if ret == "void" { "" } else { "return 0;" };
        src += &format!("{ret} h{i}({params}) {{ {body} }}\n{cty} volatile p{i} = h{i};\n");
    }
    let c = dir.join("handlers.c");
    std::fs::write(&c, src).unwrap();
    let obj = dir.join("handlers.o");
    run(Command::new(clang())
        .args([
            "-O2",
            "-c",
            "-fsanitize=kcfi",
            "-fsanitize-cfi-icall-experimental-normalize-integers",
            "-D__aligned(x)=__attribute__((aligned(x)))",
        ])
        .arg(format!("-I{}", top().join("include").display()))
        .arg(&c)
        .arg("-o")
        .arg(&obj));
    let dis = run(Command::new("objdump").arg("-d").arg(&obj));
    (0..HANDLERS.len())
        .map(|i| {
            let v = immediates(&dis, &format!("__cfi_h{i}"), "%eax");
            assert_eq!(v.len(), 1, "one id in __cfi_h{i}:\n{dis}");
            v[0]
        })
        .collect()
}

#[test]
fn c_handlers_pass_the_kcfi_check_of_rkprobes_calls() {
    let dir = std::env::temp_dir().join(format!("rkprobes-kcfi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = c_ids(&dir);
    let with = rust_ids(&dir, true);
    let without = rust_ids(&dir, false);
    for (i, (ty, cty, _)) in HANDLERS.iter().enumerate() {
        eprintln!(
            "{ty}: C {cty} {:#010x}, Rust {:#010x} ({:#010x} without cfi_encoding)",
            c[i], with[i], without[i]
        );
        assert_eq!(
            with[i], c[i],
            "{ty}: rkprobes' call site and a C {cty} disagree"
        );
        assert_ne!(without[i], c[i], "{ty}: the ids agree without cfi_encoding");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
