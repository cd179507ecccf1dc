// SPDX-License-Identifier: GPL-2.0

//! error_log's text for a rejected command: the `TP_ERR_*` message, the
//! command as the kernel rebuilds it from its argv, and the caret under the
//! offending byte, as `__trace_probe_log_err()` writes them.

use core::fmt;

use super::bytes::{ByteWrite, Fmt};
use super::error::{ErrorLog, ParseError};

/// The error_log "location" the kernel uses for kprobe events.
pub const KPROBE_ERROR_SUBSYSTEM: &str = "trace_kprobe";

/// The error_log "location" the kernel uses for fprobe and tracepoint
/// probe events.
pub const FPROBE_ERROR_SUBSYSTEM: &str = "trace_fprobe";

/// The error_log "location" the kernel uses for event probe (`e`)
/// events.
pub const EPROBE_ERROR_SUBSYSTEM: &str = "event_probe";

/// The prefix of error_log's command line.
pub const CMD_PREFIX: &str = "  Command: ";

/// Writes the argv of `line` joined by single spaces, as
/// `__trace_probe_log_err()` rebuilds the command, and returns the caret
/// column for `log` (before the prefix).
///
/// `expand` says whether `%pd`/`%pD` arguments are shown expanded, with
/// the dentry/file offsets of `env`.
fn write_command<W: ByteWrite + ?Sized, E: super::ProbeEnv + ?Sized>(
    w: &mut W,
    line: &[u8],
    log: &ErrorLog,
    expand: bool,
    env: &E,
) -> Result<usize, fmt::Error> {
    let mut len = 0usize;
    let mut pos = None;
    let offsets = super::DentryOffsets::from_env(env);
    for (i, arg) in super::parse::Argv::new(line).enumerate() {
        if i == usize::from(log.index) {
            pos = Some(len);
        }
        if i > 0 {
            w.write_bytes(b" ")?;
        }
        let arg_len = if expand && i >= 2 {
            super::argtext::write_expanded_arg(w, arg, &offsets)?
        } else {
            w.write_bytes(arg)?;
            arg.len()
        };
        len = len.saturating_add(arg_len).saturating_add(1);
    }
    // Past the last argument the kernel puts the caret one column after
    // "last argument + space", since its length counts the final NUL.
    Ok(match pos {
        Some(p) => p.saturating_add(usize::from(log.offset)),
        None => len,
    })
}

/// Writes the error_log entry for `err` on the command `line`, without the
/// timestamp the kernel prefixes: `SUBSYSTEM: error: TEXT`, the command
/// line and the caret line, each ending in a newline.
///
/// Writes nothing for an error the kernel does not log.
pub fn write_error_log<W: ByteWrite + ?Sized, E: super::ProbeEnv + ?Sized>(
    w: &mut W,
    subsystem: &str,
    line: &[u8],
    err: &ParseError,
    env: &E,
) -> fmt::Result {
    let Some(log) = err.log else {
        return Ok(());
    };
    w.write_bytes(subsystem.as_bytes())?;
    w.write_bytes(b": error: ")?;
    w.write_bytes(log.code.text().as_bytes())?;
    w.write_bytes(b"\n")?;
    write_command_and_caret(w, line, err, env)
}

/// Writes error_log's second and third lines for `err`: the `  Command: `
/// line and the caret line under the offending byte.
pub fn write_command_and_caret<W: ByteWrite + ?Sized, E: super::ProbeEnv + ?Sized>(
    w: &mut W,
    line: &[u8],
    err: &ParseError,
    env: &E,
) -> fmt::Result {
    let Some(log) = err.log else {
        return Ok(());
    };
    w.write_bytes(CMD_PREFIX.as_bytes())?;
    let pos = write_command(w, line, &log, err.expanded, env)?;
    w.write_bytes(b"\n")?;
    // error_log keeps the position in a u16.
    let pos = pos & 0xffff;
    for _ in 0..CMD_PREFIX.len().saturating_add(pos) {
        w.write_bytes(b" ")?;
    }
    w.write_bytes(b"^\n")
}

/// Writes the timestamp prefix error_log puts before each entry,
/// `[%5llu.%06u] `, for a `local_clock()` value in nanoseconds.
pub fn write_error_timestamp<W: ByteWrite + ?Sized>(w: &mut W, ts_ns: u64) -> fmt::Result {
    use core::fmt::Write as _;
    let sec = ts_ns / 1_000_000_000;
    let usec = (ts_ns % 1_000_000_000) / 1000;
    write!(Fmt(w), "[{sec:5}.{usec:06}] ")
}
