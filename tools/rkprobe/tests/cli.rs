// SPDX-License-Identifier: GPL-2.0

//! The rkprobe binary run as a user runs it: its messages, options, man
//! page, completions and `--json`.
//!
//! Control files are files in a temporary directory standing for debugfs
//! and tracefs (`RKPROBE_DEBUGFS`, `RKPROBE_TRACEFS`), so nothing is
//! written into the machine's kernel. The tests that need DWARF use the
//! test kernel's vmlinux, `RKPROBES_VMLINUX`, else the cached test
//! kernel's (`$RKPROBES_CACHE/kdir`); without one they say so and pass
//! without checking anything more. The others run everywhere: `--symfs`
//! at an empty directory makes sure no vmlinux is found.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What a run printed and how it ended.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A fresh directory standing for debugfs and tracefs, with rkprobes'
/// control file and the kernel's, both empty, and an empty directory for
/// `--symfs`.
struct Fake {
    root: PathBuf,
}

impl Fake {
    fn new(tag: &str) -> Fake {
        let root = std::env::temp_dir().join(format!("rkprobe-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("debug/rkprobes")).unwrap();
        std::fs::create_dir_all(root.join("tracing/events")).unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::write(root.join("debug/rkprobes/kprobe_events"), "").unwrap();
        std::fs::write(root.join("tracing/kprobe_events"), "").unwrap();
        // A README without the lines perf looks for: the oldest features.
        std::fs::write(root.join("tracing/README"), "tracing mini-HOWTO:\n").unwrap();
        Fake { root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// rkprobes' control file.
    fn rk_events(&self) -> PathBuf {
        self.path("debug/rkprobes/kprobe_events")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    /// Runs rkprobe with `args`, the control files here, no vmlinux to be
    /// found unless given.
    fn run(&self, args: &[&str]) -> Out {
        self.run_env(args, &[])
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let out = Command::new(env!("CARGO_BIN_EXE_rkprobe"))
            .args(args)
            .env("RKPROBE_DEBUGFS", self.path("debug"))
            .env("RKPROBE_TRACEFS", self.path("tracing"))
            .env_remove("RKPROBE_KERNEL_NOTES")
            .env_remove("RKPROBE_KALLSYMS")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `--symfs` at an empty directory: no vmlinux and no module is found.
    fn nofs(&self) -> String {
        self.path("empty").display().to_string()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The test kernel's vmlinux, if it is there.
fn vmlinux() -> Option<String> {
    let v = match std::env::var("RKPROBES_VMLINUX") {
        Ok(v) => PathBuf::from(v),
        Err(_) => {
            let cache = std::env::var("RKPROBES_CACHE").map_or_else(
                |_| {
                    PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rkprobes")
                },
                PathBuf::from,
            );
            let kdir = std::fs::read_to_string(cache.join("kdir")).ok()?;
            PathBuf::from(kdir.trim()).join("vmlinux")
        }
    };
    if v.exists() {
        Some(v.display().to_string())
    } else {
        eprintln!("skipped: no test kernel vmlinux (RKPROBES_VMLINUX)");
        None
    }
}

/// The closing line of a failed command.
fn closing(o: &Out) -> &str {
    o.stderr.lines().last().unwrap_or("")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

#[test]
fn no_command_prints_the_usage() {
    let f = Fake::new("usage");
    let o = f.run(&[]);
    assert_eq!(o.code, 129);
    assert!(o.stdout.is_empty());
    assert!(
        o.stderr.contains("Usage: rkprobe [OPTIONS] 'PROBEDEF'"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("--add <PROBEDEF>"), "{}", o.stderr);
    // Probe words go with --add only.
    let o = f.run(&["-V", "vfs_read", "count"]);
    assert_eq!(o.code, 129);
    assert!(o
        .stderr
        .starts_with("  Error: another command except --add is set."));
    // Commands are exclusive.
    let o = f.run(&["-l", "-F"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("cannot be used with"), "{}", o.stderr);
}

#[test]
fn version() {
    let f = Fake::new("version");
    let o = f.run(&["--version"]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, format!("rkprobe {}\n", env!("CARGO_PKG_VERSION")));
}

/// Each command's failure ends with perf's line for that command.
#[test]
fn each_failure_names_its_command() {
    let f = Fake::new("failures");
    let nofs = f.nofs();
    for (args, last) in [
        (vec!["-a", "vfs_read"], "  Error: Failed to add events."),
        (vec!["vfs_read", "count"], "  Error: Failed to add events."),
        (vec!["-D", "vfs_read"], "  Error: Failed to add events."),
        (vec!["-V", "vfs_read"], "  Error: Failed to show vars."),
        (vec!["-L", "vfs_read"], "  Error: Failed to show lines."),
        (vec!["-d", "nothing*"], "  Error: Failed to delete events."),
        (vec!["-F", "a&"], "  Error: Failed to show functions."),
        (vec!["-l", "a|"], "  Error: Failed to show event list."),
    ] {
        let mut a = vec!["--symfs", &nofs];
        a.extend(&args);
        let o = f.run(&a);
        assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
        assert_eq!(closing(&o), last, "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("Failed to add events") || last.contains("add"));
    }
    let o = f.run(&["--symfs", &nofs, "-a", "vfs_read"]);
    assert!(o
        .stderr
        .starts_with("Failed to find the path for the kernel: no vmlinux at "));
    assert!(
        o.stderr.contains("Hint: give one with -k VMLINUX"),
        "{}",
        o.stderr
    );
    let o = f.run(&["-d", "nothing*|none"]);
    assert!(
        o.stderr
            .starts_with("\"nothing*|none\" does not hit any event.\n"),
        "{}",
        o.stderr
    );
    let o = f.run(&["-F", "a&"]);
    assert!(
        o.stderr
            .starts_with("Filter parse error at 3.\nSource: \"a&\"\n           ^\n"),
        "{}",
        o.stderr
    );
    // -q: no message at all, the status says it.
    let o = f.run(&["-q", "--symfs", &nofs, "-a", "vfs_read"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, ""));
}

/// Missing control files say what to do; every option a message names
/// exists.
#[test]
fn hints_for_missing_control_files() {
    let f = Fake::new("hints");
    std::fs::remove_file(f.rk_events()).unwrap();
    let o = f.run(&["-l"]);
    assert_eq!(closing(&o), "  Error: Failed to show event list.");
    assert!(o.stderr.contains("rkprobes is not loaded"), "{}", o.stderr);
    assert!(o.stderr.contains("'modprobe rkprobes'"), "{}", o.stderr);
    assert!(o.stderr.contains("insmod rkprobes.ko"), "{}", o.stderr);
    assert!(o.stderr.contains("--tracefs"), "{}", o.stderr);
    let mut messages = o.stderr.clone();
    let o = f.run(&["-d", "x"]);
    assert!(o.stderr.contains("rkprobes is not loaded"), "{}", o.stderr);
    // An empty debugfs is not mounted.
    std::fs::remove_dir(f.path("debug/rkprobes")).unwrap();
    let o = f.run(&["-l"]);
    assert!(o.stderr.contains("debugfs is not mounted"), "{}", o.stderr);
    assert!(o.stderr.contains("mount -t debugfs"), "{}", o.stderr);
    messages.push_str(&o.stderr);
    std::fs::remove_file(f.path("tracing/kprobe_events")).unwrap();
    let o = f.run(&["--tracefs", "-l"]);
    assert!(o.stderr.contains("CONFIG_KPROBE_EVENTS"), "{}", o.stderr);
    messages.push_str(&o.stderr);
    let o = f.run_env(
        &["--tracefs", "-d", "x"],
        &[("RKPROBE_TRACEFS", "/nonexistent")],
    );
    assert!(
        o.stderr.contains("kprobe_events does not exist"),
        "{}",
        o.stderr
    );
    messages.push_str(&o.stderr);
    let o = f.run(&["--symfs", &f.nofs(), "-a", "vfs_read"]);
    messages.push_str(&o.stderr);
    let help = f.run(&["--help"]).stdout;
    let words: Vec<&str> = messages
        .split(|c: char| c.is_whitespace() || c == '\'' || c == ',' || c == '(')
        .map(|w| w.trim_end_matches(['.', ')', ';']))
        .collect();
    let mut named = 0;
    for (i, opt) in words.iter().enumerate() {
        if opt.starts_with("--") && opt.len() > 2 {
            assert!(
                help.contains(opt),
                "a message names {opt}, which is not an option"
            );
            named += 1;
        } else if opt.len() == 2 && opt.starts_with('-') {
            // Short options of rkprobe's, not of other commands (mount -t).
            let before = i.checked_sub(1).and_then(|j| words.get(j)).copied();
            if matches!(before, Some("rkprobe" | "with")) {
                assert!(help.contains(&format!("{opt}, ")), "a message names {opt}");
                named += 1;
            }
        }
    }
    assert!(named >= 3, "{messages}");
}

/// --list and --del without a vmlinux: events as the control file has
/// them, filtered as perf filters.
#[test]
fn list_and_delete_without_debuginfo() {
    let f = Fake::new("list");
    std::fs::write(
        f.rk_events(),
        "p:probe/myread vfs_read+4 count=%dx:x64 +0(%si)\n\
         r:probe/myread__return vfs_read+0 ret=$retval:s64\n\
         p:probe/multi do_sys_open+0\n\
         p:probe/multi do_sys_open+8\n\
         p:other/mod lkdtm:lkdtm_debugfs_read+199 n=%r14:s32\n",
    )
    .unwrap();
    let nofs = f.nofs();
    let o = f.run(&["--symfs", &nofs, "-l"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "  probe:myread         (on vfs_read+4 with count +0(%si))\n\
         \x20 probe:myread__return (on vfs_read%return with ret)\n\
         \x20 probe:multi          (on do_sys_open)\n\
         \x20 probe:multi          (on do_sys_open+8)\n\
         \x20 other:mod            (on lkdtm_debugfs_read+199 in lkdtm with n)\n"
    );
    let o = f.run(&["--symfs", &nofs, "-l", "other:*|*return"]);
    assert_eq!(o.stdout.lines().count(), 2, "{}", o.stdout);
    // perf's filter passes an event by its name or by GROUP:EVENT, so
    // '!probe:*' would pass every name; 'other:*' passes the one.
    let o = f.run(&["--symfs", &nofs, "-l", "other:*", "--json"]);
    let v = json(&o.stdout);
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["group"], "other");
    assert_eq!(a[0]["event"], "mod");
    assert_eq!(a[0]["retprobe"], false);
    assert_eq!(a[0]["point"], "lkdtm:lkdtm_debugfs_read+199");
    assert_eq!(a[0]["symbol"], "lkdtm_debugfs_read");
    assert_eq!(a[0]["offset"], 199);
    assert_eq!(a[0]["module"], "lkdtm");
    assert_eq!(a[0]["place"], Value::Null);
    assert_eq!(a[0]["args"][0]["name"], "n");
    assert_eq!(a[0]["args"][0]["fetch"], "%r14:s32");
    assert_eq!(
        a[0]["command"],
        "p:other/mod lkdtm:lkdtm_debugfs_read+199 n=%r14:s32"
    );

    // -n --del prints what it would write and writes nothing; an event
    // of several probes is removed once.
    let before = f.read("debug/rkprobes/kprobe_events");
    let o = f.run(&["-n", "-d", "multi", "-d", "myread"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "-:probe/myread\n-:probe/multi\n");
    assert_eq!(
        o.stderr,
        "Removed event: probe:myread\nRemoved event: probe:multi\n"
    );
    assert_eq!(f.read("debug/rkprobes/kprobe_events"), before);
    let o = f.run(&["-d", "other:*"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "Removed event: other:mod\n");
    assert!(f
        .read("debug/rkprobes/kprobe_events")
        .ends_with("\n-:other/mod\n"));
    // --tracefs lists the kernel's file.
    std::fs::write(f.path("tracing/kprobe_events"), "p:kprobes/k vfs_write+0\n").unwrap();
    let o = f.run(&["--symfs", &nofs, "--tracefs", "-l"]);
    assert_eq!(o.stdout, "  kprobes:k            (on vfs_write)\n");
}

/// --funcs without a vmlinux lists kallsyms' functions, with perf's
/// default filter, -F's own or --filter's.
#[test]
fn funcs_from_kallsyms() {
    let f = Fake::new("kallsyms");
    let ks = f.path("kallsyms");
    std::fs::write(
        &ks,
        "ffffffff81000000 T _stext\n\
         ffffffff81000100 t vfs_read\n\
         ffffffff81000200 T vfs_write\n\
         ffffffff81000300 t ksys_read\n\
         ffffffff81000400 D jiffies\n\
         ffffffff81000500 t vfs_read\n\
         ffffffffc0001000 t lkdtm_debugfs_read\t[lkdtm]\n",
    )
    .unwrap();
    let env = [("RKPROBE_KALLSYMS", ks.to_str().unwrap())];
    let nofs = f.nofs();
    let run = |args: &[&str]| {
        let mut a = vec!["--symfs", nofs.as_str()];
        a.extend(args);
        f.run_env(&a, &env)
    };
    assert_eq!(run(&["-F"]).stdout, "ksys_read\nvfs_read\nvfs_write\n");
    assert_eq!(run(&["-F", "vfs_*"]).stdout, "vfs_read\nvfs_write\n");
    assert_eq!(run(&["-F", "!vfs_*&!_*"]).stdout, "ksys_read\n");
    assert_eq!(run(&["-F", "--filter", "*write"]).stdout, "vfs_write\n");
    assert_eq!(
        run(&["-F", "ksys_*", "--filter", "*write"]).stdout,
        "ksys_read\nvfs_write\n"
    );
    assert_eq!(run(&["-m", "lkdtm", "-F"]).stdout, "lkdtm_debugfs_read\n");
    let o = run(&["-F", "vfs_*", "--json"]);
    let v = json(&o.stdout);
    assert_eq!(v[0]["name"], "vfs_read");
    assert_eq!(v[0]["module"], Value::Null);
    assert_eq!(v.as_array().unwrap().len(), 2);
    // A module neither found nor loaded.
    let o = run(&["-m", "nosuchmod", "-F"]);
    assert_eq!(closing(&o), "  Error: Failed to show functions.");
    assert!(
        o.stderr.starts_with("Failed to find module nosuchmod"),
        "{}",
        o.stderr
    );
}

#[test]
fn man_page_and_completions() {
    let f = Fake::new("generate");
    let man = f.run(&["--generate", "man"]);
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        man.stdout
    );
    assert!(man.stdout.contains(".TH rkprobe 1"));
    for opt in [
        "add",
        "del",
        "definition",
        "list",
        "line",
        "vars",
        "funcs",
        "vmlinux",
        "module",
        "source",
        "symfs",
        "filter",
        "externs",
        "range",
        "no\\-inlines",
        "dry\\-run",
        "force",
        "max\\-probes",
        "tracefs",
        "json",
        "bootconfig",
        "version",
    ] {
        assert!(
            man.stdout.contains(&format!("\\-\\-{opt}")),
            "man: --{opt} missing"
        );
    }
    assert!(!man.stdout.contains("quirks") && !man.stdout.contains("generate"));
    for section in [
        ".SH \"PROBE SYNTAX\"",
        ".SH ENVIRONMENT",
        ".SH FILES",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(man.stdout.contains(section), "man: {section} missing");
    }
    assert!(
        !man.stdout.contains('\x0c'),
        "man: a form feed for a font escape"
    );
    // groff, where there is one, reads it without a warning.
    let page = f.path("rkprobe.1");
    std::fs::write(&page, &man.stdout).unwrap();
    if let Ok(g) = Command::new("groff")
        .args(["-man", "-ww", "-z"])
        .arg(&page)
        .output()
    {
        assert!(g.status.success(), "groff failed");
        assert_eq!(String::from_utf8_lossy(&g.stderr), "", "groff's warnings");
    }
    for (shell, head) in [
        ("bash", "_rkprobe()"),
        ("zsh", "#compdef rkprobe"),
        ("fish", "complete -c rkprobe"),
    ] {
        let o = f.run(&["--generate", shell]);
        assert_eq!(o.code, 0);
        assert!(o.stdout.contains(head), "{shell}");
        for opt in ["--vars", "--no-inlines", "--json", "--symfs"] {
            let name = opt.trim_start_matches('-');
            assert!(o.stdout.contains(name), "{shell}: {opt} missing");
        }
        assert!(
            !o.stdout.contains("perf-quirks"),
            "{shell}: a hidden option"
        );
        assert!(!o.stdout.contains("generate"), "{shell}: a hidden option");
    }
}

/// A notes file with a GNU build-id note of 20 bytes 0x01: another
/// kernel's.
fn other_notes(f: &Fake) -> String {
    let mut n = vec![4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, b'G', b'N', b'U', 0];
    n.extend([1u8; 20]);
    let p = f.path("other.notes");
    std::fs::write(&p, n).unwrap();
    p.display().to_string()
}

/// --definition, its --json and --bootconfig, on the test kernel.
#[test]
fn definitions_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("defs");
    let o = f.run(&[
        "-k",
        &v,
        "-D",
        "vfs_read count file->f_mode",
        "-D",
        "vfs_read%return $retval",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", o.stdout);
    assert!(
        lines[0].starts_with("p:probe/vfs_read vfs_read+0 count="),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" f_mode=+"), "{}", lines[0]);
    assert_eq!(lines[1], "r:probe/vfs_read__return vfs_read+0 $retval");
    let j = f.run(&[
        "-k",
        &v,
        "-D",
        "vfs_read count file->f_mode",
        "-D",
        "vfs_read%return $retval",
        "--json",
    ]);
    let a = json(&j.stdout);
    let a = a.as_array().unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["spec"], "vfs_read count file->f_mode");
    assert_eq!(a[0]["group"], "probe");
    assert_eq!(a[0]["event"], "vfs_read");
    assert_eq!(a[0]["retprobe"], false);
    assert_eq!(a[0]["symbol"], "vfs_read");
    assert_eq!(a[0]["offset"], 0);
    assert_eq!(a[0]["module"], Value::Null);
    assert_eq!(a[0]["args"][0]["name"], "count");
    assert_eq!(a[0]["args"][1]["name"], "f_mode");
    assert_eq!(a[0]["command"], lines[0]);
    assert_eq!(a[1]["retprobe"], true);
    assert_eq!(a[1]["args"][0]["name"], Value::Null);
    assert_eq!(a[1]["args"][0]["fetch"], "$retval");
    let b = f.run(&[
        "-k",
        &v,
        "-D",
        "vfs_read count",
        "-D",
        "g:x=vfs_read%return $retval",
        "--bootconfig",
    ]);
    assert_eq!(b.code, 0, "{}", b.stderr);
    let count = lines[0]
        .split_whitespace()
        .find(|w| w.starts_with("count="))
        .unwrap();
    assert_eq!(
        b.stdout,
        format!(
            "ftrace.event.kprobes.vfs_read.probes = 'vfs_read+0 {count}'\n\
             ftrace.event.kprobes.x__return.probes = 'vfs_read%return $retval'\n"
        )
    );
    assert_eq!(b.stderr, "WARN: Group name g is ignored\n");
    // -D with -k does not check the build-id (perf's rule); -a does.
    let notes = other_notes(&f);
    let o = f.run_env(
        &["-k", &v, "-D", "vfs_read"],
        &[("RKPROBE_KERNEL_NOTES", &notes)],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = f.run_env(
        &["-k", &v, "-a", "vfs_read"],
        &[("RKPROBE_KERNEL_NOTES", &notes)],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("is not the running kernel's (0101"),
        "{}",
        o.stderr
    );
    assert_eq!(f.read("debug/rkprobes/kprobe_events"), "");
    // -l does without places rather than fail.
    std::fs::write(f.rk_events(), "p:probe/vfs_read vfs_read+0\n").unwrap();
    let o = f.run_env(&["-k", &v, "-l"], &[("RKPROBE_KERNEL_NOTES", &notes)]);
    assert_eq!(o.stdout, "  probe:vfs_read       (on vfs_read)\n");
    // --no-inlines: an inline function's copies are not searched.
    let o = f.run(&["-k", &v, "-D", "init_sync_kiocb"]);
    assert!(o.code == 0 && !o.stdout.is_empty(), "{}", o.stderr);
    let o = f.run(&["-k", &v, "-D", "init_sync_kiocb", "--no-inlines"]);
    assert_eq!(closing(&o), "  Error: Failed to add events.");
    assert!(
        o.stderr
            .starts_with("Probe point 'init_sync_kiocb' not found."),
        "{}",
        o.stderr
    );
}

/// --add into control files, names taken from tracefs events/GROUP/ and
/// the control file, -f, -n, and the report.
#[test]
fn add_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("add");
    let add = |args: &[&str]| {
        let mut a = vec!["-k", v.as_str(), "--ignore-build-id"];
        a.extend(args);
        f.run(&a)
    };
    let o = add(&["-a", "vfs_read count file->f_mode"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let written = f.read("debug/rkprobes/kprobe_events");
    assert!(
        written.starts_with("p:probe/vfs_read vfs_read+0 count="),
        "{written}"
    );
    assert_eq!(written.lines().count(), 1);
    let enable = f.path("tracing/events/probe/vfs_read/enable");
    assert_eq!(
        o.stderr,
        format!(
            "Added new event:\n  probe:vfs_read       (on vfs_read with count f_mode=file->f_mode)\n\n\
             You can now use it:\n\n\techo 1 > {}\n\tperf record -e probe:vfs_read -aR sleep 1\n\
             \tbpftrace -e 'tracepoint:probe:vfs_read {{ @[comm] = count(); }}'\n\n",
            enable.display()
        )
    );
    // The name is taken in the control file: an error without -f.
    let o = add(&["-a", "vfs_read"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with("Error: event \"vfs_read\" already exists.\n"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("'rkprobe -d'") && o.stderr.contains("'rkprobe -f'"));
    assert_eq!(f.read("debug/rkprobes/kprobe_events"), written);
    // A kernel event of that group in tracefs takes a name too.
    std::fs::write(f.rk_events(), "").unwrap();
    std::fs::create_dir_all(f.path("tracing/events/probe/vfs_read")).unwrap();
    std::fs::create_dir_all(f.path("tracing/events/probe/vfs_read_1")).unwrap();
    std::fs::create_dir_all(f.path("tracing/events/other/vfs_write")).unwrap();
    let o = add(&["-a", "vfs_read"]);
    assert!(o.stderr.contains("already exists"), "{}", o.stderr);
    let o = add(&["-f", "vfs_read", "count"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("  probe:vfs_read_2     (on vfs_read with count)"),
        "{}",
        o.stderr
    );
    assert!(f
        .read("debug/rkprobes/kprobe_events")
        .starts_with("p:probe/vfs_read_2 vfs_read+0 "));
    // Only the group's own directory counts.
    let o = add(&["-a", "vfs_write"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // -n prints the lines and writes nothing, nor the hint.
    let before = f.read("debug/rkprobes/kprobe_events");
    let o = add(&[
        "-n",
        "-a",
        "myg:myev=vfs_read%return $retval",
        "-a",
        "do_sys_openat2",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "r:myg/myev__return vfs_read+0 $retval\np:probe/do_sys_openat2 do_sys_openat2+0\n"
    );
    assert!(
        o.stderr
            .starts_with("Added new events:\n  myg:myev__return "),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("perf record"), "{}", o.stderr);
    assert_eq!(f.read("debug/rkprobes/kprobe_events"), before);
    // --tracefs: the kernel's file; its events are not tracepoints to BPF.
    let o = add(&["--tracefs", "-a", "ksys_read"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        f.read("tracing/kprobe_events"),
        "p:probe/ksys_read ksys_read+0\n"
    );
    assert!(
        o.stderr.contains("perf record -e probe:ksys_read"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("bpftrace"), "{}", o.stderr);
    // -q: nothing said.
    let o = add(&["-q", "-a", "ksys_write"]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
}

/// A command the control file refuses: the error, where the kernel's
/// reason is, and nothing left behind.
#[cfg(unix)]
#[test]
fn refused_writes_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("refused");
    std::fs::remove_file(f.rk_events()).unwrap();
    // Every write to /dev/full fails (ENOSPC).
    std::os::unix::fs::symlink("/dev/full", f.rk_events()).unwrap();
    let o = f.run(&["-k", &v, "--ignore-build-id", "-a", "vfs_read"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.starts_with("Failed to write event: "),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("\n  p:probe/vfs_read vfs_read+0\n"),
        "{}",
        o.stderr
    );
    let log = f.path("debug/rkprobes/error_log");
    assert!(
        o.stderr.contains(&format!("is in {}", log.display())),
        "{}",
        o.stderr
    );
    assert_eq!(closing(&o), "  Error: Failed to add events.");
}

/// --list with the DWARF: source places.
#[test]
fn list_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("listdw");
    std::fs::write(
        f.rk_events(),
        "p:probe/a vfs_read+0 count=%dx:x64\nr:probe/b vfs_read+0 ret=$retval\n",
    )
    .unwrap();
    let o = f.run(&["-k", &v, "--ignore-build-id", "-l"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "  probe:a              (on vfs_read@fs/read_write.c with count)\n\
         \x20 probe:b              (on vfs_read%return@fs/read_write.c with ret)\n"
    );
    let j = json(
        &f.run(&["-k", &v, "--ignore-build-id", "-l", "--json"])
            .stdout,
    );
    assert_eq!(j[0]["place"], "vfs_read@fs/read_write.c");
    assert_eq!(j[1]["retprobe"], true);
}

/// --vars, with --range, --externs, --filter and --json.
#[test]
fn vars_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("vars");
    let o = f.run(&["-k", &v, "-V", "vfs_read"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o
        .stdout
        .starts_with("Available variables at vfs_read\n\t@<vfs_read+0>\n"));
    assert!(o.stdout.contains("\t\tsize_t\tcount\n"), "{}", o.stdout);
    assert!(
        o.stdout.contains("\t\tstruct file*\tfile\n"),
        "{}",
        o.stdout
    );
    let o = f.run(&["-k", &v, "-V", "vfs_read", "--range"]);
    assert!(
        o.stdout
            .contains("\t\t[VAL]\tsize_t\tcount\t@<vfs_read+[0-"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("\t\t[INV]\tssize_t\tret\t@<vfs_read+["),
        "{}",
        o.stdout
    );
    let o = f.run(&[
        "-k",
        &v,
        "-V",
        "vfs_read",
        "--externs",
        "--filter",
        "!_*&!class_*",
    ]);
    assert!(o.stdout.contains("\t\tsize_t\tcount\n"), "{}", o.stdout);
    assert!(!o.stdout.contains("\t_"), "{}", o.stdout);
    let ext = f.run(&["-k", &v, "-V", "vfs_read", "--externs"]);
    assert!(ext.stdout.lines().count() > o.stdout.lines().count());
    let o = f.run(&[
        "-k",
        &v,
        "-V",
        "vfs_read",
        "-V",
        "vfs_write",
        "--range",
        "--externs",
        "--json",
    ]);
    let a = json(&o.stdout);
    assert_eq!(a[0]["point"], "vfs_read");
    assert_eq!(a[1]["point"], "vfs_write");
    let loc = &a[0]["locations"][0];
    assert_eq!(loc["symbol"], "vfs_read");
    assert_eq!(loc["offset"], 0);
    let vars = loc["variables"].as_array().unwrap();
    let count = vars.iter().find(|x| x["name"] == "count").unwrap();
    assert_eq!(count["type"], "size_t");
    assert_eq!(count["kind"], "valid");
    assert_eq!(count["range"]["function"], "vfs_read");
    assert_eq!(count["range"]["offsets"][0][0], 0);
    assert!(vars.iter().any(|x| x["kind"] == "invalid"));
    assert!(vars
        .iter()
        .any(|x| x["kind"] == "external" && x["range"].is_null()));
    let o = f.run(&["-k", &v, "-V", "vfs_read count"]);
    assert_eq!(closing(&o), "  Error: Failed to show vars.");
}

/// --line of a function and of a file, --source, --json.
#[test]
fn lines_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("lines");
    let o = f.run(&["-k", &v, "-L", "vfs_read:0-2", "--json"]);
    if o.code != 0 && o.stderr.contains("Failed to find source file path") {
        eprintln!("skipped: the test kernel's source is not at its DWARF's path");
        return;
    }
    let j = json(&o.stdout);
    assert_eq!(j["function"], "vfs_read");
    let path = j["file"].as_str().unwrap().to_string();
    assert!(path.ends_with("/fs/read_write.c"), "{path}");
    let decl = j["offset"].as_u64().unwrap();
    assert_eq!(j["start"], decl);
    let lines = j["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["number"], 0);
    assert_eq!(lines[0]["line"], decl);
    assert_eq!(lines[0]["probeable"], true);
    assert!(lines[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("ssize_t vfs_read("));
    let text = f.run(&["-k", &v, "-L", "vfs_read:0-2"]).stdout;
    assert_eq!(text.lines().next().unwrap(), format!("<vfs_read@{path}:0>"));
    assert!(text.contains("\n      0  ssize_t vfs_read("), "{text}");
    // A file's absolute lines.
    let o = f.run(&["-k", &v, "-L", &format!("fs/read_write.c:{decl}+1")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.lines().next().unwrap(), format!("<{path}:{decl}>"));
    assert!(
        o.stdout
            .contains(&format!("\n{decl:>7}  ssize_t vfs_read(")),
        "{}",
        o.stdout
    );
    // --source: the file found under another tree.
    let src = f.path("src/fs");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&path, src.join("read_write.c")).unwrap();
    let o = f.run(&[
        "-k",
        &v,
        "-s",
        f.path("src").to_str().unwrap(),
        "-L",
        "vfs_read:0-2",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout.lines().next().unwrap(),
        format!("<vfs_read@{}:0>", src.join("read_write.c").display())
    );
    assert_eq!(o.stdout.lines().count(), 4);
    let o = f.run(&["-k", &v, "-L", "vfs_read:9-3"]);
    assert!(
        o.stderr
            .starts_with("Semantic error :Start line must be smaller"),
        "{}",
        o.stderr
    );
    assert_eq!(closing(&o), "  Error: Failed to show lines.");
}

/// --funcs from the vmlinux, with perf's filter grammar.
#[test]
fn funcs_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let f = Fake::new("funcs");
    let o = f.run(&["-k", &v, "-F", "(vfs_r*|vfs_w*)&!*iter*"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let names: Vec<&str> = o.stdout.lines().collect();
    assert!(
        names.contains(&"vfs_read") && names.contains(&"vfs_write"),
        "{names:?}"
    );
    assert!(names
        .iter()
        .all(|n| n.starts_with("vfs_r") || n.starts_with("vfs_w")));
    assert!(names.iter().all(|n| !n.contains("iter")), "{names:?}");
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted);
    let all = f.run(&["-k", &v, "-F"]).stdout;
    assert!(all.lines().all(|n| !n.starts_with('_')));
    // Aliases are functions kallsyms resolves, listed as perf lists them,
    // and return probes take them.
    let crc = f.run(&["-k", &v, "-F", "crc32_le|crc32_le_base"]).stdout;
    assert_eq!(
        crc.lines().collect::<Vec<_>>(),
        ["crc32_le", "crc32_le_base"]
    );
    let o = f.run(&["-k", &v, "-D", "crc32_le%return"]);
    assert_eq!(
        o.stdout, "r:probe/crc32_le__return crc32_le+0\n",
        "{}",
        o.stderr
    );
    let ko = Path::new(&v).with_file_name("drivers/misc/lkdtm/lkdtm.ko");
    if ko.exists() {
        let o = f.run(&[
            "-m",
            &ko.display().to_string(),
            "-F",
            "!_*&(*_module_*|*_module)",
        ]);
        assert_eq!(
            o.stdout.lines().collect::<Vec<_>>(),
            [
                "cleanup_module",
                "init_module",
                "lkdtm_module_exit",
                "lkdtm_module_init"
            ],
            "{}",
            o.stderr
        );
    }
}

/// A path from `-m NAME`, found under --symfs, compressed or not.
fn module_tree(f: &Fake, ko: &Path, name: &str, compress: fn(&[u8]) -> Vec<u8>) -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let root = f.path("sym");
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join(format!(
        "lib/modules/{}/kernel/drivers/misc/lkdtm",
        release.trim()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), compress(&std::fs::read(ko).unwrap())).unwrap();
    root.display().to_string()
}

/// -m NAME: the module's .ko found under /lib/modules (here under
/// --symfs), compressed with xz or gzip, gives what -m PATH gives.
#[test]
fn modules_by_name_on_the_test_kernel() {
    let Some(v) = vmlinux() else { return };
    let ko = Path::new(&v).with_file_name("drivers/misc/lkdtm/lkdtm.ko");
    if !ko.exists() {
        eprintln!("skipped: no lkdtm.ko beside the vmlinux");
        return;
    }
    let f = Fake::new("modules");
    let spec = "lkdtm_debugfs_read count";
    let by_path = f.run(&["-m", ko.to_str().unwrap(), "-D", spec]);
    assert_eq!(by_path.code, 0, "{}", by_path.stderr);
    assert!(by_path
        .stdout
        .starts_with("p:probe/lkdtm_debugfs_read lkdtm:lkdtm_debugfs_read+"));
    let plain: fn(&[u8]) -> Vec<u8> = |b| b.to_vec();
    let xz: fn(&[u8]) -> Vec<u8> = |b| {
        let mut out = Vec::new();
        lzma_rs::xz_compress(&mut &b[..], &mut out).unwrap();
        out
    };
    let gz: fn(&[u8]) -> Vec<u8> = |b| {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    for (name, compress) in [
        ("lkdtm.ko", plain),
        ("lkdtm.ko.xz", xz),
        ("lkdtm.ko.gz", gz),
    ] {
        let root = module_tree(&f, &ko, name, compress);
        let o = f.run(&["--symfs", &root, "-m", "lkdtm", "-D", spec]);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        assert_eq!(o.stdout, by_path.stdout, "{name}");
        let o = f.run(&["--symfs", &root, "-m", "lkdtm", "-F", "lkdtm_debugfs_*"]);
        assert!(
            o.stdout.contains("lkdtm_debugfs_read\n"),
            "{name}: {}",
            o.stdout
        );
    }
    let o = f.run(&["--symfs", &f.nofs(), "-m", "lkdtm", "-D", spec]);
    assert_eq!(closing(&o), "  Error: Failed to add events.");
    assert!(
        o.stderr.starts_with("Failed to find module lkdtm: not in "),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("-m /path/to/lkdtm.ko"), "{}", o.stderr);
}
