// SPDX-License-Identifier: GPL-2.0

//! Fetch programs: what a fetcharg compiles into, the kernel's
//! `struct fetch_insn` array. The parser (`fetch`) fills one; the hit path
//! (`exec`) runs it.
//!
//! An event probe's fetcharg reads a field of the record of the event it
//! is attached to ([`FetchInsn::TpArg`]). The kernel's instruction points
//! at the field's `struct ftrace_event_field`; here it carries what
//! `get_event_field()` reads of it ([`EventField`]), copied when the
//! command is parsed, so that nothing is looked up at a hit.

use super::regs::Register;
use super::types::Bitfield;
use super::FETCH_INSN_MAX;

/// How a trace event's field holds a string: the string kinds of the
/// field's `filter_type` (`is_string_field()`), whose value as a fetcharg
/// is the string's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldString {
    /// Not a string (any other `filter_type`): the value is the field's
    /// bytes.
    None,
    /// `__data_loc char[]` (`FILTER_DYN_STRING`): the low 16 bits of the
    /// field are the string's offset from the record's start.
    Dynamic,
    /// `__rel_loc char[]` (`FILTER_RDYN_STRING`): the low 16 bits of the
    /// field are the string's offset from the field.
    RelDynamic,
    /// `char[N]` (`FILTER_STATIC_STRING`): the string is the field itself.
    Static,
    /// `char *` or `const char *` (`FILTER_PTR_STRING`): the field is the
    /// string's address.
    Pointer,
}

/// What an event probe's fetch instruction knows of a field of the record
/// of the event it is attached to: the parts of the kernel's
/// `struct ftrace_event_field` that `get_event_field()` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventField {
    /// Offset of the field in the record, from the record's start (the
    /// event's common header included).
    pub offset: u32,
    /// Size of the field in bytes: 1, 2 and 4 are read as such, any other
    /// as 8 (a `long`).
    pub size: u32,
    /// Whether a numeric field is sign-extended.
    pub signed: bool,
    /// Whether, and how, the field holds a string.
    pub string: FieldString,
}

/// One fetch instruction (the kernel's `struct fetch_insn`); `T` is how
/// text (a symbol, an immediate string) is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FetchInsn<T> {
    /// An unused slot.
    Nop,
    /// Load a register.
    Reg(Register),
    /// Load the Nth kernel stack entry.
    Stack(u32),
    /// Load the stack pointer.
    StackPointer,
    /// Load the return value (return probes).
    Retval,
    /// Load an immediate value (also `@ADDR`, and the address of `@SYM`).
    Imm(u64),
    /// Load the address of the current task's comm.
    Comm,
    /// Load the address of the current task (`$current`).
    Current,
    /// Load function argument N (0-based), on function entry.
    Arg(u32),
    /// Load function argument N (0-based) saved at entry, on return.
    EntryArg(u32),
    /// Load the address of an immediate string (`\"...`).
    Data(T),
    /// Load a field of the record of the event an event probe is attached
    /// to (`FETCH_OP_TP_ARG`, `$FIELD`).
    TpArg(EventField),
    /// An unresolved `@SYM[+|-offs]`; the next slot is the `Imm` that
    /// registration fills with the symbol's address plus offset.
    Symbol(T),
    /// Dereference kernel memory at value + offset.
    Deref(i32),
    /// Dereference user memory at value + offset.
    UDeref(i32),
    /// The value, a per-CPU variable's address, made this CPU's copy's
    /// (`this_cpu_ptr()`).
    CpuPtr,
    /// Store the value itself, `size` bytes.
    StRaw(u8),
    /// Store `size` bytes of kernel memory at value + offset.
    StMem {
        /// Offset added to the address.
        offset: i32,
        /// Bytes stored.
        size: u8,
    },
    /// Store `size` bytes of user memory at value + offset.
    StUMem {
        /// Offset added to the address.
        offset: i32,
        /// Bytes stored.
        size: u8,
    },
    /// Store the kernel string at value + offset.
    StString {
        /// Offset added to the address.
        offset: i32,
    },
    /// Store the user string at value + offset.
    StUString {
        /// Offset added to the address.
        offset: i32,
    },
    /// Store the `symbol+off/size` text of value + offset.
    StSymStr {
        /// Offset added to the address.
        offset: i32,
    },
    /// Extract a bitfield from the stored value.
    ModBitfield(Bitfield),
    /// Repeat the store stage for an array of this many elements.
    LoopArray(u32),
    /// End of the program.
    End,
}

impl<T> FetchInsn<T> {
    /// The same instruction with its text mapped through `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> FetchInsn<U> {
        match self {
            FetchInsn::Nop => FetchInsn::Nop,
            FetchInsn::Reg(r) => FetchInsn::Reg(r),
            FetchInsn::Stack(n) => FetchInsn::Stack(n),
            FetchInsn::StackPointer => FetchInsn::StackPointer,
            FetchInsn::Retval => FetchInsn::Retval,
            FetchInsn::Imm(v) => FetchInsn::Imm(v),
            FetchInsn::Comm => FetchInsn::Comm,
            FetchInsn::Current => FetchInsn::Current,
            FetchInsn::Arg(n) => FetchInsn::Arg(n),
            FetchInsn::EntryArg(n) => FetchInsn::EntryArg(n),
            FetchInsn::Data(t) => FetchInsn::Data(f(t)),
            FetchInsn::TpArg(field) => FetchInsn::TpArg(field),
            FetchInsn::Symbol(t) => FetchInsn::Symbol(f(t)),
            FetchInsn::Deref(o) => FetchInsn::Deref(o),
            FetchInsn::UDeref(o) => FetchInsn::UDeref(o),
            FetchInsn::CpuPtr => FetchInsn::CpuPtr,
            FetchInsn::StRaw(s) => FetchInsn::StRaw(s),
            FetchInsn::StMem { offset, size } => FetchInsn::StMem { offset, size },
            FetchInsn::StUMem { offset, size } => FetchInsn::StUMem { offset, size },
            FetchInsn::StString { offset } => FetchInsn::StString { offset },
            FetchInsn::StUString { offset } => FetchInsn::StUString { offset },
            FetchInsn::StSymStr { offset } => FetchInsn::StSymStr { offset },
            FetchInsn::ModBitfield(b) => FetchInsn::ModBitfield(b),
            FetchInsn::LoopArray(n) => FetchInsn::LoopArray(n),
            FetchInsn::End => FetchInsn::End,
        }
    }
}

/// A byte range of an argv entry: where an instruction's text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Span {
    start: u16,
    len: u16,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Span {
        let start16 = u16::try_from(start).unwrap_or(u16::MAX);
        let len = u16::try_from(end.saturating_sub(start)).unwrap_or(0);
        Span {
            start: start16,
            len,
        }
    }

    pub(crate) fn range(self) -> (usize, usize) {
        let s = usize::from(self.start);
        (s, s + usize::from(self.len))
    }
}

/// A fetch program: `FETCH_INSN_MAX` slots, ending in [`FetchInsn::End`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchProgram<T> {
    pub(crate) insns: [FetchInsn<T>; FETCH_INSN_MAX],
}

impl<T: Copy> FetchProgram<T> {
    /// The instructions up to and including `End`.
    pub fn insns(&self) -> &[FetchInsn<T>] {
        let end = self
            .insns
            .iter()
            .position(|i| matches!(i, FetchInsn::End))
            .map_or(self.insns.len(), |p| p + 1);
        self.insns.get(..end).unwrap_or(&self.insns)
    }
}
