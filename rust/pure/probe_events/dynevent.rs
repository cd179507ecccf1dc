// SPDX-License-Identifier: GPL-2.0

//! The probe commands of 6.12's `dynamic_events` (`create_dyn_event()`,
//! `kernel/trace/trace_dynevent.c`): each line goes to the probe type its
//! first byte names, `p`/`r` to kprobes ([`parse_command_in`]), `f` and `t`
//! to fprobes ([`fprobe`](super::fprobe)), `e` to event probes
//! ([`eprobe`](super::eprobe)); `-:` and `!` delete events of any type. A
//! control file that takes `f`, `t` and `e` commands parses with
//! [`parse_dyn_command_in`] where `kprobe_events` parses with
//! [`parse_command_in`].

use super::eprobe::parse_eprobe;
use super::error::{Errno, ParseError};
use super::fprobe::parse_fprobe;
use super::kstr::{at, c_str, find, tail};
use super::parse::{parse_command_in, Argv, Command, DeleteCmd};
use super::{ProbeEnv, ProbeKind};

/// Parses one command line as `dynamic_events` does, against the kernel
/// state `env` reports: [`parse_command`](super::parse_command) for any
/// probe type. A command whose `$arg*`/`$argN` become parameter names
/// needs room for its rewritten fetchargs: [`parse_dyn_command_in`].
pub fn parse_dyn_command<'a, E: ProbeEnv + ?Sized>(
    line: &'a [u8],
    env: &'a E,
) -> Result<Command<'a>, ParseError> {
    parse_dyn_command_in(line, env, &mut [])
}

/// [`parse_dyn_command`], writing rewritten fetchargs into `buf`
/// ([`EXPANDED_ARGS_LEN`](super::EXPANDED_ARGS_LEN) bytes are always
/// enough).
///
/// A [`Command::Probe`] says which kind of probe it is in
/// [`ProbeDef::kind`](super::ProbeDef::kind); errors are logged under
/// that kind's [`ProbeKind::subsystem`]. `p` and `r` commands and `-:`
/// are exactly [`parse_command_in`]'s.
pub fn parse_dyn_command_in<'a, E: ProbeEnv + ?Sized>(
    line: &'a [u8],
    env: &'a E,
    buf: &'a mut [u8],
) -> Result<Command<'a>, ParseError> {
    let line = c_str(line);
    if at(line, 0) == b'!' {
        return parse_bang_delete(line).map(Command::Delete);
    }
    let kind = match ProbeKind::of_command(line) {
        Some(k @ (ProbeKind::Fprobe | ProbeKind::Tprobe | ProbeKind::Eprobe)) => k,
        _ => return parse_command_in(line, env, buf),
    };
    let mut argv = Argv::new(line);
    let argv0 = argv.next().unwrap_or(&[]);
    // Too few words: every probe type declines (`-ECANCELED`), which the
    // write answers with `-EINVAL`.
    let Some(argv1) = argv.next() else {
        return Err(ParseError::silent(Errno::EINVAL));
    };
    let def = if kind == ProbeKind::Eprobe {
        parse_eprobe(argv0, argv1, argv.rest(), env)
    } else {
        parse_fprobe(
            argv0,
            argv1,
            argv.rest(),
            kind == ProbeKind::Tprobe,
            env,
            buf,
        )
    };
    def.map(Command::Probe)
}

/// `dyn_event_release()` of `![...:][GRP/][EVENT] [ARGS]`: the event is
/// what follows the first `:` of the first word.
fn parse_bang_delete(line: &[u8]) -> Result<DeleteCmd<'_>, ParseError> {
    let mut argv = Argv::new(line);
    let argv0 = argv.next().unwrap_or(&[]);
    let Some(colon) = find(argv0, b':') else {
        return Err(ParseError::silent(Errno::EINVAL));
    };
    let event = tail(argv0, colon + 1);
    let (group, event) = match find(event, b'/') {
        Some(slash) => (event.get(..slash), tail(event, slash + 1)),
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
