// SPDX-License-Identifier: GPL-2.0

//! Probe specifications generated from a file's own debuginfo, for the
//! differential test against `perf probe`: function entries, offsets,
//! relative and absolute lines, return probes, inline functions; parameters,
//! locals, members through pointers, string and integer casts, `$params`
//! and `$vars`. Drawn with a fixed seed, so a run is reproducible.

use std::collections::BTreeMap;

use crate::debuginfo::{Debuginfo, DieRef};
use crate::translate::real_type;

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// Seeded; a zero seed is replaced.
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// One element of a slice.
    pub fn pick<'s, T>(&mut self, s: &'s [T]) -> Option<&'s T> {
        s.get(self.below(s.len()))
    }
}

struct Func {
    name: String,
    die: DieRef,
    inline: bool,
}

/// The named function definitions of the file, sorted by name (each name
/// once, its first definition).
fn functions(di: &Debuginfo<'_>) -> Vec<Func> {
    let mut by_name: BTreeMap<String, Func> = BTreeMap::new();
    for (name, dies) in di.functions().iter() {
        for &d in dies {
            if di.name(d).as_deref() != Some(name.as_str())
                || di.has_attr(d, gimli::DW_AT_declaration)
            {
                continue;
            }
            let inline = di.has_attr(d, gimli::DW_AT_inline);
            if !inline && di.entrypc(d).is_none() {
                continue;
            }
            if di.decl_file(d).is_none() {
                continue;
            }
            by_name.entry(name.clone()).or_insert(Func {
                name: name.clone(),
                die: d,
                inline,
            });
            break;
        }
    }
    by_name.into_values().collect()
}

/// Named children of `d` with tag `tag`, depth first (locals in blocks too).
fn named(
    di: &Debuginfo<'_>,
    d: DieRef,
    tag: gimli::DwTag,
    deep: bool,
    out: &mut Vec<(String, DieRef)>,
) {
    for c in di.children(d) {
        let t = di.tag(c);
        if t == tag {
            if let Some(n) = di.name(c) {
                out.push((n, c));
            }
        }
        if deep && t == gimli::DW_TAG_lexical_block {
            named(di, c, tag, deep, out);
        }
    }
}

/// A member of the struct `var` points to, if it does.
fn pointee_member(di: &Debuginfo<'_>, var: DieRef, rng: &mut Rng) -> Option<String> {
    let t = real_type(di, var)?;
    if di.tag(t) != gimli::DW_TAG_pointer_type {
        return None;
    }
    let st = real_type(di, t)?;
    if di.tag(st) != gimli::DW_TAG_structure_type {
        return None;
    }
    let members: Vec<String> = di
        .children(st)
        .into_iter()
        .filter(|&m| di.tag(m) == gimli::DW_TAG_member)
        .filter_map(|m| di.name(m))
        .collect();
    rng.pick(&members).cloned()
}

/// Whether `var` is a `char *` (or `const char *`).
fn is_char_ptr(di: &Debuginfo<'_>, var: DieRef) -> bool {
    let Some(t) = real_type(di, var) else {
        return false;
    };
    di.tag(t) == gimli::DW_TAG_pointer_type
        && real_type(di, t)
            .and_then(|e| di.name(e))
            .is_some_and(|n| n == "char" || n == "unsigned char")
}

/// Statement lines (line, address) of `file` inside the function `f`.
fn lines_in(di: &Debuginfo<'_>, f: DieRef) -> Vec<(u32, u64)> {
    let Some(file) = di.decl_file(f) else {
        return Vec::new();
    };
    let ranges = di.ranges(f);
    di.lines(f.unit)
        .iter()
        .filter(|l| !l.end_sequence && l.is_stmt && l.line != 0 && *l.file == *file)
        .filter(|l| ranges.iter().any(|&(b, e)| b <= l.addr && l.addr < e))
        .map(|l| (l.line, l.addr))
        .collect()
}

/// The last two components of a path (`fs/read_write.c`).
fn short_path(p: &str) -> String {
    let parts: Vec<&str> = p.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [f, d, _] | [f, d] => format!("{d}/{f}"),
        _ => p.to_string(),
    }
}

/// A lazy pattern for line `line` of the source file `path`: the start of
/// its text (white space dropped, up to the first character that is special
/// in a probe specification or a glob) followed by `*`; `None` when the
/// file cannot be read or the line has no such start.
fn lazy_pattern(path: &str, line: u32) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let l = text
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let start: String = l
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '(')
        .take(16)
        .collect();
    (start.len() >= 3).then(|| format!("{start}*"))
}

/// `n` specifications drawn from `di` with `seed`.
pub fn generate(di: &Debuginfo<'_>, n: usize, seed: u64) -> Vec<String> {
    let funcs = functions(di);
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < n && tries < n * 20 && !funcs.is_empty() {
        tries += 1;
        let Some(f) = rng.pick(&funcs) else { break };
        let mut params = Vec::new();
        named(
            di,
            f.die,
            gimli::DW_TAG_formal_parameter,
            false,
            &mut params,
        );
        let mut locals = Vec::new();
        named(di, f.die, gimli::DW_TAG_variable, true, &mut locals);
        let name = &f.name;
        let kind = rng.below(15);
        let spec = if f.inline {
            match kind % 3 {
                0 => Some(name.clone()),
                1 => Some(format!("{name} $params")),
                _ => rng.pick(&params).map(|(p, _)| format!("{name} {p}")),
            }
        } else {
            match kind {
                0 => Some(name.clone()),
                1 => Some(format!("{name} $params")),
                2 => rng.pick(&params).map(|(p, _)| format!("{name} {p}")),
                3 => {
                    let ptrs: Vec<_> = params
                        .iter()
                        .filter_map(|(p, d)| {
                            pointee_member(di, *d, &mut rng).map(|m| (p.clone(), m))
                        })
                        .collect();
                    rng.pick(&ptrs).map(|(p, m)| format!("{name} {p}->{m}"))
                }
                4 => {
                    let strs: Vec<_> = params.iter().filter(|(_, d)| is_char_ptr(di, *d)).collect();
                    match rng.pick(&strs) {
                        Some((p, _)) => Some(format!("{name} {p}:string")),
                        None => rng.pick(&params).map(|(p, _)| format!("{name} {p}:u32")),
                    }
                }
                5 | 6 => {
                    let lines = lines_in(di, f.die);
                    let decl = di.decl_line(f.die).unwrap_or(0);
                    rng.pick(&lines).and_then(|&(l, _)| {
                        let rel = l.checked_sub(decl)?;
                        let mut s = format!("{name}:{rel}");
                        if kind == 6 {
                            if let Some((v, _)) = rng.pick(&locals).or_else(|| rng.pick(&params)) {
                                s.push(' ');
                                s.push_str(v);
                            }
                        }
                        Some(s)
                    })
                }
                7 => {
                    let lines = lines_in(di, f.die);
                    let file = di.decl_file(f.die).map(|p| short_path(&p));
                    match (rng.pick(&lines), file) {
                        (Some(&(l, _)), Some(file)) => Some(format!("{file}:{l}")),
                        _ => None,
                    }
                }
                8 => {
                    let lines = lines_in(di, f.die);
                    let entry = di.entrypc(f.die).unwrap_or(0);
                    rng.pick(&lines).and_then(|&(_, a)| {
                        let off = a.checked_sub(entry)?;
                        (off > 0).then(|| format!("{name}+{off}"))
                    })
                }
                9 => Some(format!("{name}%return $retval")),
                10 => {
                    let lines = lines_in(di, f.die);
                    let decl = di.decl_line(f.die).unwrap_or(0);
                    rng.pick(&lines)
                        .and_then(|&(l, _)| Some(format!("{name}:{} $vars", l.checked_sub(decl)?)))
                }
                12 | 13 => {
                    let lines = lines_in(di, f.die);
                    let file = di.decl_file(f.die);
                    match (rng.pick(&lines), file) {
                        (Some(&(l, _)), Some(file)) => lazy_pattern(&file, l).map(|p| {
                            if kind == 12 {
                                format!("{name};{p}")
                            } else {
                                format!("{};{p}", short_path(&file))
                            }
                        }),
                        _ => None,
                    }
                }
                14 => {
                    let file = di.decl_file(f.die).map(|p| short_path(&p));
                    file.map(|file| match rng.pick(&params) {
                        Some((p, _)) => format!("{name}@{file} {p}"),
                        None => format!("{name}@{file}"),
                    })
                }
                _ => rng.pick(&locals).map(|(v, _)| format!("{name} {v}")),
            }
        };
        if let Some(s) = spec {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}
