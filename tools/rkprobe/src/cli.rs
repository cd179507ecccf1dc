// SPDX-License-Identifier: GPL-2.0

//! rkprobe's command line, perf probe's options: the one definition that
//! the binary parses and that its man page and shell completions are made
//! from (`--generate`).

use std::path::PathBuf;

use clap::{ArgGroup, CommandFactory, Parser};

use crate::finder::MAX_PROBES;

/// What `--generate` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Generated {
    /// The man page, roff (rkprobe.1).
    Man,
    /// bash completions.
    Bash,
    /// zsh completions.
    Zsh,
    /// fish completions.
    Fish,
}

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "rkprobe",
    version,
    // -V is --vars, as in perf; the version is --version only.
    disable_version_flag = true,
    about = "Define kprobe events from debuginfo, as perf probe does, for rkprobes or the kernel",
    long_about = "Define kprobe events from debuginfo, as perf probe does, for rkprobes or \
the kernel.\n\n\
rkprobe turns a probe written in source terms (a function, a line, a variable, a member) into \
kprobe_events lines by reading the kernel's DWARF, and writes them into rkprobes' control file \
(/sys/kernel/debug/rkprobes/kprobe_events, the default) or the kernel's \
(/sys/kernel/tracing/kprobe_events, --tracefs). Its syntax, event names and messages are perf \
probe's.",
    override_usage = "rkprobe [OPTIONS] 'PROBEDEF' ['PROBEDEF' ...]\n       \
rkprobe [OPTIONS] --add 'PROBEDEF' [--add 'PROBEDEF' ...]\n       \
rkprobe [OPTIONS] --del '[GROUP:]EVENT' ...\n       \
rkprobe --list [[GROUP:]EVENT]\n       \
rkprobe [OPTIONS] --line 'LINEDESC'\n       \
rkprobe [OPTIONS] --vars 'PROBEPOINT'\n       \
rkprobe [OPTIONS] --funcs [FILTER]",
    after_help = "PROBEDEF: [[GROUP:]EVENT=]FUNC[@SRC][+OFF|%return|:RL|;PT]|SRC:AL|SRC;PT [[NAME=]ARG ...]\n  \
GROUP: group name (default: probe), EVENT: event name, FUNC: function name or glob,\n  \
OFF: offset from the function entry (bytes), %return: at the function's return,\n  \
SRC: source file, RL: line relative to the function, AL: absolute line,\n  \
PT: lazy pattern (a glob over the source line),\n  \
ARG: VAR[->MEMBER|.MEMBER|[N]]...[:TYPE][@user], $params, $vars, or a raw fetcharg.\n\
LINEDESC: FUNC[@SRC][:RLN[+NUM|-RLN2]] | SRC:ALN[+NUM|-ALN2]\n\
FILTER: globs combined with ! & | and parentheses: '!my*', '(vfs_*|ksys_*)&!*at'",
    group(ArgGroup::new("command").args(["add", "del", "definition", "list", "line", "vars", "funcs"])),
    group(ArgGroup::new("json_command").args(["definition", "list", "line", "vars", "funcs"]).multiple(true)),
    // `requires` names these one-member groups: clap 4 does not enforce it
    // when it names the multi-valued argument itself.
    group(ArgGroup::new("vars_command").args(["vars"])),
    group(ArgGroup::new("definition_command").args(["definition"])),
)]
pub struct Cli {
    /// Add a probe event (several may be given).
    #[arg(
        short = 'a',
        long = "add",
        value_name = "PROBEDEF",
        help_heading = "Commands"
    )]
    pub add: Vec<String>,
    /// Delete the events that pass FILTER (on EVENT or GROUP:EVENT).
    #[arg(
        short = 'd',
        long = "del",
        value_name = "[GROUP:]EVENT",
        help_heading = "Commands"
    )]
    pub del: Vec<String>,
    /// Print the kprobe_events line(s) of a probe and change nothing.
    #[arg(
        short = 'D',
        long = "definition",
        value_name = "PROBEDEF",
        help_heading = "Commands"
    )]
    pub definition: Vec<String>,
    /// List the events defined (those that pass FILTER), with their source places.
    #[arg(
        short = 'l',
        long = "list",
        value_name = "[GROUP:]EVENT",
        num_args = 0..=1,
        help_heading = "Commands"
    )]
    pub list: Option<Vec<String>>,
    /// Show the source lines of a function or a file, the probeable ones numbered.
    #[arg(
        short = 'L',
        long = "line",
        value_name = "LINEDESC",
        help_heading = "Commands"
    )]
    pub line: Option<String>,
    /// Show the variables available at a probe point.
    #[arg(
        short = 'V',
        long = "vars",
        value_name = "PROBEPOINT",
        help_heading = "Commands"
    )]
    pub vars: Vec<String>,
    /// Show the functions that can be probed (default filter: '!_* & !*@plt').
    #[arg(
        short = 'F',
        long = "funcs",
        value_name = "FILTER",
        num_args = 0..=1,
        help_heading = "Commands"
    )]
    pub funcs: Option<Vec<String>>,

    /// vmlinux with DWARF (default: looked for as perf looks for it).
    #[arg(short = 'k', long = "vmlinux", value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// Target module: a name (its .ko found under /lib/modules) or a .ko file's path.
    #[arg(
        short = 'm',
        long = "module",
        value_name = "MODNAME|PATH",
        conflicts_with = "vmlinux"
    )]
    pub module: Option<String>,
    /// Path to the kernel source tree (for --line and lazy patterns).
    #[arg(short = 's', long = "source", value_name = "DIR")]
    pub source: Option<PathBuf>,
    /// Look for vmlinux and modules relative to this directory.
    #[arg(long = "symfs", value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// A filter for --vars and --funcs (default for --vars: '!__k???tab_* & !__crc_*').
    #[arg(long = "filter", value_name = "[!]FILTER")]
    pub filter: Vec<String>,
    /// Show external variables too (with --vars only).
    #[arg(long = "externs", requires = "vars_command")]
    pub externs: bool,
    /// Show variables' location ranges in scope (with --vars only).
    #[arg(long = "range", requires = "vars_command")]
    pub range: bool,
    /// Do not search the inlined copies of inline functions.
    #[arg(long = "no-inlines")]
    pub no_inlines: bool,
    /// With --add or --del: print what would be written, write nothing.
    #[arg(short = 'n', long = "dry-run")]
    pub dry_run: bool,
    /// Forcibly add events with existing names (numbered: vfs_read_1).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// How many probe points one probe definition may give.
    #[arg(long = "max-probes", value_name = "N", default_value_t = MAX_PROBES)]
    pub max_probes: usize,
    /// Be quiet (no warnings or messages, errors included).
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    pub quiet: bool,
    /// Be more verbose (warnings met on the way, what is loaded).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Use the kernel's tracefs kprobe_events instead of rkprobes'.
    #[arg(long = "tracefs")]
    pub tracefs: bool,
    /// Use the vmlinux or module file even when its build-id is not the running one's.
    #[arg(long = "ignore-build-id")]
    pub ignore_build_id: bool,
    /// Print --list, --vars, --funcs, --line or --definition as JSON.
    #[arg(long = "json", requires = "json_command")]
    pub json: bool,
    /// With --definition: print the events in bootconfig's format (ftrace.event.kprobes).
    #[arg(
        long = "bootconfig",
        requires = "definition_command",
        conflicts_with = "json"
    )]
    pub bootconfig: bool,
    /// Print the version.
    #[arg(long = "version", action = clap::ArgAction::Version)]
    pub version: (),
    /// Reproduce perf 6.1's mistakes (first operation of a location only,
    /// no DWARF 5 bitfields), to compare with it.
    #[arg(long = "perf-quirks", hide = true)]
    pub perf_quirks: bool,
    /// Definitions of every specification in FILE, one per line, each
    /// introduced by "== SPEC" (for the differential test).
    #[arg(long = "batch", hide = true, value_name = "FILE")]
    pub batch: Option<PathBuf>,
    /// Write the man page or a shell's completions to standard output.
    #[arg(long = "generate", hide = true, value_name = "WHAT")]
    pub generate: Option<Generated>,
    /// A probe to add, as words (joined by spaces).
    #[arg(value_name = "PROBEDEF", trailing_var_arg = true)]
    pub probe: Vec<String>,
}

/// The command a command line asks for; each fails with perf's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `--add`, or probe words.
    Add,
    /// `--definition`.
    Definition,
    /// `--del`.
    Del,
    /// `--list`.
    List,
    /// `--line`.
    Line,
    /// `--vars`.
    Vars,
    /// `--funcs`.
    Funcs,
}

impl Command {
    /// perf's closing line when the command fails.
    pub fn failure(self) -> &'static str {
        match self {
            Command::Add | Command::Definition => "  Error: Failed to add events.",
            Command::Del => "  Error: Failed to delete events.",
            Command::List => "  Error: Failed to show event list.",
            Command::Line => "  Error: Failed to show lines.",
            Command::Vars => "  Error: Failed to show vars.",
            Command::Funcs => "  Error: Failed to show functions.",
        }
    }
}

impl Cli {
    /// The command asked for; `None` when there is none (perf then
    /// prints its usage). Probe words go with `--add` only, as in perf.
    pub fn requested(&self) -> Result<Option<Command>, String> {
        let c = if !self.add.is_empty() {
            Some(Command::Add)
        } else if !self.del.is_empty() {
            Some(Command::Del)
        } else if !self.definition.is_empty() {
            Some(Command::Definition)
        } else if self.list.is_some() {
            Some(Command::List)
        } else if self.line.is_some() {
            Some(Command::Line)
        } else if !self.vars.is_empty() {
            Some(Command::Vars)
        } else if self.funcs.is_some() {
            Some(Command::Funcs)
        } else if self.batch.is_some() {
            Some(Command::Definition)
        } else {
            None
        };
        if self.probe.is_empty() {
            return Ok(c);
        }
        if self.probe.first().is_some_and(|p| p == "-") {
            return Err("'-' is not supported.".into());
        }
        match c {
            None | Some(Command::Add) => Ok(Some(Command::Add)),
            Some(_) => Err("another command except --add is set.".into()),
        }
    }
}

/// The clap command, for the man page and the completions.
pub fn command() -> clap::Command {
    <Cli as CommandFactory>::command()
}

/// The man page's own sections, after the options: the syntax (the
/// `--help` epilogue, which roff must not fill), the environment and the
/// files.
const MAN_SECTIONS: &str = r#".SH "PROBE SYNTAX"
.nf
PROBEDEF:  [[GROUP:]EVENT=]FUNC[@SRC][+OFF|%return|:RL|;PT] [ARG ...]
           [[GROUP:]EVENT=]SRC:AL [ARG ...]
           [[GROUP:]EVENT=]SRC;PT [ARG ...]
  GROUP    group name (default: probe)
  EVENT    event name (default: the function's, _1, _2... when taken)
  FUNC     function name or glob
  OFF      offset from the function's entry, in bytes
  %return  at the function's return
  SRC      source file (its tail is matched: fs/read_write.c)
  RL, AL   line relative to the function's declaration, absolute line
  PT       lazy pattern: a glob over the source line, white space ignored
ARG:       [NAME=]VAR[\->MEMBER|.MEMBER|[N]]...[:TYPE][@user]
           | $params | $vars | a raw fetcharg (%di, @sym, $retval, +0(%di))
LINEDESC:  FUNC[@SRC][:RLN[+NUM|\-RLN2]] | SRC:ALN[+NUM|\-ALN2]
FILTER:    globs combined with ! & | and parentheses: '!my*', '(vfs_*|ksys_*)&!*at'
.fi
.SH ENVIRONMENT
.TP
\fBRKPROBE_DEBUGFS\fR, \fBRKPROBE_TRACEFS\fR
Where debugfs and tracefs are mounted (default /sys/kernel/debug and
/sys/kernel/tracing).
.TP
\fBRKPROBE_KERNEL_NOTES\fR
The running kernel's notes, for its build\-id (default /sys/kernel/notes).
.TP
\fBRKPROBE_KALLSYMS\fR
The running kernel's symbols (default /proc/kallsyms).
.SH FILES
.TP
/sys/kernel/debug/rkprobes/kprobe_events, error_log
rkprobes' control file and the reasons of refused commands.
.TP
/sys/kernel/tracing/kprobe_events, error_log, events/GROUP/EVENT/enable
The kernel's (\fB\-\-tracefs\fR), and where every event is enabled.
.TP
/lib/modules/RELEASE/build/vmlinux, /usr/lib/debug/boot/vmlinux\-RELEASE
Where the vmlinux with DWARF is looked for (as perf looks), and
/usr/lib/debug/lib/modules/RELEASE, /lib/modules/RELEASE for modules.
.SH "SEE ALSO"
perf\-probe(1); Documentation/rkprobe\-tool.rst in the rkprobes sources.
"#;

/// The man page: clap's sections for the command line, then
/// [`MAN_SECTIONS`].
fn man(cmd: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    out.write_all(MAN_SECTIONS.as_bytes())?;
    man.render_version_section(out)
}

/// `--generate`: the man page or a shell's completion script.
pub fn generate(what: Generated, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let full = command();
    let shell = match what {
        Generated::Man => return man(full, out),
        Generated::Bash => clap_complete::Shell::Bash,
        Generated::Zsh => clap_complete::Shell::Zsh,
        Generated::Fish => clap_complete::Shell::Fish,
    };
    // clap_complete's bash script offers hidden options too: they are left
    // out of the command it is given.
    let mut cmd = clap::Command::new("rkprobe")
        .version(env!("CARGO_PKG_VERSION"))
        .disable_version_flag(true)
        .args(
            full.get_arguments()
                .filter(|a| !a.is_hide_set())
                .cloned()
                .collect::<Vec<_>>(),
        )
        .groups(
            full.get_groups()
                .filter(|g| g.get_id() != "Cli")
                .cloned()
                .collect::<Vec<_>>(),
        );
    clap_complete::generate(shell, &mut cmd, "rkprobe", out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rkprobe").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn commands() {
        let c = |a: &[&str]| parse(a).unwrap().requested().unwrap();
        assert_eq!(c(&[]), None);
        assert_eq!(c(&["vfs_read", "count"]), Some(Command::Add));
        assert_eq!(c(&["-a", "vfs_read"]), Some(Command::Add));
        assert_eq!(c(&["-d", "vfs*"]), Some(Command::Del));
        assert_eq!(c(&["-l"]), Some(Command::List));
        assert_eq!(c(&["-F"]), Some(Command::Funcs));
        assert_eq!(c(&["-L", "vfs_read"]), Some(Command::Line));
        assert_eq!(
            c(&["-V", "vfs_read", "-V", "vfs_write"]),
            Some(Command::Vars)
        );
        assert_eq!(c(&["-D", "vfs_read"]), Some(Command::Definition));
        // -l and -F with and without a filter.
        assert_eq!(parse(&["-l"]).unwrap().list, Some(vec![]));
        assert_eq!(
            parse(&["-l", "my*"]).unwrap().list,
            Some(vec!["my*".into()])
        );
        assert_eq!(parse(&["-F"]).unwrap().funcs, Some(vec![]));
        assert!(parse(&["-l", "-V", "vfs_read"]).is_err());
        assert!(parse(&["-a", "x", "-d", "y"]).is_err());
        assert!(parse(&["-V", "x", "vfs_read"])
            .unwrap()
            .requested()
            .is_err());
        assert!(parse(&["--range", "-D", "x"]).is_err());
        assert!(parse(&["--externs", "-F"]).is_err());
        assert!(parse(&["--range", "--externs", "-V", "x"]).is_ok());
        assert!(parse(&["--bootconfig", "-D", "x"]).is_ok());
        assert!(parse(&["--json", "-a", "x"]).is_err());
        assert!(parse(&["--json", "-l"]).is_ok());
        assert!(parse(&["-q", "-v", "-l"]).is_err());
        assert!(parse(&["--bootconfig", "-a", "x"]).is_err());
        assert_eq!(parse(&["-vv", "-l"]).unwrap().verbose, 2);
    }

    #[test]
    fn generated() {
        for (what, needle) in [
            (Generated::Man, ".TH rkprobe 1"),
            (Generated::Bash, "_rkprobe()"),
            (Generated::Zsh, "#compdef rkprobe"),
            (Generated::Fish, "complete -c rkprobe"),
        ] {
            let mut out = Vec::new();
            generate(what, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains(needle), "{what:?}: {needle} missing");
            assert!(text.contains("vars"), "{what:?}: --vars missing");
            assert!(
                !text.contains("perf-quirks"),
                "{what:?}: hidden option shown"
            );
        }
    }
}
