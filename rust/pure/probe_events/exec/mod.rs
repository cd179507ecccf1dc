// SPDX-License-Identifier: GPL-2.0

//! Running fetch programs: what the kernel's `process_fetch_insn()`,
//! `process_fetch_insn_bottom()`, `__get_data_size()` and
//! `store_trace_args()` do when a probe event is hit.
//!
//! A program comes from the parser ([`super::FetchArg::program`]) with its
//! text resolved by the module ([`FetchInsn::map`]): an immediate string
//! (`Data`) becomes the address of its NUL-terminated copy, and a `@SYM`
//! placeholder (`Symbol`) is skipped, its address being in the `Imm` that
//! follows. Everything the program reads goes through [`FetchEnv`], which
//! the module implements with the hit's registers and the kernel's
//! non-faulting accessors, and the host tests with a model of memory.
//!
//! An event probe's program reads the record of the event it is attached
//! to ([`FetchEnv::record`]) as `get_event_field()` does
//! ([`event_field`]); a kprobe's has none.
//!
//! A record is laid out as the kernel's: the event header, then each
//! argument's fixed field at its offset, then the dynamic data (strings) in
//! argument order. A string field is a `__data_loc` word: length in the
//! high 16 bits, offset from the start of the record in the low 16.
//!
//! Nothing here allocates, panics or indexes out of bounds: it runs in the
//! probe's handler. Errors are the kernel's negative errno values.

mod args;
mod chunked;
mod fast;

pub use args::{always_stores, data_size, store_args, ArgLayout, ArgSource};
pub use chunked::{chunk_len, find_nul, strncpy_chunked, strnlen_chunked, STR_CHUNK};
pub use fast::{fast, Base, Fast};

use super::{
    error::Errno,
    program::{EventField, FetchInsn, FieldString},
    regs::Register,
    types::Bitfield,
    MAX_STRING_SIZE,
};

/// What a fetch program reads. Every method runs in the probe's handler:
/// it may not sleep, allocate or fault.
pub trait FetchEnv {
    /// A register of the hit.
    fn register(&self, r: Register) -> u64;
    /// `regs_get_kernel_stack_nth()`: the Nth word of the kernel stack, 0
    /// beyond it.
    fn stack_nth(&self, n: u32) -> u64;
    /// The stack pointer of the hit.
    fn stack_pointer(&self) -> u64;
    /// `regs_return_value()`.
    fn return_value(&self) -> u64;
    /// `regs_get_kernel_argument()`: function argument N (0-based).
    fn argument(&self, n: u32) -> u64;
    /// Function argument N as saved at the entry of a return probe.
    fn entry_argument(&self, n: u32) -> u64;
    /// The address of the current task's `comm`.
    fn comm_address(&self) -> u64;
    /// The address of the current task (`current`).
    fn current_task(&self) -> u64;
    /// `this_cpu_ptr()` of a per-CPU variable's address: this CPU's copy.
    fn this_cpu_ptr(&self, addr: u64) -> u64;
    /// `copy_from_kernel_nofault()`: false when the memory is not readable.
    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool;
    /// `copy_from_user_nofault()`.
    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool;
    /// `strncpy_from_kernel_nofault()`: the length copied including the
    /// NUL (at most `buf.len()`, the string cut and NUL-terminated there),
    /// or an error.
    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    /// `strncpy_from_user_nofault()`, likewise, but 0 for an empty string
    /// (as the kernel's: the record keeps no data and prints `(fault)`).
    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    /// `strnlen_user_nofault()`: the length including the NUL, at most
    /// `max`, or an error.
    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno>;
    /// The length of the kernel string at `addr` including its NUL, at
    /// most `max`, or `EFAULT` when a byte before the NUL cannot be read:
    /// what the kernel's `fetch_store_strlen()` measures, one
    /// `copy_from_kernel_nofault()` a byte, and so does this default. An
    /// implementation may read by larger pieces that fault where the byte
    /// reads would ([`strnlen_chunked`]).
    fn strnlen_kernel(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        let mut len = 0;
        if max == 0 {
            return Ok(0);
        }
        loop {
            let mut c = [0u8; 1];
            let ok = self.read_kernel(addr.wrapping_add(len as u64), &mut c);
            len += 1;
            if !ok {
                return Err(Errno::EFAULT);
            }
            if c[0] == 0 || len >= max {
                return Ok(len);
            }
        }
    }
    /// `sprint_symbol()` of `addr` (`symbol+off/size [module]`, or the
    /// address): formats it into a buffer of the kernel's own
    /// `KSYM_SYMBOL_LEN` bytes, which the implementation owns, copies what
    /// fits of it into `room` (cut and NUL-terminated there, unless `room`
    /// is empty) and returns its whole length without the NUL.
    ///
    /// `sprint_symbol()` writes up to `KSYM_SYMBOL_LEN` bytes whatever the
    /// room, so no buffer of this crate's choosing may be handed to it: the
    /// size is the kernel's, and only the kernel's headers know it.
    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize;
    /// `TASK_SIZE` of the current task. x86 has non-overlapping kernel and
    /// user address spaces (`CONFIG_ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE`),
    /// so the kernel's `probe_mem_read()`, `fetch_store_strlen()` and
    /// `fetch_store_string()` read an address below it as user memory.
    fn task_size(&self) -> u64;
    /// The record of the event an event probe is attached to, from its
    /// common header on, as the event's trigger is given it: what its
    /// [`FetchInsn::TpArg`] read. Empty at a kprobe's hit, which has none.
    fn record(&self) -> &[u8] {
        &[]
    }
    /// The address of [`FetchEnv::record`]'s first byte, which a string
    /// field's value is an address in, to be read back through
    /// [`FetchEnv::read_kernel`] and the string reads: the slice's own
    /// address, unless the implementation models memory elsewhere.
    fn record_address(&self) -> u64 {
        self.record().as_ptr() as u64
    }
}

/// Reads `N` bytes of `rec` at `at`, `None` past its end.
fn record_bytes<const N: usize>(rec: &[u8], at: usize) -> Option<[u8; N]> {
    rec.get(at..)?.first_chunk::<N>().copied()
}

/// `get_event_field()`: the value of an event probe's `$FIELD` in the
/// record `env` has. A string field's is the string's address (inside the
/// record for `__data_loc`, `__rel_loc` and `char[N]`, from the `__rel_loc`
/// field's own start as the kernel computes it); a numeric field's is its
/// bytes, sign-extended if signed, of size 1, 2, 4 or else 8. A field the
/// record does not hold reads as 0 (the kernel's trigger is given whole
/// records of the event, which always hold their fields).
pub fn event_field<E: FetchEnv + ?Sized>(field: &EventField, env: &E) -> u64 {
    let rec = env.record();
    let at = field.offset as usize;
    let base = env.record_address();
    let addr = base.wrapping_add(u64::from(field.offset));
    let low16 = |v: Option<[u8; 4]>| v.map(|b| u64::from(u32::from_ne_bytes(b) & 0xffff));
    match field.string {
        FieldString::Dynamic => low16(record_bytes(rec, at)).map_or(0, |o| base.wrapping_add(o)),
        FieldString::RelDynamic => low16(record_bytes(rec, at)).map_or(0, |o| addr.wrapping_add(o)),
        FieldString::Static => addr,
        FieldString::Pointer => record_bytes::<8>(rec, at).map_or(0, u64::from_ne_bytes),
        FieldString::None => match (field.size, field.signed) {
            (1, false) => record_bytes::<1>(rec, at).map_or(0, |b| u64::from(b[0])),
            (1, true) => record_bytes::<1>(rec, at).map_or(0, |b| b[0] as i8 as i64 as u64),
            (2, false) => record_bytes(rec, at).map_or(0, |b| u64::from(u16::from_ne_bytes(b))),
            (2, true) => record_bytes(rec, at).map_or(0, |b| i16::from_ne_bytes(b) as i64 as u64),
            (4, false) => record_bytes(rec, at).map_or(0, |b| u64::from(u32::from_ne_bytes(b))),
            (4, true) => record_bytes(rec, at).map_or(0, |b| i32::from_ne_bytes(b) as i64 as u64),
            _ => record_bytes::<8>(rec, at).map_or(0, u64::from_ne_bytes),
        },
    }
}

/// Bytes of a `__data_loc` field.
pub const DATA_LOC_SIZE: usize = 4;

/// `make_data_loc(len, offs)`.
pub fn make_data_loc(len: u32, offs: u32) -> u32 {
    (len << 16) | (offs & 0xffff)
}

/// The length half of a `__data_loc` word.
pub fn data_loc_len(loc: u32) -> u32 {
    loc >> 16
}

/// The offset half of a `__data_loc` word.
pub fn data_loc_offset(loc: u32) -> u32 {
    loc & 0xffff
}

/// `update_data_loc()`: the room left after `consumed` bytes.
fn update_data_loc(loc: u32, consumed: i64) -> u32 {
    let c = u32::try_from(consumed.max(0)).unwrap_or(0);
    make_data_loc(
        data_loc_len(loc).wrapping_sub(c),
        data_loc_offset(loc).wrapping_add(c),
    )
}

/// `-EILSEQ`: a malformed program.
const EILSEQ: i64 = -(Errno::EILSEQ.0 as i64);
/// `-ENOMEM`: no room left for a string.
const ENOMEM: i64 = -(Errno::ENOMEM.0 as i64);
/// `-EFAULT`: memory that could not be read.
const EFAULT: i64 = -14;
/// `-EINVAL`: a record too small for its layout (a bug of the caller).
const EINVAL: i64 = -(Errno::EINVAL.0 as i64);

/// Where a program stores: the whole record and the offset of the field.
pub struct Dest<'r> {
    /// The record, from its header on (the kernel's `base`).
    pub rec: &'r mut [u8],
    /// Offset of the field in `rec`.
    pub at: usize,
}

impl Dest<'_> {
    fn get(&self, at: usize, len: usize) -> Option<&[u8]> {
        self.rec.get(at..at.checked_add(len)?)
    }

    fn get_mut(&mut self, at: usize, len: usize) -> Option<&mut [u8]> {
        self.rec.get_mut(at..at.checked_add(len)?)
    }

    fn read_u32(&self, at: usize) -> Option<u32> {
        let b = self.get(at, 4)?;
        Some(u32::from_ne_bytes([
            *b.first()?,
            *b.get(1)?,
            *b.get(2)?,
            *b.get(3)?,
        ]))
    }

    fn write_u32(&mut self, at: usize, v: u32) -> bool {
        match self.get_mut(at, 4) {
            Some(b) => {
                b.copy_from_slice(&v.to_ne_bytes());
                true
            }
            None => false,
        }
    }
}

/// The size a store instruction stores, for array steps (the kernel's
/// `code->size`).
fn store_size<T>(insn: &FetchInsn<T>) -> usize {
    match *insn {
        FetchInsn::StRaw(size) => usize::from(size),
        FetchInsn::StMem { size, .. } | FetchInsn::StUMem { size, .. } => usize::from(size),
        FetchInsn::StString { .. } | FetchInsn::StUString { .. } | FetchInsn::StSymStr { .. } => {
            DATA_LOC_SIZE
        }
        _ => 0,
    }
}

/// `fetch_store_raw()`: the low `size` bytes of `val`.
fn store_raw(val: u64, size: u8, out: &mut [u8]) {
    let bytes = val.to_ne_bytes();
    // The common sizes as fixed-size stores: a copy of a variable length
    // would be a call to `memcpy()` on every hit.
    match size {
        8 => {
            if let Some(d) = out.first_chunk_mut::<8>() {
                *d = bytes;
                return;
            }
        }
        4 => {
            if let (Some(d), Some(s)) = (out.first_chunk_mut::<4>(), bytes.first_chunk::<4>()) {
                *d = *s;
                return;
            }
        }
        2 => {
            if let (Some(d), Some(s)) = (out.first_chunk_mut::<2>(), bytes.first_chunk::<2>()) {
                *d = *s;
                return;
            }
        }
        1 => {
            if let (Some(d), Some(s)) = (out.first_mut(), bytes.first()) {
                *d = *s;
                return;
            }
        }
        _ => {}
    }
    let n = usize::from(size).min(out.len()).min(bytes.len());
    if let (Some(d), Some(s)) = (out.get_mut(..n), bytes.get(..n)) {
        d.copy_from_slice(s);
    }
}

/// [`store_raw`] of a register at `at` in `rec`, for [`store_args`]' fast
/// path: the size tested first and each store bounded by the record, in
/// about half the instructions of cutting the field out and dispatching
/// in `store_raw` (insn-profile --events).
#[inline(always)]
fn store_reg(val: u64, size: u8, rec: &mut [u8], at: usize) {
    let bytes = val.to_ne_bytes();
    let Some(out) = rec.get_mut(at..) else {
        return;
    };
    match size {
        8 => {
            if let Some(d) = out.first_chunk_mut::<8>() {
                *d = bytes;
            }
        }
        4 => {
            if let (Some(d), Some(s)) = (out.first_chunk_mut::<4>(), bytes.first_chunk::<4>()) {
                *d = *s;
            }
        }
        _ => {
            if let Some(out) = out.get_mut(..usize::from(size)) {
                store_raw(val, size, out);
            }
        }
    }
}

/// `fetch_apply_bitfield()` on the value stored at `out`.
fn apply_bitfield(bf: Bitfield, out: &mut [u8]) {
    let n = usize::from(bf.basesize);
    let Some(b) = out.get_mut(..n) else { return };
    let mut w = [0u8; 8];
    let Some(wp) = w.get_mut(..n) else { return };
    wp.copy_from_slice(b);
    let v = u64::from_ne_bytes(w);
    let bits = 8 * n as u32;
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    // The kernel shifts in the container's own width.
    let v = (v.checked_shl(u32::from(bf.lshift)).unwrap_or(0) & mask)
        .checked_shr(u32::from(bf.rshift))
        .unwrap_or(0);
    if let Some(s) = v.to_ne_bytes().get(..n) {
        b.copy_from_slice(s);
    }
}

/// `probe_mem_read()`: memory below `TASK_SIZE` is user memory
/// (`probe_mem_read_user()`), the rest kernel memory.
fn mem_read<E: FetchEnv + ?Sized>(env: &E, addr: u64, buf: &mut [u8]) -> bool {
    if addr < env.task_size() {
        env.read_user(addr, buf)
    } else {
        env.read_kernel(addr, buf)
    }
}

/// `fetch_store_strlen_user()`: the length of the user string at `addr`
/// including its NUL, at most `MAX_STRING_SIZE`, or a negative errno.
fn user_strlen<E: FetchEnv + ?Sized>(env: &E, addr: u64) -> i64 {
    env.strnlen_user(addr, MAX_STRING_SIZE)
        .map_or_else(|e| -i64::from(e.0), |n| n as i64)
}

/// `fetch_store_strlen()`: the length of the string at `addr` including
/// its NUL, at most `MAX_STRING_SIZE`, or `-EFAULT`; a user string below
/// `TASK_SIZE`.
fn kernel_strlen<E: FetchEnv + ?Sized>(env: &E, addr: u64) -> i64 {
    if addr < env.task_size() {
        return user_strlen(env, addr);
    }
    env.strnlen_kernel(addr, MAX_STRING_SIZE)
        .map_or_else(|e| -i64::from(e.0), |n| n as i64)
}

/// `fetch_store_symstrlen()`: the symbol's text and its NUL.
fn symstr_len<E: FetchEnv + ?Sized>(env: &E, addr: u64) -> i64 {
    i64::try_from(env.symbol_string(addr, &mut [])).map_or(0, |n| n.saturating_add(1))
}

/// Which string a string store fetches.
#[derive(Clone, Copy)]
enum StrKind {
    Kernel,
    User,
    Symbol,
}

/// `fetch_store_string()`, `fetch_store_string_user()` and
/// `fetch_store_symstring()`: copies into the room the `__data_loc` at `at`
/// describes and rewrites it with what was stored. A kernel string below
/// `TASK_SIZE` is a user string, as `fetch_store_string()` decides.
fn store_string<E: FetchEnv + ?Sized>(
    env: &E,
    kind: StrKind,
    addr: u64,
    d: &mut Dest<'_>,
    at: usize,
) -> i64 {
    let kind = match kind {
        StrKind::Kernel if addr < env.task_size() => StrKind::User,
        k => k,
    };
    let Some(loc) = d.read_u32(at) else {
        return EINVAL;
    };
    let maxlen = data_loc_len(loc) as usize;
    if maxlen == 0 {
        return ENOMEM;
    }
    let off = data_loc_offset(loc) as usize;
    let Some(room) = d.get_mut(off, maxlen) else {
        return EINVAL;
    };
    let ret: i64 = match kind {
        StrKind::Kernel => env
            .strncpy_kernel(addr, room)
            .map_or_else(|e| -i64::from(e.0), |n| n as i64),
        StrKind::User => env
            .strncpy_user(addr, room)
            .map_or_else(|e| -i64::from(e.0), |n| n as i64),
        StrKind::Symbol => {
            // The size pass reserved the text and its NUL; a record cut at
            // its largest size keeps what fits. The kernel returns the
            // text's length and does not rewrite the data_loc.
            let n = env.symbol_string(addr, room);
            let stored = n.min(room.len().saturating_sub(1));
            return i64::try_from(stored).unwrap_or(0);
        }
    };
    let stored = u32::try_from(ret.max(0)).unwrap_or(0);
    if !d.write_u32(at, make_data_loc(stored, off as u32)) {
        return EINVAL;
    }
    ret
}

/// Runs a program: without `dest`, returns the dynamic data its strings
/// need (`__get_data_size()`'s part for one argument); with it, stores the
/// argument and returns the dynamic bytes used, or a negative errno.
pub fn process<E: FetchEnv + ?Sized>(
    code: &[FetchInsn<u64>],
    env: &E,
    dest: Option<&mut Dest<'_>>,
) -> i64 {
    let mut pc = 0;
    let val = loop {
        let Some(insn) = code.get(pc) else {
            return EILSEQ;
        };
        let v = match *insn {
            FetchInsn::Reg(r) => env.register(r),
            FetchInsn::Stack(n) => env.stack_nth(n),
            FetchInsn::StackPointer => env.stack_pointer(),
            FetchInsn::Retval => env.return_value(),
            FetchInsn::Arg(n) => env.argument(n),
            FetchInsn::EntryArg(n) => env.entry_argument(n),
            FetchInsn::Imm(v) => v,
            FetchInsn::Comm => env.comm_address(),
            FetchInsn::Current => env.current_task(),
            FetchInsn::Data(addr) => addr,
            FetchInsn::TpArg(ref field) => event_field(field, env),
            // The `@SYM` placeholder: its address is the next `Imm`.
            FetchInsn::Symbol(_) => {
                pc += 1;
                continue;
            }
            _ => return EILSEQ,
        };
        pc += 1;
        break v;
    };
    bottom(code, pc, val, env, dest)
}

/// `process_fetch_insn_bottom()`.
fn bottom<E: FetchEnv + ?Sized>(
    code: &[FetchInsn<u64>],
    mut pc: usize,
    mut val: u64,
    env: &E,
    mut dest: Option<&mut Dest<'_>>,
) -> i64 {
    let mut total: i64 = 0;
    let mut ret: i64 = 0;
    let mut i: u32 = 0;
    let mut loc: u32 = 0;
    let mut lval = val;
    // Bounds the work whatever the program says.
    let mut steps = 0u32;
    'stage2: loop {
        // Second stage: dereferences, and per-CPU addresses.
        loop {
            let user = match code.get(pc) {
                Some(FetchInsn::Deref(_)) => false,
                Some(FetchInsn::UDeref(_)) => true,
                Some(FetchInsn::CpuPtr) => {
                    val = env.this_cpu_ptr(val);
                    pc += 1;
                    continue;
                }
                _ => break,
            };
            let off = match code.get(pc) {
                Some(FetchInsn::Deref(o) | FetchInsn::UDeref(o)) => *o,
                _ => 0,
            };
            lval = val;
            let mut w = [0u8; 8];
            let a = val.wrapping_add(off as i64 as u64);
            let ok = if user {
                env.read_user(a, &mut w)
            } else {
                mem_read(env, a, &mut w)
            };
            if !ok {
                return EFAULT;
            }
            val = u64::from_ne_bytes(w);
            pc += 1;
        }
        let s3 = pc;
        'stage3: loop {
            steps += 1;
            if steps > 4 * super::MAX_ARRAY_LEN + 16 {
                return EILSEQ;
            }
            let Some(&st) = code.get(pc) else {
                return EILSEQ;
            };
            match dest.as_deref_mut() {
                None => {
                    ret = match st {
                        FetchInsn::StString { offset } => {
                            kernel_strlen(env, val.wrapping_add(offset as i64 as u64))
                        }
                        FetchInsn::StUString { offset } => {
                            user_strlen(env, val.wrapping_add(offset as i64 as u64))
                        }
                        FetchInsn::StSymStr { offset } => {
                            symstr_len(env, val.wrapping_add(offset as i64 as u64))
                        }
                        _ => return EILSEQ,
                    };
                    pc += 1;
                }
                Some(d) => {
                    let at = d.at;
                    match st {
                        FetchInsn::StRaw(size) => {
                            let Some(out) = d.get_mut(at, usize::from(size)) else {
                                return EINVAL;
                            };
                            store_raw(val, size, out);
                        }
                        FetchInsn::StMem { offset, size } | FetchInsn::StUMem { offset, size } => {
                            let user = matches!(st, FetchInsn::StUMem { .. });
                            let a = val.wrapping_add(offset as i64 as u64);
                            let Some(out) = d.get_mut(at, usize::from(size)) else {
                                return EINVAL;
                            };
                            let ok = if user {
                                env.read_user(a, out)
                            } else {
                                mem_read(env, a, out)
                            };
                            if !ok {
                                // The kernel leaves the field as it was; a
                                // record starts zeroed here.
                                out.fill(0);
                            }
                        }
                        FetchInsn::StString { offset }
                        | FetchInsn::StUString { offset }
                        | FetchInsn::StSymStr { offset } => {
                            let kind = match st {
                                FetchInsn::StString { .. } => StrKind::Kernel,
                                FetchInsn::StUString { .. } => StrKind::User,
                                _ => StrKind::Symbol,
                            };
                            let Some(l) = d.read_u32(at) else {
                                return EINVAL;
                            };
                            loc = l;
                            ret = store_string(
                                env,
                                kind,
                                val.wrapping_add(offset as i64 as u64),
                                d,
                                at,
                            );
                        }
                        _ => return EILSEQ,
                    }
                    pc += 1;
                    // Fourth stage: a bitfield of the stored value.
                    if let Some(FetchInsn::ModBitfield(bf)) = code.get(pc) {
                        if let Some(out) = d.get_mut(at, usize::from(bf.basesize)) {
                            apply_bitfield(*bf, out);
                        }
                        pc += 1;
                    }
                }
            }
            // The last stage: arrays.
            if let Some(&FetchInsn::LoopArray(n)) = code.get(pc) {
                if ret < 0 {
                    ret = 0;
                }
                total += ret;
                i += 1;
                if i < n {
                    pc = s3;
                    let Some(first) = code.get(s3) else {
                        return EILSEQ;
                    };
                    let size = store_size(first);
                    if !matches!(
                        first,
                        FetchInsn::StString { .. } | FetchInsn::StUString { .. }
                    ) {
                        if let Some(d) = dest.as_deref_mut() {
                            d.at = d.at.saturating_add(size);
                        }
                        val = val.wrapping_add(size as u64);
                        continue 'stage3;
                    }
                    // An array of strings: the next pointer, dereferenced
                    // again by the instruction before the store.
                    pc = match s3.checked_sub(1) {
                        Some(p) => p,
                        None => return EILSEQ,
                    };
                    val = lval.wrapping_add(8);
                    if let Some(d) = dest.as_deref_mut() {
                        d.at = d.at.saturating_add(DATA_LOC_SIZE);
                        let at = d.at;
                        if !d.write_u32(at, update_data_loc(loc, ret)) {
                            return EINVAL;
                        }
                    }
                    continue 'stage2;
                }
                pc += 1;
                ret = total;
            }
            return if matches!(code.get(pc), Some(FetchInsn::End)) {
                ret
            } else {
                EILSEQ
            };
        }
    }
}
