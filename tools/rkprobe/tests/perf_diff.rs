// SPDX-License-Identifier: GPL-2.0

//! Differential test against `perf probe` itself.
//!
//! Specifications are generated from the vmlinux's own debuginfo
//! (`specgen`), each is given to `perf probe -k VMLINUX --definition`, which
//! prints the kprobe_events lines without touching the system, and to this
//! crate; the lines must be equal, or differ in one of the documented,
//! deliberate ways (Documentation/rkprobe-tool.rst). The same is done on a
//! module (`-m lkdtm.ko`), and for `--vars` and `--line` on points and
//! descriptions made from the specifications, and for `--funcs` on perf's
//! and generated filters. Each test ends with a line per command, `perf_diff
//! COMMAND: N specs, A agree, D deliberate (RULES), U unexplained`, which
//! `cargo test` shows without `--nocapture`.
//!
//! The vmlinux is `RKPROBES_VMLINUX` (`make check` and `make host-test` set
//! it to the test kernel's), else the one of the cached test kernel
//! (`$RKPROBES_CACHE/kdir`). The test fails, never skips, when there is no
//! vmlinux, when it has no DWARF, or when perf is missing: the test kernel
//! is built with DWARF and tools/setup installs perf.
//!
//! perf needs about two seconds for each specification (it loads the whole
//! DWARF each time), so its answers are cached under
//! `$RKPROBES_CACHE/perf-probe/`, keyed by the vmlinux's build-id and perf's
//! version, and the missing ones are computed on every CPU at once.
//!
//! Knobs: `RKPROBE_DIFF_N` (specifications, default 400),
//! `RKPROBE_DIFF_SEED`, `RKPROBE_DIFF_MIN` (the agreement, deliberate
//! differences counted as agreeing, in percent of the specifications, below
//! which the test fails; default 100: every difference is deliberate, or
//! the test fails naming it), `RKPROBE_DIFF_REPORT` (where to write every
//! case); for the other tests `RKPROBE_DIFF_MODULE_N` (100),
//! `RKPROBE_DIFF_VARS_N` (60), `RKPROBE_DIFF_LINE_N` (60), and the
//! agreement each needs, `RKPROBE_DIFF_VARS_MIN` (100),
//! `RKPROBE_DIFF_LINE_MIN` (98), `RKPROBE_DIFF_FUNCS_MIN` (100).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rkprobe::debuginfo::{Debuginfo, Sections};
use rkprobe::event;
use rkprobe::fetcharg::Features;
use rkprobe::finder;
use rkprobe::show;
use rkprobe::specgen;
use rkprobe::strfilter::Filter;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// perf's answer: its lines, or its messages.
/// `file` is the vmlinux (`-k`) or a module's `.ko` (`-m`), as `opt` says;
/// `cmd` is `--definition`, `--line`, `--vars` or `--funcs`; `spec` is
/// its argument, or for `--funcs` the words after it (none for perf's
/// default filter).
fn perf_run(opt: &str, file: &str, cmd: &str, spec: &str) -> Result<Vec<String>, String> {
    let mut args = vec!["-n", "10", "perf", "probe", opt, file, cmd];
    if cmd == "--funcs" {
        args.extend(spec.split_ascii_whitespace());
    } else {
        args.push(spec);
    }
    let out = Command::new("nice")
        .args(args)
        .output()
        .map_err(|e| format!("running perf: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(stdout.lines().map(str::to_string).collect())
    } else if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&out.status) {
        Err(format!("{PERF_CRASHED}{sig}"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace('\n', " | "))
    }
}

// The deliberate differences, each a rule of Documentation/rkprobe-tool.rst.
const RULE_LOCATION: &str = "variables refused whose location perf misreads";
const RULE_CRASH: &str = "lines where perf crashes";
const RULE_DUPLICATE: &str = "lines where perf lists an argument name twice";
const RULE_RUST: &str = "Rust functions' symbols where perf writes the demangled name";
const RULE_INIT: &str = "__init functions' own symbols";
const RULE_QUIRK_LINE: &str = "lines as perf's with its quirks reproduced";
const RULE_QUIRK_REFUSE: &str = "refused where perf with its quirks writes a line";
const RULE_QUIRK_ACCEPT: &str = "written where perf with its quirks refuses";
const RULE_VOID: &str = "types perf 6.1 names otherwise (void*, arrays, anonymous)";
const RULE_LINE_NO_INFO: &str = "lines at an address without a statement row";
const RULE_LINE_FIRST_UNIT: &str = "functions perf looks for in the first unit defining them only";
const RULE_FUNCS_ONCE: &str = "names perf lists once per symbol";
const RULE_FUNCS_LABELS: &str = "labels of .text perf lists";
const RULE_FUNCS_MODULE_DATA: &str = "a module's data objects perf lists";
const RULE_FUNCS_FILTER: &str = "--filter perf ORs with its default";

/// The start of the answer recorded when perf is killed by a signal.
const PERF_CRASHED: &str = "perf was killed by signal ";

/// perf crashed: killed by a signal, or (answers cached before the signal
/// was recorded) failed without a word, where perf always prints why.
fn perf_crashed(theirs: &Answer) -> bool {
    matches!(theirs, Err(e) if e.is_empty() || e.starts_with(PERF_CRASHED))
}

/// Every argument name of every line given once: a line kprobe_events
/// accepts.
fn names_unique(lines: &[String]) -> bool {
    lines.iter().all(|l| {
        let names: Vec<&str> = l
            .split(' ')
            .skip(2)
            .filter_map(|a| a.split_once('=').map(|(n, _)| n))
            .collect();
        let set: HashSet<&str> = names.iter().copied().collect();
        set.len() == names.len()
    })
}

/// perf writes a Rust function's demangled name
/// (`<core::fmt::Formatter>::debug_tuple_field5_finish+0`), which
/// kprobe_events cannot resolve (kallsyms holds the mangled symbol); rkprobe
/// writes the symbol (`_RNvMsa_..._9Formatter25debug_tuple_field5_finish+0`).
/// The lines are otherwise equal.
fn rust_symbol_only(ours: &Answer, theirs: &Answer) -> bool {
    let (Ok(a), Ok(b)) = (ours, theirs) else {
        return false;
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            if x == y {
                return true;
            }
            let (xs, ys): (Vec<&str>, Vec<&str>) = (x.split(' ').collect(), y.split(' ').collect());
            let (Some(xp), Some(yp)) = (xs.get(1), ys.get(1)) else {
                return false;
            };
            let (xsym, xoff) = xp.rsplit_once('+').unwrap_or((xp, ""));
            let (ysym, yoff) = yp.rsplit_once('+').unwrap_or((yp, ""));
            xs.len() == ys.len()
                && xs.first() == ys.first()
                && xs.get(2..) == ys.get(2..)
                && xoff == yoff
                && xsym.starts_with("_R")
                && ysym.contains("::")
                && ysym
                    .rsplit("::")
                    .next()
                    .is_some_and(|f| !f.is_empty() && xsym.ends_with(f))
        })
}

/// perf's line with every argument whose name came earlier dropped.
fn names_once(line: &str) -> String {
    let mut seen = HashSet::new();
    line.split(' ')
        .enumerate()
        .filter(|&(i, a)| i < 2 || a.split_once('=').is_none_or(|(n, _)| seen.insert(n)))
        .map(|(_, a)| a)
        .collect::<Vec<_>>()
        .join(" ")
}

/// perf's `$params` and `$vars` list a name twice (an inlined function
/// inlined into itself by GCC, a parameter of a callee inlined at the
/// address with the same name, a shadowed variable), a line kprobe_events
/// refuses ("Argument name is used twice"); rkprobe lists each name once.
fn duplicate_names_only(ours: &Answer, theirs: &Answer) -> bool {
    let (Ok(a), Ok(b)) = (ours, theirs) else {
        return false;
    };
    a != b && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| *x == names_once(y))
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

fn cache_dir() -> PathBuf {
    std::env::var_os("RKPROBES_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/rkprobes")
        })
}

/// The vmlinux to compare on: `RKPROBES_VMLINUX`, else the cached test
/// kernel's.
fn vmlinux_path() -> PathBuf {
    if let Some(v) =
        std::env::var_os("RKPROBES_VMLINUX").or_else(|| std::env::var_os("RKPROBE_VMLINUX"))
    {
        return PathBuf::from(v);
    }
    let kdir = std::fs::read_to_string(cache_dir().join("kdir")).unwrap_or_else(|e| {
        panic!("perf_diff: no RKPROBES_VMLINUX and no cached test kernel ({e}): run make kernel")
    });
    PathBuf::from(kdir.trim()).join("vmlinux")
}

/// perf's answers cached in a file, one record a line:
/// `SPEC \x1f ok|err \x1f LINES joined by \x1e, or the message`.
struct PerfCache {
    path: PathBuf,
    known: HashMap<String, Answer>,
}

impl PerfCache {
    fn open(build_id: &str, perf_version: &str) -> PerfCache {
        let dir = cache_dir().join("perf-probe");
        let _ = std::fs::create_dir_all(&dir);
        let v: String = perf_version
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{build_id}-{v}.txt"));
        let mut known = HashMap::new();
        for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
            let mut f = line.splitn(3, '\x1f');
            let (Some(spec), Some(kind), Some(body)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let a = match kind {
                "ok" if body.is_empty() => Ok(Vec::new()),
                "ok" => Ok(body.split('\x1e').map(str::to_string).collect()),
                _ => Err(body.to_string()),
            };
            known.insert(spec.to_string(), a);
        }
        PerfCache { path, known }
    }

    fn save(&self, new: &[(String, Answer)]) {
        let mut text = String::new();
        for (spec, a) in new {
            let (kind, body) = match a {
                Ok(l) => ("ok", l.join("\x1e")),
                Err(e) => ("err", e.replace(['\n', '\x1f', '\x1e'], " ")),
            };
            let _ = writeln!(text, "{spec}\x1f{kind}\x1f{body}");
        }
        use std::io::Write as _;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path);
        if let Ok(mut f) = f {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

/// The cache's key for `spec` given to perf's `cmd`: the specification
/// alone for `--definition` (the answers cached before the other commands
/// were compared), else the command and the specification.
fn cache_key(cmd: &str, spec: &str) -> String {
    if cmd == "--definition" {
        spec.to_string()
    } else {
        format!("{cmd} {spec}")
    }
}

/// perf's answers for `specs` given to its `cmd`: from the cache, the rest
/// computed on every CPU and added to the cache.
fn perf_answers(opt: &str, file: &str, build_id: &str, cmd: &str, specs: &[String]) -> Vec<Answer> {
    let version = Command::new("perf")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cache = PerfCache::open(build_id, &version);
    let missing: Vec<&String> = specs
        .iter()
        .filter(|s| !cache.known.contains_key(&cache_key(cmd, s)))
        .collect();
    let done = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    eprintln!(
        "perf_diff: {} of {} perf answers cached in {}; running perf for the others on {cpus} CPUs",
        specs.len() - missing.len(),
        specs.len(),
        cache.path.display()
    );
    std::thread::scope(|sc| {
        for _ in 0..cpus {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(s) = missing.get(i) else { break };
                let a = perf_run(opt, file, cmd, s);
                if let Ok(mut d) = done.lock() {
                    d.push((cache_key(cmd, s), a));
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_default();
    cache.save(&done);
    let fresh: HashMap<String, Answer> = done.into_iter().collect();
    specs
        .iter()
        .map(|s| {
            let k = cache_key(cmd, s);
            fresh
                .get(&k)
                .or_else(|| cache.known.get(&k))
                .cloned()
                .unwrap_or_else(|| Err("no answer".into()))
        })
        .collect()
}

/// The kind of probe point of a specification, for the report.
fn point_kind(spec: &str) -> &'static str {
    let point = spec.split_ascii_whitespace().next().unwrap_or("");
    if point.contains(';') {
        "lazy pattern"
    } else if point.contains("%return") {
        "return"
    } else if point.contains('+') {
        "function+offset"
    } else if point.contains('@') {
        "function@file"
    } else if point.contains(".c:") || point.contains(".h:") {
        "file:line"
    } else if point.contains(':') {
        "function:relative line"
    } else {
        "function entry"
    }
}

/// The kind of arguments of a specification, for the report.
fn arg_kind(spec: &str) -> &'static str {
    let args: Vec<&str> = spec.split_ascii_whitespace().skip(1).collect();
    match args.first() {
        None => "no arguments",
        Some(a) if a.starts_with("$vars") => "$vars",
        Some(a) if a.starts_with("$params") => "$params",
        Some(a) if a.starts_with("$retval") => "$retval",
        Some(a) if a.contains("->") || a.contains('.') => "member",
        Some(a) if a.contains(':') => "cast",
        Some(_) => "variable",
    }
}

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
    let vmlinux = vmlinux_path();
    let n = env_num("RKPROBE_DIFF_N", 400) as usize;
    differential(&vmlinux, "-k", n, 300, "perf_diff.txt");
}

/// The same on a module of the test kernel: lkdtm.ko, built with it
/// (`CONFIG_LKDTM=m`), its probes at `lkdtm:symbol+offset`, perf given it
/// with `-m`.
#[test]
fn agrees_with_perf_probe_on_a_module() {
    let vmlinux = vmlinux_path();
    let ko = vmlinux
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("drivers/misc/lkdtm/lkdtm.ko");
    let n = env_num("RKPROBE_DIFF_MODULE_N", 100) as usize;
    differential(&ko, "-m", n, 60, "perf_diff_module.txt");
}

/// Compares rkprobe with `perf probe OPT FILE --definition` over `n`
/// specifications generated from FILE (at least `least` of them);
/// `report` names the report file when `RKPROBE_DIFF_REPORT` does not.
fn differential(file: &std::path::Path, opt: &str, n: usize, least: usize, report_name: &str) {
    let vmlinux = file.to_string_lossy().into_owned();
    assert!(
        Command::new("perf").arg("--version").output().is_ok(),
        "perf_diff: perf is not installed (tools/setup installs linux-perf)"
    );
    let seed = env_num("RKPROBE_DIFF_SEED", 1);
    let min = env_num("RKPROBE_DIFF_MIN", 100) as usize;

    let bytes = std::fs::read(&vmlinux)
        .unwrap_or_else(|e| panic!("perf_diff: reading {vmlinux}: {e} (run make kernel)"));
    let build_id = {
        use object::Object;
        let f = object::File::parse(&*bytes).expect("an ELF file");
        assert!(
            f.section_by_name(".debug_info").is_some(),
            "perf_diff: {vmlinux} has no DWARF (.debug_info): the test kernel must be built \
             with CONFIG_DEBUG_INFO_DWARF5"
        );
        f.build_id()
            .ok()
            .flatten()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
            .expect("a build-id")
    };
    let sections = Sections::from_elf(&bytes).expect("an ELF file");
    let di = Debuginfo::new(&sections).expect("DWARF");
    let specs = specgen::generate(&di, n, seed);
    assert!(
        specs.len() >= n.min(least),
        "too few specifications generated: {}",
        specs.len()
    );

    let run = |features: Features| -> Vec<Result<Vec<String>, String>> {
        specs
            .iter()
            .map(|s| {
                let mut taken = HashSet::new();
                event::definitions(&di, s, &finder::Options::new(features), &mut taken, true)
                    .map(|(evs, _)| evs.iter().map(|e| e.command()).collect())
            })
            .collect()
    };
    let ours = run(Features::LINUX_6_12);
    let quirks = run(Features {
        perf_quirks: true,
        ..Features::LINUX_6_12
    });
    // perf's kernel map holds .text only: for a function elsewhere (the
    // .init.text of __init functions) it writes the nearest symbol before
    // the address, often data (`__per_cpu_end+244528`), where rkprobe
    // writes the function's own symbol from DWARF.
    let text_symbols: HashSet<String> = di
        .symbols
        .with_aliases()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    drop(di);
    let init_text_only = |ours: &Answer, theirs: &Answer| -> bool {
        let (Ok(a), Ok(b)) = (ours, theirs) else {
            return false;
        };
        a != b
            && a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                if x == y {
                    return true;
                }
                let (xs, ys): (Vec<&str>, Vec<&str>) =
                    (x.split(' ').collect(), y.split(' ').collect());
                let sym = xs.get(1).and_then(|p| p.split('+').next()).unwrap_or("");
                xs.len() == ys.len()
                    && xs.first() == ys.first()
                    && xs.get(2..) == ys.get(2..)
                    && !text_symbols.contains(sym)
            })
    };

    let theirs: Vec<Option<Answer>> =
        perf_answers(opt, &vmlinux, &build_id, "--definition", &specs)
            .into_iter()
            .map(Some)
            .collect();
    // Per kind: (specifications, agree, deliberate).
    let mut by_point: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut by_arg: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut t = Tally::default();
    let mut q = Tally::default();
    let mut deliberate = 0;
    // The deliberate differences, counted by rule.
    let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
    // rkprobe refuses a variable whose location perf misreads (a computed
    // value, pieces): the whole specification fails where perf writes a
    // line, or `$params`/`$vars` leave it out and so expand to nothing.
    let refused_location = |ours: &Answer, theirs: &Answer| -> bool {
        match (ours, theirs) {
            (Err(e), Ok(_)) => {
                e.starts_with("Sorry, we don't support this variable location yet")
                    || e.starts_with("Failed to find the location of the '$params'")
                    || e.starts_with("Failed to find the location of the '$vars'")
            }
            _ => false,
        }
    };
    let mut report = String::new();
    let mut unexplained = Vec::new();
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
        // The deliberate difference this one is, by the first rule that
        // explains it (Documentation/rkprobe-tool.rst names each rule).
        let rule = if agree(ours, theirs) {
            None
        } else if refused_location(ours, theirs) {
            Some(RULE_LOCATION)
        } else if perf_crashed(theirs) && ours.as_ref().is_ok_and(|l| names_unique(l)) {
            Some(RULE_CRASH)
        } else if duplicate_names_only(ours, theirs) {
            Some(RULE_DUPLICATE)
        } else if rust_symbol_only(ours, theirs) {
            Some(RULE_RUST)
        } else if init_text_only(ours, theirs) || init_text_only(quirks, theirs) {
            Some(RULE_INIT)
        } else if agree(quirks, theirs) {
            Some(match (ours, theirs) {
                (Err(_), Ok(_)) => RULE_QUIRK_REFUSE,
                (Ok(_), Err(_)) => RULE_QUIRK_ACCEPT,
                _ => RULE_QUIRK_LINE,
            })
        } else {
            None
        };
        if let Some(r) = rule {
            deliberate += 1;
            *rules.entry(r).or_default() += 1;
        }
        let verdict = if rule.is_some() {
            "deliberate"
        } else {
            verdict
        };
        for (map, k) in [
            (&mut by_point, point_kind(spec)),
            (&mut by_arg, arg_kind(spec)),
        ] {
            let e = map.entry(k).or_default();
            e.0 += 1;
            e.1 += usize::from(agree(ours, theirs));
            e.2 += usize::from(verdict == "deliberate");
        }
        if verdict != "same" && verdict != "both-refuse" && verdict != "deliberate" {
            unexplained.push(spec.as_str());
        }
        match rule {
            Some(r) => writeln!(report, "== [deliberate: {r}] {spec}"),
            None => writeln!(report, "== [{verdict}] {spec}"),
        }
        .ok();
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
        "perf_diff: {total} specifications from the debuginfo of {vmlinux}.\n\
         perf_diff: rkprobe: {} agree with perf ({} same lines, {} both refuse), \
         {deliberate} differ deliberately ({}), \
         {} otherwise.\n\
         perf_diff: rkprobe with perf's quirks: {} agree ({} same lines, {} both refuse), \
         {} differ, {} only perf accepts, {} only rkprobe accepts",
        t.agree(),
        t.same,
        t.both_refuse,
        rules_text(&rules),
        total - t.agree() - deliberate,
        q.agree(),
        q.same,
        q.both_refuse,
        q.differ,
        q.only_perf,
        q.only_ours
    );
    let mut kinds = String::new();
    for (title, map) in [("probe point", &by_point), ("arguments", &by_arg)] {
        for (k, (n, a, d)) in map.iter() {
            let _ = writeln!(
                kinds,
                "perf_diff:   {title} {k:<24} {n:>4} specifications, {a:>4} agree, {d:>3} differ deliberately"
            );
        }
    }
    let summary = format!("{summary}\n{}", kinds.trim_end());
    eprintln!("{summary}");
    let _ = writeln!(report, "{summary}");
    let cmd = match opt {
        "-m" => format!(
            "--definition -m {}",
            file.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => "--definition".to_string(),
    };
    let line = summary_line(
        &cmd,
        total,
        t.agree(),
        &rules,
        deliberate,
        total - t.agree() - deliberate,
    );
    let _ = writeln!(report, "{line}");
    let path = std::env::var("RKPROBE_DIFF_REPORT")
        .map(|r| format!("{r}{}", if opt == "-m" { ".module" } else { "" }))
        .unwrap_or_else(|_| format!("{}/{report_name}", env!("CARGO_TARGET_TMPDIR")));
    std::fs::write(&path, report).expect("writing the report");
    eprintln!("perf_diff: every case in {path}");
    let explained = t.agree() + deliberate;
    assert!(
        explained * 100 >= min * total,
        "agreement {explained}/{total} (deliberate differences included) below {min}%; \
         not explained: {unexplained:?} (every case in {path})"
    );
}

/// The probe points of generated specifications (their first word), each
/// once, in order.
fn points_of(specs: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    specs
        .iter()
        .filter_map(|s| s.split_ascii_whitespace().next())
        .map(|p| p.split_once('=').map_or(p, |(_, p)| p).to_string())
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// `--line` descriptions from generated specifications: a function (as
/// written, `FUNC@SRC` included), a relative line of it with the next few
/// (`FUNC:RLN+6`), a file's line with the next few (`SRC:ALN+6`), each
/// once, in order.
fn line_descs(specs: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    points_of(specs)
        .into_iter()
        .filter_map(|p| {
            let head = p.split([';', '%', '+']).next().unwrap_or("");
            match head.split_once(':') {
                Some((f, l)) if l.chars().all(|c| c.is_ascii_digit()) => Some(format!("{f}:{l}+6")),
                Some(_) => None,
                None if head.is_empty() => None,
                None => Some(head.to_string()),
            }
        })
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

/// `--vars` lines with the types perf 6.1 names otherwise written as it
/// writes them (a void pointer, and an anonymous struct, union or enum or
/// a pointer to or array of one, `(unknown_type)`; an array `TYPE*`; perf
/// 6.12, like rkprobe, writes `void*`, `union ` and `TYPE[]`), and each
/// address's variables sorted again (perf sorts the lines).
fn as_perf_6_1_types(lines: &[String]) -> Vec<String> {
    // perf 6.1's die_get_typename() fails on a type without a name.
    let anonymous = |t: &str| {
        matches!(
            t.trim_end_matches(['*', '[', ']']),
            "struct " | "union " | "enum "
        )
    };
    let mut out: Vec<String> = Vec::new();
    let mut block: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<String>, block: &mut Vec<String>| {
        block.sort();
        out.append(block);
    };
    for l in lines {
        match l.strip_prefix("\t\t") {
            Some(v) if !v.starts_with('(') || v.starts_with("(unknown_type)") => {
                let v = match v.split_once('\t') {
                    Some((t, n)) if t.starts_with("void*") || anonymous(t) => {
                        format!("(unknown_type)\t{n}")
                    }
                    Some((t, n)) if t.ends_with("[]") => {
                        format!("{}*\t{n}", t.trim_end_matches("[]"))
                    }
                    _ => v.to_string(),
                };
                block.push(format!("\t\t{v}"));
            }
            _ => {
                flush(&mut out, &mut block);
                out.push(l.clone());
            }
        }
    }
    flush(&mut out, &mut block);
    out
}

/// A `--line` text's line without its number (`   1609  text` and
/// `         text` are both `text`).
fn unnumbered(l: &str) -> &str {
    l.split_at_checked(9)
        .filter(|(n, _)| n.trim().is_empty() || n.trim().parse::<i64>().is_ok())
        .map_or(l, |(_, t)| t)
}

/// `--line` texts equal but for the numbers of lines that rkprobe with
/// perf's quirks does not number (`quirks`): lines whose addresses have
/// no statement row, where perf reads a line number it never set.
fn numbers_differ_where_unverified(ours: &Answer, theirs: &Answer, quirks: &Answer) -> bool {
    let (Ok(a), Ok(b), Ok(q)) = (ours, theirs, quirks) else {
        return false;
    };
    a != b
        && a.len() == b.len()
        && a.len() == q.len()
        && a.iter()
            .zip(b)
            .zip(q)
            .all(|((x, y), z)| x == y || (unnumbered(x) == unnumbered(y) && x != z))
}

/// `ours` is `theirs` but for the type names of [`as_perf_6_1_types`].
fn void_pointers_only(ours: &Answer, theirs: &Answer) -> bool {
    let (Ok(a), Ok(b)) = (ours, theirs) else {
        return false;
    };
    a != b && as_perf_6_1_types(a) == *b
}

/// Compares what rkprobe shows with what `perf probe -k VMLINUX CMD`
/// shows (`--line` or `--vars`), text for text, over `n` arguments made
/// from generated specifications by `args_of`. A difference is
/// deliberate when rkprobe with perf's quirks shows what perf shows (the
/// variables whose location perf misreads; for `--line`, a function perf
/// looks for in the first unit that defines it only), for `--vars` when
/// perf 6.1 names a type otherwise, and for `--line` when only the
/// numbers of lines without a statement row differ; the test fails when
/// fewer than `min` percent of the arguments agree or differ
/// deliberately.
fn compare_shown(
    cmd: &str,
    n: usize,
    min: usize,
    args_of: fn(&[String]) -> Vec<String>,
    report_name: &str,
) {
    let vmlinux = vmlinux_path().to_string_lossy().into_owned();
    assert!(
        Command::new("perf").arg("--version").output().is_ok(),
        "perf_diff: perf is not installed (tools/setup installs linux-perf)"
    );
    let seed = env_num("RKPROBE_DIFF_SEED", 1);
    let bytes = std::fs::read(&vmlinux)
        .unwrap_or_else(|e| panic!("perf_diff: reading {vmlinux}: {e} (run make kernel)"));
    let build_id = rkprobe::buildid::of_file(&bytes)
        .map(|b| rkprobe::buildid::hex(&b))
        .expect("a build-id");
    let sections = Sections::from_elf(&bytes).expect("an ELF file");
    let di = Debuginfo::new(&sections).expect("DWARF");
    let args: Vec<String> = args_of(&specgen::generate(&di, 4 * n, seed))
        .into_iter()
        .take(n)
        .collect();
    assert!(
        args.len() >= n / 2,
        "too few {cmd} arguments: {}",
        args.len()
    );
    let lines = |t: String| t.lines().map(str::to_string).collect::<Vec<_>>();
    let show = |features: Features| -> Vec<Answer> {
        args.iter()
            .map(|a| match cmd {
                "--line" => show::line_range(&di, a, &finder::Options::new(features))
                    .map(|l| lines(l.text())),
                _ => {
                    let vopts = show::VarsOptions {
                        range: false,
                        externs: false,
                        filter: Filter::parse("!__k???tab_* & !__crc_*").expect("perf's filter"),
                    };
                    show::vars(&di, a, &finder::Options::new(features), &vopts)
                        .map(|v| lines(v.text()))
                }
            })
            .collect()
    };
    let ours = show(Features::LINUX_6_12);
    let quirks = show(Features {
        perf_quirks: true,
        ..Features::LINUX_6_12
    });
    drop(di);
    let theirs = perf_answers("-k", &vmlinux, &build_id, cmd, &args);
    let agree = |a: &Answer, b: &Answer| match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    };
    let mut t = Tally::default();
    let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut report = String::new();
    for (i, a) in args.iter().enumerate() {
        let (Some(ours), Some(quirks), Some(theirs)) = (ours.get(i), quirks.get(i), theirs.get(i))
        else {
            continue;
        };
        let verdict = t.count(ours, theirs);
        let rule = if agree(ours, theirs) {
            None
        } else if cmd == "--vars" && void_pointers_only(ours, theirs) {
            Some(RULE_VOID)
        } else if cmd == "--line" && numbers_differ_where_unverified(ours, theirs, quirks) {
            Some(RULE_LINE_NO_INFO)
        } else if cmd == "--line" && agree(quirks, theirs) {
            Some(RULE_LINE_FIRST_UNIT)
        } else if agree(quirks, theirs) || (cmd == "--vars" && void_pointers_only(quirks, theirs)) {
            Some(RULE_QUIRK_LINE)
        } else {
            unexplained.push(a.as_str());
            None
        };
        if let Some(r) = rule {
            *rules.entry(r).or_default() += 1;
        }
        let _ = writeln!(report, "== [{}] {cmd} {a}", rule.unwrap_or(verdict));
        if verdict != "same" {
            let text = |r: &Answer| match r {
                Ok(l) => l.join("\n        "),
                Err(e) => format!("error: {e}"),
            };
            let _ = writeln!(report, "  ours: {}\n  perf: {}", text(ours), text(theirs));
        }
    }
    let deliberate: usize = rules.values().sum();
    let summary = format!(
        "perf_diff: {cmd}: {} arguments from the debuginfo of {vmlinux}: {} agree ({} same, {} \
         both refuse), {deliberate} differ deliberately ({}), {} otherwise",
        args.len(),
        t.agree(),
        t.same,
        t.both_refuse,
        rules_text(&rules),
        unexplained.len()
    );
    eprintln!("{summary}");
    let _ = writeln!(report, "{summary}");
    let line = summary_line(
        cmd,
        args.len(),
        t.agree(),
        &rules,
        deliberate,
        unexplained.len(),
    );
    let _ = writeln!(report, "{line}");
    let path = std::env::var("RKPROBE_DIFF_REPORT")
        .map(|r| format!("{r}.{}", cmd.trim_start_matches('-')))
        .unwrap_or_else(|_| format!("{}/{report_name}", env!("CARGO_TARGET_TMPDIR")));
    std::fs::write(&path, report).expect("writing the report");
    eprintln!("perf_diff: every case in {path}");
    let explained = t.agree() + deliberate;
    assert!(
        explained * 100 >= min * args.len(),
        "{cmd}: agreement {explained}/{} below {min}%; not explained: {unexplained:?} (every case \
         in {path})",
        args.len()
    );
}

/// `--line` against perf's, on functions, relative lines and files of the
/// test kernel (`RKPROBE_DIFF_LINE_N`, default 60). A difference is
/// deliberate when rkprobe with perf's quirks shows what perf shows: a
/// line at an address without a statement row, which perf leaves
/// unnumbered (or not: it reads a line number it never set), or a
/// function perf looks for in the first unit that defines it only.
/// `RKPROBE_DIFF_LINE_MIN` (default 98) is the agreement in percent,
/// deliberate differences included, below which it fails.
#[test]
fn lines_agree_with_perf_probe() {
    let n = env_num("RKPROBE_DIFF_LINE_N", 60) as usize;
    let min = env_num("RKPROBE_DIFF_LINE_MIN", 98) as usize;
    compare_shown("--line", n, min, line_descs, "perf_diff_line.txt");
}

/// `--vars` against perf's, on the points of generated specifications
/// (`RKPROBE_DIFF_VARS_N`, default 60); every difference must be
/// explained (`RKPROBE_DIFF_VARS_MIN`, default 100).
#[test]
fn vars_agree_with_perf_probe() {
    let n = env_num("RKPROBE_DIFF_VARS_N", 60) as usize;
    let min = env_num("RKPROBE_DIFF_VARS_MIN", 100) as usize;
    compare_shown("--vars", n, min, points_of, "perf_diff_vars.txt");
}

/// The deliberate differences counted by rule, as the summaries print them.
fn rules_text(rules: &BTreeMap<&str, usize>) -> String {
    rules
        .iter()
        .map(|(r, n)| format!("{n} {r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints a command's summary, `perf_diff COMMAND: N specs, A agree, D
/// deliberate (RULES), U unexplained`, straight to the standard error, so
/// that `cargo test` shows it without `--nocapture` (the test harness
/// captures only `print!` and `eprint!`), and returns it.
fn summary_line(
    cmd: &str,
    specs: usize,
    agree: usize,
    rules: &BTreeMap<&str, usize>,
    deliberate: usize,
    unexplained: usize,
) -> String {
    use std::io::Write as _;
    let line = format!(
        "perf_diff {cmd}: {specs} specs, {agree} agree, {deliberate} deliberate ({}), \
         {unexplained} unexplained",
        rules_text(rules)
    );
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    line
}

/// The names of a file's function symbols and of the other symbols perf's
/// map of it holds: for a vmlinux, the labels of `.text` (assembly code
/// and data labels, the assembler's local labels); for a module, which
/// perf reads as a user-space file when given its path, the data objects
/// and labels of all its sections.
fn symbol_names(bytes: &[u8]) -> (HashSet<String>, HashSet<String>) {
    use object::{Object, ObjectSection, ObjectSymbol};
    let f = object::File::parse(bytes).expect("an ELF file");
    let rel = f.kind() == object::ObjectKind::Relocatable;
    let text = f.section_by_name(".text").map(|s| s.index());
    let (mut funcs, mut others) = (HashSet::new(), HashSet::new());
    for s in f.symbols() {
        let (Ok(name), Some(sec)) = (s.name(), s.section_index()) else {
            continue;
        };
        if name.is_empty() || (!rel && Some(sec) != text) {
            continue;
        }
        match s.kind() {
            object::SymbolKind::Text => funcs.insert(name.to_string()),
            object::SymbolKind::Section | object::SymbolKind::File => false,
            _ => others.insert(name.to_string()),
        };
    }
    (funcs, others)
}

/// A `--funcs` case: the filter given to `-F` (none: perf's default)
/// and the one given to `--filter`.
struct FuncsCase {
    funcs: Option<String>,
    filter: Option<String>,
}

impl FuncsCase {
    fn new(funcs: Option<&str>, filter: Option<&str>) -> FuncsCase {
        FuncsCase {
            funcs: funcs.map(str::to_string),
            filter: filter.map(str::to_string),
        }
    }

    /// The words after perf's `-F` (filters have no white space).
    fn words(&self) -> String {
        let mut w: Vec<String> = self.funcs.iter().cloned().collect();
        if let Some(f) = &self.filter {
            w.push(format!("--filter {f}"));
        }
        w.join(" ")
    }

    /// rkprobe's filter, and perf's: `-F`'s own (or without one its
    /// default) OR'ed with `--filter`'s.
    fn filters(&self) -> (Filter, Filter) {
        let given: Vec<String> = self.funcs.iter().cloned().collect();
        let filter: Vec<String> = self.filter.iter().cloned().collect();
        let ours = show::funcs_filter(&given, &filter).expect("a filter");
        let mut perfs = vec![self
            .funcs
            .clone()
            .unwrap_or_else(|| show::FUNCS_DEFAULT_FILTER.into())];
        perfs.extend(filter);
        let perf = show::funcs_filter(&perfs, &[]).expect("a filter");
        (ours, perf)
    }
}

/// `--funcs` cases from the names of functions in generated
/// specifications: one exactly, and globs made of them (a prefix, a
/// suffix, `?`, a class, `&`, `!` and `|`).
fn funcs_cases_from(names: &[String]) -> Vec<FuncsCase> {
    let mut out = Vec::new();
    let mut names = names.iter().filter(|n| n.len() >= 6 && n.is_ascii());
    let mut next = || names.next().cloned().unwrap_or_else(|| "vfs_read".into());
    let head = |n: &str| n.split_inclusive('_').next().unwrap_or(n).to_string();
    let tail = |n: &str| n.rsplit('_').next().unwrap_or(n).to_string();
    let f = next();
    out.push(FuncsCase::new(Some(&f), None));
    let f = next();
    out.push(FuncsCase::new(Some(&format!("{}*", head(&f))), None));
    let f = next();
    out.push(FuncsCase::new(Some(&format!("*_{}", tail(&f))), None));
    let f = next();
    let q: String = f
        .char_indices()
        .map(|(i, c)| if i % 3 == 1 { '?' } else { c })
        .collect();
    out.push(FuncsCase::new(Some(&q), None));
    let f = next();
    let c = f.chars().next().unwrap_or('a');
    out.push(FuncsCase::new(Some(&format!("[{c}-z]{}*", &f[1..3])), None));
    let (f, g) = (next(), next());
    out.push(FuncsCase::new(
        Some(&format!("{}*&!*{}", head(&f), &f[f.len() - 2..])),
        None,
    ));
    out.push(FuncsCase::new(
        Some(&format!("{f}|{}*|!*_*&{}*", head(&g), &g[..1])),
        None,
    ));
    out
}

/// The rules that make perf's `--funcs` list rkprobe's (`ours`), each
/// when it changes something: the names of perf's map that are no
/// function symbol (`funcs`) but another symbol (`others`) left out
/// (`label_rule`), each name once, and, where that is not yet rkprobe's
/// list, rkprobe's list with perf's filter (`with_perfs_filter`); `None`
/// when they do not make it rkprobe's.
fn funcs_rules(
    ours: &[String],
    theirs: &[String],
    with_perfs_filter: &[String],
    funcs: &HashSet<String>,
    others: &HashSet<String>,
    label_rule: &'static str,
) -> Option<Vec<&'static str>> {
    let mut needed = Vec::new();
    let mut perfs: Vec<String> = theirs
        .iter()
        .filter(|n| funcs.contains(*n) || !others.contains(*n))
        .cloned()
        .collect();
    if perfs.len() != theirs.len() {
        needed.push(label_rule);
    }
    let len = perfs.len();
    perfs.dedup();
    if perfs.len() != len {
        needed.push(RULE_FUNCS_ONCE);
    }
    if ours != perfs {
        if with_perfs_filter != perfs {
            return None;
        }
        needed.push(RULE_FUNCS_FILTER);
    }
    (!needed.is_empty()).then_some(needed)
}

/// `--funcs` against perf's, on the test kernel and on lkdtm.ko (`-m`
/// with its path): perf's default filter, the filters of perf's manual
/// and of Documentation/rkprobe-tool.rst, `--filter`, and globs made from
/// the functions of generated specifications. The lists are compared
/// name for name, in order; a difference is deliberate when perf's list
/// is rkprobe's but for a name listed once per symbol, the labels its map
/// holds (a module's data objects), or `--filter` OR'ed with perf's
/// default; every difference must be explained
/// (`RKPROBE_DIFF_FUNCS_MIN`, default 100).
#[test]
fn funcs_agree_with_perf_probe() {
    let min = env_num("RKPROBE_DIFF_FUNCS_MIN", 100) as usize;
    let vmlinux = vmlinux_path();
    let ko = vmlinux
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("drivers/misc/lkdtm/lkdtm.ko");
    let seed = env_num("RKPROBE_DIFF_SEED", 1);
    // (-F's filter, --filter's) for the vmlinux, then for the module.
    let vmlinux_cases = [
        (None, None),
        (Some("vfs_*"), None),
        (Some("!*_*|vfs*"), None),
        (Some("(vfs_*|ksys_*)&!*at"), None),
        (Some("*"), None),
        (None, Some("tcp_*")),
        (Some("vfs_*"), Some("ksys_*")),
    ];
    let module_cases = [
        (None, None),
        (Some("lkdtm_*"), None),
        (Some("*"), None),
        (Some("!lkdtm_*&!__*"), None),
    ];
    let mut t = Tally::default();
    let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
    let mut deliberate = 0;
    let mut unexplained = Vec::new();
    let mut report = String::new();
    let mut total = 0;
    for (opt, file) in [("-k", &vmlinux), ("-m", &ko)] {
        let path = file.to_string_lossy().into_owned();
        let bytes = std::fs::read(file)
            .unwrap_or_else(|e| panic!("perf_diff: reading {path}: {e} (run make kernel)"));
        let build_id = rkprobe::buildid::of_file(&bytes)
            .map(|b| rkprobe::buildid::hex(&b))
            .expect("a build-id");
        let sections = Sections::from_elf(&bytes).expect("an ELF file");
        let fixed = if opt == "-k" {
            &vmlinux_cases[..]
        } else {
            &module_cases[..]
        };
        let mut cases: Vec<FuncsCase> = fixed.iter().map(|&(f, g)| FuncsCase::new(f, g)).collect();
        if opt == "-k" {
            let di = Debuginfo::new(&sections).expect("DWARF");
            let names: Vec<String> = points_of(&specgen::generate(&di, 40, seed))
                .iter()
                .filter_map(|p| p.split(['@', ':', '+', '%', ';']).next())
                .filter(|f| !f.contains('.') && !f.is_empty())
                .map(str::to_string)
                .collect();
            cases.extend(funcs_cases_from(&names));
        }
        let specs: Vec<String> = cases.iter().map(FuncsCase::words).collect();
        let theirs = perf_answers(opt, &path, &build_id, "--funcs", &specs);
        let (funcs, others) = symbol_names(&bytes);
        let label_rule = if opt == "-m" {
            RULE_FUNCS_MODULE_DATA
        } else {
            RULE_FUNCS_LABELS
        };
        let names = || {
            sections
                .symbols
                .with_aliases()
                .iter()
                .map(|s| s.name.as_str())
        };
        for (case, theirs) in cases.iter().zip(&theirs) {
            total += 1;
            let (filter, perf_filter) = case.filters();
            let ours = show::funcs(names(), &filter);
            let verdict = t.count(&Ok(ours.clone()), theirs);
            let rule = if verdict == "same" {
                None
            } else if let Some(needed) = theirs.as_ref().ok().and_then(|theirs| {
                let with_perfs_filter = show::funcs(names(), &perf_filter);
                funcs_rules(
                    &ours,
                    theirs,
                    &with_perfs_filter,
                    &funcs,
                    &others,
                    label_rule,
                )
            }) {
                deliberate += 1;
                for r in &needed {
                    *rules.entry(r).or_default() += 1;
                }
                Some(needed.join(", "))
            } else {
                unexplained.push(format!("{opt} -F {}", case.words()));
                None
            };
            let _ = writeln!(
                report,
                "== [{}] {opt} {} --funcs {}",
                rule.as_deref()
                    .map_or(verdict.to_string(), |r| format!("deliberate: {r}")),
                file.file_name().unwrap_or_default().to_string_lossy(),
                case.words()
            );
            if verdict != "same" {
                let Ok(b) = theirs else {
                    let _ = writeln!(report, "  ours: {ours:?}\n  perf: {theirs:?}");
                    continue;
                };
                let a = &ours;
                let (sa, sb): (HashSet<&String>, HashSet<&String>) =
                    (a.iter().collect(), b.iter().collect());
                let only = |x: &HashSet<&String>, y: &HashSet<&String>| {
                    let mut v: Vec<&str> = x.difference(y).map(|s| s.as_str()).collect();
                    v.sort_unstable();
                    v.join(" ")
                };
                let _ = writeln!(
                    report,
                    "  ours: {} names, perf: {} lines\n  only perf: {}\n  only ours: {}",
                    a.len(),
                    b.len(),
                    only(&sb, &sa),
                    only(&sa, &sb)
                );
            }
        }
    }
    let line = summary_line(
        "--funcs",
        total,
        t.agree(),
        &rules,
        deliberate,
        unexplained.len(),
    );
    let _ = writeln!(report, "{line}");
    let path = std::env::var("RKPROBE_DIFF_REPORT")
        .map(|r| format!("{r}.funcs"))
        .unwrap_or_else(|_| format!("{}/perf_diff_funcs.txt", env!("CARGO_TARGET_TMPDIR")));
    std::fs::write(&path, report).expect("writing the report");
    eprintln!("perf_diff: every case in {path}");
    let explained = t.agree() + deliberate;
    assert!(
        explained * 100 >= min * total,
        "--funcs: agreement {explained}/{total} below {min}%; not explained: {unexplained:?} \
         (every case in {path})"
    );
}
