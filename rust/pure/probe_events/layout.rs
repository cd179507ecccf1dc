// SPDX-License-Identifier: GPL-2.0

//! What a probe event keeps of its commands: made once, when the command is
//! accepted, and read from then on without parsing any text again.
//!
//! - [`EventLayout`]: the event's record (its fields' names, types and
//!   offsets, whether it is a return event, the fixed size), which every
//!   probe of a multiprobe event shares. Trace output, the `format` file's
//!   fields and `print fmt`, and the checks for appending a probe read it.
//! - [`ProbeSpec`]: one probe as `kprobe_events` lists it (location,
//!   maxactive, each fetcharg's text after `NAME=`; an event probe's
//!   attached event and filter). The listing and the `-:` matching read
//!   it.
//!
//! Both keep their items in storage the caller owns ([`Store`]: a `KVec` in
//! the module, a `Vec` in host tests), so that this code allocates nothing
//! itself; texts live in one byte store and are referred to by [`TextRef`].
//! The views ([`Layout`], [`Spec`]) borrow that storage and are what the
//! printers take.

use core::fmt;

use super::bytes::{ByteWrite, SliceWriter};
use super::error::{Errno, ParseError};
use super::fprobe::glob_match;
use super::kstr::{find, head, tail};
use super::parse::{write_location, Argv, DeleteCmd, EventRef, ProbeDef, ProbeLocation};
use super::types::ArgType;
use super::{ProbeEnv, ProbeKind, MAX_ARGSTR_LEN};

/// Size of a kprobe event record's head on x86-64: `struct trace_entry`
/// and the probe address (`struct kprobe_trace_entry_head`).
pub const KPROBE_HEADER_SIZE: usize = 16;
/// Size of a kretprobe event record's head on x86-64: `struct
/// trace_entry`, the function and the return site (`struct
/// kretprobe_trace_entry_head`).
pub const KRETPROBE_HEADER_SIZE: usize = 24;
/// Size of an event probe event record's head on x86-64: `struct
/// trace_entry` alone (`struct eprobe_trace_entry_head`).
pub const EPROBE_HEADER_SIZE: usize = 8;

pub use crate::pure::store::{NoMemory, Store};

/// Where a text is in a byte store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TextRef {
    at: u32,
    len: u32,
}

impl TextRef {
    /// The text in `store` (empty if `store` does not hold it).
    fn get(self, store: &[u8]) -> &[u8] {
        store
            .get(self.at as usize..)
            .and_then(|t| t.get(..self.len as usize))
            .unwrap_or(&[])
    }
}

/// Appends what is written to a byte store.
struct Appender<'s, S: ?Sized> {
    store: &'s mut S,
    full: bool,
}

impl<S: Store<u8> + ?Sized> ByteWrite for Appender<'_, S> {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        for &c in b {
            if self.store.try_push(c).is_err() {
                self.full = true;
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
}

/// Stores the text `write` produces and says where it is.
fn push_text<S, F>(store: &mut S, write: F) -> Result<TextRef, NoMemory>
where
    S: Store<u8> + ?Sized,
    F: FnOnce(&mut Appender<'_, S>) -> fmt::Result,
{
    let at = store.items().len();
    let mut a = Appender { store, full: false };
    if write(&mut a).is_err() || a.full {
        return Err(NoMemory);
    }
    let len = a.store.items().len() - at;
    match (u32::try_from(at), u32::try_from(len)) {
        (Ok(at), Ok(len)) => Ok(TextRef { at, len }),
        _ => Err(NoMemory),
    }
}

/// Why a description could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// No memory for it.
    NoMemory,
    /// A fetcharg of the definition does not parse: the definition did not
    /// come from a successful [`parse_command`](super::parse_command).
    Parse(ParseError),
}

impl From<NoMemory> for BuildError {
    fn from(_: NoMemory) -> BuildError {
        BuildError::NoMemory
    }
}

impl BuildError {
    /// The error the command fails with.
    pub fn to_parse_error(self) -> ParseError {
        match self {
            BuildError::NoMemory => ParseError::silent(Errno::ENOMEM),
            BuildError::Parse(e) => e,
        }
    }
}

/// One field of an event's record, after the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    name: TextRef,
    ty: ArgType,
    offset: u32,
    /// A `:enum` field's enumerators, `VALUE NAME` lines.
    symbols: TextRef,
}

/// Most enumerators a `:enum` field keeps (the rest print as numbers).
pub const MAX_ENUMERATORS: usize = 512;

/// A field, with its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldRef<'a> {
    /// The field's name (`NAME=`, or `argN`).
    pub name: &'a [u8],
    /// Its type.
    pub ty: ArgType,
    /// Its offset in the record, after the header.
    pub offset: u32,
    /// A `:enum` field's enumerators, `VALUE NAME` lines (empty
    /// otherwise): [`FieldRef::symbols`] reads them.
    pub symbols: &'a [u8],
}

impl<'a> FieldRef<'a> {
    /// A `:enum` field's enumerators: (value, name).
    pub fn symbols(&self) -> impl Iterator<Item = (i64, &'a [u8])> + 'a {
        self.symbols.split(|&c| c == b'\n').filter_map(|line| {
            let sp = line.iter().position(|&c| c == b' ')?;
            let v = core::str::from_utf8(line.get(..sp)?).ok()?.parse().ok()?;
            Some((v, line.get(sp + 1..)?))
        })
    }
}

/// An event's record layout, owned.
#[derive(Debug)]
pub struct EventLayout<F, T> {
    kind: ProbeKind,
    is_return: bool,
    size: u32,
    fields: F,
    text: T,
}

impl<F: Store<Field>, T: Store<u8>> EventLayout<F, T> {
    /// The layout of `def`'s event, kept in `fields` and `text` (empty).
    pub fn new(def: &ProbeDef<'_>, mut fields: F, mut text: T) -> Result<Self, BuildError> {
        for a in def.args() {
            let a = a.map_err(BuildError::Parse)?;
            let name = push_text(&mut text, |w| w.write_bytes(a.name.as_bytes()))?;
            let symbols = match a.enum_type {
                Some(id) => push_text(&mut text, |w| {
                    use fmt::Write as _;
                    for (n, v) in def.enumerators(id).take(MAX_ENUMERATORS) {
                        write!(super::bytes::Fmt(&mut *w), "{}", v as i64)?;
                        w.write_bytes(b" ")?;
                        w.write_bytes(n)?;
                        w.write_bytes(b"\n")?;
                    }
                    Ok(())
                })?,
                None => TextRef::default(),
            };
            fields.try_push(Field {
                name,
                ty: a.ty,
                offset: a.offset,
                symbols,
            })?;
        }
        Ok(EventLayout {
            kind: def.kind,
            is_return: def.is_return,
            size: def.size,
            fields,
            text,
        })
    }

    /// A kretprobe event, or an fprobe on a function's exit.
    pub fn is_return(&self) -> bool {
        self.is_return
    }

    /// The kind of probe the event's probes are.
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// Bytes of the fixed fields after the record's head.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The layout, to read.
    pub fn get(&self) -> Layout<'_> {
        Layout {
            kind: self.kind,
            is_return: self.is_return,
            size: self.size,
            fields: self.fields.items(),
            text: self.text.items(),
        }
    }
}

/// An event's record layout: a view of an [`EventLayout`].
///
/// An fprobe or tracepoint probe event's record is a kprobe event's: the
/// same head (`__probe_ip`; `__probe_func` and `__probe_ret_ip` on a
/// function's exit, as a kretprobe's), the same fields after it and the
/// same `print fmt` (6.12's `fentry_event_define_fields()`,
/// `fexit_event_define_fields()` and `traceprobe_set_print_fmt()`).
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    /// The kind of probe the event's probes are.
    pub kind: ProbeKind,
    /// A kretprobe event, or an fprobe exit event (its header has the
    /// function and return site).
    pub is_return: bool,
    /// Bytes of the fixed fields after the header.
    pub size: u32,
    fields: &'a [Field],
    text: &'a [u8],
}

impl<'a> Layout<'a> {
    /// The fields, in record order.
    pub fn fields(&self) -> impl Iterator<Item = FieldRef<'a>> + Clone + 'a {
        let text = self.text;
        self.fields.iter().map(move |f| FieldRef {
            name: f.name.get(text),
            ty: f.ty,
            offset: f.offset,
            symbols: f.symbols.get(text),
        })
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the event has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Size of the head of the event's records, before the fields: a
    /// kprobe's ([`KPROBE_HEADER_SIZE`]) on entry, a kretprobe's
    /// ([`KRETPROBE_HEADER_SIZE`]) on a function's exit, the common
    /// `struct trace_entry` alone ([`EPROBE_HEADER_SIZE`]) for an event
    /// probe. The module checks these against the kernel's structures.
    pub fn header_size(&self) -> usize {
        match (self.kind, self.is_return) {
            (ProbeKind::Eprobe, _) => EPROBE_HEADER_SIZE,
            (_, true) => KRETPROBE_HEADER_SIZE,
            (_, false) => KPROBE_HEADER_SIZE,
        }
    }

    /// The checks before `def`'s probe joins this event, in the kernel's
    /// order, except the last one ([`Spec::same_probe`] on each of the
    /// event's probes): `EVENT_EXIST` when the event is of another
    /// dynamic event type (a kprobe event for an `f` or `t` command, an
    /// fprobe or tracepoint event for a `p` or `r` one; the kernel finds
    /// no event of its type to join, and the name is taken) or `def` is
    /// an event probe, which joins no event,
    /// `DIFF_PROBE_TYPE` when it is of another kind or direction (entry
    /// and exit, fprobe and tracepoint), `DIFF_ARG_TYPE` when its
    /// fetchargs differ ([`Layout::compare_arg_types`]).
    pub fn check_append(&self, def: &ProbeDef<'_>) -> Result<(), ParseError> {
        if !self.kind.same_event_type(def.kind) || !def.kind.appends() {
            return Err(ParseError::event_exists());
        }
        if self.kind != def.kind || self.is_return != def.is_return {
            return Err(ParseError::diff_probe_type());
        }
        match self.compare_arg_types(def) {
            Some(n) => Err(ParseError::diff_arg_type(n)),
            None => Ok(()),
        }
    }

    /// `trace_probe_compare_arg_type()`: `None` when `def` has the same
    /// argument names and types, else the 1-based position of the first
    /// difference (which the kernel reports with [`ParseError::diff_arg_type`]).
    pub fn compare_arg_types(&self, def: &ProbeDef<'_>) -> Option<usize> {
        if self.len() != def.nr_args {
            return Some(self.len().min(def.nr_args) + 1);
        }
        for (i, (f, a)) in self.fields().zip(def.args()).enumerate() {
            match a {
                Ok(a)
                    if f.name == a.name.as_bytes()
                        && f.ty.base == a.ty.base
                        && f.ty.count == a.ty.count
                        && f.ty.symbolic == a.ty.symbolic => {}
                _ => return Some(i + 1),
            }
        }
        None
    }
}

/// Where a stored probe is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Location {
    Symbol { symbol: TextRef, offset: u32 },
    Address(u64),
    Event { text: TextRef, sep: usize },
}

/// One probe as the listing shows it, owned.
#[derive(Debug)]
pub struct ProbeSpec<C, T> {
    maxactive: u32,
    location: Location,
    filter: Option<TextRef>,
    comms: C,
    text: T,
}

impl<C: Store<TextRef>, T: Store<u8>> ProbeSpec<C, T> {
    /// The description of `def`'s probe, kept in `comms` and `text` (empty).
    pub fn new(def: &ProbeDef<'_>, mut comms: C, mut text: T) -> Result<Self, BuildError> {
        let location = match def.location {
            ProbeLocation::Symbol { symbol, offset } => Location::Symbol {
                symbol: push_text(&mut text, |w| w.write_bytes(symbol))?,
                offset,
            },
            ProbeLocation::Address(a) => Location::Address(a),
            ProbeLocation::Event(e) => Location::Event {
                text: push_text(&mut text, |w| {
                    w.write_bytes(e.system())?;
                    w.write_bytes(b".")?;
                    w.write_bytes(e.event())
                })?,
                sep: e.system().len(),
            },
        };
        let filter = match &def.filter() {
            Some(f) => Some(push_text(&mut text, |w| f.write_to(w))?),
            None => None,
        };
        for a in def.args() {
            let a = a.map_err(BuildError::Parse)?;
            comms.try_push(push_text(&mut text, |w| a.comm.write_to(w))?)?;
        }
        Ok(ProbeSpec {
            maxactive: def.maxactive,
            location,
            filter,
            comms,
            text,
        })
    }

    /// The description, to read.
    pub fn get(&self) -> Spec<'_> {
        Spec {
            maxactive: self.maxactive,
            location: self.location,
            filter: self.filter,
            comms: self.comms.items(),
            text: self.text.items(),
        }
    }
}

/// One probe as the listing shows it: a view of a [`ProbeSpec`].
#[derive(Clone, Copy, Debug)]
pub struct Spec<'a> {
    /// Kretprobe instances, 0 for the default.
    pub maxactive: u32,
    location: Location,
    filter: Option<TextRef>,
    comms: &'a [TextRef],
    text: &'a [u8],
}

impl<'a> Spec<'a> {
    /// Where the probe is placed.
    pub fn location(&self) -> ProbeLocation<'a> {
        match self.location {
            Location::Symbol { symbol, offset } => ProbeLocation::Symbol {
                symbol: symbol.get(self.text),
                offset,
            },
            Location::Address(a) => ProbeLocation::Address(a),
            Location::Event { text, sep } => {
                ProbeLocation::Event(EventRef::new(text.get(self.text), sep))
            }
        }
    }

    /// An event probe's filter as the kernel keeps it (its words joined
    /// by single spaces), to be given to `create_event_filter()` when the
    /// probe is enabled; `None` without one. The listing does not show it.
    pub fn filter(&self) -> Option<&'a [u8]> {
        self.filter.map(|f| f.get(self.text))
    }

    /// Each fetcharg's text after `NAME=` (`%pd`/`%pD` expanded), in order.
    pub fn comms(&self) -> impl Iterator<Item = &'a [u8]> + Clone + 'a {
        let text = self.text;
        self.comms.iter().map(move |c| c.get(text))
    }

    /// `trace_kprobe_has_same_kprobe()` (`trace_fprobe_has_same_fprobe()`)
    /// for one probe: same symbol (address probes all count as symbol
    /// "unknown"), offset and argument texts as `def`.
    pub fn same_probe(&self, def: &ProbeDef<'_>) -> bool {
        fn key<'k>(l: &ProbeLocation<'k>) -> (Option<&'k [u8]>, Option<&'k [u8]>, u32) {
            match *l {
                ProbeLocation::Symbol { symbol, offset } => (Some(symbol), None, offset),
                ProbeLocation::Address(_) => (None, None, 0),
                ProbeLocation::Event(e) => (Some(e.system()), Some(e.event()), 0),
            }
        }
        if key(&self.location()) != key(&def.location) || self.comms.len() != def.nr_args {
            return false;
        }
        self.comms().zip(def.args()).all(|(c, a)| match a {
            Ok(a) => a.comm.eq_bytes(c),
            Err(_) => false,
        })
    }
}

impl DeleteCmd<'_> {
    /// `trace_kprobe_match()` (`trace_fprobe_match()`, which is the same
    /// for a probe at offset 0): whether this command deletes the probe
    /// `spec` of the event `GROUP/EVENT` of `layout`. The module deletes
    /// every matching probe and returns `-ENOENT` if none matched.
    pub fn matches<E: ProbeEnv + ?Sized>(
        &self,
        (group, event): (&[u8], &[u8]),
        layout: &Layout<'_>,
        spec: &Spec<'_>,
        env: &E,
    ) -> bool {
        // A glob as the event (`-:GRP/*`, `-:GRP/vfs_*`) is rkprobes': no
        // event is named with `*`, `?` or `[`, so the kernel's exact
        // comparison never matches one, and finds nothing to delete.
        let glob = self.event.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
        let named = if glob {
            glob_match(self.event, event)
        } else {
            self.event == event
        };
        if !self.event.is_empty() && !named {
            return false;
        }
        if self.group.is_some_and(|g| g != group) {
            return false;
        }
        let mut argv = Argv::new(self.args);
        let Some(head_arg) = argv.next() else {
            return true;
        };
        if let ProbeLocation::Event(e) = spec.location() {
            // `eprobe_dyn_event_match()`: `SYSTEM/EVENT` or `SYSTEM.EVENT`,
            // split at the first `/`, else at the first `.`.
            let Some(sep) = find(head_arg, b'/').or_else(|| find(head_arg, b'.')) else {
                return false;
            };
            if head(head_arg, sep) != e.system() || tail(head_arg, sep + 1) != e.event() {
                return false;
            }
            return args_match(argv, layout, spec);
        }
        // The kernel formats the location into a MAX_ARGSTR_LEN + 1 buffer.
        let mut buf = [0u8; MAX_ARGSTR_LEN];
        let mut w = SliceWriter::new(&mut buf[..]);
        let _ = write_location(&mut w, &spec.location(), env);
        if w.as_bytes() != head_arg {
            return false;
        }
        args_match(argv, layout, spec)
    }
}

/// `trace_probe_match_command_args()`: whether the fetchargs `argv` of a
/// `-:` command are the first ones of the probe, each `NAME=ARG` as the
/// listing shows it.
fn args_match(argv: Argv<'_>, layout: &Layout<'_>, spec: &Spec<'_>) -> bool {
    let given = argv.clone().count();
    if layout.len() < given {
        return false;
    }
    argv.zip(layout.fields().zip(spec.comms()))
        .all(|(g, (f, comm))| {
            g.strip_prefix(f.name)
                .and_then(|r| r.strip_prefix(b"="))
                .is_some_and(|c| c == comm)
        })
}
