// SPDX-License-Identifier: GPL-2.0

//! A record's arguments: the dynamic data they need (`__get_data_size()`)
//! and their stores (`store_trace_args()`).

use super::{
    fast, kernel_strlen, make_data_loc, mem_read, process, store_reg, store_string, user_strlen,
    Dest, Fast, FetchEnv, FetchInsn, StrKind,
};

/// One argument of an event, as the record layout sees it.
pub trait ArgSource {
    /// The resolved program.
    fn code(&self) -> &[FetchInsn<u64>];
    /// Offset of the field after the header.
    fn offset(&self) -> u32;
    /// Whether it stores a string (a `__data_loc` and dynamic data).
    fn dynamic(&self) -> bool;
    /// [`fast`] of this argument; a source may keep it, made once.
    fn fast(&self) -> Option<Fast> {
        fast(self.code(), self.dynamic())
    }
}

/// An [`ArgSource`] borrowing its program.
pub struct ArgLayout<'c> {
    /// The resolved program.
    pub code: &'c [FetchInsn<u64>],
    /// Offset of the field after the header.
    pub offset: u32,
    /// Whether it stores a string.
    pub dynamic: bool,
}

impl ArgSource for ArgLayout<'_> {
    fn code(&self) -> &[FetchInsn<u64>] {
        self.code
    }

    fn offset(&self) -> u32 {
        self.offset
    }

    fn dynamic(&self) -> bool {
        self.dynamic
    }
}

/// `__get_data_size()`: the dynamic bytes a hit's strings need.
pub fn data_size<A: ArgSource, E: FetchEnv + ?Sized>(args: &[A], env: &E) -> usize {
    let mut total: usize = 0;
    for a in args {
        if !a.dynamic() {
            continue;
        }
        let len = match a.fast() {
            Some(Fast::String { base, offset, user }) => {
                let addr = base.address(offset, env);
                if user {
                    user_strlen(env, addr)
                } else {
                    kernel_strlen(env, addr)
                }
            }
            _ => process(a.code(), env, None),
        };
        if len > 0 {
            total = total.saturating_add(len as usize);
        }
    }
    total
}

/// Whether every hit stores something in the fixed field of an argument
/// with program `code`: a dynamic one (its data location is written first)
/// or one that reads no memory (an event probe's record is no memory read
/// that can fail), whose program cannot fail. An argument that
/// reads memory leaves its field as it was when the read fails; a record
/// whose fields are all always stored needs no zeroing first.
pub fn always_stores(code: &[FetchInsn<u64>], dynamic: bool) -> bool {
    dynamic
        || code.iter().all(|i| {
            matches!(
                i,
                FetchInsn::Nop
                    | FetchInsn::Reg(_)
                    | FetchInsn::StackPointer
                    | FetchInsn::Retval
                    | FetchInsn::Imm(_)
                    | FetchInsn::TpArg(_)
                    | FetchInsn::StRaw(_)
                    | FetchInsn::ModBitfield(_)
                    | FetchInsn::End
            )
        })
}

/// `store_trace_args()`: fills the fields of `rec` (the whole record,
/// header included) after `header_size` bytes; `fixed_size` is the size of
/// the fixed fields, followed by `maxlen` bytes of room for dynamic data.
#[inline(always)]
pub fn store_args<A: ArgSource, E: FetchEnv + ?Sized>(
    args: &[A],
    env: &E,
    rec: &mut [u8],
    header_size: usize,
    fixed_size: usize,
    maxlen: usize,
) {
    let mut dyndata = header_size.saturating_add(fixed_size);
    let mut maxlen = maxlen;
    for a in args {
        let at = header_size.saturating_add(a.offset() as usize);
        let fast = a.fast();
        match fast {
            Some(Fast::Reg(r, size)) => {
                store_reg(env.register(r), size, rec, at);
                continue;
            }
            Some(Fast::Retval(size)) => {
                store_reg(env.return_value(), size, rec, at);
                continue;
            }
            Some(Fast::Arg(n, size)) => {
                store_reg(env.argument(n), size, rec, at);
                continue;
            }
            Some(Fast::Mem { base, offset, size }) => {
                if let Some(out) = rec.get_mut(at..at.saturating_add(usize::from(size))) {
                    // A fault leaves the field as it was (zero here).
                    if !mem_read(env, base.address(offset, env), out) {
                        out.fill(0);
                    }
                }
                continue;
            }
            _ => {}
        }
        let mut d = Dest { rec: &mut *rec, at };
        if a.dynamic() {
            let len = u32::try_from(maxlen).unwrap_or(u32::MAX).min(0xffff);
            let loc = make_data_loc(len, dyndata as u32);
            if !d.write_u32(at, loc) {
                continue;
            }
        }
        let ret = match fast {
            Some(Fast::String { base, offset, user }) => {
                let kind = if user { StrKind::User } else { StrKind::Kernel };
                store_string(env, kind, base.address(offset, env), &mut d, at)
            }
            _ => process(a.code(), env, Some(&mut d)),
        };
        if a.dynamic() && ret > 0 {
            dyndata = dyndata.saturating_add(ret as usize);
            maxlen = maxlen.saturating_sub(ret as usize);
        }
    }
}
