// SPDX-License-Identifier: GPL-2.0

//! `e` commands: event probe events, as 6.12's `__trace_eprobe_create()`
//! (`kernel/trace/trace_eprobe.c`) parses them.
//!
//! ```text
//! e[:[GRP/][EVENT]] SYSTEM.EVENT [FETCHARGS] [if FILTER]
//! ```
//!
//! An event probe makes a record of its own each time the trace event
//! `SYSTEM.EVENT` (also written `SYSTEM/EVENT`) makes one, from that
//! record: `$FIELD` is a field of it ([`FetchInsn::TpArg`]), `$comm` the
//! current task's name, and the usual dereferences, types, arrays and
//! bitfields apply to them. `if FILTER` is an event filter on the
//! attached event's records, which decides whether the probe's record is
//! made.
//!
//! The kernel's order of checks: the event name of the first word, then
//! `SYSTEM.EVENT` (`NO_EVENT_INFO` unless it has both parts), the count
//! of fetchargs (`E2BIG`), whether the event exists (`ENODEV`,
//! `BAD_ATTACH_EVENT`), the filter, and then each fetcharg, whose `@SYM`
//! is looked up right after it is parsed. Registers, `$argN`, `$retval`,
//! `$stack` and parameter names are no fetchargs here, and `%pd`/`%pD`
//! are not expanded. The event name defaults to the attached event's.
//!
//! [`FetchInsn::TpArg`]: super::FetchInsn::TpArg

use super::error::{Errno, ErrorCode, ParseError};
use super::fetch::{ArgContext, FieldSource};
use super::kstr::{find, head, tail};
use super::parse::{
    group_and_event, parse_event_name, split_symbol_offset, ArgTypes, Argv, EventFilter, EventName,
    EventRef, ProbeDef, ProbeLocation,
};
use super::program::FetchInsn;
use super::{ProbeEnv, ProbeKind, SymbolCheck, MAX_TRACE_ARGS};

/// `__trace_eprobe_create()` up to the registration, for an `e` command
/// whose first two words are `argv0` and `argv1` and whose fetchargs and
/// filter are `rest`.
pub(super) fn parse_eprobe<'a, E: ProbeEnv + ?Sized>(
    argv0: &'a [u8],
    argv1: &'a [u8],
    rest: &'a [u8],
    env: &'a E,
) -> Result<ProbeDef<'a>, ParseError> {
    // Whatever follows the `e` up to a `:` is ignored.
    let event_start = find(tail(argv0, 1), b':').map(|c| c + 2);
    let (group, event) =
        group_and_event(argv0, event_start, env.default_group_of(ProbeKind::Eprobe))?;

    let (system, sys_event) = target_name(argv1)?;
    let event = match event {
        Some(e) => EventName::Given(e),
        None => EventName::Given(sys_event),
    };

    // The fetchargs end at a word `if`; the filter is the words after it.
    let mut words = Argv::new(rest);
    let mut nr_args = 0usize;
    let mut args_text = rest;
    let mut filter = None;
    loop {
        let before = words.rest();
        match words.next() {
            Some(b"if") => {
                args_text = head(rest, rest.len() - before.len());
                filter = Some(EventFilter::new(words.rest()));
                break;
            }
            Some(_) => nr_args += 1,
            None => break,
        }
    }
    if nr_args > MAX_TRACE_ARGS {
        return Err(ParseError::silent(Errno::E2BIG));
    }

    let Some(fields) = env.trace_event(system, sys_event) else {
        return Err(ParseError::logged(
            Errno::ENODEV,
            ErrorCode::BadAttachEvent,
            1,
            0,
        ));
    };

    if let Some(f) = &filter {
        // The argv index of the filter's first word.
        let index = nr_args + 3;
        if f.is_empty() {
            return Err(ParseError::logged(
                Errno::EINVAL,
                ErrorCode::NoEpFilter,
                index,
                0,
            ));
        }
        // The filter parser logs its own error; any failure is `EINVAL`.
        if env.check_event_filter(system, sys_event, f).is_err() {
            return Err(ParseError::silent(Errno::EINVAL));
        }
    }

    let mut def = ProbeDef {
        kind: ProbeKind::Eprobe,
        is_return: false,
        maxactive: 0,
        group,
        event,
        location: ProbeLocation::Event(EventRef::new(argv1, system.len())),
        context: ArgContext {
            tevent: true,
            ..ArgContext::default()
        },
        nr_args,
        size: 0,
        args_text,
        offsets: env.dentry_offsets(),
        types: ArgTypes::Event {
            fields: FieldSource(fields),
            filter,
            // 6.12 names a fetcharg by its text with BTF arguments
            // configured, which a kernel with BTF has.
            btf_names: env.btf(b"").is_some(),
        },
        names_expanded: false,
    };
    let mut args = def.args();
    for arg in args.by_ref() {
        // Nothing was expanded: error_log shows the fetcharg as written.
        let arg = arg.map_err(|mut e| {
            e.expanded = false;
            e
        })?;
        // `traceprobe_update_arg()`: each `@SYM` is looked up right after
        // its fetcharg is parsed, without an error_log entry.
        for insn in arg.program.insns() {
            if let FetchInsn::Symbol(text) = *insn {
                check_data_symbol(text, env)?;
            }
        }
    }
    def.size = args.size();
    Ok(def)
}

/// `traceprobe_parse_event_name()` of `SYSTEM.EVENT` (`SYSTEM/EVENT`):
/// both parts, or "This requires both group and event name to attach",
/// after what the name's own check logged, if anything.
fn target_name(argv1: &[u8]) -> Result<(&[u8], &[u8]), ParseError> {
    let no_info = ParseError::logged(Errno::EINVAL, ErrorCode::NoEventInfo, 1, 0);
    match parse_event_name(argv1, 0) {
        Ok((Some(system), Some(event))) => Ok((system, event)),
        Ok(_) => Err(no_info),
        // Logged while the error_log's index is the event's word.
        Err(e) => Err(match e.log {
            Some(log) => no_info.preceded_by_at(log.code, log.offset),
            None => no_info,
        }),
    }
}

/// `kallsyms_lookup_name()` of the `@SYM[+|-OFFS]` text `text`: `ENOENT`
/// when no symbol has the name.
fn check_data_symbol<E: ProbeEnv + ?Sized>(text: &[u8], env: &E) -> Result<(), ParseError> {
    let (symbol, _) = split_symbol_offset(text).map_err(ParseError::silent)?;
    let (module, name) = match find(symbol, b':') {
        Some(c) => (Some(head(symbol, c)), tail(symbol, c + 1)),
        None => (None, symbol),
    };
    match env.check_symbol(module, name) {
        SymbolCheck::Unique | SymbolCheck::NotUnique => Ok(()),
        SymbolCheck::NotFound | SymbolCheck::ModuleNotLoaded => {
            Err(ParseError::silent(Errno::ENOENT))
        }
        SymbolCheck::NoMemory => Err(ParseError::silent(Errno::ENOMEM)),
    }
}
