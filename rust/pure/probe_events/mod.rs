// SPDX-License-Identifier: GPL-2.0

//! The kprobe_events command language, as Linux 6.12 parses it.
//!
//! rkprobes' `kprobe_events` must accept exactly what the kernel's
//! `tracing/kprobe_events` accepts and reject the rest with the same errno
//! and the same error_log entry. This module is the pure part of that: it
//! splits a write into commands ([`WriteLines`]), parses a command
//! ([`parse_command`]) into a probe definition or a deletion, compiles each
//! fetcharg into a fetch program, prints a probe as `cat kprobe_events`
//! shows it and formats fetched values as trace output does. Looking up
//! symbols and registering the probe stay in the module; the parser asks the
//! module what it needs through [`ProbeEnv`].
//!
//! [`parse_dyn_command`] takes what 6.12's `dynamic_events` takes of probes
//! on the kernel: `p`/`r` as above, and fprobe (`f`) and tracepoint probe
//! (`t`) events (`kernel/trace/trace_fprobe.c`), and event probe (`e`)
//! events on an existing trace event (`kernel/trace/trace_eprobe.c`,
//! [`eprobe`]), whose definitions say which they are in
//! [`ProbeDef::kind`].
//!
//! Nothing here allocates: a parsed command borrows the command's text and
//! re-parses one fetcharg at a time ([`ProbeDef::args`]). A successful
//! [`parse_command`] has parsed every fetcharg once, so that iterating them
//! afterwards cannot fail. What an accepted command leaves behind is made
//! from its definition once ([`layout`]: the event's record layout and the
//! probe's listing form) in storage the module owns, and read from then on
//! without parsing: trace output, the listing, `format` and `-:` matching.
//!
//! Files, from the bottom up (each uses only those above it): `kstr` (the
//! kernel's string helpers), `error` (errno and error_log codes), `bytes`
//! (byte output), `types` (fetch types), `regs` (registers), `program`
//! (fetch programs), `argtext` (fetcharg names and listed text), `fetch` (a
//! fetcharg compiled into a program), `parse` (commands), `fprobe` (`f`
//! and `t` commands), `eprobe` (`e` commands), `dynevent` (the commands of
//! every probe type),
//! `layout` (what an event keeps), `print` (the listing and trace output),
//! `error_log` (error_log's text); `exec` and `stage` run programs at a
//! hit.

pub mod argtext;
pub mod btfarg;
pub mod bytes;
pub mod dynevent;
pub mod eprobe;
pub mod error;
pub mod error_log;
pub mod exec;
pub mod fetch;
pub mod fprobe;
pub mod kstr;
pub mod layout;
pub mod parse;
pub mod print;
pub mod program;
pub mod regs;
pub mod stage;
pub mod types;

use crate::pure::btf::Btf;

pub use argtext::{ArgName, ArgText};
pub use bytes::ByteWrite;
pub use dynevent::{parse_dyn_command, parse_dyn_command_in};
pub use error::{Errno, ErrorCode, ErrorLog, ParseError};
pub use error_log::write_error_log;
pub use fetch::{ArgContext, FetchArg};
pub use fprobe::FunctionFilter;
pub use layout::{EventLayout, Layout, ProbeSpec, Spec, Store};
pub use parse::{
    parse_command, parse_command_in, Command, DeleteCmd, EventFilter, EventName, EventRef,
    FetchArgs, ProbeDef, ProbeLocation, WriteLines, EXPANDED_ARGS_LEN,
};
pub use print::{write_listing, SymbolResolver};
pub use program::{EventField, FetchInsn, FetchProgram, FieldString};
pub use regs::Register;
pub use types::{ArgType, Bitfield, FetchType};

/// Most fetchargs a probe can have.
pub const MAX_TRACE_ARGS: usize = 128;
/// Longest fetcharg body (after `NAME=`).
pub const MAX_ARGSTR_LEN: usize = 63;
/// Largest array length in `TYPE[N]`.
pub const MAX_ARRAY_LEN: u32 = 64;
/// Longest fetcharg name.
pub const MAX_ARG_NAME_LEN: usize = 32;
/// Size of the kernel's event and group name buffers: names are shorter.
pub const MAX_EVENT_NAME_LEN: usize = 64;
/// Largest string a string fetcharg stores (`PATH_MAX`).
pub const MAX_STRING_SIZE: usize = 4096;
/// Largest total size of a probe's fixed fields.
pub const MAX_PROBE_EVENT_SIZE: u32 = 3072;
/// Fetch instructions per fetcharg, including the final end.
pub const FETCH_INSN_MAX: usize = 16;
/// Largest kretprobe maxactive.
pub const KRETPROBE_MAXACTIVE_MAX: u32 = 4096;
/// Size of the kernel's write buffer; a command line holds at most
/// `WRITE_BUFSIZE - 2` bytes and its newline.
pub const WRITE_BUFSIZE: usize = 4096;
/// Room for all `%pd`/`%pD` expansions of one command.
pub const MAX_DENTRY_ARGS_LEN: usize = 256;
/// Room for the parameter names `$arg*` and `$argN` become in one command.
pub const MAX_BTF_ARGS_LEN: usize = 128;
/// Largest N of `$stackN` and `$argN`: `THREAD_SIZE / sizeof(long)` for
/// x86-64's 16 KiB stacks.
pub const PARAM_MAX_STACK: u64 = 2048;
/// The group of events created without `GRP/` (the kernel uses `kprobes`).
pub const DEFAULT_GROUP: &str = "rkprobes";
/// The group of fprobe events created without `GRP/`, the kernel's
/// (`FPROBE_EVENT_SYSTEM`).
pub const FPROBE_GROUP: &str = "fprobes";
/// The group of tracepoint probe events created without `GRP/`, the
/// kernel's (`TRACEPOINT_EVENT_SYSTEM`).
pub const TPROBE_GROUP: &str = "tracepoints";
/// The group of event probe events created without `GRP/`, the kernel's
/// (`EPROBE_EVENT_SYSTEM`).
pub const EPROBE_GROUP: &str = "eprobes";

/// Which of the kernel's dynamic event types a probe is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// `p` or `r`: a kprobe or kretprobe event (`trace_kprobe.c`).
    Kprobe,
    /// `f`: an fprobe event, on a function's entry or exit
    /// (`trace_fprobe.c`).
    Fprobe,
    /// `t`: a tracepoint probe event, an fprobe on the entry of the
    /// tracepoint's stub function `__probestub_TP` (`trace_fprobe.c`).
    Tprobe,
    /// `e`: an event probe event, whose records are made from the records
    /// of another trace event, when that one is hit (`trace_eprobe.c`).
    Eprobe,
}

impl ProbeKind {
    /// The kind of probe the command `line` creates, told apart as the
    /// kernel's dynamic event types tell theirs: by the first byte of its
    /// first word. `None` for a deletion, an empty line or anything else.
    pub fn of_command(line: &[u8]) -> Option<ProbeKind> {
        if kstr::at(line, 0) == b'-' {
            return None;
        }
        match kstr::at(parse::Argv::new(line).next()?, 0) {
            b'p' | b'r' => Some(ProbeKind::Kprobe),
            b'f' => Some(ProbeKind::Fprobe),
            b't' => Some(ProbeKind::Tprobe),
            b'e' => Some(ProbeKind::Eprobe),
            _ => None,
        }
    }

    /// The error_log location of this kind's errors (what
    /// `trace_probe_log_init()` is given).
    pub fn subsystem(self) -> &'static str {
        match self {
            ProbeKind::Kprobe => error_log::KPROBE_ERROR_SUBSYSTEM,
            ProbeKind::Fprobe | ProbeKind::Tprobe => error_log::FPROBE_ERROR_SUBSYSTEM,
            ProbeKind::Eprobe => error_log::EPROBE_ERROR_SUBSYSTEM,
        }
    }

    /// Whether an event of this kind and one of `other` are of the same
    /// dynamic event type in the kernel (`trace_kprobe`, `trace_fprobe`
    /// or `trace_eprobe`): only then can a probe of one join an event of
    /// the other (else the name is taken, `EVENT_EXIST`). Event probes
    /// are their own type, and join no event even of their type
    /// ([`ProbeKind::appends`]).
    pub fn same_event_type(self, other: ProbeKind) -> bool {
        let family = |k| match k {
            ProbeKind::Kprobe => 0,
            ProbeKind::Fprobe | ProbeKind::Tprobe => 1,
            ProbeKind::Eprobe => 2,
        };
        family(self) == family(other)
    }

    /// Whether a probe of this kind can join an existing event of its
    /// dynamic event type, as a second probe of a multiprobe event. An
    /// event probe cannot: 6.12's `__trace_eprobe_create()` registers a
    /// new event call every time, and a name in use is `EVENT_EXIST`.
    pub fn appends(self) -> bool {
        self != ProbeKind::Eprobe
    }
}

/// What `find_tracepoint()` finds for the tracepoint of a `t` command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TracepointCheck {
    /// In the kernel or a loaded module: the fetchargs are typed from its
    /// stub function, `__probestub_TP`.
    Loaded,
    /// Nowhere, on a kernel with modules: accepted, as the tracepoint of a
    /// module that may come later. As in 6.12, the fetchargs are typed from
    /// the function named as the tracepoint, if BTF has one.
    NotLoaded,
    /// Nowhere, on a kernel without modules: "Tracepoint is not found".
    NotFound,
}

/// Offsets `%pd`/`%pD` expand to, which depend on the kernel's build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DentryOffsets {
    /// `offsetof(struct dentry, d_name.name)`.
    pub dentry_name: u64,
    /// `offsetof(struct file, f_path.dentry)`.
    pub file_dentry: u64,
}

impl DentryOffsets {
    /// The offsets of an x86-64 6.12 build without lock debugging.
    pub const DEFAULT: DentryOffsets = DentryOffsets {
        dentry_name: 0x28,
        file_dentry: 0x48,
    };

    /// The offsets `env` reports.
    pub fn from_env<E: ProbeEnv + ?Sized>(env: &E) -> DentryOffsets {
        env.dentry_offsets()
    }
}

/// What `validate_probe_symbol()` finds for `[MOD:]SYM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolCheck {
    /// Exactly one symbol of that name: accepted.
    Unique,
    /// `MOD:` names a module that is not loaded: accepted, the probe is
    /// registered when the module comes.
    ModuleNotLoaded,
    /// No such symbol: "Invalid probed address or symbol".
    NotFound,
    /// Several symbols of that name: "The symbol is not unique".
    NotUnique,
    /// No memory to look: the command fails with `ENOMEM`, as the kernel's
    /// does when an allocation of its parser fails.
    NoMemory,
}

/// What `kprobe_on_func_entry()` answers for a symbol and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FuncEntry {
    /// The address is a function's entry (allows `$argN` on a kprobe).
    Entry,
    /// The address is inside a function (`-EINVAL`; a kretprobe there is
    /// refused with "Retprobe address must be an function entry").
    NotEntry,
    /// The symbol could not be resolved (`-ENOENT`, say for a module not
    /// loaded yet); decided again at registration.
    Unknown,
    /// No memory to look: the command fails with `ENOMEM`.
    NoMemory,
}

/// The kernel state the parser consults, provided by the module.
///
/// The kernel looks symbols up while parsing, before it reads the event
/// name, so the answers decide which error a bad command gets.
pub trait ProbeEnv {
    /// `validate_probe_symbol()`: looks up `symbol` (after `MOD:`) in
    /// `module`, or in the whole kernel and all modules when `None`.
    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck;

    /// `kprobe_on_func_entry()` for `symbol` (as written, `MOD:SYM`
    /// included) plus `offset`.
    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry;

    /// The value `%p` prints for an address (the kernel hashes pointers);
    /// used in generated event names and in the listing of address probes.
    fn pointer_id(&self, addr: u64) -> u64 {
        addr
    }

    /// The group of events given without `GRP/`.
    fn default_group(&self) -> &'static [u8] {
        DEFAULT_GROUP.as_bytes()
    }

    /// The group of events of `kind` given without `GRP/`: kprobes'
    /// [`ProbeEnv::default_group`], else the kernel's.
    fn default_group_of(&self, kind: ProbeKind) -> &'static [u8] {
        match kind {
            ProbeKind::Kprobe => self.default_group(),
            ProbeKind::Fprobe => FPROBE_GROUP.as_bytes(),
            ProbeKind::Tprobe => TPROBE_GROUP.as_bytes(),
            ProbeKind::Eprobe => EPROBE_GROUP.as_bytes(),
        }
    }

    /// `find_and_get_event()` for the event `SYSTEM.EVENT` of an `e`
    /// command: the fields of the event when it is one an event probe can
    /// attach to (a trace event of that system and name that is not a
    /// kprobe, uprobe or event probe event, nor one of the events the
    /// kernel marks `TRACE_EVENT_FL_IGNORE_ENABLE`), else `None`
    /// ("Attached event does not exist"). The default knows no event.
    fn trace_event(&self, _system: &[u8], _event: &[u8]) -> Option<&dyn EventFields> {
        None
    }

    /// `create_event_filter()` of the filter `filter` of an `e` command on
    /// the event `SYSTEM.EVENT` (which [`ProbeEnv::trace_event`] found):
    /// whether the tracing core parses it as a filter of that event's
    /// records. The kernel's filter parser logs its own error_log entry
    /// (`event filter parse error`); the command fails with `EINVAL`
    /// whatever this returns. The default accepts every filter.
    fn check_event_filter(
        &self,
        _system: &[u8],
        _event: &[u8],
        _filter: &EventFilter<'_>,
    ) -> Result<(), Errno> {
        Ok(())
    }

    /// `find_tracepoint()` for the tracepoint `name` of a `t` command, in
    /// the kernel and its loaded modules. The default knows none, as a
    /// kernel with modules where none has it.
    fn tracepoint(&self, _name: &[u8]) -> TracepointCheck {
        TracepointCheck::NotLoaded
    }

    /// The struct offsets `%pd`/`%pD` use.
    fn dentry_offsets(&self) -> DentryOffsets {
        DentryOffsets::DEFAULT
    }

    /// The BTF in which the function `func` (`[MOD:]SYM`, empty for a
    /// probe at an address) and its parameters are looked up: a module's
    /// when the function is the module's, else the kernel's. `None` on a
    /// kernel without BTF: fetchargs cannot name parameters there, as on
    /// a kernel without `CONFIG_PROBE_EVENTS_BTF_ARGS`.
    fn btf(&self, _func: &[u8]) -> Option<Btf<'_>> {
        None
    }
}

/// The fields of the trace events an `e` command may attach to.
pub trait EventFields {
    /// The field `name` of the event `SYSTEM.EVENT` among the event's own
    /// fields (`trace_get_fields()`: not the common ones, `common_pid` and
    /// the like), as `parse_trace_event_arg()` finds it; `None` when the
    /// event has no such field.
    fn field(&self, system: &[u8], event: &[u8], name: &[u8]) -> Option<EventField>;
}

/// A [`ProbeEnv`] that accepts every symbol as unique and at function entry
/// when the offset is 0, and knows every tracepoint and every trace event,
/// whose every field is an unsigned 8-byte number at the record's start:
/// for checking syntax alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyntaxOnlyEnv;

impl ProbeEnv for SyntaxOnlyEnv {
    fn check_symbol(&self, _module: Option<&[u8]>, _symbol: &[u8]) -> SymbolCheck {
        SymbolCheck::Unique
    }

    fn func_entry(&self, _symbol: &[u8], offset: u64) -> FuncEntry {
        if offset == 0 {
            FuncEntry::Entry
        } else {
            FuncEntry::NotEntry
        }
    }

    fn tracepoint(&self, _name: &[u8]) -> TracepointCheck {
        TracepointCheck::Loaded
    }

    fn trace_event(&self, _system: &[u8], _event: &[u8]) -> Option<&dyn EventFields> {
        Some(self)
    }
}

impl EventFields for SyntaxOnlyEnv {
    fn field(&self, _system: &[u8], _event: &[u8], _name: &[u8]) -> Option<EventField> {
        Some(EventField {
            offset: 0,
            size: 8,
            signed: false,
            string: FieldString::None,
        })
    }
}
