// SPDX-License-Identifier: GPL-2.0

//! The probe specification a user types, parsed as `perf probe` parses it.
//!
//! ```text
//! [[GROUP:]EVENT=]FUNC[@SRC][+OFFS|%return|:RLN|;PTN] [ARG ...]
//! [[GROUP:]EVENT=]SRC:ALN [ARG ...]
//! [[GROUP:]EVENT=]SRC;PTN [ARG ...]
//! ARG: [NAME=]VAR[->FIELD|.FIELD|[N]]...[:TYPE][@user] | $vars | $params
//!      | any raw fetcharg (%reg, @sym, $retval, +0(%di), ...)
//! ```
//!
//! Parsing is pure: it reads no debuginfo. The rules (what makes the first
//! word a file rather than a function, which combinations are refused, the
//! generated `FUNC_L<line>` event name) follow perf's
//! `parse_perf_probe_point()` and `parse_perf_probe_arg()`, and so do the
//! messages.

use std::fmt;

/// Where to probe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbePoint {
    /// Function name or glob.
    pub function: Option<String>,
    /// Source file (its tail is matched).
    pub file: Option<String>,
    /// Line: relative to the function's declaration with a function,
    /// absolute with a file alone; 0 for none.
    pub line: u32,
    /// Byte offset from the function's entry.
    pub offset: u64,
    /// A return probe (`%return`).
    pub retprobe: bool,
    /// Lazy line pattern (`;PTN`), kept with its leading text.
    pub lazy_line: Option<String>,
    /// An absolute address given as the function (`0x...`).
    pub abs_address: Option<u64>,
}

/// One step into a variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// `.name` (`arrow` false) or `->name` (`arrow` true).
    Member {
        /// Member name.
        name: String,
        /// Written with `->`.
        arrow: bool,
    },
    /// `[N]` with a constant index.
    Index(i64),
}

/// One argument as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgSpec {
    /// `NAME=`, or the last member's name for an argument with fields.
    pub name: Option<String>,
    /// The variable, or the raw fetcharg/special name.
    pub var: String,
    /// Members and indexes after the variable.
    pub fields: Vec<Field>,
    /// `:TYPE`.
    pub ty: Option<String>,
    /// `@user`: the variable points to user memory.
    pub user_access: bool,
}

impl ArgSpec {
    /// A C variable (starts with a letter or `_`), as perf's
    /// `is_c_varname()` says; anything else is copied verbatim.
    pub fn is_c_var(&self) -> bool {
        is_c_varname(&self.var)
    }

    /// The argument as perf writes it back (`synthesize_perf_probe_arg()`).
    pub fn synthesize(&self) -> String {
        let mut s = match &self.name {
            Some(n) => format!("{}={}", n, self.var),
            None => self.var.clone(),
        };
        for f in &self.fields {
            match f {
                Field::Member { name, arrow } => {
                    s.push_str(if *arrow { "->" } else { "." });
                    s.push_str(name);
                }
                Field::Index(i) => s.push_str(&format!("[{i}]")),
            }
        }
        if let Some(t) = &self.ty {
            s.push(':');
            s.push_str(t);
        }
        s
    }
}

/// A parsed probe specification.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeSpec {
    /// `GROUP:` given with the event name.
    pub group: Option<String>,
    /// `EVENT=`, or the generated `FUNC_L<line>`.
    pub event: Option<String>,
    /// Where.
    pub point: ProbePoint,
    /// What to fetch.
    pub args: Vec<ArgSpec>,
}

/// `$vars`: every local variable and parameter available.
pub const ARG_VARS: &str = "$vars";
/// `$params`: every parameter available.
pub const ARG_PARAMS: &str = "$params";
/// perf's `MAX_PROBE_ARGS`.
pub const MAX_PROBE_ARGS: usize = 128;

/// A specification perf would refuse, with perf's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

fn err<T>(msg: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError(msg.into()))
}

/// perf's `is_c_varname()`.
pub fn is_c_varname(s: &str) -> bool {
    matches!(s.bytes().next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
}

/// perf's `is_c_func_name()`: a C identifier.
pub fn is_c_func_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `strtoul(s, &end, 0)`/`strtol`: the number at the start of `s` in C
/// syntax (0x hex, leading 0 octal) and the rest. `None` when no digit was
/// read or the value overflows.
pub fn c_number(s: &str) -> Option<(i64, &str)> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(r) = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit()))
    {
        (16, r)
    } else if body.starts_with('0') {
        (8, body)
    } else {
        (10, body)
    };
    let len = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if len == 0 {
        return None;
    }
    let v = i64::try_from(u64::from_str_radix(digits.get(..len)?, radix).ok()?).ok()?;
    Some((if neg { -v } else { v }, digits.get(len..)?))
}

/// A whole unsigned number in C syntax, nothing after it.
fn whole_number(s: &str) -> Option<u64> {
    match c_number(s) {
        Some((v, "")) => u64::try_from(v).ok(),
        _ => None,
    }
}

fn parse_event_name(s: &str, spec: &mut ProbeSpec) -> Result<(), SpecError> {
    let (group, event) = match s.split_once(':') {
        Some((g, e)) => (Some(g), e),
        None => (None, s),
    };
    if group.is_some_and(|g| !is_c_func_name(g)) || !is_c_func_name(event) {
        return err(format!(
            "{s} is bad for event name -it must follow C symbol-naming rule."
        ));
    }
    spec.group = group.map(Into::into);
    spec.event = Some(event.into());
    Ok(())
}

fn parse_point(arg: &str, spec: &mut ProbeSpec) -> Result<(), SpecError> {
    let mut arg = arg;
    if let Some(i) = arg.find([';', '=', '@', '+', '%']) {
        if arg.as_bytes().get(i) == Some(&b'=') {
            parse_event_name(arg.get(..i).unwrap_or(""), spec)?;
            arg = arg.get(i + 1..).unwrap_or("");
        }
    }
    if arg.starts_with('%') {
        return err("SDT events are not supported.");
    }
    // A file if it has none of "+@%", has ':' or ';', and a '.' before it.
    let mut file_spec = false;
    if !arg.contains(['+', '@', '%']) {
        if let Some(i) = arg.find([';', ':']) {
            file_spec = arg.get(..i).is_some_and(|h| h.contains('.'));
        }
    }
    let pp = &mut spec.point;
    let (head, mut rest) = match arg.find([';', ':', '+', '@', '%']) {
        Some(i) => (arg.get(..i).unwrap_or(""), arg.get(i..)),
        None => (arg, None),
    };
    let head = (!head.is_empty()).then(|| head.to_string());
    if file_spec {
        pp.file = head;
    } else {
        if let Some(h) = head.as_deref().filter(|h| h.starts_with("0x")) {
            match whole_number(h) {
                Some(a) => pp.abs_address = Some(a),
                None => return err("Invalid absolute address."),
            }
        }
        pp.function = head;
    }
    while let Some(r) = rest {
        let c = r.as_bytes().first().copied().unwrap_or(0);
        let body = r.get(1..).unwrap_or("");
        if c == b';' {
            pp.lazy_line = Some(body.to_string());
            break;
        }
        let (val, next) = match body.find([';', ':', '+', '@', '%']) {
            Some(i) => (body.get(..i).unwrap_or(""), body.get(i..)),
            None => (body, None),
        };
        rest = next;
        match c {
            b':' => match whole_number(val).and_then(|v| u32::try_from(v).ok()) {
                Some(l) => pp.line = l,
                None => return err("There is non-digit char in line number."),
            },
            b'+' => match whole_number(val) {
                Some(o) => pp.offset = o,
                None => return err("There is non-digit character in offset."),
            },
            b'@' => {
                if pp.file.is_some() {
                    return err("SRC@SRC is not allowed.");
                }
                pp.file = Some(val.to_string());
            }
            b'%' => {
                if val == "return" {
                    pp.retprobe = true;
                } else {
                    return err(format!("%{val} is not supported."));
                }
            }
            _ => return err("Invalid probe point."),
        }
    }
    if pp.lazy_line.is_some() && pp.line != 0 {
        return err("Lazy pattern can't be used with line number.");
    }
    if pp.lazy_line.is_some() && pp.offset != 0 {
        return err("Lazy pattern can't be used with offset.");
    }
    if pp.line != 0 && pp.offset != 0 {
        return err("Offset can't be used with line number.");
    }
    if pp.line == 0 && pp.lazy_line.is_none() && pp.file.is_some() && pp.function.is_none() {
        return err("File always requires line number or lazy pattern.");
    }
    if pp.offset != 0 && pp.function.is_none() {
        return err("Offset requires an entry function.");
    }
    if (pp.offset != 0 || pp.line != 0 || pp.lazy_line.is_some()) && pp.retprobe {
        return err("Offset/Line/Lazy pattern can't be used with return probe.");
    }
    Ok(())
}

/// Parses one argument (perf's `parse_perf_probe_arg()`).
pub fn parse_arg(s: &str) -> Result<ArgSpec, SpecError> {
    let mut a = ArgSpec::default();
    let s = match s.split_once('=') {
        Some((n, rest)) => {
            a.name = Some(n.to_string());
            rest
        }
        None => s,
    };
    let mut s = s.to_string();
    if let Some(i) = s.find('@') {
        if i != 0 && s.get(i + 1..) == Some("user") {
            a.user_access = true;
            s.truncate(i);
        }
    }
    if let Some(i) = s.find(':') {
        a.ty = s.get(i + 1..).map(Into::into);
        s.truncate(i);
    }
    let s = s.as_str();
    let first = s.find(['-', '.', '[']);
    let Some(mut i) = first.filter(|_| is_c_varname(s)) else {
        a.var = s.to_string();
        return Ok(a);
    };
    a.var = s.get(..i).unwrap_or("").to_string();
    let mut goodname = a.var.clone();
    loop {
        let rest = s.get(i..).unwrap_or("");
        let next_search_from;
        if let Some(r) = rest.strip_prefix('[') {
            let Some((idx, after)) = c_number(r) else {
                return err("Array index must be a number.");
            };
            let Some(after) = after.strip_prefix(']') else {
                return err("Array index must be a number.");
            };
            a.fields.push(Field::Index(idx));
            if after.is_empty() {
                break;
            }
            i = s.len() - after.len();
            // The next field starts right here.
            let c = after.as_bytes().first().copied();
            if c != Some(b'.') && c != Some(b'-') && c != Some(b'[') {
                return err(format!("Argument parse error: {after}"));
            }
            continue;
        } else if let Some((r, arrow)) = rest
            .strip_prefix("->")
            .map(|r| (r, true))
            .or_else(|| rest.strip_prefix('.').map(|r| (r, false)))
        {
            next_search_from = s.len() - r.len();
            let end = r.find(['-', '.', '[']).map(|j| next_search_from + j);
            let name = s
                .get(next_search_from..end.unwrap_or(s.len()))
                .unwrap_or("");
            a.fields.push(Field::Member {
                name: name.to_string(),
                arrow,
            });
            goodname = name.to_string();
            match end {
                Some(e) => i = e,
                None => break,
            }
        } else {
            return err(format!("Argument parse error: {rest}"));
        }
    }
    if a.name.is_none() {
        a.name = Some(goodname);
    }
    Ok(a)
}

/// Parses a whole specification (perf's `parse_perf_probe_command()`):
/// words split on white space, the first the probe point.
pub fn parse(cmd: &str) -> Result<ProbeSpec, SpecError> {
    let words: Vec<&str> = cmd.split_ascii_whitespace().collect();
    let Some((point, args)) = words.split_first() else {
        return err("No probe point is given.");
    };
    if args.len() > MAX_PROBE_ARGS {
        return err(format!("Too many probe arguments ({}).", args.len()));
    }
    let mut spec = ProbeSpec::default();
    parse_point(point, &mut spec)?;
    let pp = &spec.point;
    if spec.event.is_none() && pp.line != 0 && pp.lazy_line.is_none() && pp.offset == 0 {
        if let Some(f) = &pp.function {
            spec.event = Some(format!("{f}_L{}", pp.line));
        }
    }
    for w in args {
        let a = parse_arg(w)?;
        if a.is_c_var() && spec.point.retprobe {
            return err("You can't specify local variable for kretprobe.");
        }
        spec.args.push(a);
    }
    Ok(spec)
}

/// Whether the specification needs debuginfo (perf's
/// `perf_probe_event_need_dwarf()`).
pub fn needs_dwarf(spec: &ProbeSpec) -> bool {
    let pp = &spec.point;
    pp.file.is_some()
        || pp.line != 0
        || pp.lazy_line.is_some()
        || spec
            .args
            .iter()
            .any(|a| a.is_c_var() || a.var == ARG_VARS || a.var == ARG_PARAMS)
}

/// perf's `synthesize_perf_probe_point()`, for messages.
pub fn synthesize_point(pp: &ProbePoint) -> String {
    let mut s = String::new();
    if let Some(f) = &pp.function {
        s.push_str(f);
        if pp.offset != 0 {
            s.push_str(&format!("+{}", pp.offset));
        } else if pp.line != 0 {
            s.push_str(&format!(":{}", pp.line));
        } else if pp.retprobe {
            s.push_str("%return");
        }
    }
    if let Some(file) = &pp.file {
        let mut f = file.as_str();
        if f.len() > 30 {
            let tail = f.get(f.len() - 30..).unwrap_or(f);
            f = match tail.find('/') {
                Some(i) => tail.get(i + 1..).unwrap_or(tail),
                None => tail,
            };
        }
        s.push('@');
        s.push_str(f);
        if pp.function.is_none() && pp.line != 0 {
            s.push_str(&format!(":{}", pp.line));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points() {
        let s = parse("vfs_read").unwrap();
        assert_eq!(s.point.function.as_deref(), Some("vfs_read"));
        let s = parse("vfs_read+0x10").unwrap();
        assert_eq!(s.point.offset, 16);
        let s = parse("vfs_read%return $retval").unwrap();
        assert!(s.point.retprobe);
        assert_eq!(s.args[0].var, "$retval");
        let s = parse("vfs_read:12 count").unwrap();
        assert_eq!(s.point.line, 12);
        assert_eq!(s.event.as_deref(), Some("vfs_read_L12"));
        let s = parse("fs/read_write.c:470").unwrap();
        assert_eq!(s.point.file.as_deref(), Some("fs/read_write.c"));
        assert_eq!(s.point.function, None);
        assert_eq!(s.point.line, 470);
        assert_eq!(s.event, None);
        let s = parse("vfs_read@fs/read_write.c").unwrap();
        assert_eq!(s.point.file.as_deref(), Some("fs/read_write.c"));
        let s = parse("myev=vfs_read;count*").unwrap();
        assert_eq!(s.event.as_deref(), Some("myev"));
        assert_eq!(s.point.lazy_line.as_deref(), Some("count*"));
        let s = parse("grp:ev=vfs_read").unwrap();
        assert_eq!(s.group.as_deref(), Some("grp"));
    }

    #[test]
    fn refused_points() {
        assert!(parse("vfs_read:3+4").is_err());
        assert!(parse("vfs_read+4%return").is_err());
        assert!(parse("fs/read_write.c").is_ok()); // a function named so
        assert!(parse("vfs_read%entry").is_err());
        assert!(parse("vfs_read:x").is_err());
        assert!(parse("vfs_read%return count").is_err());
        assert!(parse("1bad=vfs_read").is_err());
    }

    #[test]
    fn args() {
        let a = parse_arg("file->f_mode").unwrap();
        assert_eq!(a.var, "file");
        assert_eq!(a.name.as_deref(), Some("f_mode"));
        assert_eq!(
            a.fields,
            vec![Field::Member {
                name: "f_mode".into(),
                arrow: true
            }]
        );
        let a = parse_arg("x=o->arr[3].s:u16").unwrap();
        assert_eq!(a.name.as_deref(), Some("x"));
        assert_eq!(a.ty.as_deref(), Some("u16"));
        assert_eq!(a.fields.len(), 3);
        assert_eq!(a.fields[1], Field::Index(3));
        let a = parse_arg("o->arr[3]").unwrap();
        assert_eq!(a.name.as_deref(), Some("arr"));
        let a = parse_arg("buf:string").unwrap();
        assert_eq!(
            (a.var.as_str(), a.ty.as_deref(), a.name.as_deref()),
            ("buf", Some("string"), None)
        );
        assert_eq!(a.synthesize(), "buf:string");
        let a = parse_arg("+0(%di):u32").unwrap();
        assert!(!a.is_c_var());
        assert_eq!(a.var, "+0(%di)");
        let a = parse_arg("path:string@user").unwrap();
        assert!(a.user_access);
        assert_eq!((a.var.as_str(), a.ty.as_deref()), ("path", Some("string")));
        // perf only knows `@user` at the very end.
        assert!(!parse_arg("path@user:string").unwrap().user_access);
        assert!(parse_arg("a[x]").is_err());
        assert!(parse_arg("a-b").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(c_number("0x10]"), Some((16, "]")));
        assert_eq!(c_number("010"), Some((8, "")));
        assert_eq!(c_number("-3]"), Some((-3, "]")));
        assert_eq!(c_number("0"), Some((0, "")));
        assert_eq!(c_number("x"), None);
    }

    #[test]
    fn synthesized_points() {
        let pp = ProbePoint {
            function: Some("vfs_read".into()),
            line: 3,
            ..ProbePoint::default()
        };
        assert_eq!(synthesize_point(&pp), "vfs_read:3");
        let pp = ProbePoint {
            file: Some("fs/read_write.c".into()),
            line: 470,
            ..ProbePoint::default()
        };
        assert_eq!(synthesize_point(&pp), "@fs/read_write.c:470");
    }
}
