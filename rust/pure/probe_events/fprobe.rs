// SPDX-License-Identifier: GPL-2.0

//! `f` and `t` commands: fprobe events on a function's entry or exit and
//! tracepoint probe events, as 6.12's `__trace_fprobe_create()`
//! (`kernel/trace/trace_fprobe.c`) parses them, and the function filter
//! an fprobe's symbol is when it is registered.
//!
//! ```text
//! f[:[GRP/][EVENT]] FUNC [FETCHARGS]                 function entry
//! f[MAXACTIVE][:[GRP/][EVENT]] FUNC%return [FETCHARGS]   function exit
//! t[:[GRP/][EVENT]] TRACEPOINT [FETCHARGS]           tracepoint
//! ```
//!
//! The kernel checks these in its own order, which differs from kprobes':
//! the maxactive number first, then the symbol (its suffix, a tracepoint's
//! characters, a `$retval` anywhere in the fetchargs, which makes an fprobe
//! an exit probe and is refused on a tracepoint), then whether a maxactive
//! was given to an entry, then the event name. The symbol is not looked up
//! at all: a function that does not exist fails at registration. The
//! fetchargs are parsed as a kprobe's at a function's entry or exit, but
//! registers are refused, and on a tracepoint the stub function's first
//! argument, the tracepoint's data, is hidden.

use super::bytes::{ByteWrite, SliceWriter};
use super::error::{ErrorCode, ParseError};
use super::fetch::{ArgContext, Typed};
use super::kstr::{at, find, head, is_alnum, is_digit, kstrtouint, kstrtoull, tail};
use super::parse::{
    finish_probe, group_and_event, log_err, Argv, AutoEventName, EventName, ProbeDef, ProbeHead,
    ProbeLocation,
};
use super::{ProbeEnv, ProbeKind, TracepointCheck, MAX_EVENT_NAME_LEN};

/// Largest maxactive of an fprobe exit (`RETHOOK_MAXACTIVE_MAX`).
pub const RETHOOK_MAXACTIVE_MAX: u32 = 4096;

/// The prefix of a tracepoint's stub function, the function a tracepoint
/// probe is an fprobe on: `__probestub_TP` (`DECLARE_TRACE()`).
pub const PROBESTUB_PREFIX: &str = "__probestub_";

/// Longest symbol name and its NUL (`KSYM_NAME_LEN`).
const KSYM_NAME_LEN: usize = 512;

/// `__trace_fprobe_create()` up to the registration, for an `f` command
/// (`tracepoint` false) or a `t` command, whose first two words are
/// `argv0` and `argv1` and whose fetchargs are `args_text`.
pub(super) fn parse_fprobe<'a, E: ProbeEnv + ?Sized>(
    argv0: &'a [u8],
    argv1: &'a [u8],
    args_text: &'a [u8],
    tracepoint: bool,
    env: &'a E,
    buf: &'a mut [u8],
) -> Result<ProbeDef<'a>, ParseError> {
    let kind = if tracepoint {
        ProbeKind::Tprobe
    } else {
        ProbeKind::Fprobe
    };
    let colon = find(tail(argv0, 1), b':').map(|c| c + 1);
    let event_start = colon.map(|c| c + 1);

    // Any digits after the letter are a maxactive, whichever the probe;
    // only after the symbol is it found to be an entry's.
    let mut maxactive = 0;
    if is_digit(at(argv0, 1)) {
        let digits = argv0.get(1..colon.unwrap_or(argv0.len())).unwrap_or(&[]);
        if digits.len() > MAX_EVENT_NAME_LEN - 1 {
            return Err(log_err(ErrorCode::BadMaxact, 0, 1));
        }
        maxactive = match kstrtouint(digits, 0) {
            Ok(n) if n != 0 => n,
            _ => return Err(log_err(ErrorCode::BadMaxact, 0, 1)),
        };
        if maxactive > RETHOOK_MAXACTIVE_MAX {
            return Err(log_err(ErrorCode::MaxactTooBig, 0, 1));
        }
    }

    let (symbol, is_return) = parse_symbol_and_return(argv1, args_text, tracepoint)?;
    if !is_return && maxactive != 0 {
        return Err(log_err(ErrorCode::BadMaxactType, 0, 1));
    }

    let (group, event) = group_and_event(argv0, event_start, env.default_group_of(kind))?;
    let event = match event {
        Some(e) => EventName::Given(e),
        None => EventName::Auto(AutoEventName::new(|w| {
            if tracepoint {
                if is_digit(at(symbol, 0)) {
                    w.write_bytes(b"_")?;
                }
                w.write_bytes(symbol)
            } else {
                w.write_bytes(symbol)?;
                w.write_bytes(if is_return { b"__exit" } else { b"__entry" })
            }
        })),
    };

    // The function the fetchargs are typed from: an fprobe's symbol as
    // written (so `MOD:FUNC` or a glob has none), a tracepoint's stub, or,
    // for a tracepoint not found (a module's, maybe later), the function
    // named as the tracepoint, as 6.12 looks it up.
    let typed = if tracepoint {
        match env.tracepoint(symbol) {
            TracepointCheck::Loaded => typed_from(env, PROBESTUB_PREFIX.as_bytes(), symbol, 1),
            TracepointCheck::NotLoaded => typed_from(env, b"", symbol, 1),
            TracepointCheck::NotFound => return Err(log_err(ErrorCode::NoTracepoint, 1, 0)),
        }
    } else {
        typed_from(env, b"", symbol, 0)
    };
    let context = ArgContext {
        on_return: is_return,
        on_entry: !is_return,
        fprobe: true,
        tracepoint,
        tevent: false,
    };
    let head = ProbeHead {
        kind,
        is_return,
        maxactive,
        group,
        event,
        location: ProbeLocation::Symbol { symbol, offset: 0 },
        context,
        typed,
    };
    finish_probe(head, args_text, env, buf)
}

/// `parse_symbol_and_return()`: the symbol (before a `%return`), and
/// whether the probe is on the function's exit.
fn parse_symbol_and_return<'a>(
    argv1: &'a [u8],
    args_text: &[u8],
    tracepoint: bool,
) -> Result<(&'a [u8], bool), ParseError> {
    let symbol = match find(argv1, b'%') {
        Some(pct) if !tracepoint && tail(argv1, pct) == b"%return" => {
            return Ok((head(argv1, pct), true));
        }
        Some(pct) => return Err(log_err(ErrorCode::BadAddrSuffix, 1, pct)),
        None => argv1,
    };
    if tracepoint {
        if let Some(bad) = symbol.iter().position(|&c| !is_alnum(c) && c != b'_') {
            return Err(log_err(ErrorCode::BadTpName, 1, bad));
        }
    }
    // A `$retval` (not the start of a longer name) anywhere in a fetcharg
    // makes an fprobe an exit probe; only the first of each fetcharg is
    // looked at, as `strstr()` finds it.
    for (i, arg) in Argv::new(args_text).enumerate() {
        let Some(pos) = arg.windows(7).position(|w| w == b"$retval") else {
            continue;
        };
        let next = at(arg, pos + 7);
        if is_alnum(next) || next == b'_' {
            continue;
        }
        if tracepoint {
            return Err(log_err(ErrorCode::RetvalOnProbe, i + 2, pos));
        }
        return Ok((symbol, true));
    }
    Ok((symbol, false))
}

/// The BTF of the function `PREFIX NAME`, with its prototype if BTF has
/// it and `hidden` leading parameters fetchargs do not see; `None` on a
/// kernel without BTF.
///
/// Not inlined: the name's buffer stays out of the fetchargs' frames.
#[inline(never)]
fn typed_from<'a, E: ProbeEnv + ?Sized>(
    env: &'a E,
    prefix: &[u8],
    name: &[u8],
    hidden: usize,
) -> Option<Typed<'a>> {
    let mut w = SliceWriter::new([0u8; KSYM_NAME_LEN - 1]);
    // A name longer than any symbol's names no function.
    let fits = w.write_bytes(prefix).is_ok() && w.write_bytes(name).is_ok();
    let func = if fits { w.as_bytes() } else { &[][..] };
    let btf = env.btf(func)?;
    Some(Typed {
        btf,
        proto: if fits {
            btf.func_proto(func).map(|p| p.id)
        } else {
            None
        },
        hidden,
    })
}

/// How `filter_parse_regex()` reads a function filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterMatch {
    /// The whole name (`MATCH_FULL`).
    Full,
    /// `PREFIX*` (`MATCH_FRONT_ONLY`).
    Prefix,
    /// `*PART*` (`MATCH_MIDDLE_ONLY`).
    Contains,
    /// `*SUFFIX` (`MATCH_END_ONLY`); `*` alone matches every function.
    Suffix,
    /// Any other pattern with `*` (inside), `?`, `[` or `\`
    /// (`MATCH_GLOB`, `glob_match()`).
    Glob,
    /// Starting with a digit: the ftrace record of that index, from 1,
    /// whatever its name (`MATCH_INDEX`).
    Index,
}

/// An fprobe's symbol as 6.12 registers it: `register_fprobe()` gives it
/// to `ftrace_set_filter()`, so it is an ftrace filter, matched against
/// the name of every function ftrace can trace (`ftrace_match()`), and
/// the probe is on every function it matches. When none matches,
/// registration fails with `EINVAL` ("Failed to register probe event" at
/// the symbol: [`ParseError::registration`]). `MOD:FUNC` names no
/// function (the module is no part of a name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionFilter<'a> {
    how: FilterMatch,
    /// What is compared, without the `!` and the `*` the kind says.
    search: &'a [u8],
    negated: bool,
}

impl<'a> FunctionFilter<'a> {
    /// `filter_parse_regex()` on `filter`.
    pub fn new(filter: &'a [u8]) -> FunctionFilter<'a> {
        let (negated, buf) = match filter.split_first() {
            Some((b'!', rest)) => (true, rest),
            _ => (false, filter),
        };
        let mut f = FunctionFilter {
            how: FilterMatch::Full,
            search: buf,
            negated,
        };
        if is_digit(at(buf, 0)) {
            f.how = FilterMatch::Index;
            return f;
        }
        let last = buf.len().saturating_sub(1);
        for (i, &c) in buf.iter().enumerate() {
            if c == b'*' {
                if i == 0 {
                    f.how = FilterMatch::Suffix;
                } else if i == last {
                    f.how = if f.how == FilterMatch::Suffix {
                        FilterMatch::Contains
                    } else {
                        FilterMatch::Prefix
                    };
                    f.search = head(buf, i);
                    break;
                } else {
                    f.how = FilterMatch::Glob;
                    f.search = buf;
                    return f;
                }
            } else if matches!(c, b'[' | b'?' | b'\\') {
                f.how = FilterMatch::Glob;
                f.search = buf;
                return f;
            }
        }
        if at(buf, 0) == b'*' {
            f.search = tail(f.search, 1);
        }
        f
    }

    /// How the filter matches.
    pub fn how(&self) -> FilterMatch {
        self.how
    }

    /// A leading `!`: the kernel removes what matches from the fprobe's
    /// functions, which start empty, and registers it on every function
    /// ftrace can trace (an empty ftrace filter).
    pub fn negated(&self) -> bool {
        self.negated
    }

    /// The index of a [`FilterMatch::Index`] filter (`kstrtoul(..., 0)`,
    /// from 1); `None` when it is no number, which matches nothing.
    pub fn index(&self) -> Option<u64> {
        match self.how {
            FilterMatch::Index => kstrtoull(self.search, 0).ok().filter(|&n| n != 0),
            _ => None,
        }
    }

    /// `ftrace_match()`: whether the function `name` matches (never for
    /// [`FilterMatch::Index`], which picks by position).
    pub fn matches(&self, name: &[u8]) -> bool {
        let s = self.search;
        match self.how {
            FilterMatch::Full => name == s,
            FilterMatch::Prefix => name.starts_with(s),
            FilterMatch::Contains => s.is_empty() || name.windows(s.len()).any(|w| w == s),
            FilterMatch::Suffix => name.ends_with(s),
            FilterMatch::Glob => glob_match(s, name),
            FilterMatch::Index => false,
        }
    }
}

/// `glob_match()` (`lib/glob.c`): `?`, `*`, `[...]` classes with ranges
/// and a leading `!`, `\` quoting; an unclosed `[` is literal. Both texts
/// end at their first NUL, as C strings.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    // Each step consumes at least one byte of `s` or of `pat`, and a
    // backtrack one more byte of `s` than the last: bounded by their
    // product, as the kernel's.
    loop {
        let c = at(s, i);
        let mut d = at(pat, p);
        p += 1;
        i += 1;
        let literal = match d {
            b'?' => {
                if c == 0 {
                    return false;
                }
                continue;
            }
            b'*' => {
                if at(pat, p) == 0 {
                    return true;
                }
                i -= 1;
                back = Some((p, i));
                continue;
            }
            b'[' => {
                if c == 0 {
                    return false;
                }
                match class(pat, p, c) {
                    Some((true, end)) => {
                        p = end;
                        continue;
                    }
                    Some((false, _)) => false,
                    // Malformed: the `[` is a literal character.
                    None => true,
                }
            }
            b'\\' => {
                d = at(pat, p);
                p += 1;
                true
            }
            _ => true,
        };
        if literal && c == d {
            if d == 0 {
                return true;
            }
            continue;
        }
        // Try again from the last `*`, one byte later in `s`.
        match back {
            Some((bp, bi)) if c != 0 => {
                p = bp;
                i = bi + 1;
                back = Some((bp, bi + 1));
            }
            _ => return false,
        }
    }
}

/// A `[...]` class starting at `pat[p]` (after the `[`) against `c`:
/// whether it matches and where the pattern goes on, or `None` when it is
/// malformed (not closed).
fn class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let inverted = at(pat, p) == b'!';
    let mut q = p + usize::from(inverted);
    let mut a = at(pat, q);
    q += 1;
    let mut matched = false;
    loop {
        let mut b = a;
        if a == 0 {
            return None;
        }
        if at(pat, q) == b'-' && at(pat, q + 1) != b']' {
            b = at(pat, q + 1);
            if b == 0 {
                return None;
            }
            q += 2;
        }
        matched |= a <= c && c <= b;
        a = at(pat, q);
        q += 1;
        if a == b']' {
            break;
        }
    }
    Some((matched != inverted, q))
}
