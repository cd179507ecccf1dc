// SPDX-License-Identifier: GPL-2.0

//! Errors of the kprobe_events parser, as the kernel reports them.
//!
//! A failed write to the kernel's kprobe_events returns an errno and, for most
//! mistakes, appends an entry to tracing/error_log naming one of the
//! `TP_ERR_*` messages of `kernel/trace/trace_probe.h` and pointing a caret at
//! the offending character. Users grep for those messages and scripts check
//! the caret's column, so both are reproduced exactly: an error here carries
//! the errno, the message's identity and the (argv index, offset) pair the
//! kernel records, from which [`write_error_log`] renders the same text.

use core::fmt;

/// A positive errno value; the kernel returns its negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// No such file or directory: the probed symbol is unknown.
    pub const ENOENT: Errno = Errno(2);
    /// Argument list too long.
    pub const E2BIG: Errno = Errno(7);
    /// Bad address: memory a fetch reads cannot be read.
    pub const EFAULT: Errno = Errno(14);
    /// Out of memory (also the kernel's answer for too long `%pd` expansions).
    pub const ENOMEM: Errno = Errno(12);
    /// No such device: the event an `e` probe attaches to does not exist.
    pub const ENODEV: Errno = Errno(19);
    /// Device or resource busy: an enabled event cannot be deleted.
    pub const EBUSY: Errno = Errno(16);
    /// The event already exists.
    pub const EEXIST: Errno = Errno(17);
    /// Invalid argument: most parse errors.
    pub const EINVAL: Errno = Errno(22);
    /// Numerical result out of range (from `kstrtoul()` and friends).
    pub const ERANGE: Errno = Errno(34);
    /// Illegal byte sequence: the probe is not at an instruction boundary.
    pub const EILSEQ: Errno = Errno(84);
    /// Operation not supported: BTF arguments on a kernel without BTF.
    pub const EOPNOTSUPP: Errno = Errno(95);

    /// The value a kernel function returns for this error (negative).
    pub fn to_kernel(self) -> i32 {
        self.0.wrapping_neg()
    }
}

macro_rules! error_codes {
    ($($name:ident = $ident:literal, $text:literal;)*) => {
        /// The kernel's `TP_ERR_*` codes, in the kernel's order.
        ///
        /// The discriminant is the kernel's index into its message table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(
                #[doc = $text]
                $name,
            )*
        }

        impl ErrorCode {
            /// Every code, in the kernel's order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            /// The message the kernel writes to error_log.
            pub fn text(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $text,)*
                }
            }

            /// The kernel's name for the code, without the `TP_ERR_` prefix.
            pub fn ident(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $ident,)*
                }
            }
        }
    };
}

error_codes! {
    FileNotFound = "FILE_NOT_FOUND", "Failed to find the given file";
    NoRegularFile = "NO_REGULAR_FILE", "Not a regular file";
    BadRefcnt = "BAD_REFCNT", "Invalid reference counter offset";
    RefcntOpenBrace = "REFCNT_OPEN_BRACE", "Reference counter brace is not closed";
    BadRefcntSuffix = "BAD_REFCNT_SUFFIX", "Reference counter has wrong suffix";
    BadUprobeOffs = "BAD_UPROBE_OFFS", "Invalid uprobe offset";
    BadMaxactType = "BAD_MAXACT_TYPE", "Maxactive is only for function exit";
    BadMaxact = "BAD_MAXACT", "Invalid maxactive number";
    MaxactTooBig = "MAXACT_TOO_BIG", "Maxactive is too big";
    BadProbeAddr = "BAD_PROBE_ADDR", "Invalid probed address or symbol";
    NonUniqSymbol = "NON_UNIQ_SYMBOL", "The symbol is not unique";
    BadRetprobe = "BAD_RETPROBE", "Retprobe address must be an function entry";
    NoTracepoint = "NO_TRACEPOINT", "Tracepoint is not found";
    BadTpName = "BAD_TP_NAME", "Invalid character in tracepoint name";
    BadAddrSuffix = "BAD_ADDR_SUFFIX", "Invalid probed address suffix";
    NoGroupName = "NO_GROUP_NAME", "Group name is not specified";
    GroupTooLong = "GROUP_TOO_LONG", "Group name is too long";
    BadGroupName = "BAD_GROUP_NAME", "Group name must follow the same rules as C identifiers";
    NoEventName = "NO_EVENT_NAME", "Event name is not specified";
    EventTooLong = "EVENT_TOO_LONG", "Event name is too long";
    BadEventName = "BAD_EVENT_NAME", "Event name must follow the same rules as C identifiers";
    EventExist = "EVENT_EXIST", "Given group/event name is already used by another event";
    RetvalOnProbe = "RETVAL_ON_PROBE", "$retval is not available on probe";
    NoRetval = "NO_RETVAL", "This function returns 'void' type";
    BadStackNum = "BAD_STACK_NUM", "Invalid stack number";
    BadArgNum = "BAD_ARG_NUM", "Invalid argument number";
    BadVar = "BAD_VAR", "Invalid $-variable specified";
    BadRegName = "BAD_REG_NAME", "Invalid register name";
    BadMemAddr = "BAD_MEM_ADDR", "Invalid memory address";
    BadImm = "BAD_IMM", "Invalid immediate value";
    ImmstrNoClose = "IMMSTR_NO_CLOSE", "String is not closed with '\"'";
    FileOnKprobe = "FILE_ON_KPROBE", "File offset is not available with kprobe";
    BadFileOffs = "BAD_FILE_OFFS", "Invalid file offset value";
    SymOnUprobe = "SYM_ON_UPROBE", "Symbol is not available with uprobe";
    TooManyOps = "TOO_MANY_OPS", "Dereference is too much nested";
    DerefNeedBrace = "DEREF_NEED_BRACE", "Dereference needs a brace";
    BadDerefOffs = "BAD_DEREF_OFFS", "Invalid dereference offset";
    DerefOpenBrace = "DEREF_OPEN_BRACE", "Dereference brace is not closed";
    CommCantDeref = "COMM_CANT_DEREF", "$comm can not be dereferenced";
    BadFetchArg = "BAD_FETCH_ARG", "Invalid fetch argument";
    ArrayNoClose = "ARRAY_NO_CLOSE", "Array is not closed";
    BadArraySuffix = "BAD_ARRAY_SUFFIX", "Array has wrong suffix";
    BadArrayNum = "BAD_ARRAY_NUM", "Invalid array size";
    ArrayTooBig = "ARRAY_TOO_BIG", "Array number is too big";
    BadType = "BAD_TYPE", "Unknown type is specified";
    BadString = "BAD_STRING", "String accepts only memory argument";
    BadSymstring = "BAD_SYMSTRING", "Symbol String doesn't accept data/userdata";
    BadBitfield = "BAD_BITFIELD", "Invalid bitfield";
    ArgNameTooLong = "ARG_NAME_TOO_LONG", "Argument name is too long";
    NoArgName = "NO_ARG_NAME", "Argument name is not specified";
    BadArgName = "BAD_ARG_NAME", "Argument name must follow the same rules as C identifiers";
    UsedArgName = "USED_ARG_NAME", "This argument name is already used";
    ArgTooLong = "ARG_TOO_LONG", "Argument expression is too long";
    NoArgBody = "NO_ARG_BODY", "No argument expression";
    BadInsnBndry = "BAD_INSN_BNDRY", "Probe point is not an instruction boundary";
    FailRegProbe = "FAIL_REG_PROBE", "Failed to register probe event";
    DiffProbeType = "DIFF_PROBE_TYPE", "Probe type is different from existing probe";
    DiffArgType = "DIFF_ARG_TYPE", "Argument type or name is different from existing probe";
    SameProbe = "SAME_PROBE", "There is already the exact same probe event";
    NoEventInfo = "NO_EVENT_INFO", "This requires both group and event name to attach";
    BadAttachEvent = "BAD_ATTACH_EVENT", "Attached event does not exist";
    BadAttachArg = "BAD_ATTACH_ARG", "Attached event does not have this field";
    NoEpFilter = "NO_EP_FILTER", "No filter rule after 'if'";
    NosupBtfarg = "NOSUP_BTFARG", "BTF is not available or not supported";
    NoBtfarg = "NO_BTFARG", "This variable is not found at this probe point";
    NoBtfEntry = "NO_BTF_ENTRY", "No BTF entry for this probe point";
    BadVarArgs = "BAD_VAR_ARGS", "$arg* must be an independent parameter without name etc.";
    NofentryArgs = "NOFENTRY_ARGS", "$arg* can be used only on function entry or exit";
    DoubleArgs = "DOUBLE_ARGS", "$arg* can be used only once in the parameters";
    Args2long = "ARGS_2LONG", "$arg* failed because the argument list is too long";
    Argidx2big = "ARGIDX_2BIG", "$argN index is too big";
    NoPtrStrct = "NO_PTR_STRCT", "This is not a pointer to union/structure.";
    NosupDatArg = "NOSUP_DAT_ARG", "Non pointer structure/union argument is not supported.";
    BadHyphen = "BAD_HYPHEN", "Failed to parse single hyphen. Forgot '>'?";
    NoBtfField = "NO_BTF_FIELD", "This field is not found.";
    BadBtfTid = "BAD_BTF_TID", "Failed to get BTF type info.";
    BadType4str = "BAD_TYPE4STR", "This type does not fit for string.";
    NeedStringType = "NEED_STRING_TYPE", "$comm and immediate-string only accepts string type";
    EventTooBig = "EVENT_TOO_BIG", "Event too big (too many fields?)";
    // Linux 7.3's, for its typecasts and per-CPU fetchargs, after 6.12's.
    TypecastReqField = "TYPECAST_REQ_FIELD", "Typecast requires a field access";
    TypecastSymOffset = "TYPECAST_SYM_OFFSET", "@SYM+/-OFFSET with typecast needs parentheses";
    TypecastNotAligned = "TYPECAST_NOT_ALIGNED", "Typecast field option is not byte-aligned";
    TypecastBadArrow = "TYPECAST_BAD_ARROW", "Typecast field option does not support -> operator";
    TooManyNested = "TOO_MANY_NESTED", "Too many nested typecasts/dereferences";
}

/// Where the kernel's error_log points: what `trace_probe_log_err()` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorLog {
    /// Which message.
    pub code: ErrorCode,
    /// The argv index the error is in (0 is `p:...`, 1 the probe point,
    /// 2 the first fetcharg). At or past argc, the caret goes after the end.
    pub index: u16,
    /// The byte offset within that argv entry.
    pub offset: u16,
}

/// A rejected command: what the write returns and what error_log shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The errno the write fails with.
    pub errno: Errno,
    /// The error_log entry, or `None` when the kernel fails silently.
    pub log: Option<ErrorLog>,
    /// Whether the arguments ending in `:%pd`/`:%pD` had been expanded when
    /// the error was found: error_log then shows their expanded text.
    pub expanded: bool,
    /// An entry the kernel logs before `log`, in the same argv entry: its
    /// message and byte offset. 6.12's fprobe parser logs `BAD_VAR` for a
    /// register, then goes on and logs `BAD_FETCH_ARG` at the same place;
    /// its eprobe parser logs why `SYSTEM.EVENT` is no event name, then
    /// `NO_EVENT_INFO` at the word's start ([`ParseError::entries`] gives
    /// both).
    pub preceding: Option<(ErrorCode, u16)>,
}

impl ParseError {
    /// An error that the kernel does not log.
    pub fn silent(errno: Errno) -> ParseError {
        ParseError {
            errno,
            log: None,
            expanded: false,
            preceding: None,
        }
    }

    /// An error logged at argv entry `index`, byte `offset`.
    pub fn logged(errno: Errno, code: ErrorCode, index: usize, offset: usize) -> ParseError {
        ParseError {
            errno,
            log: Some(ErrorLog {
                code,
                index: u16::try_from(index).unwrap_or(u16::MAX),
                offset: u16::try_from(offset).unwrap_or(u16::MAX),
            }),
            expanded: false,
            preceding: None,
        }
    }

    /// The error_log entries of this error, each as an error of its own,
    /// in the order the kernel appends them: the preceding one, if any,
    /// then `log`. Each is to be written with
    /// [`write_error_log`](super::write_error_log).
    pub fn entries(&self) -> impl Iterator<Item = ParseError> {
        let last = ParseError {
            preceding: None,
            ..*self
        };
        let first = match (self.preceding, self.log) {
            (Some((code, offset)), Some(log)) => Some(ParseError {
                log: Some(ErrorLog {
                    code,
                    offset,
                    ..log
                }),
                ..last
            }),
            _ => None,
        };
        first.into_iter().chain(last.log.map(|_| last))
    }

    /// This error, after the kernel logged `code` at the same place.
    pub(crate) fn preceded_by(mut self, code: ErrorCode) -> ParseError {
        self.preceding = self.log.map(|log| (code, log.offset));
        self
    }

    /// This error, after the kernel logged `code` at byte `offset` of the
    /// same argv entry.
    pub(crate) fn preceded_by_at(mut self, code: ErrorCode, offset: u16) -> ParseError {
        self.preceding = Some((code, offset));
        self
    }

    /// The error the kernel reports when registering the parsed probe
    /// fails with `errno` (the tail of `__trace_kprobe_create()`, and of
    /// `__trace_fprobe_create()`, which is the same).
    ///
    /// `-EILSEQ` and `-ENOENT` get their own messages, `-ENOMEM` and
    /// `-EEXIST` are not logged here (their callers log), anything else is
    /// "Failed to register probe event". All point at the probe point.
    pub fn registration(errno: Errno) -> ParseError {
        let code = match errno {
            Errno::EILSEQ => ErrorCode::BadInsnBndry,
            Errno::ENOENT => ErrorCode::BadProbeAddr,
            Errno::ENOMEM | Errno::EEXIST => return ParseError::silent(errno),
            _ => ErrorCode::FailRegProbe,
        };
        ParseError::logged(errno, code, 1, 0).with_expanded()
    }

    /// `EVENT_EXIST`: the group/event name is used by another kind of event.
    pub fn event_exists() -> ParseError {
        ParseError::logged(Errno::EEXIST, ErrorCode::EventExist, 0, 0).with_expanded()
    }

    /// `DIFF_PROBE_TYPE`: appending a kretprobe to a kprobe event or back.
    pub fn diff_probe_type() -> ParseError {
        ParseError::logged(Errno::EEXIST, ErrorCode::DiffProbeType, 0, 0).with_expanded()
    }

    /// `DIFF_ARG_TYPE`: the appended probe's arguments differ from the
    /// event's; `first_diff` is the 1-based argument number the kernel's
    /// `trace_probe_compare_arg_type()` returns.
    pub fn diff_arg_type(first_diff: usize) -> ParseError {
        ParseError::logged(
            Errno::EEXIST,
            ErrorCode::DiffArgType,
            first_diff.saturating_add(1),
            0,
        )
        .with_expanded()
    }

    /// `SAME_PROBE`: the event already has this exact probe.
    pub fn same_probe() -> ParseError {
        ParseError::logged(Errno::EEXIST, ErrorCode::SameProbe, 0, 0).with_expanded()
    }

    pub(crate) fn with_expanded(mut self) -> ParseError {
        self.expanded = true;
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.log {
            Some(log) => write!(f, "{} (errno {})", log.code.text(), self.errno.0),
            None => write!(f, "errno {}", self.errno.0),
        }
    }
}
