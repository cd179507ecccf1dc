// SPDX-License-Identifier: GPL-2.0

//! What a fetcharg is called and how `kprobe_events` lists it: names (given
//! or `argN`, checked as the kernel's `is_good_name()`), and the text after
//! `NAME=`, with `%pd`/`%pD` expanded into the dereferences the kernel
//! shows for them.

use core::fmt;

use super::bytes::{ByteWrite, Fmt};
use super::kstr::{find, head, is_alpha, is_digit, tail};
use super::DentryOffsets;

/// Names the kernel reserves for an event's own fields.
pub const RESERVED_FIELD_NAMES: [&str; 8] = [
    "common_type",
    "common_flags",
    "common_preempt_count",
    "common_pid",
    "common_tgid",
    "__probe_ip",
    "__probe_ret_ip",
    "__probe_func",
];

/// `is_good_name()` (`hash_ok` false) and `is_good_system_name()` (true):
/// a C identifier, letters per the kernel's Latin-1 `isalpha()`.
pub fn is_good_name(name: &[u8], hash_ok: bool) -> bool {
    let ok_first = |c: u8| is_alpha(c) || c == b'_' || (hash_ok && c == b'-');
    match name.split_first() {
        None => false,
        Some((&first, rest)) => ok_first(first) && rest.iter().all(|&c| ok_first(c) || is_digit(c)),
    }
}

/// A fetcharg's name: given as `NAME=`, or generated as `argN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgName<'a> {
    /// `NAME=` as written.
    Given(&'a [u8]),
    /// `argN`, N counting from 1, for an unnamed fetcharg.
    Auto(AutoArgName),
}

/// The text of a generated `argN` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AutoArgName {
    buf: [u8; 8],
    len: u8,
}

impl AutoArgName {
    pub(crate) fn new(n: usize) -> AutoArgName {
        let mut w = super::bytes::SliceWriter::new([0u8; 8]);
        let _ = fmt::Write::write_fmt(&mut Fmt(&mut w), format_args!("arg{n}"));
        let (buf, len) = w.into_parts();
        AutoArgName {
            buf,
            len: len as u8,
        }
    }
}

impl<'a> ArgName<'a> {
    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            ArgName::Given(s) => s,
            ArgName::Auto(a) => head(&a.buf, usize::from(a.len)),
        }
    }
}

/// What the kernel expands `VAR:%pd` / `VAR:%pD` to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DentryArg<'a> {
    /// The fetcharg the `%pd` applies to.
    pub inner: &'a [u8],
    /// `%pD`: a `struct file *` rather than a `struct dentry *`.
    pub file: bool,
    /// The struct offsets used in the expansion.
    pub offsets: DentryOffsets,
}

impl DentryArg<'_> {
    fn write_to<W: ByteWrite + ?Sized>(&self, w: &mut W) -> Result<usize, fmt::Error> {
        let mut c = Counter { inner: w, n: 0 };
        {
            let mut f = Fmt(&mut c);
            fmt::Write::write_fmt(
                &mut f,
                format_args!("+0x0(+0x{:x}(", self.offsets.dentry_name),
            )?;
            if self.file {
                fmt::Write::write_fmt(&mut f, format_args!("+0x{:x}(", self.offsets.file_dentry))?;
            }
        }
        c.write_bytes(self.inner)?;
        c.write_bytes(if self.file { b")))" } else { b"))" })?;
        c.write_bytes(b":string")?;
        Ok(c.n)
    }
}

/// Counts what passes through to `inner`.
struct Counter<'w, W: ?Sized> {
    inner: &'w mut W,
    n: usize,
}

impl<W: ByteWrite + ?Sized> ByteWrite for Counter<'_, W> {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        self.n = self.n.saturating_add(b.len());
        self.inner.write_bytes(b)
    }
}

/// A sink that only counts.
struct Discard;

impl ByteWrite for Discard {
    fn write_bytes(&mut self, _: &[u8]) -> fmt::Result {
        Ok(())
    }
}

/// A fetcharg's text as `kprobe_events` lists it after `NAME=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgText<'a> {
    /// As written.
    Plain(&'a [u8]),
    /// Expanded from `%pd`/`%pD`.
    Dentry(DentryArg<'a>),
}

impl ArgText<'_> {
    /// Writes the text.
    pub fn write_to<W: ByteWrite + ?Sized>(&self, w: &mut W) -> fmt::Result {
        match self {
            ArgText::Plain(s) => w.write_bytes(s),
            ArgText::Dentry(d) => d.write_to(w).map(|_| ()),
        }
    }

    /// Whether the text equals `s`.
    pub fn eq_bytes(&self, s: &[u8]) -> bool {
        match self {
            ArgText::Plain(p) => *p == s,
            ArgText::Dentry(_) => {
                let mut cmp = Compare {
                    rest: s,
                    equal: true,
                };
                let _ = self.write_to(&mut cmp);
                cmp.equal && cmp.rest.is_empty()
            }
        }
    }
}

/// Compares what is written with a byte string.
struct Compare<'s> {
    rest: &'s [u8],
    equal: bool,
}

impl ByteWrite for Compare<'_> {
    fn write_bytes(&mut self, b: &[u8]) -> fmt::Result {
        match self.rest.strip_prefix(b) {
            Some(r) => self.rest = r,
            None => {
                self.equal = false;
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
}

/// Whether an argv entry is a `%pd`/`%pD` argument (`*:%p[dD]`).
fn dentry_kind(arg: &[u8]) -> Option<bool> {
    let n = arg.len();
    let suffix = arg.get(n.checked_sub(4)?..)?;
    match suffix {
        b":%pd" => Some(false),
        b":%pD" => Some(true),
        _ => None,
    }
}

/// The layout of an expanded `%pd` argument.
#[derive(Clone, Copy)]
pub(crate) struct DentryLayout<'a> {
    /// `NAME` of `NAME=`, if any.
    pub(crate) name: Option<&'a [u8]>,
    pub(crate) arg: DentryArg<'a>,
    /// Offset of the inner fetcharg in the original and expanded text.
    pub(crate) inner_orig: usize,
    pub(crate) inner_expanded: usize,
}

pub(crate) fn dentry_layout<'a>(
    arg: &'a [u8],
    offsets: &DentryOffsets,
) -> Option<DentryLayout<'a>> {
    let file = dentry_kind(arg)?;
    let tmp = head(arg, arg.len() - 4);
    let (name, inner, inner_orig) = match find(tmp, b'=') {
        Some(eq) => (Some(head(tmp, eq)), tail(tmp, eq + 1), eq + 1),
        None => (None, tmp, 0),
    };
    let d = DentryArg {
        inner: &[],
        file,
        offsets: *offsets,
    };
    let prefix = d.write_to(&mut Discard).ok()? - ":string".len() - if file { 3 } else { 2 };
    Some(DentryLayout {
        name,
        arg: DentryArg { inner, ..d },
        inner_orig,
        inner_expanded: inner_orig + prefix,
    })
}

/// Writes an argv entry as the kernel shows it after `%pd` expansion and
/// returns its length.
pub(crate) fn write_expanded_arg<W: ByteWrite + ?Sized>(
    w: &mut W,
    arg: &[u8],
    offsets: &DentryOffsets,
) -> Result<usize, fmt::Error> {
    match dentry_layout(arg, offsets) {
        None => {
            w.write_bytes(arg)?;
            Ok(arg.len())
        }
        Some(l) => {
            let mut n = 0;
            if let Some(name) = l.name {
                w.write_bytes(name)?;
                w.write_bytes(b"=")?;
                n = name.len() + 1;
            }
            Ok(n + l.arg.write_to(w)?)
        }
    }
}

/// Length of the expanded form of a `%pd` argument, `None` for others.
pub(crate) fn expanded_len(arg: &[u8], offsets: &DentryOffsets) -> Option<usize> {
    dentry_layout(arg, offsets)?;
    write_expanded_arg(&mut Discard, arg, offsets).ok()
}

/// Largest expanded `%pd` text (`MAX_DENTRY_ARGS_LEN` less the NUL).
pub(crate) const EXPANDED_MAX: usize = super::MAX_DENTRY_ARGS_LEN;
