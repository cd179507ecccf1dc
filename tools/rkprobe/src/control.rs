// SPDX-License-Identifier: GPL-2.0

//! The kprobe_events control files: rkprobes' (debugfs
//! `rkprobes/kprobe_events`, the default) or the kernel's (tracefs
//! `kprobe_events`, `--tracefs`), the `error_log` beside each, and the
//! tracefs `events/` directory where both kinds of events appear.
//!
//! Every failure comes back as the message rkprobe prints, with perf's
//! hints adapted: what to load or mount when the file is missing, to run
//! as root when it may not be opened, and the kernel's own reason from
//! `error_log` when a command is refused.
//!
//! `RKPROBE_DEBUGFS` and `RKPROBE_TRACEFS` name other mount points of
//! debugfs and tracefs (the tests point them at directories of their own).

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

/// How much of a control file or an `error_log` is read: far more than
/// any kernel's (a line is about 100 bytes), and a bound on what a file
/// that never ends (a device, by mistake) costs.
pub const MAX_CONTROL_TEXT: u64 = 16 << 20;

/// Reads at most [`MAX_CONTROL_TEXT`] bytes of `path`.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    let mut text = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONTROL_TEXT)
        .read_to_end(&mut text)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Writes each command with one `write()`; when one fails, writes the
/// undo commands of those before it (each once, latest first) and returns
/// the failed command's index, its error, and the undo commands that
/// failed too.
#[allow(clippy::type_complexity)]
pub fn write_or_undo(
    f: &mut dyn Write,
    commands: &[(String, Option<String>)],
) -> Result<(), (usize, std::io::Error, Vec<String>)> {
    for (i, (cmd, _)) in commands.iter().enumerate() {
        let Err(e) = f.write_all(format!("{cmd}\n").as_bytes()) else {
            continue;
        };
        // Several probes of one event share its removal command.
        let mut undone = HashSet::new();
        let mut failed = Vec::new();
        for (_, undo) in commands.get(..i).unwrap_or_default().iter().rev() {
            let Some(u) = undo else { continue };
            if !undone.insert(u) {
                continue;
            }
            if let Err(e) = f.write_all(format!("{u}\n").as_bytes()) {
                failed.push(format!("Failed to undo '{u}': {e}"));
            }
        }
        return Err((i, e, failed));
    }
    Ok(())
}

/// Which control file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// rkprobes' `kprobe_events` in debugfs.
    Rkprobes,
    /// The kernel's `kprobe_events` in tracefs.
    Tracefs,
}

/// A control file and the places around it.
#[derive(Clone, Debug)]
pub struct Control {
    /// Which one.
    pub target: Target,
    /// Its `kprobe_events`.
    pub path: PathBuf,
    /// Where tracefs is mounted, if it is (its `events/` directory holds
    /// every trace event, rkprobes' included).
    pub tracefs: Option<PathBuf>,
    /// Where debugfs is expected.
    debugfs: PathBuf,
}

/// An event of a control file, from its line
/// (`p:GROUP/EVENT POINT ARGS...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defined {
    /// The whole line.
    pub line: String,
    /// A return probe (`r`).
    pub retprobe: bool,
    /// Its group.
    pub group: String,
    /// Its name.
    pub event: String,
    /// The probe point as written (`sym+off`, `MOD:sym+off`, an address).
    pub point: String,
    /// The arguments as written (`NAME=FETCHARG`).
    pub args: Vec<String>,
}

impl Defined {
    /// Parses one line of a control file; `None` for what is not a probe.
    pub fn parse(line: &str) -> Option<Defined> {
        let mut words = line.split_ascii_whitespace();
        let head = words.next()?;
        let point = words.next()?.to_string();
        let (kind, ge) = head.split_once(':')?;
        let (group, event) = ge.split_once('/')?;
        Some(Defined {
            line: line.to_string(),
            retprobe: kind.starts_with('r'),
            group: group.to_string(),
            event: event.to_string(),
            point,
            args: words.map(str::to_string).collect(),
        })
    }

    /// `GROUP:EVENT`, as perf names an event.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.group, self.event)
    }

    /// perf's `filter_probe_trace_event()`: the event's name, or
    /// `GROUP:EVENT`, passes the filter.
    pub fn passes(&self, filter: &crate::strfilter::Filter) -> bool {
        filter.matches(&self.event) || filter.matches(&self.full_name())
    }
}

/// The effective user is root (from `/proc/self/status`; `false` when
/// that cannot be read).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uid = s.lines().find_map(|l| l.strip_prefix("Uid:"))?;
            uid.split_ascii_whitespace().nth(1).map(|e| e == "0")
        })
        .unwrap_or(false)
}

/// The last entry of an `error_log`'s text: from its last line starting
/// with `[` (a time stamp) to the end.
pub fn last_error_entry(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with('['))?;
    Some(lines.get(start..)?.join("\n"))
}

impl Control {
    /// The control file of `target`, at the usual mount points or those of
    /// `RKPROBE_DEBUGFS` and `RKPROBE_TRACEFS`.
    pub fn locate(target: Target) -> Control {
        let debugfs = std::env::var_os("RKPROBE_DEBUGFS")
            .map_or_else(|| PathBuf::from("/sys/kernel/debug"), PathBuf::from);
        let tracefs = match std::env::var_os("RKPROBE_TRACEFS") {
            Some(t) => Some(PathBuf::from(t)),
            // A mounted tracefs has a README; the bare mount point has not.
            None => [
                PathBuf::from("/sys/kernel/tracing"),
                debugfs.join("tracing"),
            ]
            .into_iter()
            .find(|p| p.join("README").exists()),
        };
        let path = match target {
            Target::Rkprobes => debugfs.join("rkprobes/kprobe_events"),
            Target::Tracefs => tracefs
                .clone()
                .unwrap_or_else(|| PathBuf::from("/sys/kernel/tracing"))
                .join("kprobe_events"),
        };
        Control {
            target,
            path,
            tracefs,
            debugfs,
        }
    }

    /// The `error_log` beside the control file.
    pub fn error_log(&self) -> PathBuf {
        self.path.with_file_name("error_log")
    }

    /// The tracing README that says what the kernel's kprobe_events takes.
    pub fn readme(&self) -> Option<PathBuf> {
        self.tracefs.as_ref().map(|t| t.join("README"))
    }

    /// The `enable` file of an event in tracefs.
    pub fn enable_path(&self, group: &str, event: &str) -> PathBuf {
        self.tracefs
            .clone()
            .unwrap_or_else(|| PathBuf::from("/sys/kernel/tracing"))
            .join("events")
            .join(group)
            .join(event)
            .join("enable")
    }

    /// Why the control file could not be opened (to read when `write` is
    /// false), with what to do about it.
    fn open_error(&self, e: &std::io::Error, write: bool) -> String {
        let p = self.path.display();
        match e.kind() {
            ErrorKind::NotFound => match self.target {
                Target::Rkprobes => {
                    let mounted = std::fs::read_dir(&self.debugfs)
                        .map(|mut d| d.next().is_some())
                        .unwrap_or(false);
                    if mounted {
                        format!(
                            "{p} does not exist: rkprobes is not loaded.\n \
                             Hint: load it with 'modprobe rkprobes' (or 'insmod rkprobes.ko'),\n       \
                             or use --tracefs for the kernel's kprobe_events."
                        )
                    } else {
                        format!(
                            "{p} does not exist: debugfs is not mounted on {}.\n \
                             Hint: mount -t debugfs nodev {0}, and load rkprobes\n       \
                             ('modprobe rkprobes'); or use --tracefs.",
                            self.debugfs.display()
                        )
                    }
                }
                Target::Tracefs if self.tracefs.is_none() => {
                    "Debugfs or tracefs is not mounted.\n \
                     Hint: mount -t tracefs nodev /sys/kernel/tracing"
                        .to_string()
                }
                Target::Tracefs => format!(
                    "{p} does not exist.\n \
                     Hint: the kernel needs CONFIG_KPROBE_EVENTS=y; without --tracefs,\n       \
                     rkprobe uses rkprobes' kprobe_events."
                ),
            },
            ErrorKind::PermissionDenied => {
                let what = if write { "write" } else { "read" };
                if is_root() {
                    format!(
                        "No permission to {what} {p}: {e}.\n \
                         Hint: root is refused: the kernel's lockdown (see\n       \
                         /sys/kernel/security/lockdown) forbids it."
                    )
                } else {
                    format!(
                        "No permission to {what} {p}: {e}.\n \
                         Hint: run rkprobe as root (sudo)."
                    )
                }
            }
            _ => format!("Failed to open {p}: {e}"),
        }
    }

    /// The text of the control file, up to [`MAX_CONTROL_TEXT`] bytes.
    pub fn read(&self) -> Result<String, String> {
        read_bounded(&self.path).map_err(|e| self.open_error(&e, false))
    }

    /// The events of the control file.
    pub fn events(&self) -> Result<Vec<Defined>, String> {
        Ok(self.read()?.lines().filter_map(Defined::parse).collect())
    }

    /// The event names a new event of one of `groups` may not take, as
    /// perf's namelist holds them: every event of the control file (of any
    /// group), and every trace event in tracefs `events/GROUP/`, which
    /// rkprobes' events, the kernel's kprobe events and any other share.
    /// A control file that cannot be read adds nothing (writing it will
    /// say why).
    pub fn taken_names<'g>(&self, groups: impl IntoIterator<Item = &'g str>) -> HashSet<String> {
        let mut names: HashSet<String> = self
            .read()
            .unwrap_or_default()
            .lines()
            .filter_map(Defined::parse)
            .map(|d| d.event)
            .collect();
        if let Some(t) = &self.tracefs {
            for g in groups {
                let Ok(dir) = std::fs::read_dir(t.join("events").join(g)) else {
                    continue;
                };
                for e in dir.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        names.extend(e.file_name().to_str().map(str::to_string));
                    }
                }
            }
        }
        names
    }

    /// Writes `commands`, one `write()` each (the kernel's parser, and
    /// rkprobes', takes each write as whole lines). When one is refused,
    /// the undo commands of those written before it are written, so that
    /// a failed `--add` leaves the events as they were, and the error says
    /// why, with the kernel's `error_log` entry for it.
    pub fn write(&self, commands: &[(String, Option<String>)]) -> Result<(), String> {
        let log_before = read_bounded(&self.error_log())
            .ok()
            .and_then(|l| last_error_entry(&l));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| self.open_error(&e, true))?;
        write_or_undo(&mut f, commands).map_err(|(i, e, undo_errors)| {
            let cmd = commands.get(i).map_or("", |(c, _)| c.as_str());
            let mut msg = self.write_error(&e, cmd, log_before.as_deref());
            for u in undo_errors {
                msg.push('\n');
                msg.push_str(&u);
            }
            msg
        })
    }

    /// The message for a command the control file refused.
    fn write_error(&self, e: &std::io::Error, cmd: &str, log_before: Option<&str>) -> String {
        let mut msg = format!("Failed to write event: {e}\n  {cmd}");
        let log = self.error_log();
        match e.kind() {
            ErrorKind::PermissionDenied => {
                msg.push_str("\n Hint: run rkprobe as root; under lockdown the kernel refuses it.");
                return msg;
            }
            ErrorKind::ResourceBusy => {
                msg.push_str(
                    "\n Hint: the event is in use: disable it (echo 0 > .../enable) and\n       \
                     stop perf or BPF programs that have it open.",
                );
            }
            ErrorKind::AlreadyExists => {
                msg.push_str(
                    "\n Hint: an event of that name exists: 'rkprobe -f' takes a numbered name.",
                );
            }
            _ => {}
        }
        let entry = read_bounded(&log)
            .ok()
            .and_then(|l| last_error_entry(&l))
            .filter(|e| Some(e.as_str()) != log_before);
        match entry {
            Some(entry) => {
                msg.push_str(&format!(
                    "\n Hint: the kernel's reason, from {}:",
                    log.display()
                ));
                for l in entry.lines() {
                    msg.push_str(&format!("\n  {l}"));
                }
            }
            None => msg.push_str(&format!(
                "\n Hint: the kernel's reason, if it gave one, is in {}.",
                log.display()
            )),
        }
        msg
    }

    /// The path as written in messages.
    pub fn display(&self) -> std::path::Display<'_> {
        Path::display(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let d = Defined::parse("r:probe/vfs_read__return vfs_read+0 arg1=$retval:s64").unwrap();
        assert!(d.retprobe);
        assert_eq!(d.full_name(), "probe:vfs_read__return");
        assert_eq!(d.point, "vfs_read+0");
        assert_eq!(d.args, vec!["arg1=$retval:s64".to_string()]);
        assert!(Defined::parse("").is_none());
        assert!(Defined::parse("p:nogroup vfs_read").is_none());
    }

    fn at(root: &str) -> Control {
        Control {
            target: Target::Rkprobes,
            path: PathBuf::from(format!("{root}/rkprobes/kprobe_events")),
            tracefs: None,
            debugfs: PathBuf::from(root),
        }
    }

    #[test]
    fn open_messages() {
        let c = at("/nonexistent-debugfs");
        let e = std::io::Error::from(ErrorKind::NotFound);
        let m = c.open_error(&e, false);
        assert!(m.contains("debugfs is not mounted"), "{m}");
        // A debugfs with something in it, but not rkprobes.
        let c = at("/proc/self");
        let m = c.open_error(&e, false);
        assert!(m.contains("rkprobes is not loaded"), "{m}");
        assert!(
            m.contains("modprobe rkprobes") && m.contains("--tracefs"),
            "{m}"
        );
        let e = std::io::Error::from(ErrorKind::PermissionDenied);
        let m = c.open_error(&e, true);
        assert!(
            m.starts_with("No permission to write /proc/self/rkprobes/kprobe_events"),
            "{m}"
        );
        let t = Control {
            target: Target::Tracefs,
            ..at("/x")
        };
        let e = std::io::Error::from(ErrorKind::NotFound);
        assert!(t.open_error(&e, false).contains("tracefs is not mounted"));
    }

    /// A control file that refuses the write numbered `fail_at` (from 0)
    /// and records the others.
    struct Refusing {
        writes: Vec<String>,
        fail_at: usize,
    }

    impl Write for Refusing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.writes.len() == self.fail_at {
                self.fail_at = usize::MAX;
                return Err(ErrorKind::InvalidInput.into());
            }
            self.writes.push(String::from_utf8_lossy(buf).into_owned());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_refused_command_undoes_the_earlier_ones() {
        let cmd = |c: &str, u: &str| (c.to_string(), Some(u.to_string()));
        let commands = [
            cmd("p:probe/a f+0", "-:probe/a"),
            cmd("p:probe/b g+0", "-:probe/b"),
            cmd("p:probe/b g+4", "-:probe/b"),
            cmd("p:probe/c h+0", "-:probe/c"),
        ];
        let mut f = Refusing {
            writes: Vec::new(),
            fail_at: 3,
        };
        let (i, e, failed) = write_or_undo(&mut f, &commands).unwrap_err();
        assert_eq!((i, e.kind(), failed.len()), (3, ErrorKind::InvalidInput, 0));
        assert_eq!(
            f.writes,
            vec![
                "p:probe/a f+0\n",
                "p:probe/b g+0\n",
                "p:probe/b g+4\n",
                "-:probe/b\n",
                "-:probe/a\n"
            ]
        );
        let mut f = Refusing {
            writes: Vec::new(),
            fail_at: 9,
        };
        assert!(write_or_undo(&mut f, &commands).is_ok());
        assert_eq!(f.writes.len(), 4);
    }

    #[test]
    fn the_new_error_log_entry_is_quoted() {
        let dir = std::env::temp_dir().join(format!("rkprobe-errlog-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("rkprobes")).unwrap();
        let c = at(dir.to_str().unwrap());
        let old = "[   1.000000] trace_kprobe: error: Old\n  Command: p:probe/a x\n";
        let new = "[   2.000000] trace_kprobe: error: Invalid probed address or symbol\n  \
                   Command: p:probe/b nosuch\n                   ^\n";
        std::fs::write(c.error_log(), format!("{old}{new}")).unwrap();
        let e = std::io::Error::from(ErrorKind::InvalidInput);
        let before = last_error_entry(old);
        let m = c.write_error(&e, "p:probe/b nosuch", before.as_deref());
        assert!(m.starts_with("Failed to write event: "), "{m}");
        assert!(m.contains("\n  p:probe/b nosuch\n"), "{m}");
        assert!(m.contains("Invalid probed address or symbol"), "{m}");
        assert!(m.contains("Command: p:probe/b nosuch"), "{m}");
        // An entry that was there before the write is not this write's.
        let m = c.write_error(&e, "p:probe/b nosuch", last_error_entry(new).as_deref());
        assert!(!m.contains("Invalid probed"), "{m}");
        assert!(m.contains("error_log"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn error_log_entries() {
        let log = "[   1.000000] trace_kprobe: error: Invalid probed address or symbol\n  \
                   Command: p:probe/a nosuch\n             ^\n\
                   [   2.500000] trace_kprobe: error: Event name is too long\n  \
                   Command: p:probe/bbbb vfs_read\n                ^\n";
        let last = last_error_entry(log).unwrap();
        assert!(last.starts_with("[   2.500000] trace_kprobe: error: Event name is too long"));
        assert!(last.ends_with('^'));
        assert_eq!(last.lines().count(), 3);
        assert_eq!(last_error_entry(""), None);
    }
}
