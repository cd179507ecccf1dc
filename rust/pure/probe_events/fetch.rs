// SPDX-License-Identifier: GPL-2.0

//! Fetchargs: parsing one `[NAME=]FETCHARG[:TYPE]` into a fetch program.
//!
//! The kernel compiles each fetcharg into at most `FETCH_INSN_MAX` fetch
//! instructions (load, dereferences, store, bitfield, array loop, end) and
//! several of its errors ("Dereference is too much nested") are decided by
//! running out of those slots, so the program here has the same slots and is
//! filled in the same order. Nested `+OFFS(...)` dereferences are walked with
//! an explicit, bounded stack instead of the kernel's recursion, reproducing
//! its order of checks (braces and offsets outside in, the rest inside out)
//! and its error offsets, including where they are off by one.

use super::argtext::{
    dentry_layout, is_good_name, write_expanded_arg, ArgName, ArgText, AutoArgName, EXPANDED_MAX,
    RESERVED_FIELD_NAMES,
};
use super::btfarg::{self, Last, StringFrom};
use super::error::{Errno, ErrorCode, ParseError};
use super::kstr::{
    at, find, head, is_alpha, is_digit, kstrtoll, kstrtoll_negated, kstrtoull, rfind, tail,
};
use super::program::{EventField, FetchInsn, FetchProgram, Span};
use super::regs::Register;
use super::types::{split_type, ArgType, Bitfield, FetchType};
use super::{
    DentryOffsets, EventFields, FETCH_INSN_MAX, MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN,
    MAX_PROBE_EVENT_SIZE, PARAM_MAX_STACK,
};
use crate::pure::btf::{Btf, Kind};

/// The code buffer being filled, with the kernel's cursor.
struct Code {
    insns: [FetchInsn<Span>; FETCH_INSN_MAX],
    cur: usize,
}

const END_SLOT: usize = FETCH_INSN_MAX - 1;

impl Code {
    fn new() -> Code {
        let mut insns = [FetchInsn::Nop; FETCH_INSN_MAX];
        if let Some(last) = insns.last_mut() {
            *last = FetchInsn::End;
        }
        Code { insns, cur: 0 }
    }

    fn op(&self) -> FetchInsn<Span> {
        self.insns.get(self.cur).copied().unwrap_or(FetchInsn::End)
    }

    fn set(&mut self, insn: FetchInsn<Span>) {
        if let Some(slot) = self.insns.get_mut(self.cur) {
            *slot = insn;
        }
    }

    /// `if (++code == end)`: false when the cursor reached the end slot.
    fn advance_to_free(&mut self) -> bool {
        self.cur += 1;
        self.cur < END_SLOT
    }

    /// `code++; if (code->op != FETCH_OP_NOP)`: false on an occupied slot.
    fn advance_to_nop(&mut self) -> bool {
        self.cur += 1;
        matches!(self.op(), FetchInsn::Nop)
    }
}

/// Where a probe's fetchargs are evaluated, which decides `$argN`,
/// `$retval` and what BTF-style names report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ArgContext {
    /// A kretprobe on a symbol, or an fprobe on a function's exit
    /// (`TPARG_FL_RETURN`).
    pub on_return: bool,
    /// A kprobe at a function's entry, or an fprobe or tracepoint probe
    /// (`TPARG_FL_FENTRY`).
    pub on_entry: bool,
    /// An fprobe or tracepoint probe (`TPARG_FL_FPROBE`): a register is
    /// no fetcharg there.
    pub fprobe: bool,
    /// A tracepoint probe (`TPARG_FL_TPOINT`): the probed function is the
    /// tracepoint's stub, whose first argument, the tracepoint's data, is
    /// hidden: `$arg1` and the first parameter name are its second.
    pub tracepoint: bool,
    /// An event probe (`TPARG_FL_TEVENT`): `$NAME` is a field of the
    /// record of the event it is attached to, or `$comm`; there are no
    /// registers, arguments or parameter names, `$comm` and immediate
    /// strings take any type, and `%pd`/`%pD` are no types.
    pub tevent: bool,
}

/// Where the fields of an event probe's event are looked up: what
/// [`ProbeEnv::trace_event`](super::ProbeEnv::trace_event) found.
#[derive(Clone, Copy)]
pub(crate) struct FieldSource<'a>(pub(crate) &'a dyn EventFields);

// Two definitions on the same event have the same fields, whoever looks
// them up: the source is no part of a definition's identity.
impl PartialEq for FieldSource<'_> {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for FieldSource<'_> {}

impl core::hash::Hash for FieldSource<'_> {
    fn hash<H: core::hash::Hasher>(&self, _h: &mut H) {}
}

impl core::fmt::Debug for FieldSource<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FieldSource")
    }
}

/// The event an event probe is attached to, whose fields its `$FIELD`
/// fetchargs read (the kernel's `ctx->event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TargetEvent<'a> {
    /// The event's system (`SYSTEM` of `SYSTEM.EVENT`).
    pub(crate) system: &'a [u8],
    /// The event's name.
    pub(crate) event: &'a [u8],
    /// Where its fields are looked up.
    pub(crate) fields: FieldSource<'a>,
}

impl TargetEvent<'_> {
    /// `parse_trace_event_arg()`: the event's field `name`.
    fn field(&self, name: &[u8]) -> Option<EventField> {
        self.fields.0.field(self.system, self.event, name)
    }
}

/// Where a probe's typed (BTF) arguments are looked up: the kernel's
/// `CONFIG_PROBE_EVENTS_BTF_ARGS` with BTF loaded. Without it (`None` in
/// [`ArgEnv`]) a parameter name is "BTF is not available".
#[derive(Clone, Copy)]
pub(crate) struct Typed<'a> {
    /// The BTF the function is looked up in.
    pub(crate) btf: Btf<'a>,
    /// The function's prototype's type id, `None` when BTF has no such
    /// function (an id rather than the type: a command is kept small).
    pub(crate) proto: Option<u32>,
    /// Leading parameters that fetchargs do not see: 1 for a tracepoint's
    /// stub (its data pointer), else 0.
    pub(crate) hidden: usize,
}

// Two definitions are the same probe when they name the same function in
// a BTF of the same extent: identity, not contents.
impl PartialEq for Typed<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.btf.end_id() == other.btf.end_id()
            && self.proto == other.proto
            && self.hidden == other.hidden
    }
}

impl Eq for Typed<'_> {}

impl core::hash::Hash for Typed<'_> {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        self.btf.end_id().hash(h);
        self.proto.hash(h);
        self.hidden.hash(h);
    }
}

impl core::fmt::Debug for Typed<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Typed")
            .field("proto", &self.proto)
            .field("hidden", &self.hidden)
            .finish()
    }
}

/// Parser state shared along one fetcharg (`traceprobe_parse_context`).
struct Ctx<'a> {
    flags: ArgContext,
    index: usize,
    offset: usize,
    typed: Option<Typed<'a>>,
    /// The kernel's `ctx->btf` is set: a lookup of the prototype
    /// succeeded earlier in this command.
    queried: bool,
    /// The kernel's `ctx->last_type` and bitfield position.
    last: Option<Last>,
    /// An event probe's event.
    target: Option<TargetEvent<'a>>,
}

impl Ctx<'_> {
    fn err(&self, errno: Errno, code: ErrorCode, offset: usize) -> ParseError {
        ParseError::logged(errno, code, self.index, offset).with_expanded()
    }

    fn einval(&self, code: ErrorCode) -> ParseError {
        self.err(Errno::EINVAL, code, self.offset)
    }
}

/// The levels above the innermost fetcharg: `+|-[u]OFFS(`, and Linux
/// 7.3's typecasts and `this_cpu_ptr(`/`this_cpu_read(`. Each takes at
/// least four of the at most `MAX_ARGSTR_LEN` bytes, so this is deeper
/// than any body can nest.
const MAX_DEREF_LEVELS: usize = 32;

/// Most typecasts and per-CPU wrappers in one fetcharg, with the
/// dereferences around them (7.3's `TRACEPROBE_MAX_NESTED_LEVEL`).
const MAX_NESTED: usize = 8;

/// What a level does to the value of the one inside it.
#[derive(Clone, Copy)]
enum Wrap {
    /// `+|-[u]OFFS(...)`: a dereference.
    Deref { user: bool, offset: i32 },
    /// `(STRUCT[,ASGN])X->MEMBERS`: text spans of the structure's name,
    /// `ASGN` and the members.
    Cast {
        name: (usize, usize),
        assign: Option<(usize, usize)>,
        members: (usize, usize),
    },
    /// `this_cpu_ptr(...)`, or `this_cpu_read(...)` (`read`).
    CpuPtr { read: bool },
}

#[derive(Clone, Copy)]
struct Level {
    wrap: Wrap,
    cur_offs: usize,
}

/// Where the `)` closing the `(` at `open` is in `arg`, if anywhere.
fn matching_paren(arg: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in arg.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// One typecast `(STRUCT[,ASGN])` at the start of `arg` (which starts at
/// `base` in the text): the level, and the operand's span.
fn peel_cast(arg: &[u8], base: usize, ctx: &Ctx<'_>) -> Result<(Wrap, usize, usize), ParseError> {
    if !ctx.flags.on_entry && !ctx.flags.on_return {
        return Err(ctx.einval(ErrorCode::NosupBtfarg));
    }
    let Some(close) = find(arg, b')') else {
        return Err(ctx.einval_at(ErrorCode::DerefOpenBrace, ctx.offset + arg.len()));
    };
    let spec = arg.get(1..close).unwrap_or(&[]);
    let (name, assign) = match find(spec, b',') {
        Some(c) => (
            (base + 1, base + 1 + c),
            Some((base + 2 + c, base + 1 + spec.len())),
        ),
        None => ((base + 1, base + 1 + spec.len()), None),
    };
    let after = close + 1;
    let rest = tail(arg, after);
    // The operand, and where its `->` is (relative to `arg`).
    let (op_start, op_end, arrow) = if at(rest, 0) == b'('
        || at(rest, 0) == b'+'
        || at(rest, 0) == b'-'
        || rest.starts_with(b"this_cpu_")
    {
        let open = if at(rest, 0) == b'(' {
            0
        } else {
            find(rest, b'(')
                .ok_or_else(|| ctx.einval_at(ErrorCode::DerefNeedBrace, ctx.offset + after))?
        };
        let Some(m) = matching_paren(rest, open) else {
            return Err(ctx.einval_at(ErrorCode::DerefOpenBrace, ctx.offset + arg.len()));
        };
        let (s, e) = if open == 0 {
            (after + 1, after + m)
        } else {
            (after, after + m + 1)
        };
        (s, e, after + m + 1)
    } else {
        let dash = find(rest, b'-').map(|d| after + d);
        let arrow = dash.filter(|&d| at(arg, d + 1) == b'>');
        let Some(arrow) = arrow else {
            return Err(ctx.einval_at(ErrorCode::TypecastReqField, ctx.offset + arg.len()));
        };
        if at(rest, 0) == b'@' && find(head(arg, arrow), b'+').is_some() {
            return Err(ctx.einval_at(ErrorCode::TypecastSymOffset, ctx.offset + after));
        }
        (after, arrow, arrow)
    };
    if !tail(arg, arrow).starts_with(b"->") {
        return Err(ctx.einval_at(ErrorCode::TypecastReqField, ctx.offset + arrow));
    }
    let members = (base + arrow + 2, base + arg.len());
    Ok((
        Wrap::Cast {
            name,
            assign,
            members,
        },
        base + op_start,
        base + op_end,
    ))
}

/// A typecast's members, resolved in its structure and emitted after its
/// operand's code; the spans are of `text`, whose positions are the
/// fetcharg's offsets in its argv entry.
fn cast(
    text: &[u8],
    name: (usize, usize),
    assign: Option<(usize, usize)>,
    members: (usize, usize),
    code: &mut Code,
    ctx: &mut Ctx<'_>,
) -> Result<(), ParseError> {
    let Some(typed) = ctx.typed else {
        return Err(ctx.err(Errno::EOPNOTSUPP, ErrorCode::NosupBtfarg, ctx.offset));
    };
    let span = |(a, b): (usize, usize)| (text.get(a..b).unwrap_or(&[]), a);
    let max = END_SLOT.saturating_sub(code.cur + 1);
    let r = btfarg::resolve_cast(&typed.btf, span(name), assign.map(span), span(members), max);
    emit_cast(r, code, ctx)
}

/// Emits the dereferences of a resolved typecast (its offsets are the
/// text's, so the end is where later errors point).
fn emit_cast(
    r: Result<btfarg::Resolved, btfarg::BtfArgError>,
    code: &mut Code,
    ctx: &mut Ctx<'_>,
) -> Result<(), ParseError> {
    let r = r.map_err(|e| {
        let errno = match e.code {
            ErrorCode::NoBtfField => Errno::ENOENT,
            _ => Errno::EINVAL,
        };
        ctx.err(errno, e.code, e.offset)
    })?;
    emit_chain(&r, code, ctx)?;
    ctx.offset = r.end_offset;
    Ok(())
}

/// Emits a resolved member chain's dereferences after the code at the
/// cursor, and keeps the type it ends at.
fn emit_chain(r: &btfarg::Resolved, code: &mut Code, ctx: &mut Ctx<'_>) -> Result<(), ParseError> {
    for &off in r.derefs() {
        if !code.advance_to_free() {
            return Err(ctx.einval(ErrorCode::TooManyOps));
        }
        code.set(FetchInsn::Deref(off));
    }
    ctx.last = r.last;
    Ok(())
}

/// `parse_probe_arg()` on `text[s..e]`, with 7.3's typecasts and per-CPU
/// wrappers when the probe has BTF arguments.
fn parse_probe_arg(
    text: &[u8],
    mut s: usize,
    mut e: usize,
    code: &mut Code,
    ctx: &mut Ctx<'_>,
) -> Result<(), ParseError> {
    let mut levels = [Level {
        wrap: Wrap::CpuPtr { read: false },
        cur_offs: 0,
    }; MAX_DEREF_LEVELS];
    let mut depth = 0;
    let mut nested = 0;
    loop {
        let arg = text.get(s..e).unwrap_or(&[]);
        let sign = at(arg, 0);
        let typed = ctx.typed.is_some();
        let (wrap, inner_s, inner_e, cur_offs) = if sign == b'+' || sign == b'-' {
            // The kernel turns "+u" into "+" by moving the sign over the
            // 'u', and skips a '+' because kstrtol() would reject it.
            let user = at(arg, 1) == b'u';
            let mut a = usize::from(user);
            let first = if sign == b'+' {
                a += 1;
                at(arg, a)
            } else {
                b'-'
            };
            let Some(paren) = find(arg, b'(') else {
                return Err(ctx.einval(ErrorCode::DerefNeedBrace));
            };
            let parsed = if sign == b'+' {
                kstrtoll(text.get(s + a..s + paren).unwrap_or(&[]), 0)
            } else {
                kstrtoll_negated(text.get(s + a + 1..s + paren).unwrap_or(&[]), 0)
            };
            let offset = match parsed {
                Ok(v) => v,
                Err(errno) => return Err(ctx.err(errno, ErrorCode::BadDerefOffs, ctx.offset)),
            };
            ctx.offset += (paren + 1).saturating_sub(a) + usize::from(first != b'-');
            let inner = tail(arg, paren + 1);
            let Some(rparen) = rfind(inner, b')') else {
                return Err(ctx.einval_at(ErrorCode::DerefOpenBrace, ctx.offset + inner.len()));
            };
            // The instruction keeps an int: the kernel truncates the long.
            let wrap = Wrap::Deref {
                user,
                offset: offset as i32,
            };
            (wrap, s + paren + 1, s + paren + 1 + rparen, ctx.offset)
        } else if typed && sign == b'(' {
            let cur = ctx.offset;
            let (wrap, is, ie) = peel_cast(arg, s, ctx)?;
            ctx.offset += is - s;
            (wrap, is, ie, cur)
        } else if arg.starts_with(b"this_cpu_ptr(") || arg.starts_with(b"this_cpu_read(") {
            let read = arg.starts_with(b"this_cpu_read(");
            let open = if read { 13 } else { 12 };
            if matching_paren(arg, open) != Some(arg.len().saturating_sub(1)) {
                return Err(ctx.einval_at(ErrorCode::DerefOpenBrace, ctx.offset + arg.len()));
            }
            let cur = ctx.offset;
            ctx.offset += open + 1;
            (Wrap::CpuPtr { read }, s + open + 1, e - 1, cur)
        } else {
            break;
        };
        if !matches!(wrap, Wrap::Deref { .. }) {
            nested += 1;
        }
        let Some(level) = levels.get_mut(depth) else {
            return Err(ctx.einval(ErrorCode::TooManyOps));
        };
        if nested > 0 && depth >= MAX_NESTED {
            return Err(ctx.einval_at(ErrorCode::TooManyNested, cur_offs));
        }
        *level = Level { wrap, cur_offs };
        depth += 1;
        s = inner_s;
        e = inner_e;
    }

    let at_sym = at(text.get(s..e).unwrap_or(&[]), 0) == b'@';
    parse_base(text, s, e, code, ctx)?;

    for (i, level) in levels.iter().take(depth).rev().enumerate() {
        ctx.offset = level.cur_offs;
        if matches!(code.op(), FetchInsn::Comm | FetchInsn::Data(_)) {
            return Err(ctx.einval(ErrorCode::CommCantDeref));
        }
        match level.wrap {
            Wrap::Deref { user, offset } => {
                if !code.advance_to_free() {
                    return Err(ctx.einval(ErrorCode::TooManyOps));
                }
                code.set(if user {
                    FetchInsn::UDeref(offset)
                } else {
                    FetchInsn::Deref(offset)
                });
            }
            Wrap::CpuPtr { read } => {
                // `this_cpu_ptr(@SYM)` is of the symbol's address, not of
                // the value there: it takes the place of `@SYM`'s load.
                let replaces = i == 0 && at_sym && code.op() == FetchInsn::Deref(0);
                if !replaces && !code.advance_to_free() {
                    return Err(ctx.einval(ErrorCode::TooManyOps));
                }
                code.set(FetchInsn::CpuPtr);
                if read {
                    if !code.advance_to_free() {
                        return Err(ctx.einval(ErrorCode::TooManyOps));
                    }
                    code.set(FetchInsn::Deref(0));
                }
            }
            Wrap::Cast {
                name,
                assign,
                members,
            } => {
                cast(text, name, assign, members, code, ctx)?;
                continue;
            }
        }
        // What a dereference or a per-CPU address reads has no BTF type.
        ctx.last = None;
    }
    Ok(())
}

impl Ctx<'_> {
    fn einval_at(&self, code: ErrorCode, offset: usize) -> ParseError {
        self.err(Errno::EINVAL, code, offset)
    }
}

/// The innermost fetcharg of `parse_probe_arg()`: everything but `+OFFS(`.
fn parse_base(
    text: &[u8],
    s: usize,
    e: usize,
    code: &mut Code,
    ctx: &mut Ctx<'_>,
) -> Result<(), ParseError> {
    let arg = text.get(s..e).unwrap_or(&[]);
    match at(arg, 0) {
        b'$' => parse_probe_vars(arg, code, ctx)?,
        // 6.12 logs "Invalid $-variable" and carries on to the end, where
        // nothing was parsed: "Invalid fetch argument" is logged too.
        b'%' if ctx.flags.fprobe || ctx.flags.tevent => {
            return Err(ctx
                .einval(ErrorCode::BadFetchArg)
                .preceded_by(ErrorCode::BadVar));
        }
        b'%' => match Register::from_name(tail(arg, 1)) {
            Some(r) => code.set(FetchInsn::Reg(r)),
            None => return Err(ctx.einval(ErrorCode::BadRegName)),
        },
        b'@' => {
            if is_digit(at(arg, 1)) {
                match kstrtoull(tail(arg, 1), 0) {
                    Ok(addr) => code.set(FetchInsn::Imm(addr)),
                    Err(errno) => {
                        return Err(ctx.err(errno, ErrorCode::BadMemAddr, ctx.offset));
                    }
                }
            } else if at(arg, 1) == b'+' {
                return Err(ctx.einval(ErrorCode::FileOnKprobe));
            } else {
                code.set(FetchInsn::Symbol(Span::new(s + 1, e)));
                if !code.advance_to_free() {
                    return Err(ctx.einval(ErrorCode::TooManyOps));
                }
                code.set(FetchInsn::Imm(0));
            }
            if !code.advance_to_free() {
                return Err(ctx.einval(ErrorCode::TooManyOps));
            }
            code.set(FetchInsn::Deref(0));
        }
        b'\\' => {
            if at(arg, 1) == b'"' {
                let str_part = tail(arg, 2);
                let len = str_part.len();
                if len == 0 || str_part.last() != Some(&b'"') {
                    return Err(ctx.einval_at(ErrorCode::ImmstrNoClose, ctx.offset + 2 + len));
                }
                code.set(FetchInsn::Data(Span::new(s + 2, e - 1)));
            } else {
                match str_to_immediate(tail(arg, 1)) {
                    Ok(v) => code.set(FetchInsn::Imm(v)),
                    Err(errno) => {
                        return Err(ctx.err(errno, ErrorCode::BadImm, ctx.offset + 1));
                    }
                }
            }
        }
        c if is_alpha(c) || c == b'_' => {
            // A parameter name, typed from BTF.
            if !ctx.flags.on_entry && !ctx.flags.on_return {
                return Err(ctx.einval(ErrorCode::NosupBtfarg));
            }
            parse_btf_arg(arg, code, ctx)?;
        }
        _ => {}
    }
    if matches!(code.op(), FetchInsn::Nop) {
        return Err(ctx.einval(ErrorCode::BadFetchArg));
    }
    Ok(())
}

/// Whether `needle` occurs in `s` (`strstr()`).
fn find_sub(s: &[u8], needle: &[u8]) -> bool {
    s.windows(needle.len()).any(|w| w == needle)
}

/// `str_to_immediate()`.
fn str_to_immediate(s: &[u8]) -> Result<u64, Errno> {
    match at(s, 0) {
        c if is_digit(c) => kstrtoull(s, 0),
        b'-' => kstrtoll(s, 0).map(|v| v as u64),
        b'+' => kstrtoll(tail(s, 1), 0).map(|v| v as u64),
        _ => Err(Errno::EINVAL),
    }
}

/// `parse_btf_arg()`: a parameter name or `$retval`, with `->`/`.`
/// members, resolved from BTF into the code at the cursor. Without BTF
/// arguments, "BTF is not available".
fn parse_btf_arg(arg: &[u8], code: &mut Code, ctx: &mut Ctx<'_>) -> Result<(), ParseError> {
    let Some(typed) = ctx.typed else {
        return Err(ctx.err(Errno::EOPNOTSUPP, ErrorCode::NosupBtfarg, ctx.offset));
    };
    let queried = ctx.queried;
    ctx.queried = typed.proto.is_some();
    let max = END_SLOT.saturating_sub(code.cur + 1);
    let proto = typed.proto.and_then(|id| typed.btf.get(id));
    let r = match btfarg::resolve_params(
        &typed.btf,
        proto,
        typed.hidden,
        ctx.flags.on_return,
        arg,
        max,
    ) {
        Ok(r) => r,
        Err(e) => {
            let code = match e.code {
                // The kernel looks the prototype up once per command; a
                // later lookup finds no parameter of the name.
                ErrorCode::NoBtfEntry if queried && typed.proto.is_some() => ErrorCode::NoBtfarg,
                c => c,
            };
            let errno = match code {
                ErrorCode::NosupDatArg => Errno::EOPNOTSUPP,
                ErrorCode::NoRetval
                | ErrorCode::NoBtfEntry
                | ErrorCode::NoBtfarg
                | ErrorCode::NoBtfField => Errno::ENOENT,
                _ => Errno::EINVAL,
            };
            return Err(ctx.err(errno, code, ctx.offset + e.offset));
        }
    };
    code.set(match r.base {
        btfarg::Base::Arg(i) => FetchInsn::Arg(i),
        btfarg::Base::EntryArg(i) => FetchInsn::EntryArg(i),
        btfarg::Base::Retval => FetchInsn::Retval,
        // `resolve_in` starts every chain at a parameter or `$retval`.
        btfarg::Base::Operand => return Err(ctx.einval(ErrorCode::BadBtfTid)),
    });
    let at = ctx.offset;
    emit_chain(&r, code, ctx)?;
    ctx.offset = at + r.end_offset;
    Ok(())
}

/// `parse_probe_vars()` for kprobes; `orig` starts with the `$`.
fn parse_probe_vars(orig: &[u8], code: &mut Code, ctx: &mut Ctx<'_>) -> Result<(), ParseError> {
    let arg = tail(orig, 1);
    if ctx.flags.tevent {
        // A field of the event first, so that a field named `comm` is the
        // field.
        if let Some(field) = ctx.target.and_then(|t| t.field(arg)) {
            code.set(FetchInsn::TpArg(field));
            return Ok(());
        }
        if arg == b"comm" || arg == b"COMM" {
            code.set(FetchInsn::Comm);
            return Ok(());
        }
        return Err(ctx.einval(ErrorCode::BadVar));
    }
    if arg.starts_with(b"retval") {
        if !ctx.flags.on_return {
            return Err(ctx.einval(ErrorCode::RetvalOnProbe));
        }
        if ctx.typed.is_some() {
            return parse_btf_arg(orig, code, ctx);
        }
        code.set(FetchInsn::Retval);
        return Ok(());
    }
    if let Some(rest) = arg.strip_prefix(b"current") {
        // Linux 7.3's `$current`, a `task_struct *`.
        if rest.is_empty() {
            code.set(FetchInsn::Current);
            return Ok(());
        }
        if let Some(members) = rest.strip_prefix(b"->") {
            let Some(typed) = ctx.typed else {
                return Err(ctx.err(Errno::EOPNOTSUPP, ErrorCode::NosupBtfarg, ctx.offset));
            };
            code.set(FetchInsn::Current);
            let max = END_SLOT.saturating_sub(code.cur + 1);
            let r = btfarg::resolve_cast(
                &typed.btf,
                (b"task_struct", ctx.offset),
                None,
                (members, ctx.offset + 10),
                max,
            )
            .map_err(|e| match e.code {
                ErrorCode::NoPtrStrct => btfarg::BtfArgError {
                    code: ErrorCode::NoBtfEntry,
                    offset: e.offset,
                },
                _ => e,
            });
            return emit_cast(r, code, ctx);
        }
        if at(rest, 0) == b'.' {
            return Err(ctx.err(Errno::EOPNOTSUPP, ErrorCode::NosupDatArg, ctx.offset + 8));
        }
    }
    if let Some(rest) = arg.strip_prefix(b"stack") {
        if rest.is_empty() {
            code.set(FetchInsn::StackPointer);
            return Ok(());
        }
        if is_digit(at(rest, 0)) {
            let Ok(n) = kstrtoull(rest, 10) else {
                return Err(ctx.einval(ErrorCode::BadVar));
            };
            if n > PARAM_MAX_STACK {
                return Err(ctx.einval(ErrorCode::BadStackNum));
            }
            code.set(FetchInsn::Stack(n as u32));
            return Ok(());
        }
        return Err(ctx.einval(ErrorCode::BadVar));
    }
    if arg == b"comm" || arg == b"COMM" {
        code.set(FetchInsn::Comm);
        return Ok(());
    }
    if let Some(rest) = arg.strip_prefix(b"arg") {
        let Ok(n) = kstrtoull(rest, 10) else {
            return Err(ctx.einval(ErrorCode::BadVar));
        };
        if n == 0 || n > PARAM_MAX_STACK {
            return Err(ctx.einval(ErrorCode::BadArgNum));
        }
        let n = (n - 1) as u32;
        if ctx.flags.on_entry {
            // A tracepoint's stub: its first argument is the data.
            code.set(FetchInsn::Arg(n + u32::from(ctx.flags.tracepoint)));
        } else if ctx.flags.on_return {
            code.set(FetchInsn::EntryArg(n));
        } else {
            return Err(ctx.einval(ErrorCode::NofentryArgs));
        }
        return Ok(());
    }
    Err(ctx.einval(ErrorCode::BadVar))
}

/// `finalize_fetch_insn()`: the store, bitfield and array stages.
fn finalize(
    code: &mut Code,
    ty: &ArgType,
    type_name: Option<&[u8]>,
    type_offset: usize,
    ctx: &Ctx<'_>,
) -> Result<(), ParseError> {
    let type_err = |c| ctx.einval_at(c, ctx.offset + type_offset);
    let op = code.op();
    let size = ty.base.size() as u8;
    if ty.base.is_string() {
        let symstr = ty.base == FetchType::SymStr;
        if symstr {
            if !matches!(
                op,
                FetchInsn::Reg(_)
                    | FetchInsn::Stack(_)
                    | FetchInsn::Retval
                    | FetchInsn::Arg(_)
                    | FetchInsn::Deref(_)
                    | FetchInsn::TpArg(_)
            ) {
                return Err(type_err(ErrorCode::BadSymstring));
            }
        } else if !matches!(
            op,
            FetchInsn::Deref(_)
                | FetchInsn::UDeref(_)
                | FetchInsn::Imm(_)
                | FetchInsn::Comm
                | FetchInsn::Data(_)
                | FetchInsn::TpArg(_)
        ) {
            return Err(type_err(ErrorCode::BadString));
        }
        // A field's value is the string's address (`get_event_field()`).
        let keep_value = symstr
            || matches!(
                op,
                FetchInsn::Imm(_) | FetchInsn::Comm | FetchInsn::Data(_) | FetchInsn::TpArg(_)
            )
            || ty.count != 0;
        // The value itself is the string's address: store in the next slot.
        if keep_value && !code.advance_to_nop() {
            return Err(ctx.einval(ErrorCode::TooManyOps));
        }
        // A store that replaces a dereference keeps its offset.
        let (offset, user) = match code.op() {
            FetchInsn::Deref(o) => (o, false),
            FetchInsn::UDeref(o) => (o, true),
            _ => (0, false),
        };
        code.set(if ty.base == FetchType::UString || user {
            FetchInsn::StUString { offset }
        } else if symstr {
            FetchInsn::StSymStr { offset }
        } else {
            FetchInsn::StString { offset }
        });
    } else if let FetchInsn::Deref(offset) = op {
        code.set(FetchInsn::StMem { offset, size });
    } else if let FetchInsn::UDeref(offset) = op {
        code.set(FetchInsn::StUMem { offset, size });
    } else {
        if !code.advance_to_nop() {
            return Err(ctx.err(Errno::E2BIG, ErrorCode::TooManyOps, ctx.offset));
        }
        code.set(FetchInsn::StRaw(size));
    }
    let store = code.op();

    if let Some(name) = type_name {
        if at(name, 0) == b'b' {
            let Ok(bf) = Bitfield::parse(name, ty.base) else {
                return Err(type_err(ErrorCode::BadBitfield));
            };
            if !code.advance_to_nop() {
                return Err(type_err(ErrorCode::BadBitfield));
            }
            code.set(FetchInsn::ModBitfield(bf));
        }
    } else if let Some(last) = &ctx.last {
        // A member that is a bitfield, typed from BTF: `parse_btf_bitfield()`.
        match btfarg::bitfield(last) {
            Ok(None) => {}
            Ok(Some((lshift, rshift))) => {
                if !code.advance_to_nop() {
                    return Err(ctx.einval(ErrorCode::TooManyOps));
                }
                code.set(FetchInsn::ModBitfield(Bitfield {
                    basesize: 8,
                    lshift: lshift as u8,
                    rshift: rshift as u8,
                }));
            }
            Err(c) => return Err(ctx.einval(c)),
        }
    }

    if ty.count != 0 {
        if !matches!(
            store,
            FetchInsn::StMem { .. } | FetchInsn::StString { .. } | FetchInsn::StUString { .. }
        ) {
            return Err(type_err(ErrorCode::BadString));
        }
        if !code.advance_to_nop() {
            return Err(ctx.err(Errno::E2BIG, ErrorCode::TooManyOps, ctx.offset));
        }
        code.set(FetchInsn::LoopArray(ty.count));
    }
    code.cur += 1;
    code.set(FetchInsn::End);
    Ok(())
}

/// One parsed fetcharg.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchArg<'a> {
    /// The argument's field name.
    pub name: ArgName<'a>,
    /// The text after `NAME=`, as listed (the kernel's `comm`).
    pub comm: ArgText<'a>,
    /// The type.
    pub ty: ArgType,
    /// Byte offset of the value in the event record, after the header.
    pub offset: u32,
    /// The fetch program; text is symbol names (`@SYM+offs`, resolved at
    /// registration) and immediate strings.
    pub program: FetchProgram<&'a [u8]>,
    /// The BTF enum of a `:enum` fetcharg.
    pub enum_type: Option<u32>,
}

/// Everything one fetcharg's parse needs to know about its probe.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArgEnv<'a> {
    pub(crate) flags: ArgContext,
    pub(crate) offsets: DentryOffsets,
    pub(crate) typed: Option<Typed<'a>>,
    /// An event probe's event.
    pub(crate) target: Option<TargetEvent<'a>>,
    /// The kernel has BTF arguments (`CONFIG_PROBE_EVENTS_BTF_ARGS`) for
    /// a probe that has no function to type them from (an event probe's).
    pub(crate) btf_names: bool,
}

impl ArgEnv<'_> {
    /// Whether a fetcharg without `NAME=` is named by its text
    /// ([`default_arg_name`]): on a kernel with BTF arguments.
    pub(crate) fn names_from_text(&self) -> bool {
        self.typed.is_some() || self.btf_names
    }
}

/// The name of a fetcharg written without `NAME=` (`generate_probe_arg_name()`):
/// with BTF arguments, its text up to the type if that is a good name
/// (`file` for `file:x32`), else `argN` for the `n`th fetcharg.
pub(crate) fn default_arg_name(raw: &[u8], n: usize, typed: bool) -> ArgName<'_> {
    if typed {
        let name = head(raw, find(raw, b':').unwrap_or(raw.len()));
        if is_good_name(name, false) {
            return ArgName::Given(name);
        }
    }
    ArgName::Auto(AutoArgName::new(n))
}

/// Parses the fetcharg `raw` (argv entry `i + 2`, `i` counting fetchargs
/// from 0), after fetchargs whose values end at record offset `size`;
/// `name_used` tells whether an earlier fetcharg has a name. `queried`
/// is the kernel's `ctx->btf` between fetchargs: whether a lookup of the
/// function's prototype succeeded so far.
pub(crate) fn parse_fetch_arg<'a, F>(
    raw: &'a [u8],
    i: usize,
    mut name_used: F,
    size: u32,
    env: &ArgEnv<'a>,
    queried: &mut bool,
) -> Result<FetchArg<'a>, ParseError>
where
    F: FnMut(&[u8]) -> bool,
{
    // Event probes do not expand `%pd`/`%pD` (6.12's eprobe parser does
    // not call `traceprobe_expand_dentry_args()`).
    let layout = if env.flags.tevent {
        None
    } else {
        dentry_layout(raw, &env.offsets)
    };
    let mut buf = [0u8; EXPANDED_MAX];
    let text: &[u8] = match &layout {
        None => raw,
        Some(_) => {
            let mut w = super::bytes::SliceWriter::new(&mut buf[..]);
            if write_expanded_arg(&mut w, raw, &env.offsets).is_err() {
                return Err(ParseError::silent(Errno::ENOMEM).with_expanded());
            }
            let n = w.len();
            head(&buf, n)
        }
    };
    let resolve = |span: Span| -> &'a [u8] {
        let (s, e) = span.range();
        match &layout {
            None => raw.get(s..e).unwrap_or(&[]),
            Some(l) => {
                let s = s.wrapping_sub(l.inner_expanded).wrapping_add(l.inner_orig);
                let e = e.wrapping_sub(l.inner_expanded).wrapping_add(l.inner_orig);
                raw.get(s..e).unwrap_or(&[])
            }
        }
    };
    let index = i + 2;
    let name_err = |code| ParseError::logged(Errno::EINVAL, code, index, 0).with_expanded();

    let (name, body) = match find(text, b'=') {
        Some(eq) => {
            if eq > MAX_ARG_NAME_LEN {
                return Err(name_err(ErrorCode::ArgNameTooLong));
            }
            if eq == 0 {
                return Err(name_err(ErrorCode::NoArgName));
            }
            // The name is the same bytes in the original and expanded text.
            (ArgName::Given(raw.get(..eq).unwrap_or(&[])), eq + 1)
        }
        None => (default_arg_name(raw, i + 1, env.names_from_text()), 0),
    };
    let name_bytes = name.as_bytes();
    if !is_good_name(name_bytes, false) {
        return Err(name_err(ErrorCode::BadArgName));
    }
    let reserved = RESERVED_FIELD_NAMES
        .iter()
        .any(|r| r.as_bytes() == name_bytes);
    if reserved || name_used(name_bytes) {
        return Err(name_err(ErrorCode::UsedArgName));
    }

    let mut ctx = Ctx {
        flags: env.flags,
        index,
        offset: body,
        typed: env.typed,
        queried: *queried,
        last: None,
        target: env.target,
    };
    let body_text = tail(text, body);
    if body_text.len() > MAX_ARGSTR_LEN {
        return Err(ctx.err(Errno::E2BIG, ErrorCode::ArgTooLong, ctx.offset));
    }
    if body_text.is_empty() {
        return Err(ctx.einval(ErrorCode::NoArgBody));
    }

    let spec = split_type(body_text, body, index).map_err(ParseError::with_expanded)?;
    let type_offset = spec.name.map_or(0, |(_, off)| off);
    // Not for event probes, where `$comm` may be a field and either takes
    // any type.
    let is_comm_like = !env.flags.tevent
        && (spec.body == b"$comm" || spec.body == b"$COMM" || spec.body.starts_with(b"\\\""));
    // `:enum`, a BTF enum printed by its enumerators' names: typed once
    // the body is parsed.
    let want_enum = env.typed.is_some() && spec.name.is_some_and(|(n, _)| n == b"enum");
    let base = if is_comm_like {
        if spec.count != 0 || spec.name.is_some_and(|(n, _)| n != b"string") {
            return Err(ctx.einval_at(ErrorCode::NeedStringType, ctx.offset + type_offset));
        }
        Some(FetchType::String)
    } else if want_enum && spec.count == 0 {
        Some(FetchType::DEFAULT)
    } else {
        match spec.name {
            None => Some(FetchType::DEFAULT),
            Some((n, _)) => FetchType::find(n),
        }
    };
    let Some(base) = base else {
        return Err(ctx.einval_at(ErrorCode::BadType, ctx.offset + type_offset));
    };
    let ty_name = spec.name.map(|(n, _)| n);
    let mut ty = ArgType {
        base,
        count: spec.count,
        bitfield: None,
        symbolic: false,
    };

    let mut code = Code::new();
    let parsed = parse_probe_arg(text, body, body + spec.body.len(), &mut code, &mut ctx);
    *queried = ctx.queried;
    parsed?;

    // `:enum`: the enum's recorded type, its enumerators kept for printing.
    let mut enum_type = None;
    if want_enum {
        let t = match (ctx.typed, ctx.last) {
            (Some(typed), Some(last)) if last.bitsize == 0 => typed.btf.get(last.type_id),
            _ => None,
        };
        match t {
            Some(t) if matches!(t.kind, Kind::Enum | Kind::Enum64) => {
                ty.base = if t.kind == Kind::Enum64 {
                    FetchType::S64
                } else {
                    FetchType::S32
                };
                ty.symbolic = true;
                enum_type = Some(t.id);
            }
            _ => return Err(ctx.einval_at(ErrorCode::BadType, ctx.offset + type_offset)),
        }
    }
    // The type BTF gives, or how a string is read from what it types.
    if let (Some(typed), Some(last), false) = (ctx.typed, ctx.last.as_mut(), want_enum) {
        match spec.name {
            None => {
                ty.base = btfarg::default_type(&typed.btf, last)
                    .and_then(|n| FetchType::find(n.as_bytes()))
                    .unwrap_or(FetchType::DEFAULT);
            }
            Some((n, _)) if find_sub(n, b"string") => match btfarg::string_from(&typed.btf, last) {
                Ok(StringFrom::InPlace) => {}
                Ok(StringFrom::Pointer) => {
                    if !code.advance_to_free() {
                        return Err(ctx.err(Errno::E2BIG, ErrorCode::TooManyOps, ctx.offset));
                    }
                    code.set(if at(n, 0) == b'u' {
                        FetchInsn::UDeref(0)
                    } else {
                        FetchInsn::Deref(0)
                    });
                }
                Err(c) => return Err(ctx.einval(c)),
            },
            Some(_) => {}
        }
    }

    let new_size = size.saturating_add(ty.record_size());
    if new_size > MAX_PROBE_EVENT_SIZE {
        return Err(ctx.err(Errno::E2BIG, ErrorCode::EventTooBig, ctx.offset));
    }

    finalize(&mut code, &ty, ty_name, type_offset, &ctx)?;
    ty.bitfield = code.insns.iter().find_map(|i| match i {
        FetchInsn::ModBitfield(b) => Some(*b),
        _ => None,
    });

    let mut insns = [FetchInsn::Nop; FETCH_INSN_MAX];
    for (dst, src) in insns.iter_mut().zip(code.insns.iter()) {
        *dst = src.map(resolve);
    }
    let comm = match &layout {
        None => ArgText::Plain(tail(raw, body)),
        Some(l) => ArgText::Dentry(l.arg),
    };
    Ok(FetchArg {
        name,
        comm,
        ty,
        offset: size,
        program: FetchProgram { insns },
        enum_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(on_entry: bool, on_return: bool) -> ArgEnv<'static> {
        ArgEnv {
            flags: ArgContext {
                on_return,
                on_entry,
                ..ArgContext::default()
            },
            offsets: DentryOffsets::DEFAULT,
            typed: None,
            target: None,
            btf_names: false,
        }
    }

    fn parse(arg: &str) -> Result<FetchArg<'_>, ParseError> {
        parse_fetch_arg(
            arg.as_bytes(),
            0,
            |_| false,
            0,
            &env(true, false),
            &mut false,
        )
    }

    #[test]
    fn registers() {
        assert_eq!(Register::from_name(b"ax"), Some(Register::Ax));
        assert_eq!(Register::from_name(b"AX"), None);
        assert_eq!(Register::from_name(b"eax"), None);
        assert_eq!(
            Register::from_name(b"orig_ax").map(|r| r.pt_regs_offset()),
            Some(120)
        );
    }

    #[test]
    fn nested_deref_program() {
        let a = parse("+8(+0(%di)):u32").unwrap();
        assert_eq!(
            a.program.insns(),
            &[
                FetchInsn::Reg(Register::Di),
                FetchInsn::Deref(0),
                FetchInsn::StMem { offset: 8, size: 4 },
                FetchInsn::End
            ]
        );
    }

    #[test]
    fn symbol_and_string() {
        let a = parse("+0(@jiffies+4):string").unwrap();
        assert_eq!(
            a.program.insns(),
            &[
                FetchInsn::Symbol(&b"jiffies+4"[..]),
                FetchInsn::Imm(0),
                FetchInsn::Deref(0),
                FetchInsn::StString { offset: 0 },
                FetchInsn::End
            ]
        );
        let a = parse("s=\\\"hi there\"").unwrap();
        assert_eq!(a.program.insns()[0], FetchInsn::Data(&b"hi there"[..]));
    }

    #[test]
    fn dentry_expansion_maps_text_back() {
        let a = parse("n=+0(@sym):%pD").unwrap();
        assert_eq!(a.name.as_bytes(), b"n");
        assert_eq!(a.program.insns()[0], FetchInsn::Symbol(&b"sym"[..]));
        assert!(a.comm.eq_bytes(b"+0x0(+0x28(+0x48(+0(@sym)))):string"));
    }
}
