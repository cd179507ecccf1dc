// SPDX-License-Identifier: GPL-2.0

//! `rkprobe`: define kprobe events by function, line and variable name, from
//! a kernel's DWARF, with `perf probe`'s syntax.
//!
//! ```text
//! rkprobe -k VMLINUX --definition 'vfs_read count file->f_mode'
//! rkprobe --add 'fs/read_write.c:470 count'        # into rkprobes
//! rkprobe --tracefs --add 'vfs_read%return $retval' # into the kernel's
//! rkprobe --list; rkprobe --del 'vfs_*'; rkprobe --vars vfs_read:5
//! rkprobe --line vfs_read; rkprobe --funcs 'vfs_*'
//! ```
//!
//! The command line is `rkprobe::cli`; this file finds the debuginfo,
//! runs the command and prints what perf prints, messages included: each
//! failure ends with perf's line for the command that failed.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use rkprobe::cli::{Cli, Command};
use rkprobe::control::{Control, Defined, Target};
use rkprobe::debuginfo::{Debuginfo, Sections};
use rkprobe::event::{self, NamedEvent, DEFAULT_GROUP};
use rkprobe::fetcharg::Features;
use rkprobe::finder;
use rkprobe::json::Value;
use rkprobe::show;
use rkprobe::spec;
use rkprobe::strfilter::Filter;

/// perf's default filter of `--vars` (with `--externs`, the symbol tables
/// and CRCs of exported symbols).
const DEFAULT_VAR_FILTER: &str = "!__k???tab_* & !__crc_*";

/// What kprobe_events accepts: with `--tracefs`, from the tracing README
/// when readable, as perf asks; rkprobes takes what Linux 6.12 takes.
fn features(cli: &Cli, control: &Control) -> Features {
    let f = match (cli.tracefs, control.readme()) {
        (true, Some(readme)) => std::fs::read_to_string(readme)
            .map(|r| Features::from_readme(&r))
            .unwrap_or(Features::LINUX_6_12),
        _ => Features::LINUX_6_12,
    };
    Features {
        perf_quirks: cli.perf_quirks,
        ..f
    }
}

/// The search options of the command line.
fn options(cli: &Cli, features: Features) -> finder::Options {
    finder::Options {
        features,
        max_probes: cli.max_probes,
        no_inlines: cli.no_inlines,
        source_prefix: cli.source.clone(),
    }
}

/// Refuses a vmlinux (or a module's file, `module` its name) whose
/// build-id is not the running kernel's (or the loaded module's), as perf
/// does. The running kernel's notes are read from `RKPROBE_KERNEL_NOTES`
/// when set (another machine's `/sys/kernel/notes`, or a test's), else from
/// `/sys/kernel/notes`; a module that is not loaded, or a side without a
/// build-id, is not checked.
fn check_build_id(bytes: &[u8], path: &Path, module: Option<&str>) -> Result<(), String> {
    let (notes, whose) = match module {
        Some(m) => (
            PathBuf::from(format!("/sys/module/{m}/notes/.note.gnu.build-id")),
            format!("the loaded module {m}"),
        ),
        None => (
            std::env::var_os("RKPROBE_KERNEL_NOTES")
                .map_or_else(|| PathBuf::from("/sys/kernel/notes"), PathBuf::from),
            "the running kernel".to_string(),
        ),
    };
    let running = std::fs::read(&notes)
        .ok()
        .and_then(|n| rkprobe::buildid::from_notes(&n));
    rkprobe::buildid::check(
        rkprobe::buildid::of_file(bytes).as_deref(),
        running.as_deref(),
        &path.display().to_string(),
        &whose,
    )
}

/// The running kernel's release (`uname -r`).
fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| r.trim().to_string())
        .unwrap_or_default()
}

/// `path` under `--symfs`: perf prepends it to absolute paths.
fn in_symfs(cli: &Cli, path: &Path) -> PathBuf {
    match &cli.symfs {
        Some(root) if path.is_absolute() => root.join(path.strip_prefix("/").unwrap_or(path)),
        _ => path.to_path_buf(),
    }
}

/// perf's search for the running kernel's vmlinux (under `--symfs`).
fn vmlinux_candidates(cli: &Cli) -> Vec<PathBuf> {
    let r = release();
    [
        format!("/lib/modules/{r}/build/vmlinux"),
        format!("/usr/lib/debug/boot/vmlinux-{r}"),
        format!("/usr/lib/debug/lib/modules/{r}/vmlinux"),
        format!("/boot/vmlinux-{r}"),
        "vmlinux".to_string(),
    ]
    .into_iter()
    .map(|p| in_symfs(cli, Path::new(&p)))
    .collect()
}

/// The file the debuginfo comes from, and whether the user named it
/// (`-k`, or `-m` with a path) rather than rkprobe finding it.
fn debuginfo_file(cli: &Cli) -> Result<(PathBuf, bool), String> {
    if let Some(m) = &cli.module {
        if rkprobe::modfile::is_path(m) {
            return Ok((in_symfs(cli, Path::new(m)), true));
        }
        let root = cli.symfs.clone().unwrap_or_else(|| PathBuf::from("/"));
        return Ok((rkprobe::modfile::find(m, &root, &release())?, false));
    }
    if let Some(k) = &cli.vmlinux {
        return Ok((in_symfs(cli, k), true));
    }
    let candidates = vmlinux_candidates(cli);
    match candidates.iter().find(|p| p.exists()) {
        Some(p) => Ok((p.clone(), false)),
        None => Err(format!(
            "Failed to find the path for the kernel: no vmlinux at {}.\n Hint: give one with -k VMLINUX",
            candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A file's name without `.ko`, `.ko.xz`... (a module without
/// `.modinfo` is named after its file).
fn file_stem(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    rkprobe::modfile::module_stem(name)
        .map(str::to_string)
        .or_else(|| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The debuginfo file's bytes, checked against the running kernel (or
/// loaded module) as perf checks: for `--add` and `--list`, or when
/// rkprobe found the file itself, unless `--ignore-build-id`.
fn load(cli: &Cli, cmd: Command) -> Result<(PathBuf, Vec<u8>), String> {
    let (path, given) = debuginfo_file(cli)?;
    let started = Instant::now();
    if cli.verbose > 0 {
        eprintln!("Reading debuginfo from {}", path.display());
    }
    let bytes = rkprobe::modfile::read(&path)?;
    if !cli.ignore_build_id && (!given || matches!(cmd, Command::Add | Command::List)) {
        let module = cli.module.is_some().then(|| file_stem(&path));
        let module = module.map(|m| rkprobe::modfile::normalize(&m));
        check_build_id(&bytes, &path, module.as_deref())?;
    }
    if cli.verbose > 0 {
        eprintln!(
            "Read {} MB in {:.2} s",
            bytes.len() >> 20,
            started.elapsed().as_secs_f64()
        );
    }
    Ok((path, bytes))
}

/// Finds and names the events of one specification.
fn events_of(
    cli: &Cli,
    di: &Debuginfo<'_>,
    text: &str,
    opts: &finder::Options,
    taken: &mut HashSet<String>,
    allow_suffix: bool,
) -> Result<Vec<NamedEvent>, String> {
    let (events, warnings) = event::definitions(di, text, opts, taken, allow_suffix)?;
    if cli.verbose > 0 {
        for w in warnings {
            eprintln!("{w}");
        }
    }
    Ok(events)
}

/// One of the default filters above (which parse: the unit tests of
/// `strfilter` check them).
fn default_filter(text: &str) -> Filter {
    Filter::parse(text).unwrap_or_else(|_| Filter::any())
}

/// The `--json` record of an event to be written.
fn event_json(e: &NamedEvent, spec: &str) -> Value {
    let (module, symbol) = match e.tev.symbol.split_once(':') {
        Some((m, s)) => (Some(m), s),
        None => (None, e.tev.symbol.as_str()),
    };
    let args = e
        .tev
        .args
        .iter()
        .flatten()
        .map(|a| {
            let mut fetch = a.clone();
            fetch.name = None;
            Value::Object(vec![
                ("name", a.name.clone().into()),
                ("fetch", fetch.render().into()),
            ])
        })
        .collect();
    Value::Object(vec![
        ("spec", spec.into()),
        ("group", e.group.as_str().into()),
        ("event", e.event.as_str().into()),
        ("retprobe", e.tev.retprobe.into()),
        ("symbol", symbol.into()),
        ("offset", e.tev.offset.into()),
        ("module", module.into()),
        ("args", Value::Array(args)),
        ("command", e.command().into()),
    ])
}

/// `--definition --bootconfig`: the events as boot-time kprobe events
/// (Documentation/trace/boottime-trace.rst). The kernel puts them in the
/// group `kprobes` and reads `probes` (several probes of one event in one
/// list); a return probe is `SYMBOL%return`.
fn bootconfig(events: &[NamedEvent], warn: bool) -> String {
    let mut out = String::new();
    let mut cur: Option<&str> = None;
    for e in events {
        if warn && e.group != DEFAULT_GROUP {
            eprintln!("WARN: Group name {} is ignored", e.group);
        }
        if cur != Some(e.event.as_str()) {
            if cur.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("ftrace.event.kprobes.{}.probes = ", e.event));
            cur = Some(&e.event);
        } else {
            out.push_str(", ");
        }
        let t = &e.tev;
        let mut probe = if t.retprobe && t.offset == 0 {
            format!("{}%return", t.symbol)
        } else {
            format!("{}+{}", t.symbol, t.offset)
        };
        for a in t.args.iter().flatten() {
            probe.push(' ');
            probe.push_str(&a.render());
        }
        out.push_str(&format!("'{probe}'"));
    }
    if cur.is_some() {
        out.push('\n');
    }
    out
}

/// `--del`: removes the events that pass the filter (perf's "Removed
/// event: GROUP:EVENT" for each); an error when none does.
fn delete(cli: &Cli, control: &Control) -> Result<(), String> {
    let filter = Filter::parse_all(&cli.del)?.unwrap_or_else(Filter::any);
    let mut seen = HashSet::new();
    let found: Vec<Defined> = control
        .events()?
        .into_iter()
        .filter(|d| d.passes(&filter) && seen.insert(d.full_name()))
        .collect();
    if found.is_empty() {
        return Err(format!("\"{filter}\" does not hit any event."));
    }
    let commands: Vec<(String, Option<String>)> = found
        .iter()
        .map(|d| (format!("-:{}/{}", d.group, d.event), None))
        .collect();
    if cli.dry_run {
        let mut out = std::io::stdout().lock();
        for (c, _) in &commands {
            let _ = writeln!(out, "{c}");
        }
    }
    if !cli.quiet {
        for d in &found {
            eprintln!("Removed event: {}", d.full_name());
        }
    }
    if !cli.dry_run {
        control.write(&commands)?;
    }
    Ok(())
}

/// perf's report of events added, and how to use them.
fn report_added(cli: &Cli, control: &Control, added: &[(spec::ProbeSpec, NamedEvent)]) {
    if cli.quiet {
        return;
    }
    eprintln!(
        "Added new event{}",
        if added.len() > 1 { "s:" } else { ":" }
    );
    for (s, e) in added {
        let mut line = format!(
            "  {:<20} (on {}",
            format!("{}:{}", e.group, e.event),
            spec::synthesize_point(&s.point)
        );
        if let Some((m, _)) = e.tev.symbol.split_once(':') {
            line.push_str(&format!(" in {m}"));
        }
        if !s.args.is_empty() {
            let args: Vec<String> = s.args.iter().map(spec::ArgSpec::synthesize).collect();
            line.push_str(&format!(" with {}", args.join(" ")));
        }
        line.push(')');
        eprintln!("{line}");
    }
    let Some((_, last)) = added.last() else {
        return;
    };
    if cli.dry_run {
        return;
    }
    let (g, e) = (&last.group, &last.event);
    eprintln!("\nYou can now use it:\n");
    eprintln!("\techo 1 > {}", control.enable_path(g, e).display());
    eprintln!("\tperf record -e {g}:{e} -aR sleep 1");
    // rkprobes' events are tracepoints for BPF; the kernel's kprobe
    // events take kprobe programs, not bpftrace's tracepoint ones.
    if control.target == Target::Rkprobes {
        eprintln!("\tbpftrace -e 'tracepoint:{g}:{e} {{ @[comm] = count(); }}'");
    }
    eprintln!();
}

/// Prints `v` as JSON on standard output.
fn print_json(v: &Value) {
    println!("{}", v.to_pretty());
}

/// `--funcs` without a debuginfo file: the running kernel's function
/// symbols (a module's with `-m NAME`), as perf's kernel map falls back
/// to kallsyms.
fn kallsyms_funcs(cli: &Cli) -> Result<Vec<String>, String> {
    let module = cli.module.as_deref().map(rkprobe::modfile::normalize);
    Ok(rkprobe::kallsyms::read()?
        .into_iter()
        .filter(|s| s.module == module)
        .map(|s| s.name)
        .collect())
}

fn run(cli: &Cli, cmd: Command) -> Result<(), String> {
    let control = Control::locate(if cli.tracefs {
        Target::Tracefs
    } else {
        Target::Rkprobes
    });
    if cmd == Command::Del {
        return delete(cli, &control);
    }
    let features = features(cli, &control);
    let opts = options(cli, features);

    // --list and --funcs do without debuginfo, as perf's do.
    let mut load_error = None;
    let loaded = match load(cli, cmd) {
        Ok(l) => Some(l),
        Err(e) if cmd == Command::List => {
            if cli.verbose > 0 {
                eprintln!("{e}\nListing without source places.");
            }
            None
        }
        Err(e) if cmd == Command::Funcs && cli.vmlinux.is_none() => {
            if cli.verbose > 0 {
                eprintln!("{e}\nListing the functions of kallsyms.");
            }
            load_error = Some(e);
            None
        }
        Err(e) => return Err(e),
    };
    let sections = match &loaded {
        Some((path, bytes)) => {
            let s = Sections::from_elf_named(bytes, &file_stem(path))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if cli.module.is_some() && s.module.is_none() {
                return Err(format!(
                    "{}: not a module (a relocatable .ko)",
                    path.display()
                ));
            }
            Some(s)
        }
        None => None,
    };
    let di = match (&sections, &loaded) {
        (Some(s), Some((path, _))) => {
            let started = Instant::now();
            let di = Debuginfo::new(s).map_err(|e| format!("{}: {e}", path.display()))?;
            if cli.verbose > 0 {
                eprintln!(
                    "Read {} compilation units in {:.2} s",
                    di.unit_count(),
                    started.elapsed().as_secs_f64()
                );
            }
            Some(di)
        }
        _ => None,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();

    match cmd {
        Command::List => {
            let filter = Filter::parse_all(cli.list.as_deref().unwrap_or_default())?
                .unwrap_or_else(Filter::any);
            let events = control.events()?;
            let listed = show::list(di.as_ref(), &events, &filter);
            if cli.json {
                print_json(&Value::Array(
                    listed.iter().map(show::Listed::json).collect(),
                ));
            } else {
                for l in &listed {
                    let _ = writeln!(out, "{}", l.text());
                }
            }
            return Ok(());
        }
        Command::Funcs => {
            let given = cli.funcs.as_deref().unwrap_or_default();
            let filter = show::funcs_filter(given, &cli.filter)?;
            let names = match &di {
                Some(di) => show::funcs(
                    di.symbols.with_aliases().iter().map(|s| s.name.as_str()),
                    &filter,
                ),
                None => {
                    // Nothing in kallsyms either (a module not loaded):
                    // why the file could not be read is the answer.
                    let all = kallsyms_funcs(cli).unwrap_or_default();
                    if all.is_empty() {
                        return Err(load_error.unwrap_or_else(|| "No symbols.".into()));
                    }
                    show::funcs(all.iter().map(String::as_str), &filter)
                }
            };
            if cli.json {
                let list = names
                    .iter()
                    .map(|n| {
                        Value::Object(vec![
                            ("name", n.as_str().into()),
                            (
                                "module",
                                cli.module
                                    .clone()
                                    .map(|m| rkprobe::modfile::normalize(&m))
                                    .into(),
                            ),
                        ])
                    })
                    .collect();
                print_json(&Value::Array(list));
            } else {
                for n in names {
                    let _ = writeln!(out, "{n}");
                }
            }
            return Ok(());
        }
        _ => {}
    }

    let Some(di) = di else {
        return Err("No debuginfo.".into());
    };

    match cmd {
        Command::Line => {
            let desc = cli.line.as_deref().unwrap_or_default();
            let lines = show::line_range(&di, desc, &opts)?;
            if cli.json {
                print_json(&lines.json());
            } else {
                let _ = write!(out, "{}", lines.text());
            }
            Ok(())
        }
        Command::Vars => {
            let vopts = show::VarsOptions {
                range: cli.range,
                externs: cli.externs,
                filter: Filter::parse_all(&cli.filter)?
                    .unwrap_or_else(|| default_filter(DEFAULT_VAR_FILTER)),
            };
            let mut all = Vec::new();
            for v in &cli.vars {
                let vars = show::vars(&di, v, &opts, &vopts)?;
                if !cli.json {
                    let _ = write!(out, "{}", vars.text());
                }
                all.push(vars.json());
            }
            if cli.json {
                print_json(&Value::Array(all));
            }
            Ok(())
        }
        Command::Definition if cli.batch.is_some() => {
            let batch = cli.batch.as_deref().unwrap_or(Path::new(""));
            let list =
                std::fs::read_to_string(batch).map_err(|e| format!("{}: {e}", batch.display()))?;
            for line in list.lines().filter(|l| !l.trim().is_empty()) {
                let mut taken = HashSet::new();
                let _ = writeln!(out, "== {line}");
                match events_of(cli, &di, line, &opts, &mut taken, true) {
                    Ok(evs) => {
                        for e in evs {
                            let _ = writeln!(out, "{}", e.command());
                        }
                    }
                    Err(e) => {
                        let first = e.lines().next().unwrap_or("");
                        let _ = writeln!(out, "error: {first}");
                    }
                }
            }
            Ok(())
        }
        Command::Definition => {
            let mut taken = HashSet::new();
            let mut all = Vec::new();
            for d in &cli.definition {
                for e in events_of(cli, &di, d, &opts, &mut taken, true)? {
                    all.push((d.as_str(), e));
                }
            }
            if cli.json {
                print_json(&Value::Array(
                    all.iter().map(|(d, e)| event_json(e, d)).collect(),
                ));
            } else if cli.bootconfig {
                let evs: Vec<NamedEvent> = all.into_iter().map(|(_, e)| e).collect();
                let _ = write!(out, "{}", bootconfig(&evs, !cli.quiet));
            } else {
                for (_, e) in all {
                    let _ = writeln!(out, "{}", e.command());
                }
            }
            Ok(())
        }
        _ => add(cli, &control, &di, &opts),
    }
}

/// `--add`: finds and names the events of every probe definition (names
/// already used in the control file or in tracefs `events/GROUP/` taken),
/// writes them (or prints them with `-n`), and reports them.
fn add(
    cli: &Cli,
    control: &Control,
    di: &Debuginfo<'_>,
    opts: &finder::Options,
) -> Result<(), String> {
    let mut adds = cli.add.clone();
    if !cli.probe.is_empty() {
        adds.push(cli.probe.join(" "));
    }
    let specs = adds
        .iter()
        .map(|a| spec::parse(a).map_err(|e| format!("Semantic error :{e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let groups: Vec<&str> = specs
        .iter()
        .map(|s| s.group.as_deref().unwrap_or(DEFAULT_GROUP))
        .collect();
    let mut taken = control.taken_names(groups);
    let mut added = Vec::new();
    for (a, s) in adds.iter().zip(&specs) {
        for e in events_of(cli, di, a, opts, &mut taken, cli.force)? {
            added.push((s.clone(), e));
        }
    }
    let commands: Vec<(String, Option<String>)> = added
        .iter()
        .map(|(_, e)| (e.command(), Some(format!("-:{}/{}", e.group, e.event))))
        .collect();
    if cli.dry_run {
        let mut out = std::io::stdout().lock();
        for (c, _) in &commands {
            let _ = writeln!(out, "{c}");
        }
    } else {
        control.write(&commands)?;
    }
    report_added(cli, control, &added);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(what) = cli.generate {
        let mut out = std::io::stdout().lock();
        return match rkprobe::cli::generate(what, &mut out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let cmd = match cli.requested() {
        Ok(Some(c)) => c,
        Ok(None) => {
            let _ = rkprobe::cli::command().write_help(&mut std::io::stderr());
            return ExitCode::from(129);
        }
        Err(e) => {
            eprintln!("  Error: {e}\n");
            let _ = rkprobe::cli::command().write_help(&mut std::io::stderr());
            return ExitCode::from(129);
        }
    };
    match run(&cli, cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !cli.quiet {
                eprintln!("{e}");
                eprintln!("{}", cmd.failure());
            }
            ExitCode::FAILURE
        }
    }
}
