// SPDX-License-Identifier: GPL-2.0

//! Output formatting: the writers the pure printers
//! (`pure::probe_events::print`, `write_listing`, `write_error_log`) write
//! into (a `KVec`, a `seq_file`, a `trace_seq`), the symbol resolver for
//! `%pS`, and the tracing core's print callback, which prints a record's
//! arguments in the kernel's kprobe format.
//!
//! [`rkp_event_print_args`] and the `trace_seq` writer run in trace output
//! context, which may be where nothing may be allocated or sleep
//! (`tp_printk`, `ftrace_dump()`): they allocate nothing and take none of
//! rkprobes' locks. The `KVec` and `seq_file` writers run in process
//! context.

use super::{Event, MAX_RECORD};
use crate::{
    ffi::{kallsyms::SymbolBuf, rkp_tev_seq_write},
    kernel_ext::debugfs::SeqFile,
    pure::probe_events::{
        print::{record_extent, write_record_args, SymbolResolver},
        ByteWrite,
    },
};
use kernel::{
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

/// Writes into a `KVec<u8>`.
pub(super) struct VecWriter<'a>(pub(super) &'a mut KVec<u8>);

impl ByteWrite for VecWriter<'_> {
    fn write_bytes(&mut self, b: &[u8]) -> core::fmt::Result {
        self.0
            .extend_from_slice(b, GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}

/// A `seq_file` takes the kernel's bytes as they are.
impl ByteWrite for SeqFile {
    fn write_bytes(&mut self, b: &[u8]) -> core::fmt::Result {
        self.write_raw(b);
        Ok(())
    }
}

/// Writes to a `trace_seq`.
struct SeqWriter(*mut c_void);

impl ByteWrite for SeqWriter {
    fn write_bytes(&mut self, b: &[u8]) -> core::fmt::Result {
        // SAFETY: the trace_seq of the output callback, live for it.
        unsafe { rkp_tev_seq_write(self.0, b.as_ptr().cast(), b.len() as c_uint) };
        Ok(())
    }
}

/// `%pS` through `sprint_symbol()`.
struct KernelSymbols(core::cell::UnsafeCell<SymbolBuf>);

impl SymbolResolver for KernelSymbols {
    fn lookup(&self, addr: u64) -> Option<crate::pure::ksym::SymbolAddr<'_>> {
        // SAFETY: the printer uses each answer before it asks again
        // (`write_symbol`), so no earlier answer still borrows the buffer.
        unsafe { (*self.0.get()).symbolise(addr as usize) }
    }
}

/// Prints the arguments of a record as ` NAME=VALUE...` (the kernel's
/// `trace_probe_print_args()`). Trace output context.
///
/// Only bytes of the record are read: `size` is the record's size in the
/// ring buffer, which after an event is removed and its id given to
/// another can be a record of the old event, of another layout. A size of
/// 0 comes from `tp_printk`, which prints a record rkprobes has just
/// written for this event: its extent is read from its own layout.
///
/// # Safety
///
/// `owner` is a registered `Event`, `ent` one of its records of `size`
/// bytes (of at least its header and fixed fields when `size` is 0), `seq`
/// the output's `trace_seq`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_event_print_args(
    owner: *mut c_void,
    ent: *const c_void,
    size: c_int,
    seq: *mut c_void,
) {
    // SAFETY: the caller's contract.
    let ev = unsafe { &*owner.cast::<Event>() };
    let layout = ev.layout.get();
    let hdr = ev.header;
    let len = match usize::try_from(size) {
        Ok(n) if n > 0 => n,
        _ => {
            let fixed_end = hdr + layout.size as usize;
            // SAFETY: a record rkprobes just wrote for this event has its
            // header and fixed fields (the caller's contract).
            let head = unsafe { core::slice::from_raw_parts(ent.cast::<u8>(), fixed_end) };
            record_extent(&layout, head, hdr, MAX_RECORD)
        }
    };
    // SAFETY: `len` bytes of the record: its size in the ring buffer, or
    // the extent rkprobes wrote.
    let rec = unsafe { core::slice::from_raw_parts(ent.cast::<u8>(), len) };
    // On the stack: trace output may run where nothing may be allocated
    // (`tp_printk`, `ftrace_dump()`).
    let syms = KernelSymbols(core::cell::UnsafeCell::new(SymbolBuf::zeroed()));
    let _ = write_record_args(&mut SeqWriter(seq), &layout, rec, hdr, &syms);
}
