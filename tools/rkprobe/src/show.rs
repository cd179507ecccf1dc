// SPDX-License-Identifier: GPL-2.0

//! What `--list`, `--line`, `--vars` and `--funcs` print, in perf probe's
//! formats: events of a control file back as source places, the probeable
//! lines of a function or a file, the variables available at a probe
//! point, the functions of the kernel. Each is a record first, printed as
//! perf's text or as `--json`.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::control::Defined;
use crate::debuginfo::{Debuginfo, DieRef};
use crate::fetcharg::Features;
use crate::finder::{self, Finder};
use crate::json::Value;
use crate::spec::{self, ArgSpec, ARG_VARS};
use crate::strfilter::Filter;
use crate::translate::{self, Site};

/// perf's `die_get_typename()`: the C name of a variable's type
/// (`struct file*`, `size_t`, `char[]`), qualifiers dropped.
pub fn type_name(di: &Debuginfo<'_>, var: DieRef) -> Option<String> {
    let mut t = di.attr_die(var, gimli::DW_AT_type)?;
    // perf's __die_get_real_type(): qualifiers are skipped, typedefs kept.
    for _ in 0..16 {
        let tag = di.tag(t);
        if tag == gimli::DW_TAG_const_type
            || tag == gimli::DW_TAG_volatile_type
            || tag == gimli::DW_TAG_restrict_type
            || tag == gimli::DW_TAG_shared_type
        {
            t = di.attr_die(t, gimli::DW_AT_type)?;
        } else {
            break;
        }
    }
    let tag = di.tag(t);
    let suffix = if tag == gimli::DW_TAG_pointer_type {
        "*"
    } else if tag == gimli::DW_TAG_array_type {
        "[]"
    } else if tag == gimli::DW_TAG_subroutine_type {
        return Some("(function_type)".into());
    } else {
        let name = di.name(t);
        let prefix = if tag == gimli::DW_TAG_union_type {
            "union "
        } else if tag == gimli::DW_TAG_structure_type {
            "struct "
        } else if tag == gimli::DW_TAG_enumeration_type {
            "enum "
        } else {
            return name;
        };
        return Some(format!("{prefix}{}", name.unwrap_or_default()));
    };
    match type_name(di, t) {
        Some(inner) => Some(format!("{inner}{suffix}")),
        None if tag == gimli::DW_TAG_pointer_type
            && di.attr_die(t, gimli::DW_AT_type).is_none() =>
        {
            Some("void*".into())
        }
        None => None,
    }
}

/// perf's `synthesize_perf_probe_point()` file part: paths longer than 30
/// characters are cut after a slash within their last 30.
fn short_file(f: &str) -> &str {
    if f.len() <= 30 {
        return f;
    }
    let tail = f.get(f.len() - 30..).unwrap_or(f);
    match tail.find('/') {
        Some(i) => tail.get(i + 1..).unwrap_or(tail),
        None => tail,
    }
}

/// The unit whose code holds `addr`.
fn unit_of(di: &Debuginfo<'_>, addr: u64) -> Option<usize> {
    (0..di.unit_count()).find(|&u| di.cu_die(u).is_some_and(|cu| di.haspc(cu, addr)))
}

/// The outermost inlined instance directly below `d` holding `addr`.
fn top_inline(di: &Debuginfo<'_>, d: DieRef, addr: u64) -> Option<DieRef> {
    for c in di.children(d) {
        if di.tag(c) == gimli::DW_TAG_inlined_subroutine && di.haspc(c, addr) {
            return Some(c);
        }
        if di.tag(c) == gimli::DW_TAG_lexical_block && di.haspc(c, addr) {
            if let Some(x) = top_inline(di, c, addr) {
                return Some(x);
            }
        }
    }
    None
}

/// The line of `addr` in its unit's table (perf's `cu_find_lineinfo()`,
/// without its function-entry case).
fn line_of(di: &Debuginfo<'_>, unit: usize, addr: u64) -> Option<(String, u32)> {
    let lines = di.lines(unit);
    let upper = lines.partition_point(|l| l.addr <= addr);
    let mut i = upper.checked_sub(1)?;
    while i > 0
        && lines
            .get(i - 1)
            .is_some_and(|l| l.addr == lines.get(i).map_or(0, |x| x.addr))
    {
        i -= 1;
    }
    while let Some(l) = lines.get(i) {
        if l.addr > addr {
            return None;
        }
        if l.is_stmt && !l.end_sequence {
            return (l.line != 0).then(|| (l.file.to_string(), l.line));
        }
        i += 1;
    }
    None
}

/// perf's `find_perf_probe_point()` and `synthesize_perf_probe_point()`:
/// the source place of an address, `FUNC:RELLINE@FILE`, `FUNC@FILE` at an
/// entry or `FUNC+OFFS@FILE`; `None` without debuginfo for it.
pub fn place_of(di: &Debuginfo<'_>, addr: u64, retprobe: bool) -> Option<String> {
    let unit = unit_of(di, addr)?;
    let mut lineinfo = line_of(di, unit, addr);
    let mut sp = di
        .subprograms(unit)
        .iter()
        .copied()
        .find(|&d| di.haspc(d, addr))?;
    let base_func = di.name(sp)?;
    let mut func = base_func.clone();
    let base_addr = di.entrypc(sp)?;
    let mut baseline = di.decl_line(sp)?;
    let mut fname = di.decl_file(sp).map(|f| f.to_string());
    let mut lineno = if addr == base_addr {
        Some(baseline)
    } else {
        if let Some((f, l)) = lineinfo.take() {
            fname = Some(f);
            lineno_from(l)
        } else {
            None
        }
    };
    if addr != base_addr {
        while let Some(ind) = top_inline(di, sp, addr) {
            if di.entrypc(ind) == Some(addr) {
                lineno = di.call_line(ind);
                fname = di.call_file(ind).map(|f| f.to_string());
                break;
            }
            let (Some(n), Some(dl)) = (di.name(ind), di.decl_line(ind)) else {
                break;
            };
            func = n;
            baseline = dl;
            sp = ind;
        }
        let decl = di.decl_file(sp).map(|f| f.to_string());
        if decl.is_none() || (fname.is_some() && decl != fname) {
            lineno = None;
        }
    }
    let mut s = String::new();
    match lineno {
        Some(l) => {
            s.push_str(&func);
            let rel = i64::from(l) - i64::from(baseline);
            if retprobe {
                s.push_str("%return");
            } else if rel != 0 {
                let _ = write!(s, ":{rel}");
            }
        }
        None => {
            s.push_str(&base_func);
            let off = addr.wrapping_sub(base_addr);
            if off != 0 {
                let _ = write!(s, "+{off}");
            } else if retprobe {
                s.push_str("%return");
            }
        }
    }
    if let Some(f) = fname {
        let _ = write!(s, "@{}", short_file(&f));
    }
    Some(s)
}

fn lineno_from(l: u32) -> Option<u32> {
    (l != 0).then_some(l)
}

/// An event of a control file as `--list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The event as the control file has it.
    pub def: Defined,
    /// The symbol of its probe point, without the module (`None` for an
    /// address).
    pub symbol: Option<String>,
    /// The offset from the symbol.
    pub offset: Option<u64>,
    /// The module of a `MODULE:symbol` probe point.
    pub module: Option<String>,
    /// Its source place from the debuginfo (`FUNC:LINE@FILE`), when the
    /// debuginfo has it.
    pub place: Option<String>,
}

impl Listed {
    /// The probe point perf shows without debuginfo: `SYMBOL+OFFSET`,
    /// `SYMBOL` at an entry, `SYMBOL%return`, or the address.
    fn raw_place(&self) -> String {
        match (&self.symbol, self.offset) {
            (Some(s), Some(0)) if self.def.retprobe => format!("{s}%return"),
            (Some(s), Some(0)) => s.clone(),
            (Some(s), Some(o)) => format!("{s}+{o}"),
            _ => self.def.point.clone(),
        }
    }

    /// The argument names (perf shows a named fetcharg by its name, an
    /// unnamed one as it is).
    fn arg_names(&self) -> Vec<&str> {
        self.def
            .args
            .iter()
            .map(|a| a.split_once('=').map_or(a.as_str(), |(n, _)| n))
            .collect()
    }

    /// perf's line: `  GROUP:EVENT          (on PLACE[ in MODULE][ with ARGS])`.
    pub fn text(&self) -> String {
        let mut out = format!(
            "  {:<20} (on {}",
            self.def.full_name(),
            self.place.clone().unwrap_or_else(|| self.raw_place())
        );
        if let Some(m) = &self.module {
            let _ = write!(out, " in {m}");
        }
        let args = self.arg_names();
        if !args.is_empty() {
            let _ = write!(out, " with {}", args.join(" "));
        }
        out.push(')');
        out
    }

    /// The `--list --json` record.
    pub fn json(&self) -> Value {
        let args = self
            .def
            .args
            .iter()
            .map(|a| {
                let (name, fetch) = match a.split_once('=') {
                    Some((n, f)) => (Some(n), f),
                    None => (None, a.as_str()),
                };
                Value::Object(vec![("name", name.into()), ("fetch", fetch.into())])
            })
            .collect();
        Value::Object(vec![
            ("group", self.def.group.as_str().into()),
            ("event", self.def.event.as_str().into()),
            ("retprobe", self.def.retprobe.into()),
            ("point", self.def.point.as_str().into()),
            ("symbol", self.symbol.clone().into()),
            ("offset", self.offset.into()),
            ("module", self.module.clone().into()),
            ("place", self.place.clone().into()),
            ("args", Value::Array(args)),
            ("command", self.def.line.as_str().into()),
        ])
    }
}

/// `--list`: the events that pass `filter` (by `EVENT` or `GROUP:EVENT`),
/// each mapped back to its source place through `di` when given (perf's
/// `FUNC:RELLINE@FILE`, `FUNC@FILE` at an entry, `FUNC%return@FILE`):
/// a module's probe (`MODULE:symbol`) through a module's debuginfo, the
/// kernel's through the kernel's.
pub fn list(di: Option<&Debuginfo<'_>>, events: &[Defined], filter: &Filter) -> Vec<Listed> {
    let mut out = Vec::new();
    for def in events.iter().filter(|d| d.passes(filter)) {
        let (module, at) = match def.point.split_once(':') {
            Some((m, s)) => (Some(m.to_string()), s),
            None => (None, def.point.as_str()),
        };
        let (symbol, offset) =
            if at.starts_with("0x") || at.starts_with(|c: char| c.is_ascii_digit()) {
                (None, None)
            } else {
                match at.split_once('+') {
                    Some((s, o)) => (Some(s.to_string()), parse_off(o)),
                    None => (Some(at.to_string()), Some(0)),
                }
            };
        let place = di.and_then(|di| {
            if module.as_deref() != di.module {
                return None;
            }
            let sym = symbol.as_deref()?;
            let start = match di.text_base {
                Some((base, at)) if base == sym => at,
                _ => {
                    di.symbols
                        .with_aliases()
                        .iter()
                        .find(|s| s.name == sym)?
                        .start
                }
            };
            place_of(di, start.wrapping_add(offset?), def.retprobe)
        });
        out.push(Listed {
            def: def.clone(),
            symbol,
            offset,
            module,
            place,
        });
    }
    out
}

fn parse_off(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// What `--vars` lists besides the variables available at the address.
#[derive(Clone, Debug)]
pub struct VarsOptions {
    /// `--range`: also the variables in scope without a location at the
    /// address, each with the addresses where it has one.
    pub range: bool,
    /// `--externs`: also the compilation unit's global variables.
    pub externs: bool,
    /// Only the names that pass (`--filter`; perf's default leaves out
    /// `__k???tab_*` and `__crc_*`).
    pub filter: Filter,
}

/// How a variable is available at a probe address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum VarKind {
    /// A global variable of the unit (`--externs`): perf's `[EXT]`.
    External,
    /// In scope, but with no location here (`--range` only): `[INV]`.
    Invalid,
    /// It has a location here: `[VAL]`.
    Valid,
}

impl VarKind {
    fn tag(self) -> &'static str {
        match self {
            VarKind::External => "[EXT]",
            VarKind::Invalid => "[INV]",
            VarKind::Valid => "[VAL]",
        }
    }

    fn json(self) -> &'static str {
        match self {
            VarKind::External => "external",
            VarKind::Invalid => "invalid",
            VarKind::Valid => "valid",
        }
    }
}

/// Where a variable has a location: byte ranges from the entry of the
/// function the probe is in (perf's `@<FUNC+[A-B,C-D]>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarRange {
    /// The function.
    pub function: String,
    /// `[start, end)` offsets.
    pub spans: Vec<(u64, u64)>,
}

/// A variable `--vars` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvailableVar {
    /// Its C type (perf's `die_get_typename()`), `(unknown_type)` if none.
    pub type_name: String,
    /// Its name.
    pub name: String,
    /// How it is available.
    pub kind: VarKind,
    /// With `--range`, where it has a location (not for globals).
    pub range: Option<VarRange>,
}

impl AvailableVar {
    /// perf's line (without its leading tabs).
    fn text(&self, range: bool) -> String {
        let mut s = String::new();
        if range {
            let _ = write!(s, "{}\t", self.kind.tag());
        }
        let _ = write!(s, "{}\t{}", self.type_name, self.name);
        if let Some(r) = &self.range {
            let spans: Vec<String> = r.spans.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            let _ = write!(s, "\t@<{}+[{}]>", r.function, spans.join(","));
        }
        s
    }
}

/// The variables at one probe address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarsAt {
    /// The function symbol the address is in.
    pub symbol: String,
    /// The offset from it.
    pub offset: u64,
    /// The variables, in perf's order (sorted by their line).
    pub vars: Vec<AvailableVar>,
}

/// What `--vars POINT` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vars {
    /// The probe point, as perf writes it back.
    pub point: String,
    /// Each address of the point.
    pub at: Vec<VarsAt>,
    /// Shown with `--range`.
    range: bool,
}

impl Vars {
    /// perf's text.
    pub fn text(&self) -> String {
        let mut out = format!("Available variables at {}\n", self.point);
        for a in &self.at {
            let _ = writeln!(out, "\t@<{}+{}>", a.symbol, a.offset);
            if a.vars.is_empty() {
                out.push_str("\t\t(No matched variables)\n");
            }
            for v in &a.vars {
                let _ = writeln!(out, "\t\t{}", v.text(self.range));
            }
        }
        out
    }

    /// The `--vars --json` record.
    pub fn json(&self) -> Value {
        let at = self
            .at
            .iter()
            .map(|a| {
                let vars = a
                    .vars
                    .iter()
                    .map(|v| {
                        let range = v.range.as_ref().map_or(Value::Null, |r| {
                            Value::Object(vec![
                                ("function", r.function.as_str().into()),
                                (
                                    "offsets",
                                    Value::Array(
                                        r.spans.iter().map(|&(b, e)| vec![b, e].into()).collect(),
                                    ),
                                ),
                            ])
                        });
                        Value::Object(vec![
                            ("name", v.name.as_str().into()),
                            ("type", v.type_name.as_str().into()),
                            ("kind", v.kind.json().into()),
                            ("range", range),
                        ])
                    })
                    .collect();
                Value::Object(vec![
                    ("symbol", a.symbol.as_str().into()),
                    ("offset", a.offset.into()),
                    ("variables", Value::Array(vars)),
                ])
            })
            .collect();
        Value::Object(vec![
            ("point", self.point.as_str().into()),
            ("locations", Value::Array(at)),
        ])
    }
}

/// perf's `die_get_var_range()`: where `var` (a child of `parent`) has a
/// location, from the entry of the function `sp`: its location list's
/// ranges, or for a single location the ranges of the scope it is
/// declared in.
fn var_range(di: &Debuginfo<'_>, sp: DieRef, parent: DieRef, var: DieRef) -> Option<VarRange> {
    let entry = di.die_entrypc(sp)?;
    let function = di.name(sp)?;
    let entries = di.location_entries(var, gimli::DW_AT_location);
    let spans: Vec<(u64, u64)> = match entries.first() {
        None => return None,
        Some(&(0, _, _)) => di
            .ranges(parent)
            .into_iter()
            .map(|(b, e)| (b.wrapping_sub(entry), e.wrapping_sub(entry)))
            .collect(),
        Some(_) => entries
            .iter()
            .map(|(b, e, _)| (b.wrapping_sub(entry), e.wrapping_sub(entry)))
            .collect(),
    };
    Some(VarRange { function, spans })
}

/// Whether `var` gets a location somewhere after `addr` in `sp` (perf's
/// `[INV]`: in scope, not yet or no longer located).
fn located_later(di: &Debuginfo<'_>, sp: DieRef, var: DieRef, addr: u64) -> bool {
    let Some(high) = di.highpc(sp) else {
        return false;
    };
    di.location_entries(var, gimli::DW_AT_location)
        .iter()
        .any(|&(b, e, _)| {
            let from = b.max(addr.saturating_add(1));
            from < e && from <= high
        })
}

/// perf's `collect_variables_cb()` walk: the parameters and variables of
/// `scope` and of the blocks and inlined scopes in it that hold the
/// address (`recurse`), or of the unit alone (globals).
fn collect_vars(
    di: &Debuginfo<'_>,
    scope: DieRef,
    site: &Site,
    opts: &VarsOptions,
    features: Features,
    recurse: bool,
    out: &mut Vec<AvailableVar>,
) {
    for c in di.children(scope) {
        let tag = di.tag(c);
        if tag == gimli::DW_TAG_formal_parameter || tag == gimli::DW_TAG_variable {
            let kind = match translate::locate(di, c, site, features) {
                Ok(_) if !recurse => Some(VarKind::External),
                Ok(_) => Some(VarKind::Valid),
                Err(translate::LocError::NotHere)
                    if opts.range
                        && recurse
                        && tag == gimli::DW_TAG_variable
                        && located_later(di, site.sp_die, c, site.addr) =>
                {
                    Some(VarKind::Invalid)
                }
                Err(_) => None,
            };
            if let (Some(kind), Some(name)) = (kind, di.name(c)) {
                if opts.filter.matches(&name) {
                    out.push(AvailableVar {
                        type_name: type_name(di, c).unwrap_or_else(|| "(unknown_type)".into()),
                        name,
                        kind,
                        range: (opts.range && recurse)
                            .then(|| var_range(di, site.sp_die, scope, c))
                            .flatten(),
                    });
                }
            }
        }
        if recurse && di.haspc(c, site.addr) {
            collect_vars(di, c, site, opts, features, recurse, out);
        }
    }
}

/// `--vars POINT`: the variables (and parameters) available at each probe
/// address of a point, with their types, as perf finds them; with
/// `--range` those in scope without a location too, and where each has
/// one; with `--externs` the unit's globals.
pub fn vars(
    di: &Debuginfo<'_>,
    point: &str,
    opts: &finder::Options,
    vopts: &VarsOptions,
) -> Result<Vars, String> {
    let mut s = spec::parse(point).map_err(|e| format!("Semantic error :{e}"))?;
    if !s.args.is_empty() {
        return Err("  Error: '--vars' doesn't accept arguments.".into());
    }
    let where_ = crate::spec::synthesize_point(&s.point);
    s.args = vec![ArgSpec {
        var: ARG_VARS.into(),
        ..ArgSpec::default()
    }];
    let mut f = Finder::new(di, &s, opts.features).options(opts);
    f.find().map_err(|e| e.0)?;
    if f.sites.is_empty() {
        return Err(format!("Failed to find the address of {where_}"));
    }
    let mut at = Vec::new();
    for ((sc_die, site), ev) in f.sites.iter().zip(&f.events) {
        // perf names the place by the function's DWARF name and the offset
        // from its entry (`finish_task_switch+266`), not by the ELF symbol
        // (`finish_task_switch.isra.0`) a probe is written against.
        let (symbol, offset) = (ev.symbol.clone(), ev.offset);
        let mut vars = Vec::new();
        collect_vars(di, *sc_die, site, vopts, opts.features, true, &mut vars);
        if vopts.externs {
            if let Some(cu) = di.cu_die(site.sp_die.unit) {
                collect_vars(di, cu, site, vopts, opts.features, false, &mut vars);
            }
        }
        // perf keeps the lines in a sorted list of strings, each once.
        let mut keyed: Vec<(String, AvailableVar)> =
            vars.into_iter().map(|v| (v.text(vopts.range), v)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        at.push(VarsAt {
            symbol,
            offset,
            vars: keyed.into_iter().map(|(_, v)| v).collect(),
        });
    }
    Ok(Vars {
        point: where_,
        at,
        range: vopts.range,
    })
}

/// One line `--line` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    /// Its number in the file.
    pub line: u32,
    /// Whether it can be probed (perf numbers only those).
    pub probeable: bool,
    /// Its text, without the line end.
    pub text: String,
}

/// What `--line` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lines {
    /// The function asked for (as given: it may be a glob).
    pub function: Option<String>,
    /// The source file read.
    pub path: String,
    /// The function's declaration line, which numbers are relative to; 0
    /// for a file.
    pub offset: u32,
    /// The first line shown.
    pub start: i64,
    /// The lines.
    pub lines: Vec<SourceLine>,
}

impl Lines {
    /// perf's text: a header, then the lines, the probeable ones numbered.
    pub fn text(&self) -> String {
        let mut out = match &self.function {
            Some(f) => format!(
                "<{f}@{}:{}>\n",
                self.path,
                self.start - i64::from(self.offset)
            ),
            None => format!("<{}:{}>\n", self.path, self.start),
        };
        for l in &self.lines {
            if l.probeable {
                let n = i64::from(l.line) - i64::from(self.offset);
                let _ = writeln!(out, "{n:>7}  {}", l.text);
            } else {
                let _ = writeln!(out, "         {}", l.text);
            }
        }
        out
    }

    /// The `--line --json` record.
    pub fn json(&self) -> Value {
        let lines = self
            .lines
            .iter()
            .map(|l| {
                Value::Object(vec![
                    ("line", l.line.into()),
                    (
                        "number",
                        (i64::from(l.line) - i64::from(self.offset)).into(),
                    ),
                    ("probeable", l.probeable.into()),
                    ("text", l.text.as_str().into()),
                ])
            })
            .collect();
        Value::Object(vec![
            ("function", self.function.clone().into()),
            ("file", self.path.as_str().into()),
            ("offset", self.offset.into()),
            ("start", self.start.into()),
            ("lines", Value::Array(lines)),
        ])
    }
}

/// perf's `NR_ADDITIONAL_LINES`: how far past the last probeable line an
/// open range is shown (the lines after it, this many more).
const ADDITIONAL_LINES: i64 = 2;

/// `--line FUNC[@SRC][:START[+NUM|-END]]` or `SRC[:START[+NUM|-END]]`:
/// the source with the lines that can be probed, as perf's
/// `show_line_range()` shows them; the file read under
/// `opts.source_prefix` when given (`--source`).
pub fn line_range(di: &Debuginfo<'_>, desc: &str, opts: &finder::Options) -> Result<Lines, String> {
    let lr = finder::parse_line_range(desc)?;
    let found = finder::find_line_range(di, &lr, opts.features)
        .map_err(|e| e.0)?
        .ok_or("Specified source line is not found.")?;
    let path =
        finder::find_source_path(&found.path, opts.source_prefix.as_deref()).map_err(|e| {
            format!(
                "Failed to find source file path.\nFailed to open {}: {e}",
                found.path
            )
        })?;
    let bytes =
        std::fs::read(&path).map_err(|e| format!("Failed to open {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let file: Vec<&str> = text.lines().collect();
    let get = |l: i64| {
        usize::try_from(l - 1)
            .ok()
            .and_then(|i| file.get(i))
            .map(|t| t.to_string())
    };
    let mut lines = Vec::new();
    let mut l = found.start.max(1);
    for &p in &found.lines {
        let p = i64::from(p);
        while l < p {
            let text = get(l).ok_or("Source file is shorter than expected.")?;
            lines.push(SourceLine {
                line: u32::try_from(l).unwrap_or(0),
                probeable: false,
                text,
            });
            l += 1;
        }
        let text = get(l).ok_or("Source file is shorter than expected.")?;
        lines.push(SourceLine {
            line: u32::try_from(l).unwrap_or(0),
            probeable: true,
            text,
        });
        l += 1;
    }
    let end = found.end.unwrap_or(l + ADDITIONAL_LINES);
    while l <= end {
        let Some(text) = get(l) else { break };
        lines.push(SourceLine {
            line: u32::try_from(l).unwrap_or(0),
            probeable: false,
            text,
        });
        l += 1;
    }
    Ok(Lines {
        function: lr.function,
        path: path.display().to_string(),
        offset: found.offset,
        start: found.start,
        lines,
    })
}

/// perf's default filter of `--funcs`.
pub const FUNCS_DEFAULT_FILTER: &str = "!_* & !*@plt";

/// The filter of `--funcs`: the filters given to it (`given`) and those
/// of `--filter` OR'ed, as perf ORs them; `--filter`'s alone when it has
/// none of its own (perf ORs them with its default, which lets nearly
/// everything through); perf's default without either. perf's message
/// for a filter that does not parse.
pub fn funcs_filter(given: &[String], filter: &[String]) -> Result<Filter, String> {
    Ok(
        match (Filter::parse_all(given)?, Filter::parse_all(filter)?) {
            (Some(f), Some(g)) => f.or(g),
            (Some(f), None) | (None, Some(f)) => f,
            (None, None) => Filter::parse(FUNCS_DEFAULT_FILTER).unwrap_or_else(|_| Filter::any()),
        },
    )
}

/// `--funcs`: the names that pass `filter`, sorted, each once.
pub fn funcs<'n>(names: impl IntoIterator<Item = &'n str>, filter: &Filter) -> Vec<String> {
    let set: BTreeSet<&str> = names.into_iter().filter(|n| filter.matches(n)).collect();
    set.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_files() {
        assert_eq!(short_file("fs/read_write.c"), "fs/read_write.c");
        assert_eq!(
            short_file("/root/.cache/rkprobes/src/linux-source-6.12/fs/read_write.c"),
            "fs/read_write.c"
        );
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_off("0x1f"), Some(31));
        assert_eq!(parse_off("12"), Some(12));
        assert_eq!(parse_off("zz"), None);
    }
}
