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

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use rkprobe::debuginfo::{Debuginfo, Sections};
use rkprobe::event::{self, NamedEvent};
use rkprobe::fetcharg::Features;
use rkprobe::finder;

/// rkprobes' control file.
const RKPROBES_EVENTS: &str = "/sys/kernel/debug/rkprobes/kprobe_events";
/// The kernel's control file.
const TRACEFS_EVENTS: &str = "/sys/kernel/tracing/kprobe_events";

#[derive(Parser, Debug)]
#[command(
    name = "rkprobe",
    about = "Define kprobe events from debuginfo, as perf probe does, for rkprobes or the kernel"
)]
struct Cli {
    /// vmlinux with DWARF (default: looked for as perf looks for it).
    #[arg(short = 'k', long = "vmlinux")]
    vmlinux: Option<PathBuf>,
    /// A module's .ko with DWARF: probes in the module (MODULE:symbol+offset).
    #[arg(
        short = 'm',
        long = "module",
        value_name = "MODULE.ko",
        conflicts_with = "vmlinux"
    )]
    module: Option<PathBuf>,
    /// Print the kprobe_events line(s) of a probe and change nothing.
    #[arg(short = 'D', long = "definition", value_name = "PROBE")]
    definition: Vec<String>,
    /// Add a probe event.
    #[arg(short = 'a', long = "add", value_name = "PROBE")]
    add: Vec<String>,
    /// Delete the events matching GLOB (`GROUP:EVENT` or `EVENT`).
    #[arg(short = 'd', long = "del", value_name = "GLOB")]
    del: Vec<String>,
    /// List the events defined, with their source places and arguments.
    #[arg(short = 'l', long = "list", value_name = "GLOB", num_args = 0..=1, default_missing_value = "*")]
    list: Option<String>,
    /// Show the source lines of FUNC[:RANGE] that can be probed.
    #[arg(short = 'L', long = "line", value_name = "FUNC[:RANGE]")]
    line: Option<String>,
    /// Show the variables available at a probe point.
    #[arg(short = 'V', long = "vars", value_name = "PROBE")]
    vars: Vec<String>,
    /// Show the functions (FILTER: a glob; default all not starting with _).
    #[arg(short = 'F', long = "funcs", value_name = "FILTER", num_args = 0..=1, default_missing_value = "!_*")]
    funcs: Option<String>,
    /// With --add or --del: show what would be written, write nothing.
    #[arg(short = 'n', long = "dry-run")]
    dry_run: bool,
    /// Allow numbered names for events that already exist.
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// Fewer messages.
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// More messages (warnings met on the way).
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Write to the kernel's tracing/kprobe_events instead of rkprobes'.
    #[arg(long = "tracefs")]
    tracefs: bool,
    /// Use the vmlinux or module file even when its build-id is not the
    /// running kernel's (or the loaded module's).
    #[arg(long = "ignore-build-id")]
    ignore_build_id: bool,
    /// How many probe points one specification may give.
    #[arg(long = "max-probes", default_value_t = finder::MAX_PROBES)]
    max_probes: usize,
    /// Reproduce perf 6.1's mistakes (first operation of a location only,
    /// no DWARF 5 bitfields), to compare with it.
    #[arg(long = "perf-quirks", hide = true)]
    perf_quirks: bool,
    /// Definitions of every specification in FILE, one per line, each
    /// introduced by "== SPEC" (for the differential test).
    #[arg(long = "batch", hide = true)]
    batch: Option<PathBuf>,
    /// A probe to add, as words (joined by spaces).
    #[arg(trailing_var_arg = true)]
    probe: Vec<String>,
}

/// What kprobe_events accepts, from the tracing README when readable, as
/// perf asks; rkprobes takes what Linux 6.12 takes.
fn features(cli: &Cli) -> Features {
    let f = if cli.tracefs {
        [
            "/sys/kernel/tracing/README",
            "/sys/kernel/debug/tracing/README",
        ]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|r| Features::from_readme(&r))
        .unwrap_or(Features::LINUX_6_12)
    } else {
        Features::LINUX_6_12
    };
    Features {
        perf_quirks: cli.perf_quirks,
        ..f
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

/// perf's search for the running kernel's vmlinux.
fn find_vmlinux() -> Option<PathBuf> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let r = release.trim();
    [
        format!("/lib/modules/{r}/build/vmlinux"),
        format!("/usr/lib/debug/boot/vmlinux-{r}"),
        format!("/usr/lib/debug/lib/modules/{r}/vmlinux"),
        format!("/boot/vmlinux-{r}"),
        "vmlinux".to_string(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Finds and names the events of one specification.
fn events_of(
    di: &Debuginfo<'_>,
    text: &str,
    features: Features,
    max_probes: usize,
    taken: &mut HashSet<String>,
    allow_suffix: bool,
    verbose: bool,
) -> Result<Vec<NamedEvent>, String> {
    let (events, warnings) =
        event::definitions(di, text, features, max_probes, taken, allow_suffix)?;
    if verbose {
        for w in warnings {
            eprintln!("{w}");
        }
    }
    Ok(events)
}

/// The event names already in a control file.
fn existing_events(path: &Path) -> HashSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let head = l.split_ascii_whitespace().next()?;
            let (_, ge) = head.split_once(':')?;
            Some(ge.rsplit('/').next()?.to_string())
        })
        .collect()
}

/// `--del`: removes the events matching any of `globs` from `control`
/// (perf's "Removed event: GROUP:EVENT"); an error when none matches.
fn delete(cli: &Cli, control: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(control)
        .map_err(|e| format!("Failed to open {}: {e}", control.display()))?;
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(head) = line.split_ascii_whitespace().next() else {
            continue;
        };
        let Some((_, ge)) = head.split_once(':') else {
            continue;
        };
        let full = ge.replace('/', ":");
        let ev = ge.rsplit('/').next().unwrap_or(ge);
        let hit = cli.del.iter().any(|g| {
            let g = g.replace('/', ":");
            if g.contains(':') {
                finder::glob_match(&full, &g)
            } else {
                finder::glob_match(ev, &g)
            }
        });
        if hit {
            found.push((ge.to_string(), full));
        }
    }
    if found.is_empty() {
        return Err(format!("  Error: No matched event: {}", cli.del.join(" ")));
    }
    for (ge, full) in found {
        if !cli.dry_run {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(control)
                .map_err(|e| format!("Failed to open {}: {e}", control.display()))?;
            // One write() a command: the kernel's parser (and rkprobes')
            // takes each write as whole lines.
            f.write_all(format!("-:{ge}\n").as_bytes())
                .map_err(|e| format!("Failed to delete event {full}: {e}"))?;
        }
        if !cli.quiet {
            eprintln!("Removed event: {full}");
        }
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), String> {
    let control = Path::new(if cli.tracefs {
        TRACEFS_EVENTS
    } else {
        RKPROBES_EVENTS
    });
    if !cli.del.is_empty() {
        return delete(&cli, control);
    }
    let path = match (&cli.module, &cli.vmlinux) {
        (Some(p), _) | (None, Some(p)) => p.clone(),
        (None, None) => {
            find_vmlinux().ok_or("Failed to find the path for the kernel: use -k VMLINUX")?
        }
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let sections =
        Sections::from_elf_named(&bytes, stem).map_err(|e| format!("{}: {e}", path.display()))?;
    if cli.module.is_some() && sections.module.is_none() {
        return Err(format!(
            "{}: not a module (a relocatable .ko)",
            path.display()
        ));
    }
    if !cli.ignore_build_id {
        check_build_id(&bytes, &path, sections.module.as_deref())?;
    }
    let di = Debuginfo::new(&sections).map_err(|e| format!("{}: {e}", path.display()))?;
    let features = features(&cli);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();

    if let Some(glob) = &cli.list {
        let text = std::fs::read_to_string(control)
            .map_err(|e| format!("Failed to open {}: {e}", control.display()))?;
        let g = (glob != "*").then_some(glob.as_str());
        let _ = write!(out, "{}", rkprobe::show::list(&di, &text, g));
        return Ok(());
    }
    if let Some(range) = &cli.line {
        let _ = write!(out, "{}", rkprobe::show::line_range(&di, range)?);
        return Ok(());
    }
    if !cli.vars.is_empty() {
        for v in &cli.vars {
            let _ = write!(out, "{}", rkprobe::show::vars(&di, v, features)?);
        }
        return Ok(());
    }
    if let Some(filter) = &cli.funcs {
        let f = (filter != "!_*").then_some(filter.as_str());
        let _ = write!(out, "{}", rkprobe::show::funcs(&di, f));
        return Ok(());
    }

    if let Some(batch) = &cli.batch {
        let list =
            std::fs::read_to_string(batch).map_err(|e| format!("{}: {e}", batch.display()))?;
        for line in list.lines().filter(|l| !l.trim().is_empty()) {
            let mut taken = HashSet::new();
            let _ = writeln!(out, "== {line}");
            match events_of(&di, line, features, cli.max_probes, &mut taken, true, false) {
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
        return Ok(());
    }

    if !cli.definition.is_empty() {
        let mut taken = HashSet::new();
        for d in &cli.definition {
            let evs = events_of(
                &di,
                d,
                features,
                cli.max_probes,
                &mut taken,
                true,
                cli.verbose,
            )?;
            for e in evs {
                let _ = writeln!(out, "{}", e.command());
            }
        }
        return Ok(());
    }

    let mut adds = cli.add.clone();
    if !cli.probe.is_empty() {
        adds.push(cli.probe.join(" "));
    }
    if adds.is_empty() {
        return Err(
            "Nothing to do: give --add, --del, --list, --line, --vars, --funcs or --definition"
                .into(),
        );
    }
    let mut taken = existing_events(control);
    let mut all = Vec::new();
    for a in &adds {
        all.extend(events_of(
            &di,
            a,
            features,
            cli.max_probes,
            &mut taken,
            cli.force,
            cli.verbose,
        )?);
    }
    if !cli.dry_run {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(control)
            .map_err(|e| format!("Failed to open {}: {e}", control.display()))?;
        for e in &all {
            f.write_all(format!("{}\n", e.command()).as_bytes())
                .map_err(|err| format!("Failed to write event: {err}\n  {}", e.command()))?;
        }
    }
    if !cli.quiet {
        eprintln!("Added new event{}", if all.len() > 1 { "s:" } else { ":" });
        for e in &all {
            eprintln!(
                "  {}:{:<16} (on {}+{})",
                e.group, e.event, e.tev.symbol, e.tev.offset
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            if !e.contains("Error:") {
                eprintln!("  Error: Failed to add events.");
            }
            ExitCode::FAILURE
        }
    }
}
