// SPDX-License-Identifier: GPL-2.0

//! Commands: splitting a write into lines and parsing one command line.
//!
//! This follows `trace_parse_run_command()` (lines and comments),
//! `create_or_delete_trace_kprobe()`/`dyn_event_release()` (deletion) and
//! `__trace_kprobe_create()` (creation) step by step, since the order of the
//! kernel's checks decides which error a command with several mistakes gets.

use core::fmt;

use super::argtext;
use super::bytes::{ByteWrite, Fmt, SliceWriter};
use super::error::{Errno, ErrorCode, ParseError};
use super::fetch::{self, ArgContext, ArgEnv, FetchArg, FieldSource, TargetEvent, Typed};
use super::kstr::{
    at, c_str, find, head, is_digit, is_space, kstrtoll, kstrtouint, kstrtoull, simple_strtoul,
    tail,
};
use super::{
    DentryOffsets, FuncEntry, ProbeEnv, ProbeKind, SymbolCheck, KRETPROBE_MAXACTIVE_MAX,
    MAX_BTF_ARGS_LEN, MAX_DENTRY_ARGS_LEN, MAX_EVENT_NAME_LEN, MAX_TRACE_ARGS, WRITE_BUFSIZE,
};

/// Splits a command into arguments at the kernel's white space
/// (`argv_split()`), which includes byte 0xa0.
#[derive(Clone, Debug)]
pub struct Argv<'a> {
    rest: &'a [u8],
}

impl<'a> Argv<'a> {
    /// The arguments of `line`.
    pub fn new(line: &'a [u8]) -> Argv<'a> {
        Argv { rest: line }
    }

    /// What follows the arguments returned so far (from just after the
    /// last one).
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Argv<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&c| !is_space(c))?;
        let s = tail(self.rest, start);
        let len = s.iter().position(|&c| is_space(c)).unwrap_or(s.len());
        self.rest = tail(s, len);
        Some(head(s, len))
    }
}

/// One line of a write, or the reason the kernel gave up on the write.
pub type WriteLine<'a> = Result<&'a [u8], ParseError>;

/// Splits a write to kprobe_events into command lines as
/// `trace_parse_run_command()` does: lines end at `\n`, `#` starts a
/// comment, a NUL byte or a line longer than `WRITE_BUFSIZE - 2` fails
/// the rest of the write with `-EINVAL` (lines before it have been run).
///
/// Each yielded line (comments removed, possibly empty) is to be passed to
/// [`parse_command`]; stop at the first error, since the kernel does. After
/// the last line the write returns its full length.
#[derive(Clone, Debug)]
pub struct WriteLines<'a> {
    buf: &'a [u8],
    done: usize,
    /// Start of the kernel's current `WRITE_BUFSIZE` chunk.
    chunk: usize,
    /// The chunk that `cstr_len` is of (`usize::MAX`: none yet).
    cstr_chunk: usize,
    /// Bytes of that chunk before its first NUL, found once a chunk and
    /// not once a line (a 4 KiB scan a line was most of a delete's cost).
    cstr_len: usize,
    failed: bool,
}

impl<'a> WriteLines<'a> {
    /// The lines of `buf`, the whole of one `write()`.
    pub fn new(buf: &'a [u8]) -> WriteLines<'a> {
        WriteLines {
            buf,
            done: 0,
            chunk: 0,
            cstr_chunk: usize::MAX,
            cstr_len: 0,
            failed: false,
        }
    }

    /// Bytes consumed so far: what the write returns once all lines ran.
    pub fn consumed(&self) -> usize {
        self.done
    }
}

impl<'a> Iterator for WriteLines<'a> {
    type Item = WriteLine<'a>;

    fn next(&mut self) -> Option<WriteLine<'a>> {
        let count = self.buf.len();
        if self.failed || self.done >= count {
            return None;
        }
        loop {
            // The kernel copies up to WRITE_BUFSIZE - 1 bytes and works on
            // them as a C string: a NUL ends the chunk early.
            if self.cstr_chunk != self.chunk {
                let chunk_len = (count - self.chunk).min(WRITE_BUFSIZE - 1);
                let chunk = self
                    .buf
                    .get(self.chunk..self.chunk + chunk_len)
                    .unwrap_or(&[]);
                self.cstr_len = c_str(chunk).len();
                self.cstr_chunk = self.chunk;
            }
            let chunk = self
                .buf
                .get(self.chunk..self.chunk + self.cstr_len)
                .unwrap_or(&[]);
            let pos = self.done - self.chunk;
            let line_all = tail(chunk, pos);
            let (line, size) = match find(line_all, b'\n') {
                Some(nl) => (head(line_all, nl), nl + 1),
                None => {
                    let size = line_all.len();
                    if self.done + size < count {
                        if pos != 0 {
                            // Re-read from this line's start.
                            self.chunk = self.done;
                            continue;
                        }
                        self.failed = true;
                        return Some(Err(ParseError::silent(Errno::EINVAL)));
                    }
                    (line_all, size)
                }
            };
            self.done += size;
            let line = match find(line, b'#') {
                Some(h) => head(line, h),
                None => line,
            };
            return Some(Ok(line));
        }
    }
}

/// An event name: as given, or generated from the probe point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventName<'a> {
    /// `EVENT` as written.
    Given(&'a [u8]),
    /// `p_SYM_OFFS`, `r_SYM_OFFS` or `p_0xADDR`, sanitised; `FUNC__entry`
    /// or `FUNC__exit` for an fprobe, `TRACEPOINT` for a tracepoint probe.
    Auto(AutoEventName),
}

/// A generated event name (at most `MAX_EVENT_NAME_LEN - 1` bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AutoEventName {
    buf: [u8; MAX_EVENT_NAME_LEN - 1],
    len: u8,
}

impl EventName<'_> {
    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            EventName::Given(s) => s,
            EventName::Auto(a) => head(&a.buf, usize::from(a.len)),
        }
    }
}

/// Where a probe is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeLocation<'a> {
    /// `[MOD:]SYM[+OFFS]`: `symbol` keeps `MOD:`, loses `+OFFS`/`%return`.
    /// An fprobe's is its symbol as written, offset 0: 6.12 gives it to
    /// ftrace as a filter ([`FunctionFilter`](super::FunctionFilter)). A
    /// tracepoint probe's is the tracepoint's name, offset 0.
    Symbol {
        /// `[MOD:]SYM`.
        symbol: &'a [u8],
        /// The offset into the symbol.
        offset: u32,
    },
    /// A bare address.
    Address(u64),
    /// An event probe's event, `SYSTEM.EVENT` (or `SYSTEM/EVENT`).
    Event(EventRef<'a>),
}

/// The event an event probe is attached to, as its command names it:
/// `SYSTEM.EVENT` or `SYSTEM/EVENT`.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'a> {
    /// The whole name.
    text: &'a [u8],
    /// Where the separator is (a system name is shorter than
    /// `MAX_EVENT_NAME_LEN`).
    sep: u8,
}

impl<'a> EventRef<'a> {
    /// The event `text`, whose separator is at `sep`.
    pub(super) fn new(text: &'a [u8], sep: usize) -> EventRef<'a> {
        EventRef {
            text,
            sep: u8::try_from(sep).unwrap_or(u8::MAX),
        }
    }

    /// The event's system.
    pub fn system(&self) -> &'a [u8] {
        head(self.text, usize::from(self.sep))
    }

    /// The event's name.
    pub fn event(&self) -> &'a [u8] {
        tail(self.text, usize::from(self.sep) + 1)
    }
}

// The same event whichever separator names it.
impl PartialEq for EventRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.system() == other.system() && self.event() == other.event()
    }
}

impl Eq for EventRef<'_> {}

impl core::hash::Hash for EventRef<'_> {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        self.system().hash(h);
        self.event().hash(h);
    }
}

impl<'a> ProbeLocation<'a> {
    /// The module of `MOD:SYM`, if given.
    pub fn module(&self) -> Option<&'a [u8]> {
        match *self {
            ProbeLocation::Symbol { symbol, .. } => find(symbol, b':').map(|c| head(symbol, c)),
            ProbeLocation::Address(_) | ProbeLocation::Event { .. } => None,
        }
    }

    /// The symbol without `MOD:`.
    pub fn symbol_name(&self) -> Option<&'a [u8]> {
        match *self {
            ProbeLocation::Symbol { symbol, .. } => Some(match find(symbol, b':') {
                Some(c) => tail(symbol, c + 1),
                None => symbol,
            }),
            ProbeLocation::Address(_) | ProbeLocation::Event { .. } => None,
        }
    }
}

/// A parsed `p`/`r` (or `f`/`t`/`e`) command: a probe to register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProbeDef<'a> {
    /// Which kind of probe: `p`/`r`, `f` or `t`.
    pub kind: ProbeKind,
    /// A kretprobe (`r`, or `p` with `%return`), or an fprobe on a
    /// function's exit (`%return`, or a `$retval` fetcharg).
    pub is_return: bool,
    /// Kretprobe instances (an fprobe exit's, `f16:`), 0 for the default.
    pub maxactive: u32,
    /// The event's group.
    pub group: &'a [u8],
    /// The event's name.
    pub event: EventName<'a>,
    /// Where to probe.
    pub location: ProbeLocation<'a>,
    /// How `$argN`/`$retval` are evaluated.
    pub context: ArgContext,
    /// Number of fetchargs.
    pub nr_args: usize,
    /// Total size of the fetchargs' fixed fields in the event record.
    pub size: u32,
    pub(super) args_text: &'a [u8],
    pub(super) offsets: DentryOffsets,
    pub(super) types: ArgTypes<'a>,
    /// `$arg*`/`$argN` were replaced by parameter names: the fetchargs are
    /// not the command's words (error_log shows the command's).
    pub names_expanded: bool,
}

impl<'a> ProbeDef<'a> {
    /// The fetchargs, parsed one at a time. [`parse_command`] has parsed
    /// them all already, so no item is an error.
    pub fn args(&self) -> FetchArgs<'a> {
        FetchArgs {
            argv: Argv::new(self.args_text),
            all: self.args_text,
            index: 0,
            size: 0,
            env: ArgEnv {
                flags: self.context,
                offsets: self.offsets,
                typed: self.typed(),
                target: self.target(),
                btf_names: matches!(
                    self.types,
                    ArgTypes::Event {
                        btf_names: true,
                        ..
                    }
                ),
            },
            queried: self.names_queried(),
        }
    }

    /// An event probe's filter (`if FILTER`) on the records of the event
    /// it is attached to; `None` without one, and for other probes.
    pub fn filter(&self) -> Option<EventFilter<'a>> {
        match self.types {
            ArgTypes::Event { filter, .. } => filter,
            ArgTypes::Btf(_) => None,
        }
    }

    /// The BTF a probe's fetchargs are typed from.
    fn typed(&self) -> Option<Typed<'a>> {
        match self.types {
            ArgTypes::Btf(typed) => typed,
            ArgTypes::Event { .. } => None,
        }
    }

    /// An event probe's event, with its fields.
    fn target(&self) -> Option<TargetEvent<'a>> {
        match (self.location, self.types) {
            (ProbeLocation::Event(e), ArgTypes::Event { fields, .. }) => Some(TargetEvent {
                system: e.system(),
                event: e.event(),
                fields,
            }),
            _ => None,
        }
    }

    /// The kernel's `ctx->btf` before the first fetcharg: set when a
    /// `$arg` made it look the prototype up, and it was found.
    fn names_queried(&self) -> bool {
        self.typed().is_some_and(|t| t.proto.is_some())
            && Argv::new(self.args_text).any(|a| a.starts_with(b"$arg"))
            || self.names_expanded
    }

    /// The `index`th fetcharg (from 0).
    pub fn arg(&self, index: usize) -> Option<FetchArg<'a>> {
        self.args().nth(index)?.ok()
    }

    /// The enumerators (name, value) of the BTF enum `id` of a `:enum`
    /// fetcharg ([`FetchArg::enum_type`]).
    pub fn enumerators(&self, id: u32) -> impl Iterator<Item = (&'a [u8], i128)> + 'a {
        let btf = self.typed().map(|t| t.btf);
        let t = btf.and_then(|b| b.get(id));
        t.into_iter().flat_map(move |t| {
            t.enum_values()
                .map(move |(name, v)| (btf.map_or(&[][..], |b| b.str_at(name)), v))
        })
    }
}

/// What a probe's fetchargs are typed from, and what only an event
/// probe has (one or the other: a definition is kept small).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum ArgTypes<'a> {
    /// A function's parameters in BTF, if the kernel has BTF.
    Btf(Option<Typed<'a>>),
    /// An event probe's event's fields.
    Event {
        /// Where the fields are looked up.
        fields: FieldSource<'a>,
        /// The probe's filter.
        filter: Option<EventFilter<'a>>,
        /// The kernel has BTF arguments, which name a fetcharg without
        /// `NAME=` by its text.
        btf_names: bool,
    },
}

/// An event probe's filter: the words after `if`, which the kernel joins
/// with single spaces into the text it gives `create_event_filter()`.
#[derive(Clone, Copy, Debug)]
pub struct EventFilter<'a> {
    /// The command's text after `if`.
    text: &'a [u8],
}

impl<'a> EventFilter<'a> {
    /// The filter of the command text `text` after `if`.
    pub fn new(text: &'a [u8]) -> EventFilter<'a> {
        EventFilter { text }
    }

    /// The filter's words.
    pub fn words(&self) -> Argv<'a> {
        Argv::new(self.text)
    }

    /// Whether there is no word after `if` ("No filter rule after 'if'").
    pub fn is_empty(&self) -> bool {
        self.words().next().is_none()
    }

    /// The length of the filter's text as the kernel rebuilds it, without
    /// a NUL.
    pub fn len(&self) -> usize {
        let (n, bytes) = self
            .words()
            .fold((0usize, 0usize), |(n, b), w| (n + 1, b + w.len()));
        bytes + n.saturating_sub(1)
    }

    /// Writes the filter's text as the kernel rebuilds it: its words
    /// joined by single spaces.
    pub fn write_to<W: ByteWrite + ?Sized>(&self, w: &mut W) -> fmt::Result {
        for (i, word) in self.words().enumerate() {
            if i > 0 {
                w.write_bytes(b" ")?;
            }
            w.write_bytes(word)?;
        }
        Ok(())
    }

    /// Whether the filter's text as the kernel rebuilds it is `text`.
    pub fn eq_bytes(&self, text: &[u8]) -> bool {
        let mut rest = text;
        for (i, word) in self.words().enumerate() {
            if i > 0 {
                match rest.split_first() {
                    Some((b' ', r)) => rest = r,
                    _ => return false,
                }
            }
            match rest.strip_prefix(word) {
                Some(r) => rest = r,
                None => return false,
            }
        }
        rest.is_empty()
    }
}

// Filters are the same when the kernel's texts of them are.
impl PartialEq for EventFilter<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.words().eq(other.words())
    }
}

impl Eq for EventFilter<'_> {}

impl core::hash::Hash for EventFilter<'_> {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        for w in self.words() {
            w.hash(h);
        }
    }
}

/// Iterator over a probe's fetchargs.
#[derive(Clone, Debug)]
pub struct FetchArgs<'a> {
    argv: Argv<'a>,
    all: &'a [u8],
    index: usize,
    size: u32,
    env: ArgEnv<'a>,
    queried: bool,
}

impl<'a> Iterator for FetchArgs<'a> {
    type Item = Result<FetchArg<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.argv.next()?;
        let i = self.index;
        self.index += 1;
        let all = self.all;
        let typed = self.env.names_from_text();
        let name_used = |name: &[u8]| {
            Argv::new(all)
                .take(i)
                .enumerate()
                .any(|(j, a)| match arg_name(a) {
                    Some(n) => n == name,
                    None => fetch::default_arg_name(a, j + 1, typed).as_bytes() == name,
                })
        };
        let r = fetch::parse_fetch_arg(raw, i, name_used, self.size, &self.env, &mut self.queried);
        if let Ok(a) = &r {
            self.size = self.size.saturating_add(a.ty.record_size());
        }
        Some(r)
    }
}

impl FetchArgs<'_> {
    /// The fixed fields' size of the fetchargs parsed so far.
    pub(super) fn size(&self) -> u32 {
        self.size
    }
}

/// The name part of a fetcharg: `Some(NAME)` for `NAME=...`.
fn arg_name(arg: &[u8]) -> Option<&[u8]> {
    // A %pd expansion keeps the name bytes, so the original text is enough.
    find(arg, b'=').map(|eq| head(arg, eq))
}

/// A parsed `-:` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeleteCmd<'a> {
    /// `GRP` of `GRP/EVENT`; `None` matches every group.
    pub group: Option<&'a [u8]>,
    /// `EVENT`; empty matches every event (of the group).
    pub event: &'a [u8],
    /// The arguments after `-:GRP/EVENT`, which must match the probe's
    /// listing (location, then `NAME=ARG` fetchargs) for it to be deleted.
    pub args: &'a [u8],
}

/// One command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command<'a> {
    /// Nothing to do: an empty or blank line.
    Empty,
    /// Create (or append to) an event.
    Probe(ProbeDef<'a>),
    /// Delete events.
    Delete(DeleteCmd<'a>),
}

/// Parses one command line (as [`WriteLines`] yields it) against the kernel
/// state `env` reports.
///
/// On success every fetcharg has been parsed. On failure the error carries
/// the errno and error_log entry of the kernel for this command. A command
/// whose `$arg*`/`$argN` become parameter names needs room for its
/// rewritten fetchargs: [`parse_command_in`].
pub fn parse_command<'a, E: ProbeEnv + ?Sized>(
    line: &'a [u8],
    env: &'a E,
) -> Result<Command<'a>, ParseError> {
    parse_command_in(line, env, &mut [])
}

/// Room for a command's fetchargs with `$arg*`/`$argN` replaced by
/// parameter names: the command's own bytes and the kernel's
/// `MAX_BTF_ARGS_LEN` of names, with their separators.
pub const EXPANDED_ARGS_LEN: usize = WRITE_BUFSIZE + 2 * MAX_BTF_ARGS_LEN;

/// [`parse_command`], writing rewritten fetchargs into `buf`
/// ([`EXPANDED_ARGS_LEN`] bytes are always enough; a command that needs
/// more than `buf` has fails with `ENOMEM`).
pub fn parse_command_in<'a, E: ProbeEnv + ?Sized>(
    line: &'a [u8],
    env: &'a E,
    buf: &'a mut [u8],
) -> Result<Command<'a>, ParseError> {
    let line = c_str(line);
    if at(line, 0) == b'-' {
        return parse_delete(line).map(Command::Delete);
    }
    let mut argv = Argv::new(line);
    let Some(argv0) = argv.next() else {
        return Ok(Command::Empty);
    };
    let is_return = match at(argv0, 0) {
        b'r' => true,
        b'p' => false,
        // -ECANCELED from every dynamic event type becomes -EINVAL.
        _ => return Err(ParseError::silent(Errno::EINVAL)),
    };
    let Some(argv1) = argv.next() else {
        return Err(ParseError::silent(Errno::EINVAL));
    };
    parse_probe(argv0, argv1, argv.rest(), is_return, env, buf).map(Command::Probe)
}

/// `dyn_event_release()`'s parsing of `-:[GRP/][EVENT] [ARGS]`.
fn parse_delete(line: &[u8]) -> Result<DeleteCmd<'_>, ParseError> {
    let mut argv = Argv::new(line);
    let argv0 = argv.next().unwrap_or(&[]);
    if at(argv0, 1) != b':' {
        return Err(ParseError::silent(Errno::EINVAL));
    }
    let event = tail(argv0, 2);
    let (group, event) = match find(event, b'/') {
        Some(slash) => (Some(head(event, slash)), tail(event, slash + 1)),
        None => (None, event),
    };
    if group.is_none() && event.is_empty() {
        return Err(ParseError::silent(Errno::EINVAL));
    }
    Ok(DeleteCmd {
        group,
        event,
        args: argv.rest(),
    })
}

/// The `[GRP/][EVENT]` of a probe command's first word `argv0`, which
/// starts at `event_start` when there is one: the group (`default` when
/// none is given) and the event, if given.
pub(super) fn group_and_event<'a>(
    argv0: &'a [u8],
    event_start: Option<usize>,
    default: &'a [u8],
) -> Result<(&'a [u8], Option<&'a [u8]>), ParseError> {
    let Some(start) = event_start else {
        return Ok((default, None));
    };
    let (g, e) = parse_event_name(tail(argv0, start), start)?;
    Ok((g.unwrap_or(default), e))
}

pub(super) fn log_err(code: ErrorCode, index: usize, offset: usize) -> ParseError {
    ParseError::logged(Errno::EINVAL, code, index, offset)
}

/// `__trace_kprobe_create()` up to the registration.
fn parse_probe<'a, E: ProbeEnv + ?Sized>(
    argv0: &'a [u8],
    argv1: &'a [u8],
    args_text: &'a [u8],
    mut is_return: bool,
    env: &'a E,
    buf: &'a mut [u8],
) -> Result<ProbeDef<'a>, ParseError> {
    let colon = find(tail(argv0, 1), b':').map(|c| c + 1);
    let event_start = colon.map(|c| c + 1);

    let mut maxactive = 0;
    if is_digit(at(argv0, 1)) {
        if !is_return {
            return Err(log_err(ErrorCode::BadMaxactType, 0, 1));
        }
        let end = colon.unwrap_or(argv0.len());
        let digits = argv0.get(1..end).unwrap_or(&[]);
        if digits.len() > MAX_EVENT_NAME_LEN - 1 {
            return Err(log_err(ErrorCode::BadMaxact, 0, 1));
        }
        maxactive = match kstrtouint(digits, 0) {
            Ok(n) if n != 0 => n,
            _ => return Err(log_err(ErrorCode::BadMaxact, 0, 1)),
        };
        if maxactive > KRETPROBE_MAXACTIVE_MAX {
            return Err(log_err(ErrorCode::MaxactTooBig, 0, 1));
        }
    }

    let mut on_entry = false;
    let mut on_return = false;
    let mut entry_unknown = false;
    let location = match kstrtoull(argv1, 0) {
        Ok(addr) => ProbeLocation::Address(addr),
        Err(_) => {
            if find(argv1, b'/').is_some() && find(argv1, b':').is_some() {
                // A uprobe: kprobes decline, and so does every other type.
                return Err(ParseError::silent(Errno::EINVAL));
            }
            let mut symbol = argv1;
            if let Some(pct) = find(symbol, b'%') {
                if tail(symbol, pct) == b"%return" {
                    symbol = head(symbol, pct);
                    is_return = true;
                } else {
                    return Err(log_err(ErrorCode::BadAddrSuffix, 1, pct));
                }
            }
            let (symbol, offset) = split_symbol_offset(symbol)
                .ok()
                .and_then(|(s, o)| Some((s, u32::try_from(o).ok()?)))
                .ok_or_else(|| log_err(ErrorCode::BadProbeAddr, 1, 0))?;
            let (module, name) = match find(symbol, b':') {
                Some(c) => (Some(head(symbol, c)), tail(symbol, c + 1)),
                None => (None, symbol),
            };
            match env.check_symbol(module, name) {
                SymbolCheck::Unique | SymbolCheck::ModuleNotLoaded => {}
                SymbolCheck::NotUnique => return Err(log_err(ErrorCode::NonUniqSymbol, 1, 0)),
                SymbolCheck::NotFound => return Err(log_err(ErrorCode::BadProbeAddr, 1, 0)),
                SymbolCheck::NoMemory => return Err(ParseError::silent(Errno::ENOMEM)),
            }
            on_return = is_return;
            match env.func_entry(symbol, u64::from(offset)) {
                FuncEntry::Entry => on_entry = !is_return,
                FuncEntry::NotEntry if is_return => {
                    return Err(log_err(ErrorCode::BadRetprobe, 1, 0));
                }
                FuncEntry::NotEntry => {}
                // A module not loaded yet: decided below, with its BTF.
                FuncEntry::Unknown => entry_unknown = offset == 0 && !is_return,
                FuncEntry::NoMemory => return Err(ParseError::silent(Errno::ENOMEM)),
            }
            ProbeLocation::Symbol { symbol, offset }
        }
    };

    let (group, event) = group_and_event(argv0, event_start, env.default_group())?;
    let event = match event {
        Some(e) => EventName::Given(e),
        None => EventName::Auto(auto_event_name(is_return, &location, env)),
    };

    let func = match location {
        ProbeLocation::Symbol { symbol, .. } => symbol,
        ProbeLocation::Address(_) | ProbeLocation::Event { .. } => &[],
    };
    // The prototype of SYM, in the BTF of MOD for `MOD:SYM` (6.12 looks the
    // whole `MOD:SYM` up and finds none).
    let name = location.symbol_name().unwrap_or(&[]);
    let typed = env.btf(func).map(|btf| Typed {
        btf,
        // Not vmlinux's function of the name for a module's.
        proto: if name.is_empty() || (location.module().is_some() && !btf.is_split()) {
            None
        } else {
            btf.func_proto(name).map(|p| p.id)
        },
        hidden: 0,
    });
    // `MOD:SYM` of a module not loaded yet, whose BTF (from its file) has
    // the function: offset 0 is its entry, where its parameters are typed
    // (6.12 cannot tell before the module comes, and types nothing there).
    if entry_unknown && location.module().is_some() && typed.is_some_and(|t| t.proto.is_some()) {
        on_entry = true;
    }
    let context = ArgContext {
        on_return,
        on_entry,
        ..ArgContext::default()
    };
    let head = ProbeHead {
        kind: ProbeKind::Kprobe,
        is_return,
        maxactive,
        group,
        event,
        location,
        context,
        typed,
    };
    finish_probe(head, args_text, env, buf)
}

/// What the parsers of each probe type make of a command before its
/// fetchargs.
pub(super) struct ProbeHead<'a> {
    pub(super) kind: ProbeKind,
    pub(super) is_return: bool,
    pub(super) maxactive: u32,
    pub(super) group: &'a [u8],
    pub(super) event: EventName<'a>,
    pub(super) location: ProbeLocation<'a>,
    pub(super) context: ArgContext,
    pub(super) typed: Option<Typed<'a>>,
}

/// The fetchargs' part of `__trace_kprobe_create()`, which
/// `__trace_fprobe_create()` shares: `$arg*`/`$argN` made parameter
/// names, the count and `%pd` room checked, each fetcharg parsed.
pub(super) fn finish_probe<'a, E: ProbeEnv + ?Sized>(
    head: ProbeHead<'a>,
    args_text: &'a [u8],
    env: &'a E,
    buf: &'a mut [u8],
) -> Result<ProbeDef<'a>, ParseError> {
    let ProbeHead {
        kind,
        is_return,
        maxactive,
        group,
        event,
        location,
        context,
        typed,
    } = head;
    let star = check_meta_args(args_text, &context, typed.is_some())?;
    let (args_text, names_expanded, empty_at) = match (typed, star) {
        (Some(t), Some(star)) => match expand_meta_args(args_text, &t, star, buf)? {
            Some((expanded, empty_at)) => (expanded, true, empty_at),
            None => (args_text, false, None),
        },
        _ => (args_text, false, None),
    };
    let nr_args = Argv::new(args_text).count() + usize::from(empty_at.is_some());
    if nr_args > MAX_TRACE_ARGS {
        return Err(ParseError::silent(Errno::E2BIG));
    }
    let offsets = env.dentry_offsets();
    let mut used = 0usize;
    for arg in Argv::new(args_text) {
        if let Some(n) = argtext::expanded_len(arg, &offsets) {
            if n >= MAX_DENTRY_ARGS_LEN - used {
                return Err(ParseError::silent(Errno::ENOMEM));
            }
            used += n + 1;
        }
    }

    let mut def = ProbeDef {
        kind,
        is_return,
        maxactive,
        group,
        event,
        location,
        context,
        nr_args,
        size: 0,
        args_text,
        offsets,
        types: ArgTypes::Btf(typed),
        names_expanded,
    };
    let mut args = def.args();
    for i in 0.. {
        if Some(i) == empty_at {
            // An unnamed parameter (a variadic function's `...`) became
            // an empty fetcharg.
            return Err(log_err(ErrorCode::NoArgBody, i + 2, 0));
        }
        let Some(arg) = args.next() else {
            break;
        };
        arg.map_err(|mut e| {
            if names_expanded {
                e.expanded = false;
            }
            e
        })?;
    }
    def.size = args.size;
    Ok(def)
}

/// `traceprobe_split_symbol_offset()`: splits at the first `+` or `-`.
pub fn split_symbol_offset(symbol: &[u8]) -> Result<(&[u8], i64), Errno> {
    match symbol.iter().position(|&c| c == b'+' || c == b'-') {
        Some(p) => Ok((head(symbol, p), kstrtoll(tail(symbol, p), 0)?)),
        None => Ok((symbol, 0)),
    }
}

/// `(group, event)` as given after `p:`.
pub(super) type EventNameParts<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// `traceprobe_parse_event_name()` on the text after `p:`, which starts at
/// byte `offset` of argv\[0\]: `(group, event)`, `event` `None` for `GRP/`.
pub(super) fn parse_event_name(
    text: &[u8],
    offset: usize,
) -> Result<EventNameParts<'_>, ParseError> {
    let slash = find(text, b'/').or_else(|| find(text, b'.'));
    let mut group = None;
    let mut event = text;
    let mut offset = offset;
    if let Some(slash) = slash {
        if slash == 0 {
            return Err(log_err(ErrorCode::NoGroupName, 0, offset));
        }
        if slash + 1 > MAX_EVENT_NAME_LEN {
            return Err(log_err(ErrorCode::GroupTooLong, 0, offset));
        }
        let g = head(text, slash);
        if !argtext::is_good_name(g, true) {
            return Err(log_err(ErrorCode::BadGroupName, 0, offset));
        }
        group = Some(g);
        event = tail(text, slash + 1);
        offset += slash + 1;
    }
    if event.is_empty() {
        if slash.is_some() {
            return Ok((group, None));
        }
        return Err(log_err(ErrorCode::NoEventName, 0, offset));
    }
    if event.len() >= MAX_EVENT_NAME_LEN {
        return Err(log_err(ErrorCode::EventTooLong, 0, offset));
    }
    if !argtext::is_good_name(event, false) {
        return Err(log_err(ErrorCode::BadEventName, 0, offset));
    }
    Ok((group, Some(event)))
}

/// The kernel's generated event name for a kprobe: `snprintf()` into a
/// 64-byte buffer, then `sanitize_event_name()`.
fn auto_event_name<E: ProbeEnv + ?Sized>(
    is_return: bool,
    location: &ProbeLocation<'_>,
    env: &E,
) -> AutoEventName {
    let kind = if is_return { "r" } else { "p" };
    AutoEventName::new(|w| match *location {
        ProbeLocation::Symbol { symbol, offset } => {
            w.write_bytes(kind.as_bytes())?;
            w.write_bytes(b"_")?;
            w.write_bytes(symbol)?;
            fmt::Write::write_fmt(&mut Fmt(w), format_args!("_{offset}"))
        }
        ProbeLocation::Address(addr) => fmt::Write::write_fmt(
            &mut Fmt(w),
            format_args!("{kind}_0x{:016x}", env.pointer_id(addr)),
        ),
        ProbeLocation::Event(e) => w.write_bytes(e.event()),
    })
}

impl AutoEventName {
    /// The name `write` writes, cut at `MAX_EVENT_NAME_LEN - 1` bytes as
    /// `snprintf()` into the kernel's buffer cuts it, then with `:`, `.`
    /// and `*` after its first byte made `_` (`sanitize_event_name()`).
    pub(super) fn new<F>(write: F) -> AutoEventName
    where
        F: FnOnce(&mut SliceWriter<[u8; MAX_EVENT_NAME_LEN - 1]>) -> fmt::Result,
    {
        let mut w = SliceWriter::new([0u8; MAX_EVENT_NAME_LEN - 1]);
        // A name too long is cut, not refused.
        let _ = write(&mut w);
        let (mut buf, len) = w.into_parts();
        for c in buf.iter_mut().take(len).skip(1) {
            if matches!(*c, b':' | b'.' | b'*') {
                *c = b'_';
            }
        }
        AutoEventName {
            buf,
            len: len as u8,
        }
    }
}

/// What `argv_has_var_arg()` found: no `$arg` at all (`None`), or the
/// argv index (from 2) of the last `$arg` fetcharg and the fetcharg index
/// of `$arg*`, if any.
#[derive(Clone, Copy)]
struct MetaArgs {
    last: usize,
    star: Option<usize>,
}

/// `argv_has_var_arg()`, and without BTF arguments the end of
/// `traceprobe_expand_meta_args()`: `$arg*` needs BTF.
fn check_meta_args(
    args_text: &[u8],
    ctx: &ArgContext,
    typed: bool,
) -> Result<Option<MetaArgs>, ParseError> {
    let mut star: Option<usize> = None;
    let mut last = None;
    for (i, arg) in Argv::new(args_text).enumerate() {
        if !arg.starts_with(b"$arg") {
            continue;
        }
        let index = i + 2;
        last = Some(index);
        if !ctx.on_entry && !ctx.on_return {
            return Err(log_err(ErrorCode::NofentryArgs, index, 0));
        }
        let c = at(arg, 4);
        if is_digit(c) {
            continue;
        }
        if c != b'*' {
            return Err(log_err(ErrorCode::BadVar, index, 0));
        }
        if star.is_some() {
            return Err(log_err(ErrorCode::DoubleArgs, index, 0));
        }
        star = Some(i);
    }
    let Some(last) = last else {
        return Ok(None);
    };
    if star.is_some() && !typed {
        return Err(ParseError::logged(
            Errno::EOPNOTSUPP,
            ErrorCode::NosupBtfarg,
            last,
            0,
        ));
    }
    Ok(Some(MetaArgs { last, star }))
}

/// The rest of `traceprobe_expand_meta_args()` with BTF arguments: the
/// fetchargs with `$arg*` replaced by the function's parameter names and
/// `$argN[:TYPE]` by the `N`th name (and its type), written into `buf`;
/// `None` when the function has no parameters in BTF and there is no
/// `$arg*`, so that `$argN` stay registers. An unnamed parameter (the
/// `...` of a variadic function) is an empty fetcharg, which the text
/// cannot hold: its index comes back beside the text.
/// Fetchargs with `$arg*`/`$argN` rewritten, and where an empty one is.
type Expanded<'a> = (&'a [u8], Option<usize>);

fn expand_meta_args<'a>(
    args_text: &[u8],
    typed: &Typed<'a>,
    meta: MetaArgs,
    buf: &'a mut [u8],
) -> Result<Option<Expanded<'a>>, ParseError> {
    let hidden = typed.hidden;
    let params = typed
        .proto
        .and_then(|id| typed.btf.get(id))
        .filter(|p| p.vlen() > hidden);
    let Some(proto) = params else {
        if meta.star.is_some() {
            return Err(ParseError::logged(
                Errno::EOPNOTSUPP,
                ErrorCode::NosupBtfarg,
                meta.last,
                0,
            ));
        }
        return Ok(None);
    };
    let btf = typed.btf;
    let name_of = |n: usize| {
        let n = n.checked_add(hidden)?;
        proto.params().nth(n).map(|p| btf.str_at(p.name_off))
    };
    let nr = proto.vlen().saturating_sub(hidden);
    let mut w = SliceWriter::new(&mut buf[..]);
    let nomem = |_| ParseError::silent(Errno::ENOMEM);
    // The kernel writes the names into a buffer of MAX_BTF_ARGS_LEN.
    let mut used = 0usize;
    let mut name = |w: &mut SliceWriter<&mut [u8]>, n: usize, ty: &[u8], index: usize| {
        let Some(name) = name_of(n) else {
            return Err(log_err_errno(Errno::ENOENT, ErrorCode::NoBtfarg, index));
        };
        let len = name.len() + ty.len();
        if len >= MAX_BTF_ARGS_LEN.saturating_sub(used) {
            return Err(log_err_errno(Errno::E2BIG, ErrorCode::Args2long, index));
        }
        used += len + 1;
        w.write_bytes(name).map_err(nomem)?;
        w.write_bytes(ty).map_err(nomem)
    };
    let mut first = true;
    let mut out = 0usize;
    let mut empty_at = None;
    for (i, arg) in Argv::new(args_text).enumerate() {
        let index = i + 2;
        let mut sep = |w: &mut SliceWriter<&mut [u8]>| {
            if !core::mem::take(&mut first) {
                w.write_bytes(b" ").map_err(nomem)?;
            }
            Ok::<(), ParseError>(())
        };
        if Some(i) == meta.star {
            for n in 0..nr {
                if name_of(n).is_some_and(|s| s.is_empty()) {
                    empty_at = empty_at.or(Some(out));
                }
                sep(&mut w)?;
                name(&mut w, n, b"", index)?;
                out += 1;
            }
            continue;
        }
        out += 1;
        sep(&mut w)?;
        if !arg.starts_with(b"$arg") {
            w.write_bytes(arg).map_err(nomem)?;
            continue;
        }
        let (n, end) = simple_strtoul(tail(arg, 4), 10);
        let ty = tail(arg, 4 + end);
        if !ty.is_empty() && at(ty, 0) != b':' {
            return Err(log_err_errno(Errno::ENOENT, ErrorCode::BadVar, index));
        }
        // The kernel keeps N in an int.
        let n = n as i32;
        if n == 0 {
            return Err(log_err(ErrorCode::BadArgNum, index, 0));
        }
        // A number that wraps negative is no parameter (the kernel would
        // read before its array).
        let n = usize::try_from(n - 1).unwrap_or(usize::MAX);
        if ty.is_empty() && name_of(n).is_some_and(|s| s.is_empty()) {
            empty_at = empty_at.or(Some(out - 1));
        }
        name(&mut w, n, ty, index)?;
    }
    let len = w.len();
    Ok(Some((head(buf, len), empty_at)))
}

fn log_err_errno(errno: Errno, code: ErrorCode, index: usize) -> ParseError {
    ParseError::logged(errno, code, index, 0)
}

/// Writes a probe's location as the listing shows it: `0x%p` for an
/// address, `SYM+OFFS` (decimal) or `SYM`, `SYSTEM.EVENT` for an event.
pub fn write_location<W: ByteWrite + ?Sized, E: ProbeEnv + ?Sized>(
    w: &mut W,
    location: &ProbeLocation<'_>,
    env: &E,
) -> fmt::Result {
    use fmt::Write as _;
    match *location {
        ProbeLocation::Address(addr) => write!(Fmt(w), "0x{:016x}", env.pointer_id(addr)),
        ProbeLocation::Symbol { symbol, offset } => {
            w.write_bytes(symbol)?;
            if offset != 0 {
                write!(Fmt(w), "+{offset}")?;
            }
            Ok(())
        }
        ProbeLocation::Event(e) => {
            w.write_bytes(e.system())?;
            w.write_bytes(b".")?;
            w.write_bytes(e.event())
        }
    }
}
