// SPDX-License-Identifier: GPL-2.0

//! `pure::elf`: the `.BTF` sections of the test kernel's vmlinux and of its
//! `lkdtm.ko`, found where `readelf` says they are; the module's split BTF
//! read on vmlinux's, as rkprobes reads a module's BTF from its file before
//! the module is loaded; and malformed files refused without a panic.

mod btf_support;

use btf_support::{vmlinux, VecStore};
use rkprobes_host::pure::btf::{Btf, Sections};
use rkprobes_host::pure::elf::section;
use std::process::Command;

/// (offset, size) of the section `name` as `readelf -SW` prints it.
fn readelf(path: &std::path::Path, name: &str) -> (usize, usize) {
    let out = Command::new("readelf")
        .arg("-SW")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let Some(i) = line.find(']') else { continue };
        let f: Vec<&str> = line[i + 1..].split_whitespace().collect();
        if f.first() == Some(&name) {
            let off = usize::from_str_radix(f[3], 16).unwrap();
            let size = usize::from_str_radix(f[4], 16).unwrap();
            return (off, size);
        }
    }
    panic!("{name} not in {}", path.display());
}

#[test]
fn btf_sections_of_vmlinux_and_a_module() {
    let vmlinux = vmlinux();
    let lkdtm = vmlinux
        .parent()
        .unwrap()
        .join("drivers/misc/lkdtm/lkdtm.ko");
    let kernel = std::fs::read(&vmlinux).unwrap();
    let module = std::fs::read(&lkdtm).unwrap();
    for (path, data) in [(&vmlinux, &kernel), (&lkdtm, &module)] {
        let (off, size) = readelf(path, ".BTF");
        let got = section(data, b".BTF").unwrap();
        assert_eq!(
            (got.as_ptr() as usize - data.as_ptr() as usize, got.len()),
            (off, size)
        );
    }
    assert_eq!(section(&module, b".no_such_section"), None);
    // The module's BTF on vmlinux's: its function, its parameters, a member
    // of a vmlinux structure through them.
    let base_s = Sections::new(section(&kernel, b".BTF").unwrap()).unwrap();
    let mut base_idx = VecStore(Vec::new());
    base_s.index(&mut base_idx).unwrap();
    let base = Btf::new(base_s, &base_idx.0, None);
    let mod_s = Sections::new(section(&module, b".BTF").unwrap()).unwrap();
    let mut mod_idx = VecStore(Vec::new());
    mod_s.index(&mut mod_idx).unwrap();
    let btf = Btf::new(mod_s, &mod_idx.0, Some(&base));
    let proto = btf.func_proto(b"lkdtm_debugfs_read").unwrap();
    let names: Vec<&[u8]> = proto.params().map(|p| btf.str_at(p.name_off)).collect();
    assert_eq!(names, [&b"f"[..], b"user_buf", b"count", b"off"]);
    let file = btf.resolve(proto.params().next().unwrap().type_id).unwrap();
    let file = btf.resolve(file.size_or_type()).unwrap();
    assert!(btf.member(file.id, b"f_flags").unwrap().is_some());
}

#[test]
fn malformed_files_are_refused() {
    let module = std::fs::read(
        vmlinux()
            .parent()
            .unwrap()
            .join("drivers/misc/lkdtm/lkdtm.ko"),
    )
    .unwrap();
    // Every truncation, and every header field made large.
    for len in (0..module.len()).step_by(97).chain(0..128) {
        let _ = section(&module[..len], b".BTF");
    }
    for at in 0..64 {
        let mut m = module.clone();
        m[at] = 0xff;
        let _ = section(&m, b".BTF");
    }
    assert_eq!(
        section(b"not an elf file at all, not at all", b".BTF"),
        None
    );
}
