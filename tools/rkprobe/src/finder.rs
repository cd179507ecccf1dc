// SPDX-License-Identifier: GPL-2.0

//! Probe points from debuginfo: which addresses a specification means, which
//! function (and inlined instance) each one is in, and its arguments there.
//!
//! The walk is perf's (`debuginfo__find_probe_location()` and its callbacks
//! in `tools/perf/util/probe-finder.c`, with the DIE walkers of
//! `dwarf-aux.c`), so that the same specification gives the same addresses
//! in the same order: every compilation unit in turn; in each, the first
//! function definition of that name (every one for a glob); an inline
//! function through all its instances (inlined copies and out-of-line
//! ones), one probe each; a line through the CU's statement lines, the
//! function declaration lines and the inlined call sites.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::debuginfo::{Debuginfo, DieRef};
use crate::fetcharg::{Features, TraceArg};
use crate::spec::{self, ArgSpec, ProbeSpec, ARG_PARAMS, ARG_VARS};
use crate::translate::{self, Site, Translated};

/// perf's default `--max-probes`.
pub const MAX_PROBES: usize = 128;

/// How a search goes, beyond the specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// What the target control file accepts.
    pub features: Features,
    /// `--max-probes`: how many probe points one specification may give.
    pub max_probes: usize,
    /// `--no-inlines`: an inline function's inlined copies are not
    /// searched (only functions with code of their own are probed).
    pub no_inlines: bool,
    /// `--source`: where the source tree is, for lazy patterns and
    /// `--line` (see [`find_source_path`]).
    pub source_prefix: Option<PathBuf>,
}

impl Options {
    /// perf's defaults for `features`.
    pub fn new(features: Features) -> Options {
        Options {
            features,
            max_probes: MAX_PROBES,
            no_inlines: false,
            source_prefix: None,
        }
    }
}

/// perf's `find_source_path()`: where to read a source file the DWARF
/// names `raw` (a path the compilation directory is already joined to).
/// Without a prefix, `raw` itself. With one, `PREFIX/raw`, then with the
/// leading directories of `raw` dropped one at a time
/// (`/build/linux/fs/read_write.c` is found as `PREFIX/fs/read_write.c`).
pub fn find_source_path(raw: &str, prefix: Option<&Path>) -> Result<PathBuf, std::io::Error> {
    let Some(prefix) = prefix else {
        std::fs::metadata(raw)?;
        return Ok(PathBuf::from(raw));
    };
    let mut rest = raw.trim_start_matches('/');
    loop {
        let p = prefix.join(rest);
        match std::fs::metadata(&p) {
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match rest.split_once('/') {
            Some((_, tail)) if !tail.is_empty() => rest = tail,
            _ => return Err(std::io::ErrorKind::NotFound.into()),
        }
    }
}

/// One probe point found, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// A return probe.
    pub retprobe: bool,
    /// The symbol the probe is placed relative to.
    pub symbol: String,
    /// Offset from the symbol.
    pub offset: u64,
    /// The probe address in the file.
    pub address: u64,
    /// The function (or inlined instance) the address is in, by its DWARF
    /// name: the base of generated event names.
    pub realname: String,
    /// Arguments; `None` for one not available here (filled later).
    pub args: Vec<Option<TraceArg>>,
    /// Names of the arguments, also for those not available here.
    pub arg_names: Vec<Option<String>>,
}

/// A specification that cannot be turned into probes, with the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindError(pub String);

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FindError {}

fn fail<T>(msg: impl Into<String>) -> Result<T, FindError> {
    Err(FindError(msg.into()))
}

/// perf's `strtailcmp()`: equal when the shorter is a tail of the longer.
pub fn strtailcmp(a: &str, b: &str) -> bool {
    a.bytes().rev().zip(b.bytes().rev()).all(|(x, y)| x == y)
}

/// perf's `strglobmatch()`: `*`, `?`, `[...]` (with ranges and `!`), `\`
/// escapes.
pub fn glob_match(s: &str, pat: &str) -> bool {
    fn m(s: &[u8], p: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => {
                let rest = {
                    let mut r = rest;
                    while let Some((b'*', t)) = r.split_first() {
                        r = t;
                    }
                    r
                };
                if rest.is_empty() {
                    return true;
                }
                (0..=s.len()).any(|i| s.get(i..).is_some_and(|t| m(t, rest)))
            }
            Some((b'?', rest)) => s.split_first().is_some_and(|(_, t)| m(t, rest)),
            Some((b'[', rest)) => {
                let Some((&c, t)) = s.split_first() else {
                    return false;
                };
                let (neg, mut r) = match rest.split_first() {
                    Some((b'!', r)) => (true, r),
                    _ => (false, rest),
                };
                let mut hit = false;
                loop {
                    match r {
                        [b']', tail @ ..] => {
                            r = tail;
                            break;
                        }
                        [a, b'-', b, tail @ ..] if *b != b']' => {
                            hit |= *a <= c && c <= *b;
                            r = tail;
                        }
                        [a, tail @ ..] => {
                            hit |= *a == c;
                            r = tail;
                        }
                        [] => return false,
                    }
                }
                hit != neg && m(t, r)
            }
            Some((b'\\', rest)) if !rest.is_empty() => {
                match (s.split_first(), rest.split_first()) {
                    (Some((a, t)), Some((b, r))) => a == b && m(t, r),
                    _ => false,
                }
            }
            Some((c, rest)) => s.split_first().is_some_and(|(a, t)| a == c && m(t, rest)),
        }
    }
    m(s.as_bytes(), pat.as_bytes())
}

/// What `--line` shows (perf's `struct line_range` as the user gives it):
/// `FUNC[@SRC][:START[+NUM|-END]]` or `SRC[:START[+NUM|-END]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineRangeSpec {
    /// The function (a name or a glob).
    pub function: Option<String>,
    /// The source file (its tail is matched).
    pub file: Option<String>,
    /// The first line: relative to the function's declaration line with a
    /// function, absolute without.
    pub start: i64,
    /// The last line, likewise; `None` for "to the end".
    pub end: Option<i64>,
}

/// perf's `parse_line_range_desc()`, with its messages.
pub fn parse_line_range(arg: &str) -> Result<LineRangeSpec, String> {
    let sem = |m: String| format!("Semantic error :{m}");
    let mut lr = LineRangeSpec::default();
    let (name, range) = match arg.split_once(':') {
        Some((n, r)) => (n, Some(r)),
        None => (arg, None),
    };
    if let Some(r) = range {
        fn num<'s>(s: &'s str, what: &str) -> Result<(i64, &'s str), String> {
            spec::c_number(s)
                .ok_or_else(|| format!("Semantic error :'{what}' is not a valid number."))
        }
        let (start, rest) = num(r, "start line")?;
        lr.start = start;
        let rest = match rest.as_bytes().first() {
            Some(&c @ (b'+' | b'-')) => {
                let (n, rest) = num(rest.get(1..).unwrap_or(""), "end line")?;
                // START+NUM is NUM lines from START, START among them.
                lr.end = Some(if c == b'+' {
                    start.saturating_add(n).saturating_sub(1)
                } else {
                    n
                });
                rest
            }
            _ => rest,
        };
        if lr.end.is_some_and(|e| lr.start > e) {
            return Err(sem("Start line must be smaller than end line.".into()));
        }
        if !rest.is_empty() {
            return Err(sem(format!("Tailing with invalid str '{rest}'.")));
        }
    }
    if let Some((f, file)) = name.split_once('@') {
        lr.function = Some(f.to_string());
        lr.file = Some(file.to_string());
    } else if name.contains(['/', '.']) {
        lr.file = Some(name.to_string());
    } else if spec::is_c_func_name(name) {
        lr.function = Some(name.to_string());
    } else {
        return Err(sem(format!("'{name}' is not a valid function name.")));
    }
    Ok(lr)
}

/// The lines `--line` found (perf's `struct line_range` once filled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundLines {
    /// The source file, as the DWARF names it.
    pub path: Rc<str>,
    /// The function's declaration line (line numbers are shown relative
    /// to it), 0 without a function.
    pub offset: u32,
    /// The first line to show, absolute.
    pub start: i64,
    /// The last line to show, absolute; `None` for a few lines past the
    /// last probeable one, as perf shows.
    pub end: Option<i64>,
    /// The lines that can be probed.
    pub lines: BTreeSet<u32>,
}

/// perf's `debuginfo__find_line_range()`: the probeable lines of a
/// function (every instance of an inline one) or of a source file, in the
/// first compilation unit that has any. A line counts when the line table
/// has a statement for it (or it is a declaration line or an inlined call
/// site) and the line that address maps back to is the same line, or the
/// address maps back to no line.
pub fn find_line_range(
    di: &Debuginfo<'_>,
    lr: &LineRangeSpec,
    features: Features,
) -> Result<Option<FoundLines>, FindError> {
    let spec = ProbeSpec::default();
    let mut f = Finder::new(di, &spec, features);
    // With perf's quirks, the range as perf's line_range_search_cb()
    // leaves it for the next unit: absolute, the unit's declaration line
    // added again there.
    let mut lr_next = lr.clone();
    // Only the units that define a function of that name can have it.
    let units: Vec<usize> = match &lr.function {
        Some(func) if !is_glob(func) => {
            let mut u: Vec<usize> = di
                .functions()
                .get(func.as_str())
                .map(|l| l.iter().map(|d| d.unit).collect())
                .unwrap_or_default();
            u.dedup();
            u
        }
        _ => (0..di.unit_count()).collect(),
    };
    for unit in units {
        let Some(cu) = di.cu_die(unit) else { continue };
        f.cu = cu;
        let fname = match &lr.file {
            Some(file) => match f.cu_find_realpath(unit, file) {
                Some(p) => Some(p),
                None => continue,
            },
            None => None,
        };
        let found = match &lr.function {
            Some(func) => f.line_range_of_function(unit, func, &mut lr_next)?,
            None => fname.and_then(|fname| {
                let end = lr.end.unwrap_or(i64::from(i32::MAX));
                f.line_range_walk(cu, true, &fname, lr.start, end)
                    .map(|(path, lines)| FoundLines {
                        path,
                        offset: 0,
                        start: lr.start,
                        end: lr.end,
                        lines,
                    })
            }),
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// perf's `strlazymatch()`: a glob over the whole line, white space in
/// the line and in the pattern ignored.
pub fn lazy_match(line: &str, pat: &str) -> bool {
    let strip = |s: &str| {
        s.chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
    };
    glob_match(&strip(line), &strip(pat))
}

/// perf's `find_lazy_match_lines()`: the numbers (from 1) of the lines of
/// `text` that match `pat`.
pub fn lazy_match_lines(text: &str, pat: &str) -> BTreeSet<u32> {
    text.lines()
        .zip(1u32..)
        .filter(|(l, _)| lazy_match(l, pat))
        .map(|(_, n)| n)
        .collect()
}

/// perf's `strisglob()`.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[']) && !s.is_empty()
}

/// Finds the probes of one specification.
pub struct Finder<'d, 'a> {
    di: &'d Debuginfo<'a>,
    features: Features,
    max_probes: usize,
    no_inlines: bool,
    source_prefix: Option<PathBuf>,
    spec: &'d ProbeSpec,
    /// Found so far.
    pub events: Vec<TraceEvent>,
    /// For each event, the scope it was found in (the function or
    /// inlined instance) and where it is: what `--vars` lists from.
    pub sites: Vec<(DieRef, Site)>,
    /// Warnings perf would print on the way.
    pub warnings: Vec<String>,
    cu: DieRef,
    fname: Option<Rc<str>>,
    lno: u32,
    /// The source lines matching the lazy pattern (perf's `lcache`), read
    /// once from the first file searched.
    lazy_lines: Option<BTreeSet<u32>>,
}

impl<'d, 'a> Finder<'d, 'a> {
    /// A finder for `spec` over `di`.
    pub fn new(di: &'d Debuginfo<'a>, spec: &'d ProbeSpec, features: Features) -> Self {
        Finder {
            di,
            features,
            max_probes: MAX_PROBES,
            no_inlines: false,
            source_prefix: None,
            spec,
            events: Vec::new(),
            sites: Vec::new(),
            warnings: Vec::new(),
            cu: DieRef {
                unit: 0,
                off: gimli::UnitOffset(0),
            },
            fname: None,
            lno: 0,
            lazy_lines: None,
        }
    }

    /// Sets `--max-probes`.
    pub fn max_probes(mut self, n: usize) -> Self {
        self.max_probes = n;
        self
    }

    /// Takes `--max-probes`, `--no-inlines` and `--source` from `opts`.
    pub fn options(mut self, opts: &Options) -> Self {
        self.max_probes = opts.max_probes;
        self.no_inlines = opts.no_inlines;
        self.source_prefix = opts.source_prefix.clone();
        self
    }

    /// perf's `die_is_func_def()`.
    fn is_func_def(&self, d: DieRef) -> bool {
        self.di.tag(d) == gimli::DW_TAG_subprogram
            && !self.di.has_attr(d, gimli::DW_AT_declaration)
            && (self.di.has_attr(d, gimli::DW_AT_inline) || self.di.die_entrypc(d).is_some())
    }

    /// perf's `die_is_func_instance()`.
    fn is_func_instance(&self, d: DieRef) -> bool {
        let t = self.di.tag(d);
        (t == gimli::DW_TAG_subprogram || t == gimli::DW_TAG_inlined_subroutine)
            && (self.di.entrypc(d).is_some() || self.di.has_attr(d, gimli::DW_AT_ranges))
    }

    /// perf's `die_match_name()`: name or linkage name against a glob.
    fn match_name(&self, d: DieRef, glob: &str) -> bool {
        self.di.name(d).is_some_and(|n| glob_match(&n, glob))
            || self
                .di
                .linkage_name(d)
                .is_some_and(|n| glob_match(&n, glob))
    }

    /// Runs the search over every compilation unit.
    pub fn find(&mut self) -> Result<(), FindError> {
        let spec = self.spec;
        let pp = &spec.point;
        if pp.abs_address.is_some() {
            return fail("Absolute addresses are not supported yet.");
        }
        let units = self.units_to_search();
        for unit in units {
            let Some(cu) = self.di.cu_die(unit) else {
                continue;
            };
            self.cu = cu;
            self.fname = match &pp.file {
                Some(f) => match self.cu_find_realpath(unit, f) {
                    Some(p) => Some(p),
                    None => continue,
                },
                None => None,
            };
            if pp.function.is_some() {
                self.find_by_func(unit)?;
            } else if pp.lazy_line.is_some() {
                self.find_lazy(cu, true)?;
            } else {
                self.lno = pp.line;
                self.find_by_line()?;
            }
        }
        Ok(())
    }

    /// The units worth searching: with a function name (not a glob), only
    /// those defining something of that name.
    fn units_to_search(&self) -> Vec<usize> {
        let pp = &self.spec.point;
        match &pp.function {
            Some(f) if !is_glob(f) => {
                let funcs = self.di.functions();
                let mut u: Vec<usize> = funcs
                    .get(f.as_str())
                    .map(|l| l.iter().map(|d| d.unit).collect())
                    .unwrap_or_default();
                u.dedup();
                u
            }
            _ => (0..self.di.unit_count()).collect(),
        }
    }

    /// perf's `cu_find_realpath()`: the first file of the CU's line table
    /// whose tail is `file`.
    fn cu_find_realpath(&self, unit: usize, file: &str) -> Option<Rc<str>> {
        (0..4096u64)
            .map_while(|i| {
                let r = self.di.file_name(unit, i);
                // Index 0 is unused before DWARF 5.
                if r.is_none() && i == 0 {
                    return Some(None);
                }
                r.map(Some)
            })
            .flatten()
            .find(|p| strtailcmp(p, file))
    }

    fn find_by_func(&mut self, unit: usize) -> Result<(), FindError> {
        let Some(function) = self.spec.point.function.clone() else {
            return Ok(());
        };
        let glob = is_glob(&function);
        let subprograms = self.di.subprograms(unit);
        for &sp in subprograms.iter() {
            if !self.is_func_def(sp) || !self.match_name(sp, &function) {
                continue;
            }
            let Some(fname) = self.di.decl_file(sp) else {
                self.warnings
                    .push("A function DIE doesn't have decl_line. Maybe broken DWARF?".into());
                continue;
            };
            if let Some(f) = &self.spec.point.file {
                if !strtailcmp(f, &fname) {
                    continue;
                }
            }
            self.fname = Some(fname);
            let spec = self.spec;
            let pp = &spec.point;
            if pp.line != 0 {
                self.lno = self.di.decl_line(sp).unwrap_or(0).saturating_add(pp.line);
                self.find_by_line()?;
            } else if self.is_func_instance(sp) {
                match self.di.die_entrypc(sp) {
                    Some(a) if a != 0 && pp.lazy_line.is_some() => {
                        self.find_lazy(sp, false)?;
                    }
                    Some(a) if a != 0 => {
                        let addr = a.wrapping_add(pp.offset);
                        self.call_probe_finder(sp, addr)?;
                    }
                    _ => {}
                }
            } else if !self.no_inlines {
                self.walk_instances(sp)?;
            }
            if !glob {
                return Ok(());
            }
        }
        Ok(())
    }

    /// perf's `die_walk_instances()`: the concrete instances of the
    /// abstract function `origin` in its CU (inlined copies and
    /// out-of-line ones), depth first, without an inlined copy "called"
    /// from the function's own declaration line (redundant).
    fn instances(&self, origin: DieRef) -> Vec<DieRef> {
        let mut out = Vec::new();
        let Some(cu) = self.di.cu_die(origin.unit) else {
            return out;
        };
        let mut stack = self.di.children(cu);
        stack.reverse();
        while let Some(d) = stack.pop() {
            let mut kids = self.di.children(d);
            kids.reverse();
            stack.extend(kids);
            if !self.is_func_instance(d) {
                continue;
            }
            let Some(o) = self.di.attr(d, gimli::DW_AT_abstract_origin) else {
                continue;
            };
            if self.di.reference(d, &o) != Some(origin) {
                continue;
            }
            if self.di.tag(d) == gimli::DW_TAG_inlined_subroutine {
                let same_line = self.di.call_line(d) == self.di.decl_line(origin);
                let cf = self.di.udata(d, gimli::DW_AT_call_file);
                let df = self.di.udata(origin, gimli::DW_AT_decl_file);
                if same_line && cf == df {
                    continue;
                }
            }
            out.push(d);
        }
        out
    }

    /// perf's `die_walk_instances()` with `probe_point_inline_cb()`: a
    /// probe at every instance of the abstract function `origin`.
    fn walk_instances(&mut self, origin: DieRef) -> Result<(), FindError> {
        for d in self.instances(origin) {
            let Some(addr) = self.di.die_entrypc(d) else {
                let n = self.di.name(d).unwrap_or_default();
                self.warnings
                    .push(format!("Failed to get entry address of {n}."));
                // perf stops the walk here; the abstract definition may
                // simply have no usable instance.
                return Ok(());
            };
            if addr == 0 {
                return Ok(());
            }
            if self.spec.point.lazy_line.is_some() {
                self.find_lazy(d, false)?;
                continue;
            }
            self.call_probe_finder(d, addr.wrapping_add(self.spec.point.offset))?;
        }
        Ok(())
    }

    /// perf's `die_find_realfunc()`.
    fn find_realfunc(&self, addr: u64) -> Option<DieRef> {
        self.di
            .subprograms(self.cu.unit)
            .iter()
            .copied()
            .find(|&d| self.di.haspc(d, addr))
    }

    /// The first inlined instance holding `addr` below `d`, depth first
    /// (perf's `__die_find_inline_cb` walk).
    fn find_inline_below(&self, d: DieRef, addr: u64) -> Option<DieRef> {
        for c in self.di.children(d) {
            if self.di.tag(c) == gimli::DW_TAG_inlined_subroutine && self.di.haspc(c, addr) {
                return Some(c);
            }
            if let Some(x) = self.find_inline_below(c, addr) {
                return Some(x);
            }
        }
        None
    }

    /// perf's `call_probe_finder()`.
    fn call_probe_finder(&mut self, sc_die: DieRef, addr: u64) -> Result<(), FindError> {
        let sp_die = if self.is_func_def(sc_die) {
            sc_die
        } else {
            match self.find_realfunc(addr) {
                Some(d) => d,
                None => {
                    let tail = self
                        .di
                        .subprograms(self.cu.unit)
                        .iter()
                        .copied()
                        .find(|&d| self.di.highpc(d) == Some(addr));
                    if let Some(t) = tail {
                        let n = self.di.name(t).unwrap_or_default();
                        self.warnings.push(format!("Ignoring tail call from {n}"));
                        return Ok(());
                    }
                    return fail("Failed to find probe point in any functions.");
                }
            }
        };
        let frame_base = translate::frame_base(self.di, sp_die, addr, self.features.perf_quirks)
            .map_err(FindError)?;
        let site = Site {
            addr,
            sp_die,
            frame_base,
        };
        self.add_probe_trace_event(sc_die, &site)
    }

    /// perf's `add_probe_trace_event()`.
    fn add_probe_trace_event(&mut self, sc_die: DieRef, site: &Site) -> Result<(), FindError> {
        if self.events.iter().any(|e| e.address == site.addr) {
            return Ok(());
        }
        if self.events.len() == self.max_probes {
            return fail(format!(
                "Too many( > {}) probe point found.",
                self.max_probes
            ));
        }
        let di = self.di;
        // The trace point, from the real function.
        if !di.haspc(site.sp_die, site.addr) {
            let n = di.name(site.sp_die).unwrap_or_default();
            return fail(format!("Specified offset is out of {n}"));
        }
        let (symbol, eaddr) = match di.entrypc(site.sp_die) {
            Some(e) => (di.name(site.sp_die), e),
            None => match di.symbols.find(site.addr) {
                Some(s) => (Some(s.name.clone()), s.start),
                None => (None, 0),
            },
        };
        let Some(symbol) = symbol else {
            return fail(format!("Failed to find symbol at {:#x}", site.addr));
        };
        let spec = self.spec;
        let pp = &spec.point;
        if pp.retprobe && eaddr != site.addr {
            let f = pp.function.clone().unwrap_or_default();
            return fail(format!(
                "Failed to find \"{f}%return\",\n because {f} is an inlined function and has no return point."
            ));
        }
        let mut ev = TraceEvent {
            retprobe: pp.retprobe,
            symbol,
            offset: site.addr.wrapping_sub(eaddr),
            address: site.addr,
            realname: di.name(sc_die).unwrap_or_default(),
            args: Vec::new(),
            arg_names: Vec::new(),
        };
        for a in self.expand_args(sc_die, site) {
            let name = if a.is_c_var() {
                Some(translate::arg_name(&a))
            } else {
                a.name.clone()
            };
            ev.arg_names.push(name);
            if !a.is_c_var() {
                ev.args.push(Some(TraceArg {
                    name: a.name.clone(),
                    value: a.var.clone(),
                    derefs: Vec::new(),
                    ty: a.ty.clone(),
                }));
                continue;
            }
            match translate::translate_var(di, &a, sc_die, self.cu, site, self.features) {
                Ok(Translated::Arg(t)) => ev.args.push(Some(t)),
                Ok(Translated::Skipped(_)) => ev.args.push(None),
                Err(e) => return Err(FindError(e.0)),
            }
        }
        self.events.push(ev);
        self.sites.push((sc_die, site.clone()));
        Ok(())
    }

    /// perf's `expand_probe_args()`: `$vars` and `$params` become the
    /// variables available at the address.
    fn expand_args(&self, sc_die: DieRef, site: &Site) -> Vec<ArgSpec> {
        let mut out = Vec::new();
        for a in &self.spec.args {
            let vars = a.var == ARG_VARS;
            if !vars && a.var != ARG_PARAMS {
                out.push(a.clone());
                continue;
            }
            self.collect_vars(sc_die, site, vars, &mut out);
        }
        out
    }

    /// Unlike perf, a name already among the arguments is not added again:
    /// an argument is found by its name, so a second one would fetch the
    /// same variable, and kprobe_events refuses a name given twice. perf
    /// lists such a name twice (an inlined function GCC also inlined into
    /// itself, its parameters repeated in the inner instance; a variable
    /// shadowed in a block) and writes a line the kernel refuses, or
    /// crashes. perf's quirks mode (the differential test's) lists it twice.
    fn collect_vars(&self, d: DieRef, site: &Site, vars: bool, out: &mut Vec<ArgSpec>) {
        for c in self.di.children(d) {
            let tag = self.di.tag(c);
            let wanted =
                tag == gimli::DW_TAG_formal_parameter || (vars && tag == gimli::DW_TAG_variable);
            if wanted && translate::locate(self.di, c, site, self.features).is_ok() {
                if let Some(n) = self.di.name(c).filter(|n| {
                    self.features.perf_quirks || !out.iter().any(|o| translate::arg_name(o) == *n)
                }) {
                    out.push(ArgSpec {
                        var: n,
                        ..ArgSpec::default()
                    });
                }
            }
            if self.di.haspc(c, site.addr) {
                self.collect_vars(c, site, vars, out);
            }
        }
    }

    /// perf's `die_walk_lines()` over the CU with
    /// `probe_point_line_walker()`.
    fn find_by_line(&mut self) -> Result<(), FindError> {
        let Some(fname) = self.fname.clone() else {
            return Ok(());
        };
        let lno = self.lno;
        let mut hits: Vec<u64> = Vec::new();
        for l in self.di.lines(self.cu.unit).iter() {
            if l.end_sequence || !l.is_stmt {
                continue;
            }
            if l.line == lno && strtailcmp(&l.file, &fname) {
                hits.push(l.addr);
                self.line_hit(&l.file, lno, l.addr)?;
            }
        }
        // Declaration lines and inlined call sites are not in the table.
        for sp in self.di.subprograms(self.cu.unit).iter().copied() {
            if let (Some(f), Some(l), Some(a)) = (
                self.di.decl_file(sp),
                self.di.decl_line(sp),
                self.di.die_entrypc(sp),
            ) {
                if l == lno && strtailcmp(&f, &fname) {
                    self.line_hit(&f, lno, a)?;
                }
            }
            self.funclines_recursive(sp, &fname, lno)?;
        }
        Ok(())
    }

    fn funclines_recursive(&mut self, d: DieRef, fname: &str, lno: u32) -> Result<(), FindError> {
        for c in self.di.children(d) {
            if self.di.tag(c) == gimli::DW_TAG_inlined_subroutine {
                let cf = self.di.call_file(c);
                let cl = self.di.call_line(c).filter(|&l| l > 0);
                if let (Some(f), Some(l)) = (cf, cl) {
                    if let Some(addr) = self.di.die_entrypc(c) {
                        if l == lno && strtailcmp(&f, fname) {
                            self.line_hit(&f, lno, addr)?;
                        }
                        if let (Some(df), Some(dl)) = (self.di.decl_file(c), self.di.decl_line(c)) {
                            if dl == lno && strtailcmp(&df, fname) {
                                self.line_hit(&df, lno, addr)?;
                            }
                        }
                    }
                }
            }
            self.funclines_recursive(c, fname, lno)?;
        }
        Ok(())
    }

    /// perf's `probe_point_line_walker()` for a line that matched.
    fn line_hit(&mut self, fname: &str, lineno: u32, addr: u64) -> Result<(), FindError> {
        self.verify_representive_line(fname, lineno, addr)?;
        let Some(sc) = self.find_best_scope(addr) else {
            return fail("Failed to find scope of probe point.");
        };
        self.call_probe_finder(sc, addr)
    }

    /// perf's `find_probe_point_lazy()`: the lines of `rt` (a function, an
    /// inlined instance or, with `is_cu`, the whole unit) whose source text
    /// matches the lazy pattern.
    fn find_lazy(&mut self, rt: DieRef, is_cu: bool) -> Result<(), FindError> {
        let Some(pat) = self.spec.point.lazy_line.clone() else {
            return Ok(());
        };
        if self.lazy_lines.is_none() {
            let Some(fname) = self.fname.clone() else {
                return Ok(());
            };
            let text = find_source_path(&fname, self.source_prefix.as_deref())
                .and_then(std::fs::read)
                .map_err(|e| {
                    FindError(format!(
                        "Failed to find source file path.\nFailed to open {fname}: {e}"
                    ))
                })?;
            let set = lazy_match_lines(&String::from_utf8_lossy(&text), &pat);
            if set.is_empty() {
                // perf reads the file again for the next unit.
                return Ok(());
            }
            self.lazy_lines = Some(set);
        }
        let Some(fname) = self.fname.clone() else {
            return Ok(());
        };
        for (file, line, addr) in self.walk_lines(rt, is_cu) {
            let hit = self.lazy_lines.as_ref().is_some_and(|s| s.contains(&line));
            if !hit || !strtailcmp(&file, &fname) {
                continue;
            }
            self.lno = line;
            let Some(sc) = self.find_best_scope(addr) else {
                return fail("Failed to find scope of probe point.");
            };
            self.call_probe_finder(sc, addr)?;
        }
        Ok(())
    }

    /// perf's `line_range_search_cb()` over the functions of `unit`: the
    /// first definition of `func` (declared in the file asked for) gives
    /// the lines, from every instance if it is an inline function.
    ///
    /// perf finds a function's lines in the first unit that defines it
    /// only. It stops at a unit where an inline function has no instance
    /// (`die_walk_instances()` fails, which ends the search:
    /// `native_write_idt_entry`); and it overwrites the range asked for
    /// with the absolute lines of the first definition, to which the next
    /// unit adds its declaration line again, so that a function whose
    /// instances in the first unit have no line is looked for past its
    /// end in the others (`nla_ok`). rkprobe looks in each unit for the
    /// range asked for; with perf's quirks, as perf does (`lr` is
    /// overwritten, and the error ends the search).
    fn line_range_of_function(
        &mut self,
        unit: usize,
        func: &str,
        lr: &mut LineRangeSpec,
    ) -> Result<Option<FoundLines>, FindError> {
        let subprograms = self.di.subprograms(unit);
        for &sp in subprograms.iter() {
            if let Some(file) = &lr.file {
                match self.di.decl_file(sp) {
                    Some(d) if strtailcmp(file, &d) => {}
                    _ => continue,
                }
            }
            if !(self.match_name(sp, func) && self.is_func_def(sp)) {
                continue;
            }
            let Some(fname) = self.di.decl_file(sp) else {
                return Ok(None);
            };
            let offset = self.di.decl_line(sp).unwrap_or(0);
            let start = i64::from(offset).saturating_add(lr.start);
            let end = lr.end.map(|e| i64::from(offset).saturating_add(e));
            let lno_e = end.unwrap_or(i64::from(i32::MAX));
            if self.features.perf_quirks {
                lr.start = start;
                lr.end = end;
            }
            let scopes = if self.is_func_instance(sp) {
                vec![sp]
            } else {
                self.instances(sp)
            };
            if scopes.is_empty() && self.features.perf_quirks {
                return fail("Specified source line is not found.");
            }
            let mut path = None;
            let mut lines = BTreeSet::new();
            for d in scopes {
                if let Some((p, l)) = self.line_range_walk(d, false, &fname, start, lno_e) {
                    path.get_or_insert(p);
                    lines.extend(l);
                }
            }
            // perf stops at the first definition of the name in a CU.
            return Ok(path.map(|path| FoundLines {
                path,
                offset,
                start,
                end,
                lines,
            }));
        }
        Ok(None)
    }

    /// perf's `find_line_range_by_line()` with `line_range_walk_cb()`: the
    /// lines of `rt` in `fname` between `start` and `end` that map back to
    /// themselves, with the file's name as the line table gives it.
    fn line_range_walk(
        &self,
        rt: DieRef,
        is_cu: bool,
        fname: &str,
        start: i64,
        end: i64,
    ) -> Option<(Rc<str>, BTreeSet<u32>)> {
        let mut path = None;
        let mut lines = BTreeSet::new();
        for (file, line, addr) in self.walk_lines(rt, is_cu) {
            if !strtailcmp(&file, fname) || i64::from(line) < start || i64::from(line) > end {
                continue;
            }
            match self.cu_lineinfo(addr) {
                Some(Some((f, l))) if l != line || *f != *file => continue,
                // No statement row at the address (the entry of an inline
                // instance that has only a non-statement row): perf's
                // cu_find_lineinfo() leaves its line and file unset, and
                // line_range_walk_cb() compares whatever an earlier call
                // left in them, so perf leaves the line out unless that
                // happens to be the same line. A probe can be placed
                // there (--definition places it), so rkprobe numbers it;
                // with perf's quirks, it does not.
                None if self.features.perf_quirks => continue,
                _ => {}
            }
            path.get_or_insert(file);
            lines.insert(line);
        }
        path.map(|p| (p, lines))
    }

    /// perf's `die_walk_lines()`: the statement lines (file, line, address)
    /// of a unit, or of a function without the lines of what is inlined into
    /// it, then the declaration lines and inlined call sites.
    fn walk_lines(&self, rt: DieRef, is_cu: bool) -> Vec<(Rc<str>, u32, u64)> {
        let di = self.di;
        let mut out = Vec::new();
        let decl = di.decl_line(rt).unwrap_or(0);
        let decf = if is_cu { None } else { di.decl_file(rt) };
        if !is_cu && decf.is_none() {
            return out;
        }
        for l in di.lines(rt.unit).iter() {
            if l.end_sequence || !l.is_stmt {
                continue;
            }
            if !is_cu {
                if !di.haspc(rt, l.addr) {
                    continue;
                }
                if let Some(inl) = self.deepest_inline(rt, l.addr) {
                    let call_site = di.call_file(inl).is_some_and(|f| Some(&f) == decf.as_ref())
                        && di.call_line(inl) == Some(l.line);
                    if !call_site
                        && (di.decl_line(inl).unwrap_or(0) != decl || di.decl_file(inl) != decf)
                    {
                        continue;
                    }
                }
            }
            out.push((l.file.clone(), l.line, l.addr));
        }
        let funcs: Vec<DieRef> = if is_cu {
            di.subprograms(rt.unit).iter().copied().collect()
        } else {
            vec![rt]
        };
        for f in funcs {
            if let (Some(file), Some(line), Some(addr)) =
                (di.decl_file(f), di.decl_line(f), di.die_entrypc(f))
            {
                out.push((file, line, addr));
            }
            self.funclines(f, is_cu, &mut out);
        }
        out
    }

    /// perf's `__die_walk_funclines_cb()` over the children of `d`: each
    /// inlined instance's call site, and, when `recursive`, its
    /// declaration line and what is inlined in it, both at its entry.
    /// (The declaration line of a function inlined into the function
    /// walked is not the walked function's line.)
    fn funclines(&self, d: DieRef, recursive: bool, out: &mut Vec<(Rc<str>, u32, u64)>) {
        for c in self.di.children(d) {
            if self.di.tag(c) == gimli::DW_TAG_inlined_subroutine {
                let mut addr = None;
                if let (Some(f), Some(l)) = (
                    self.di.call_file(c),
                    self.di.call_line(c).filter(|&l| l > 0),
                ) {
                    if let Some(a) = self.di.die_entrypc(c) {
                        out.push((f, l, a));
                        addr = Some(a);
                    }
                }
                if !recursive {
                    continue;
                }
                if let (Some(a), Some(f), Some(l)) =
                    (addr, self.di.decl_file(c), self.di.decl_line(c))
                {
                    out.push((f, l, a));
                }
            }
            self.funclines(c, recursive, out);
        }
    }

    /// perf's `die_find_inlinefunc()`: the deepest inlined instance below
    /// `d` holding `addr`.
    fn deepest_inline(&self, d: DieRef, addr: u64) -> Option<DieRef> {
        let mut cur = self.find_inline_below(d, addr)?;
        while let Some(next) = self.find_inline_below(cur, addr) {
            cur = next;
        }
        Some(cur)
    }

    /// perf's `cu_find_lineinfo()`.
    fn cu_find_lineinfo(&self, addr: u64) -> Option<(Rc<str>, u32)> {
        self.cu_lineinfo(addr).flatten()
    }

    /// perf's `cu_find_lineinfo()` as it sets its line and file: `None`
    /// when it leaves them unset (no statement row at or just before
    /// `addr`), `Some(None)` when the row has no line or file.
    fn cu_lineinfo(&self, addr: u64) -> Option<Option<(Rc<str>, u32)>> {
        if let Some(f) = self.find_realfunc(addr) {
            if self.di.die_entrypc(f) == Some(addr) {
                let line = self.di.decl_line(f)?;
                let file = self.di.decl_file(f);
                return Some(file.filter(|_| line != 0).map(|f| (f, line)));
            }
        }
        let lines = self.di.lines(self.cu.unit);
        // perf's cu_getsrc_die(): the last row at or before addr, back to
        // the first row at its address, then forward to a statement. Its
        // step back needs a row before that one: from the table's first
        // row it finds nothing.
        let upper = lines.partition_point(|l| l.addr <= addr);
        let mut i = upper.checked_sub(1)?;
        if lines.get(i)?.addr == addr {
            while i > 0 && lines.get(i - 1)?.addr == addr {
                i -= 1;
            }
        }
        if i == 0 {
            return None;
        }
        loop {
            let l = lines.get(i)?;
            if l.addr > addr {
                return None;
            }
            if l.is_stmt {
                return Some((l.line != 0 && !l.file.is_empty()).then(|| (l.file.clone(), l.line)));
            }
            i += 1;
        }
    }

    /// perf's `verify_representive_line()`.
    fn verify_representive_line(
        &mut self,
        fname: &str,
        lineno: u32,
        addr: u64,
    ) -> Result<(), FindError> {
        let Some((f, l)) = self.cu_find_lineinfo(addr) else {
            return Ok(());
        };
        if *f != *fname || l == lineno {
            return Ok(());
        }
        let mut place = format!("{f}:{l}");
        if let Some(func) = self.spec.point.function.clone() {
            if let Some(sc) = self.find_best_scope(addr) {
                if self.match_name(sc, &func) {
                    if let (Some(n), Some(dl)) = (self.di.name(sc), self.di.decl_line(sc)) {
                        place = format!("{n}:{}", i64::from(l) - i64::from(dl));
                    }
                }
            }
        }
        fail(format!(
            "This line is sharing the address with other lines.\nPlease try to probe at {place} instead."
        ))
    }

    /// perf's `find_best_scope()`: among the real function and the inlined
    /// instances holding `addr`, the one named like the probe's function,
    /// or (by line) the one declared nearest before the line.
    fn find_best_scope(&self, addr: u64) -> Option<DieRef> {
        let first = self.find_realfunc(addr)?;
        let mut chain = vec![first];
        let mut cur = first;
        while let Some(next) = self.find_inline_below(cur, addr) {
            chain.push(next);
            cur = next;
        }
        let mut best = None;
        let mut diff = u32::MAX;
        for &d in &chain {
            if let Some(f) = &self.fname {
                if self.di.decl_file(d).as_deref() != Some(&**f) {
                    continue;
                }
            }
            if let Some(func) = &self.spec.point.function {
                if self.match_name(d, func) {
                    return Some(d);
                }
            } else {
                let l = self.di.decl_line(d).unwrap_or(0);
                if l < self.lno && diff > self.lno - l {
                    diff = self.lno - l;
                    best = Some(d);
                }
            }
        }
        best.or(Some(first))
    }
}

/// perf's `fill_empty_trace_arg()`: an argument missing at some addresses
/// takes the placeholder there, with the type it has elsewhere; missing
/// everywhere is an error. As in perf, the check goes by the position of
/// each argument as written, so `$params` that expands to nothing anywhere
/// is an error too.
pub fn fill_empty_args(spec: &ProbeSpec, events: &mut [TraceEvent]) -> Result<(), FindError> {
    if events.is_empty() {
        return Ok(());
    }
    for (i, a) in spec.args.iter().enumerate() {
        let ty = events
            .iter()
            .find_map(|e| e.args.get(i).and_then(|a| a.as_ref()))
            .map(|a| a.ty.clone());
        let Some(ty) = ty else {
            return fail(translate::not_found_message(&a.var));
        };
        for e in events.iter_mut() {
            let name = e.arg_names.get(i).cloned().flatten();
            if let Some(slot @ None) = e.args.get_mut(i) {
                *slot = Some(translate::placeholder(name, ty.clone()));
            }
        }
    }
    Ok(())
}

/// The probes of a specification from the symbol table, perf's
/// `find_probe_trace_events_from_map()`: a return probe (perf resolves
/// `%return` without DWARF), or a function and offset whose search in
/// DWARF failed (a weak definition the linker did not take, shorter than
/// the offset: "Specified offset is out of"). As perf does, a kernel
/// image's entry probe is written as an offset from `_text`; a return
/// probe keeps its symbol (perf writes `_text` there too only where the
/// tracing README offers offsets for kretprobes), and a module's probes
/// too.
pub fn find_from_symbols(
    di: &Debuginfo<'_>,
    s: &ProbeSpec,
    max_probes: usize,
) -> Result<Vec<TraceEvent>, FindError> {
    let Some(func) = &s.point.function else {
        return fail("A return probe needs a function.");
    };
    let mut out: Vec<TraceEvent> = Vec::new();
    let mut starts = Vec::new();
    for sym in di.symbols.with_aliases() {
        let norm = sym.name.split('@').next().unwrap_or("");
        if !glob_match(norm, func) {
            continue;
        }
        if starts.contains(&sym.start) {
            continue;
        }
        starts.push(sym.start);
        if out.len() >= max_probes {
            return fail("Too many functions matched in kernel");
        }
        if s.point.offset > sym.end.saturating_sub(sym.start) {
            return fail(format!(
                "Offset {} is bigger than the size of {}",
                s.point.offset, sym.name
            ));
        }
        let address = sym.start.wrapping_add(s.point.offset);
        let (symbol, offset) = match di.text_base {
            Some((base, at)) if !s.point.retprobe => (base.to_string(), address.wrapping_sub(at)),
            _ => (sym.name.clone(), s.point.offset),
        };
        out.push(TraceEvent {
            retprobe: s.point.retprobe,
            symbol,
            offset,
            address,
            realname: sym.name.clone(),
            args: s
                .args
                .iter()
                .map(|a| {
                    Some(TraceArg {
                        name: a.name.clone(),
                        value: a.var.clone(),
                        derefs: Vec::new(),
                        ty: a.ty.clone(),
                    })
                })
                .collect(),
            arg_names: s.args.iter().map(|a| a.name.clone()).collect(),
        });
    }
    if out.is_empty() {
        return fail(format!("Failed to find symbol {func} in kernel"));
    }
    Ok(out)
}

/// Finds every probe of a specification, as perf's
/// `convert_to_probe_trace_events()` does for a kernel image: return probes
/// from the symbol table, the rest from DWARF; then the addresses become
/// offsets from the ELF symbols around them (`.constprop`, `.isra` copies
/// included).
pub fn find_probes(
    di: &Debuginfo<'_>,
    s: &ProbeSpec,
    opts: &Options,
) -> Result<(Vec<TraceEvent>, Vec<String>), FindError> {
    let (features, max_probes) = (opts.features, opts.max_probes);
    if s.point.retprobe {
        return Ok((find_from_symbols(di, s, max_probes)?, Vec::new()));
    }
    let mut f = Finder::new(di, s, features).options(opts);
    let r = f.find();
    let mut events = std::mem::take(&mut f.events);
    let warnings = std::mem::take(&mut f.warnings);
    if r.is_ok() && events.is_empty() && s.point.lazy_line.is_some() && features.perf_quirks {
        // perf's get_alternative_probe_event(): when nothing is found it
        // retries at the function's symbol turned back into a source
        // point, which drops the lazy pattern, and so probes the entry of
        // a function none of whose lines matched.
        let mut alt = s.clone();
        alt.point.lazy_line = None;
        if alt.point.function.is_some() {
            return find_probes(di, &alt, opts);
        }
    }
    if let Err(e) = r {
        if spec::needs_dwarf(s) {
            return Err(e);
        }
        return Ok((find_from_symbols(di, s, max_probes)?, warnings));
    }
    if features.immediates && !s.args.is_empty() {
        fill_empty_args(s, &mut events)?;
    }
    if events.is_empty() {
        return fail(format!(
            "Probe point '{}' not found.",
            crate::spec::synthesize_point(&s.point)
        ));
    }
    for e in &mut events {
        if let Some(sym) = di.symbols.find(e.address) {
            if sym.name != e.symbol {
                e.symbol = sym.name.clone();
            }
            e.offset = e.address - sym.start;
        }
    }
    Ok((events, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("vfs_read", "vfs_*"));
        assert!(glob_match("vfs_read", "vfs_rea?"));
        assert!(glob_match("vfs_read", "vfs_[a-r]ead"));
        assert!(!glob_match("vfs_read", "vfs_[!r]ead"));
        assert!(!glob_match("vfs_read", "vfs_write"));
        assert!(glob_match("a*b", "a\\*b"));
        assert!(is_glob("vfs_*"));
        assert!(!is_glob("vfs_read"));
    }

    #[test]
    fn lazy_patterns() {
        assert!(lazy_match(
            "\tret = rw_verify_area(READ, file, pos, count);",
            "ret=rw_verify*"
        ));
        assert!(lazy_match("\tif (count > MAX_RW_COUNT)", "if(count>*"));
        assert!(!lazy_match(
            "\tret = rw_verify_area(READ, file, pos, count);",
            "rw_verify*"
        ));
        assert!(lazy_match("  a = b;", "a=*"));
        assert!(lazy_match("a == b", "a=*"));
        let text = "int a;\n  a = 1;\n\tb = 2;\n a=3;\n";
        let got: Vec<u32> = lazy_match_lines(text, "a =*").into_iter().collect();
        assert_eq!(got, vec![2, 4]);
    }

    #[test]
    fn tails() {
        assert!(strtailcmp("/src/linux/fs/read_write.c", "fs/read_write.c"));
        assert!(strtailcmp("read_write.c", "/src/linux/fs/read_write.c"));
        assert!(!strtailcmp("/src/linux/fs/read_write.c", "mm/read_write.c"));
    }
}
