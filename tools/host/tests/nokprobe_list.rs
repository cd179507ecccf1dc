// SPDX-License-Identifier: GPL-2.0

//! The committed `NOKPROBE_SYMBOL()` list (`rust/pure/nokprobe.rs`, used on
//! kernels without `CONFIG_KPROBES`) against a fresh scan of the kernel
//! source in `$RKPROBES_KSRC`, written independently of the generator.

use rkprobes_host::pure::nokprobe::NOKPROBE_SYMBOLS;
use std::{collections::BTreeSet, fs, path::Path};

const DIRS: &[&str] = &[
    "arch/x86", "block", "drivers", "fs", "init", "ipc", "kernel", "lib", "mm", "net", "security",
    "virt",
];

fn scan(dir: &Path, out: &mut BTreeSet<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            scan(&p, out);
        } else if p.extension().is_some_and(|x| x == "c" || x == "h") {
            let Ok(bytes) = fs::read(&p) else { continue };
            for line in String::from_utf8_lossy(&bytes).lines() {
                let Some(rest) = line.trim_start().strip_prefix("NOKPROBE_SYMBOL(") else {
                    continue;
                };
                let name: String = rest
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let after = rest.trim_start()[name.len()..].trim_start();
                if !name.is_empty() && after.starts_with(')') && name != "fname" {
                    out.insert(name);
                }
            }
        }
    }
}

#[test]
fn list_matches_the_kernel_source() {
    let Ok(ksrc) = std::env::var("RKPROBES_KSRC") else {
        panic!("RKPROBES_KSRC is not set (make host-test sets it)");
    };
    let mut found = BTreeSet::new();
    for d in DIRS {
        scan(&Path::new(&ksrc).join(d), &mut found);
    }
    let committed: BTreeSet<String> = NOKPROBE_SYMBOLS.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        committed.len(),
        NOKPROBE_SYMBOLS.len(),
        "duplicates in the list"
    );
    let missing: Vec<_> = found.difference(&committed).collect();
    let extra: Vec<_> = committed.difference(&found).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "regenerate rust/pure/nokprobe.rs: missing {missing:?}, extra {extra:?}"
    );
    // The die chain and the int3 path must be there whatever else changes.
    for must in [
        "notify_die",
        "notifier_call_chain",
        "atomic_notifier_call_chain",
    ] {
        assert!(committed.contains(must), "{must} not in the list");
    }
    eprintln!(
        "nokprobe list: {} names, equal to the source's",
        committed.len()
    );
}
