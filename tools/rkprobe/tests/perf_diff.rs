// SPDX-License-Identifier: GPL-2.0

//! Differential test against `perf probe` itself.
//!
//! Specifications are generated from the vmlinux's own debuginfo
//! (`specgen`), each is given to `perf probe -k VMLINUX --definition`, which
//! prints the kprobe_events lines without touching the system, and to this
//! crate; the lines must be equal. Runs when `RKPROBE_VMLINUX` names a
//! vmlinux with DWARF and `perf` is installed; otherwise it says so and
//! passes. Knobs: `RKPROBE_DIFF_N` (specifications, default 300),
//! `RKPROBE_DIFF_SEED`, `RKPROBE_DIFF_MIN` (the agreement, deliberate differences
//! counted as agreeing, in percent of the specifications, below which the
//! test fails; default 95), `RKPROBE_DIFF_REPORT` (where to
//! write every case).

use std::collections::HashSet;
use std::fmt::Write;
use std::process::Command;

use rkprobe::debuginfo::{Debuginfo, Sections};
use rkprobe::event;
use rkprobe::fetcharg::Features;
use rkprobe::finder;
use rkprobe::specgen;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// perf's answer: its lines, or its messages.
fn perf_definition(vmlinux: &str, spec: &str) -> Result<Vec<String>, String> {
    let out = Command::new("nice")
        .args([
            "-n",
            "10",
            "perf",
            "probe",
            "-k",
            vmlinux,
            "--definition",
            spec,
        ])
        .output()
        .map_err(|e| format!("running perf: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(stdout.lines().map(str::to_string).collect())
    } else {
        Err(String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace('\n', " | "))
    }
}

#[derive(Default)]
struct Tally {
    same: usize,
    both_refuse: usize,
    differ: usize,
    only_perf: usize,
    only_ours: usize,
}

type Answer = Result<Vec<String>, String>;

impl Tally {
    /// Counts one case and names it.
    fn count(&mut self, ours: &Answer, theirs: &Answer) -> &'static str {
        match (ours, theirs) {
            (Ok(a), Ok(b)) if a == b => {
                self.same += 1;
                "same"
            }
            (Err(_), Err(_)) => {
                self.both_refuse += 1;
                "both-refuse"
            }
            (Ok(_), Ok(_)) => {
                self.differ += 1;
                "DIFFER"
            }
            (Err(_), Ok(_)) => {
                self.only_perf += 1;
                "ONLY-PERF"
            }
            (Ok(_), Err(_)) => {
                self.only_ours += 1;
                "ONLY-OURS"
            }
        }
    }

    fn agree(&self) -> usize {
        self.same + self.both_refuse
    }
}

#[test]
fn agrees_with_perf_probe() {
    let Ok(vmlinux) = std::env::var("RKPROBE_VMLINUX") else {
        eprintln!("perf_diff: RKPROBE_VMLINUX not set, skipped");
        return;
    };
    if Command::new("perf").arg("--version").output().is_err() {
        eprintln!("perf_diff: perf not installed, skipped");
        return;
    }
    let n = env_num("RKPROBE_DIFF_N", 300) as usize;
    let seed = env_num("RKPROBE_DIFF_SEED", 1);
    let min = env_num("RKPROBE_DIFF_MIN", 95) as usize;

    let bytes = std::fs::read(&vmlinux).expect("reading the vmlinux");
    let sections = Sections::from_elf(&bytes).expect("an ELF file");
    let di = Debuginfo::new(&sections).expect("DWARF");
    let specs = specgen::generate(&di, n, seed);
    assert!(specs.len() >= n.min(10), "too few specifications generated");

    let run = |features: Features| -> Vec<Result<Vec<String>, String>> {
        specs
            .iter()
            .map(|s| {
                let mut taken = HashSet::new();
                event::definitions(&di, s, features, finder::MAX_PROBES, &mut taken, true)
                    .map(|(evs, _)| evs.iter().map(|e| e.command()).collect())
            })
            .collect()
    };
    let ours = run(Features::LINUX_6_12);
    let quirks = run(Features {
        perf_quirks: true,
        ..Features::LINUX_6_12
    });
    drop(di);

    // perf, two at a time.
    let mut theirs: Vec<Option<Result<Vec<String>, String>>> = vec![None; specs.len()];
    std::thread::scope(|sc| {
        let (a, b) = theirs.split_at_mut(specs.len() / 2);
        let (sa, sb) = specs.split_at(specs.len() / 2);
        let v = vmlinux.as_str();
        sc.spawn(move || {
            for (slot, s) in a.iter_mut().zip(sa) {
                *slot = Some(perf_definition(v, s));
            }
        });
        for (slot, s) in b.iter_mut().zip(sb) {
            *slot = Some(perf_definition(v, s));
        }
    });

    let mut t = Tally::default();
    let mut q = Tally::default();
    let mut deliberate = 0;
    let mut report = String::new();
    let agree = |a: &Result<Vec<String>, String>, b: &Result<Vec<String>, String>| match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    };
    for (i, spec) in specs.iter().enumerate() {
        let (Some(ours), Some(quirks), Some(Some(theirs))) =
            (ours.get(i), quirks.get(i), theirs.get(i))
        else {
            continue;
        };
        q.count(quirks, theirs);
        let verdict = t.count(ours, theirs);
        // A difference that goes away when perf's mistakes are reproduced is
        // one of the documented, deliberate ones.
        let verdict = if !agree(ours, theirs) && agree(quirks, theirs) {
            deliberate += 1;
            "deliberate"
        } else {
            verdict
        };
        let _ = writeln!(report, "== [{verdict}] {spec}");
        let show = |r: &Result<Vec<String>, String>| match r {
            Ok(l) => l.join("\n        "),
            Err(e) => format!("error: {e}"),
        };
        if verdict != "same" {
            let _ = writeln!(report, "  ours: {}", show(ours));
            let _ = writeln!(report, "  perf: {}", show(theirs));
        }
    }
    let total = specs.len();
    let summary = format!(
        "perf_diff: {total} specifications from the debuginfo.\n\
         perf_diff: rkprobe: {} agree with perf ({} same lines, {} both refuse), \
         {deliberate} differ deliberately, {} otherwise.\n\
         perf_diff: rkprobe with perf's quirks: {} agree ({} same lines, {} both refuse), \
         {} differ, {} only perf accepts, {} only rkprobe accepts",
        t.agree(),
        t.same,
        t.both_refuse,
        total - t.agree() - deliberate,
        q.agree(),
        q.same,
        q.both_refuse,
        q.differ,
        q.only_perf,
        q.only_ours
    );
    eprintln!("{summary}");
    let _ = writeln!(report, "{summary}");
    let path = std::env::var("RKPROBE_DIFF_REPORT")
        .unwrap_or_else(|_| format!("{}/perf_diff.txt", env!("CARGO_TARGET_TMPDIR")));
    std::fs::write(&path, report).expect("writing the report");
    eprintln!("perf_diff: every case in {path}");
    let explained = t.agree() + deliberate;
    assert!(
        explained * 100 >= min * total,
        "agreement {explained}/{total} (deliberate differences included) below {min}%"
    );
}
