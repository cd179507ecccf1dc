// SPDX-License-Identifier: GPL-2.0

//! The x86-64 part of kretprobes: return stubs and hijacking a return
//! address (the trampoline's callback, which enters the probe core, is
//! `rethook_callback.rs`).
//!
//! A kretprobe's pool has one 8-byte stub per instance: `call` to
//! `rkp_kretprobe_trampoline` (`kretprobe_trampoline.S`), padded with int3.
//! A hijacked function returns into its instance's stub; the stub's `call`
//! pushes the stub's address (plus 5) exactly where the real return address
//! was, which is also where the trampoline's `ret` will find the real one
//! once the callback has written it back. This is the frame layout of the
//! kernel's `arch_rethook_trampoline`, whose fake return address is pushed
//! by the trampoline itself instead.
//!
//! Stubs come in pages that start with a header naming their owner, so
//! that a returning frame's stub address alone leads to it. The registers
//! of an entry and the word of a return are typed ([`EntryRegs`],
//! [`ReturnFrame`]): made once where the hit path and the trampoline enter
//! Rust, they let the probe core hijack and restore returns safely.

use crate::ffi::{self, rkp_kretprobe_trampoline};
use core::{marker::PhantomData, mem::offset_of, ptr::NonNull};
use kernel::{ffi::c_void, page::PAGE_SIZE, prelude::*, static_assert};

/// Bytes of one return stub.
pub(crate) const RETHOOK_STUB_SIZE: usize = 8;

/// `call rel32`.
const CALL_REL32: u8 = 0xe8;
/// Length of `call rel32`.
pub(super) const CALL_LEN: usize = 5;

/// The code of the stub at `at`: a call of the trampoline. `ERANGE` when the
/// trampoline is beyond a rel32's reach (execmem places stubs within it).
pub(crate) fn rethook_stub(at: usize) -> Result<[u8; RETHOOK_STUB_SIZE]> {
    let target = rkp_kretprobe_trampoline as *const () as usize as i64;
    let next = (at as i64).wrapping_add(CALL_LEN as i64);
    let rel = i32::try_from(target.wrapping_sub(next)).map_err(|_| ERANGE)?;
    let r = rel.to_le_bytes();
    Ok([CALL_REL32, r[0], r[1], r[2], r[3], 0xcc, 0xcc, 0xcc])
}

/// Bytes at the start of every page of return stubs taken by its header.
pub(crate) const STUB_HEADER: usize = 32;
/// Marks a page of return stubs.
const STUB_MAGIC: u64 = u64::from_le_bytes(*b"rkpretst");

/// The start of every page of return stubs: what a returning frame's stub
/// address alone leads to ([`ReturnFrame::owner`]).
#[repr(C)]
struct StubHeader {
    magic: u64,
    /// The owner of the page's stubs (a kretprobe pool).
    owner: NonNull<c_void>,
    /// Index, in its owner's stubs, of the page's first stub.
    first: u32,
    /// Stubs in this page.
    count: u32,
    _reserved: u64,
}

static_assert!(core::mem::size_of::<StubHeader>() <= STUB_HEADER);

/// The header of a page of return stubs of `owner`, whose first stub is
/// `owner`'s stub `first` and which holds `count` stubs: the bytes to write
/// at the page's start, before its stubs. Process context.
pub(crate) fn stub_page_header<O>(owner: NonNull<O>, first: u32, count: u32) -> [u8; STUB_HEADER] {
    let mut h = [0u8; STUB_HEADER];
    let fields: [(usize, &[u8]); 4] = [
        (offset_of!(StubHeader, magic), &STUB_MAGIC.to_ne_bytes()),
        (
            offset_of!(StubHeader, owner),
            &(owner.as_ptr() as usize).to_ne_bytes(),
        ),
        (offset_of!(StubHeader, first), &first.to_ne_bytes()),
        (offset_of!(StubHeader, count), &count.to_ne_bytes()),
    ];
    for (off, bytes) in fields {
        if let Some(dst) = h.get_mut(off..off + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
    }
    h
}

/// The registers of a probe hit at a function's first instruction, with
/// the stack word that holds the function's return address: what an entry
/// handler reads and rewrites to hijack the return.
///
/// # Invariants
///
/// `ret` is the current task's stack word that holds the return address of
/// the function being entered: valid for reads and writes, and holding that
/// address, for `'a`, during which the function does not run (the hit's
/// handlers run before its first instruction).
pub(crate) struct EntryRegs<'a> {
    regs: &'a mut ffi::pt_regs,
    ret: NonNull<usize>,
}

impl<'a> EntryRegs<'a> {
    /// The registers `regs` of a hit at a function's entry.
    ///
    /// # Safety
    ///
    /// `regs` are those of a hit at a function's first instruction (after
    /// ENDBR), on the current task's stack, whose `sp` points to the return
    /// address, and the function does not run before `'a` ends.
    #[inline(always)]
    pub(crate) unsafe fn new(regs: &'a mut ffi::pt_regs) -> Self {
        let ret = regs.sp as *mut usize;
        // INVARIANT: `sp` at a function's first instruction points to the
        // return address (the caller's contract), which is not null.
        EntryRegs {
            // SAFETY: the top of a live stack is not null.
            ret: unsafe { NonNull::new_unchecked(ret) },
            regs,
        }
    }

    /// The address of the stack word that holds the return address, and
    /// the return address.
    #[inline(always)]
    pub(crate) fn return_address(&self) -> (usize, usize) {
        // SAFETY: valid for reads for `'a` (the type invariant).
        let ret = unsafe { self.ret.as_ptr().read() };
        (self.ret.as_ptr() as usize, ret)
    }

    /// The registers, for the client's entry handler, which may change
    /// them; the return address's word stays the one found at the entry.
    #[inline(always)]
    pub(crate) fn as_ptr(&mut self) -> *mut ffi::pt_regs {
        core::ptr::from_mut(self.regs)
    }

    /// Makes the function return into `stub`, a return stub that calls the
    /// trampoline, instead of to its caller: the trampoline puts the real
    /// return address back ([`ReturnFrame::set_return`]).
    #[inline(always)]
    pub(crate) fn hijack(self, stub: usize) {
        // SAFETY: valid for writes for `'a` (the type invariant); the
        // function has not run, so nothing else uses the word.
        unsafe { self.ret.as_ptr().write(stub) };
    }
}

/// A hijacked function's return into its stub, as the trampoline's
/// callback sees it: the stack word that the stub's `call` pushed, where
/// the real return address belongs (the trampoline's `ret` pops it), and
/// the stub it names.
///
/// # Invariants
///
/// `word` is valid for reads and writes for `'a`, and nothing else uses it
/// then. `stub`, the address the word held less the `call`'s length, is a
/// stub in a page that starts with the [`stub_page_header`] of an `O`; the
/// page stays mapped and the `O` live for `'a`, or until the owner is told
/// that the frame returned, if that comes first: for a kretprobe pool,
/// until the stub's instance is given back, the trampoline's last use of
/// anything made from the frame.
pub(crate) struct ReturnFrame<'a, O> {
    word: NonNull<usize>,
    stub: usize,
    _owner: PhantomData<(&'a mut usize, &'a O)>,
}

impl<'a, O> ReturnFrame<'a, O> {
    /// The return through `word`, the stack word a stub's `call` pushed.
    ///
    /// # Safety
    ///
    /// `word` meets the type's invariants for `'a`: it is the word a stub's
    /// call pushed when it called the trampoline, which is only called by
    /// the stubs of pages headed by [`stub_page_header`] of an `O` that
    /// stays live, as does the page, for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(word: NonNull<usize>) -> Self {
        // SAFETY: valid for reads (the caller's contract).
        let stub = unsafe { word.as_ptr().read() }.wrapping_sub(CALL_LEN);
        // INVARIANT: the caller's contract.
        ReturnFrame {
            word,
            stub,
            _owner: PhantomData,
        }
    }

    /// The address of the stack word.
    #[inline(always)]
    pub(crate) fn addr(&self) -> usize {
        self.word.as_ptr() as usize
    }

    /// The stub the function returned into.
    #[inline(always)]
    pub(crate) fn stub(&self) -> usize {
        self.stub
    }

    /// The owner named by the header of the stub's page, and the index of
    /// the stub among its owner's; `None` when the page or the offset is
    /// not a stub's.
    #[inline(always)]
    pub(crate) fn owner(&self) -> Option<(&'a O, u32)> {
        let page = self.stub & !(PAGE_SIZE - 1);
        let off = (self.stub - page).checked_sub(STUB_HEADER)?;
        if off % RETHOOK_STUB_SIZE != 0 {
            return None;
        }
        // SAFETY: the stub's page starts with its header and stays mapped
        // for `'a` (the type invariant); nothing writes it after its pool
        // was built.
        let h = unsafe { &*(page as *const StubHeader) };
        let j = off / RETHOOK_STUB_SIZE;
        if h.magic != STUB_MAGIC || j >= h.count as usize {
            return None;
        }
        // SAFETY: the header of a stub page names an `O` live for `'a`
        // (the type invariant).
        let owner = unsafe { h.owner.cast::<O>().as_ref() };
        Some((owner, h.first.checked_add(j as u32)?))
    }

    /// Writes the real return address `real` back into the word, before
    /// the trampoline returns to it; the frame is done with its stub then.
    #[inline(always)]
    pub(crate) fn set_return(self, real: usize) {
        // SAFETY: valid for writes for `'a` (the type invariant).
        unsafe { self.word.as_ptr().write(real) };
    }
}
