// SPDX-License-Identifier: GPL-2.0

//! What `--list`, `--line`, `--vars` and `--funcs` print, in perf probe's
//! formats: events of a control file back as source places, the probeable
//! lines of a function, the variables available at a probe point, the
//! functions of the kernel.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::debuginfo::{Debuginfo, DieRef};
use crate::fetcharg::Features;
use crate::finder::{self, glob_match, Finder};
use crate::spec::{self, ArgSpec, ARG_VARS};
use crate::translate;

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

/// `--list`: each event of a control file's text as perf lists it,
/// `  GROUP:EVENT  (on PLACE with ARGS)`, filtered by `glob` on
/// `GROUP:EVENT` or `EVENT`.
pub fn list(di: &Debuginfo<'_>, control: &str, glob: Option<&str>) -> String {
    let mut out = String::new();
    for line in control.lines() {
        let mut words = line.split_ascii_whitespace();
        let (Some(head), Some(point)) = (words.next(), words.next()) else {
            continue;
        };
        let Some((kind, ge)) = head.split_once(':') else {
            continue;
        };
        let retprobe = kind.starts_with('r');
        let name = ge.replace('/', ":");
        let ev = ge.rsplit('/').next().unwrap_or(ge);
        if let Some(g) = glob {
            if !glob_match(&name, g) && !glob_match(ev, g) {
                continue;
            }
        }
        let (sym, off) = match point.split_once('+') {
            Some((s, o)) => (s, parse_off(o)),
            None => (point, Some(0)),
        };
        // A module's probe (`MOD:sym`) is placed from that module's DWARF
        // only (`-m`), the kernel's from the kernel's.
        let (module, sym) = match sym.split_once(':') {
            Some((m, s)) => (Some(m), s),
            None => (None, sym),
        };
        let addr = di
            .symbols
            .all()
            .iter()
            .find(|s| s.name == sym && module == di.module)
            .zip(off)
            .map(|(s, o)| s.start.wrapping_add(o));
        let place = addr
            .and_then(|a| place_of(di, a, retprobe))
            .unwrap_or_else(|| point.to_string());
        let _ = write!(out, "  {name:<20} (on {place}");
        if let (Some(m), Some(_)) = (module, addr) {
            let _ = write!(out, " in {m}");
        }
        let args: Vec<&str> = words
            .map(|a| a.split_once('=').map_or(a, |(n, _)| n))
            .collect();
        if !args.is_empty() {
            let _ = write!(out, " with {}", args.join(" "));
        }
        out.push_str(")\n");
    }
    out
}

fn parse_off(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `--vars POINT`: the variables (and parameters) available at each probe
/// address of a point, with their types, as perf prints them.
pub fn vars(di: &Debuginfo<'_>, point: &str, features: Features) -> Result<String, String> {
    let mut s = spec::parse(point).map_err(|e| format!("Semantic error :{e}"))?;
    let where_ = crate::spec::synthesize_point(&s.point);
    s.args = vec![ArgSpec {
        var: ARG_VARS.into(),
        ..ArgSpec::default()
    }];
    let mut f = Finder::new(di, &s, features);
    f.find().map_err(|e| e.0)?;
    if f.events.is_empty() {
        return Err(format!("Failed to find the address of {where_}"));
    }
    let mut out = format!("Available variables at {where_}\n");
    for e in &f.events {
        let (sym, off) = match di.symbols.find(e.address) {
            Some(sym) => (sym.name.clone(), e.address - sym.start),
            None => (e.symbol.clone(), e.offset),
        };
        let _ = writeln!(out, "\t@<{sym}+{off}>");
        let unit = unit_of(di, e.address);
        let scope = unit.and_then(|u| {
            di.subprograms(u)
                .iter()
                .copied()
                .find(|&d| di.haspc(d, e.address))
        });
        let mut names = BTreeSet::new();
        for n in e.arg_names.iter().flatten() {
            let ty = scope
                .and_then(|sc| translate::find_variable_at(di, sc, n, e.address))
                .and_then(|v| type_name(di, v))
                .unwrap_or_else(|| "(unknown_type)".into());
            names.insert(format!("{ty}\t{n}"));
        }
        if names.is_empty() {
            out.push_str("\t\t(No matched variables)\n");
        }
        for n in names {
            let _ = writeln!(out, "\t\t{n}");
        }
    }
    Ok(out)
}

/// `--line FUNC[:START[-END|+LEN]]`: the source of a function with the
/// lines that can be probed numbered relative to its declaration line, as
/// perf's `show_line_range()` prints them.
pub fn line_range(di: &Debuginfo<'_>, range: &str) -> Result<String, String> {
    let (func, span) = match range.split_once(':') {
        Some((f, r)) => (f, Some(r)),
        None => (range, None),
    };
    let (start, end) = match span {
        None => (0u32, u32::MAX),
        Some(r) => {
            let num = |s: &str| {
                s.parse::<u32>()
                    .map_err(|_| format!("Failed to parse line range: {r}"))
            };
            if let Some((a, b)) = r.split_once('-') {
                (num(a)?, num(b)?)
            } else if let Some((a, b)) = r.split_once('+') {
                let a = num(a)?;
                (a, a.saturating_add(num(b)?).saturating_sub(1))
            } else {
                (num(r)?, num(r)?)
            }
        }
    };
    let s = spec::parse(func).map_err(|e| format!("Semantic error :{e}"))?;
    let Some(name) = s.point.function.clone() else {
        return Err("Specified source line is not found.".into());
    };
    let funcs = di.functions();
    let sp = funcs
        .get(name.as_str())
        .and_then(|l| {
            l.iter()
                .copied()
                .find(|&d| !di.has_attr(d, gimli::DW_AT_declaration) && di.entrypc(d).is_some())
        })
        .ok_or_else(|| {
            format!("Specified source line is not found.\n  Error: Failed to show lines of {name}")
        })?;
    let file = di
        .decl_file(sp)
        .ok_or("A function DIE doesn't have decl_line.")?;
    let decl = di.decl_line(sp).unwrap_or(0);
    let probeable: BTreeSet<u32> = finder::probeable_lines(di, sp)
        .into_iter()
        .filter(|(f, _)| **f == *file)
        .map(|(_, l)| l)
        .collect();
    let last = probeable.iter().next_back().copied().unwrap_or(decl);
    let text = std::fs::read(&*file).map_err(|e| format!("Failed to open {file}: {e}"))?;
    let text = String::from_utf8_lossy(&text);
    let first = decl.saturating_add(start);
    let stop = decl.saturating_add(end).min(last);
    let mut out = format!("<{name}@{file}:{start}>\n");
    for (l, src) in text.lines().zip(1u32..).map(|(s, n)| (n, s)) {
        if l < first || l > stop {
            continue;
        }
        if probeable.contains(&l) {
            let _ = writeln!(out, "{:>7}  {src}", l - decl);
        } else {
            let _ = writeln!(out, "         {src}");
        }
    }
    Ok(out)
}

/// `--funcs [FILTER]`: the function symbols, sorted and once each; by
/// default those not starting with `_` (perf's `!_*`).
pub fn funcs(di: &Debuginfo<'_>, filter: Option<&str>) -> String {
    let names: BTreeSet<&str> = di
        .symbols
        .all()
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| match filter {
            Some(f) => glob_match(n, f),
            None => !n.starts_with('_'),
        })
        .collect();
    let mut out = String::new();
    for n in names {
        out.push_str(n);
        out.push('\n');
    }
    out
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
