// SPDX-License-Identifier: GPL-2.0

//! Strings read once a hit: a [`FetchEnv`] that keeps the strings the size
//! pass measures and gives them back to the store pass.
//!
//! The kernel reads each string of a record twice: `__get_data_size()`
//! measures it (`strnlen_user_nofault()`, or a kernel string a byte at a
//! time) so that the record can be reserved at its size, then
//! `store_trace_args()` copies it into the record. [`Staged`] copies it in
//! the first pass instead, into a scratch buffer the caller owns (a
//! per-CPU one in the module), and the copies of the second pass (one per
//! trace instance, and perf's) are taken from there.
//!
//! The records are the bytes the two reads would store, whatever the
//! scratch's size:
//!
//! * the size pass returns what the kernel's measure returns: a string
//!   is staged with the room the scratch has left, at most `max`, and one
//!   that fills that room (cut by the scratch) is measured on from there;
//! * a copy asks for at most the room the record has left for the string:
//!   a staged string longer than that is cut there as the kernel's
//!   `strncpy_*_nofault()` cuts (NUL-terminated at the end); a string the
//!   scratch cut, asked for with more room than it kept, is read again;
//! * a string whose read failed in the first pass is read again in the
//!   second, which asks for less and may stop before the fault;
//! * strings are given back in the order they were staged, which is the
//!   order both passes run the programs in; a copy that is not the next
//!   staged string (address and kind) is read as without staging, and so
//!   is every copy after it. Strings beyond [`SLOTS`], or when the scratch
//!   is full or absent, are not staged.
//!
//! Nothing here allocates, panics or indexes out of bounds: it runs in the
//! probe's handler.

use super::{error::Errno, exec::FetchEnv, regs::Register};
use core::cell::Cell;

/// The most strings staged a hit; further ones are read twice.
pub const SLOTS: usize = 4;

/// One staged string.
#[derive(Clone, Copy)]
struct Slot {
    addr: u64,
    /// Where it is in the scratch.
    off: u16,
    /// Its length with the NUL (0 for a failed read).
    len: u16,
    /// The positive errno of a failed read, or 0.
    err: u16,
    user: bool,
    /// The scratch's room cut it: the string may go on.
    cut: bool,
}

const EMPTY: Slot = Slot {
    addr: 0,
    off: 0,
    len: 0,
    err: 0,
    user: false,
    cut: false,
};

/// `inner` with the strings of a hit staged in `scratch` (module comment).
/// [`Staged::rewind`] before each store pass.
pub struct Staged<'a, E: ?Sized> {
    inner: &'a E,
    /// Taken out while a read or a copy uses it.
    scratch: Cell<Option<&'a mut [u8]>>,
    used: Cell<usize>,
    slots: [Cell<Slot>; SLOTS],
    count: Cell<usize>,
    /// The next slot a copy takes; `SLOTS` once the order broke.
    next: Cell<usize>,
}

impl<'a, E: FetchEnv + ?Sized> Staged<'a, E> {
    /// Stages into `scratch`, which is kept to 64 KiB (the reach of a
    /// `__data_loc`); without one nothing is staged.
    pub fn new(inner: &'a E, scratch: Option<&'a mut [u8]>) -> Self {
        let scratch = scratch.map(|s| {
            let n = s.len().min(usize::from(u16::MAX));
            match s.get_mut(..n) {
                Some(s) => s,
                None => &mut [],
            }
        });
        Staged {
            inner,
            scratch: Cell::new(scratch),
            used: Cell::new(0),
            slots: [const { Cell::new(EMPTY) }; SLOTS],
            count: Cell::new(0),
            next: Cell::new(0),
        }
    }

    /// Starts a store pass: copies take the staged strings from the first.
    pub fn rewind(&self) {
        if self.next.get() <= SLOTS {
            self.next.set(0);
        }
    }

    /// How many strings are staged.
    pub fn staged(&self) -> usize {
        self.count.get()
    }

    /// How many staged strings filled the room they had (the scratch's, or
    /// `max`): those a copy with more room reads again.
    pub fn cut(&self) -> usize {
        self.slots
            .iter()
            .take(self.count.get())
            .filter(|s| s.get().cut)
            .count()
    }

    /// Reads the string at `addr` into the scratch with `max` bytes at most
    /// and returns its length with the NUL, or the read's error; `None`
    /// when it cannot be staged.
    fn stage(&self, addr: u64, max: usize, user: bool) -> Option<Result<usize, Errno>> {
        let n = self.count.get();
        let slot = self.slots.get(n)?;
        let scratch = self.scratch.take()?;
        let used = self.used.get();
        let room = scratch.len().saturating_sub(used).min(max);
        let res = match scratch.get_mut(used..used + room) {
            Some(buf) if room > 0 => Some(if user {
                self.inner.strncpy_user(addr, buf)
            } else {
                self.inner.strncpy_kernel(addr, buf)
            }),
            _ => None,
        };
        self.scratch.set(Some(scratch));
        let mut res = res?.map(|len| len.min(room));
        let mut s = Slot {
            addr,
            off: used as u16,
            user,
            ..EMPTY
        };
        if let Ok(len) = res {
            s.len = len as u16;
            self.used.set(used + len);
            // The copy filled its room: the string may go on, and a copy
            // with more room would read more of it.
            s.cut = len == room;
            if s.cut && room < max {
                // Cut by the scratch: the size is the whole string's,
                // measured on from its last byte kept (which the cut
                // replaced by a NUL), or the fault the measure meets.
                let at = addr.wrapping_add(room as u64 - 1);
                let rest = if user {
                    self.inner.strnlen_user(at, max - room + 1)
                } else {
                    self.inner.strnlen_kernel(at, max - room + 1)
                };
                res = rest.map(|k| room - 1 + k);
            }
        }
        if let Err(e) = res {
            s.err = u16::try_from(e.0).unwrap_or(u16::MAX).max(1);
        }
        slot.set(s);
        self.count.set(n + 1);
        Some(res)
    }

    /// Copies the next staged string into `buf` if it is the one at
    /// `addr`; `None` when the copy must read it.
    fn take(&self, addr: u64, buf: &mut [u8], user: bool) -> Option<Result<usize, Errno>> {
        let i = self.next.get();
        if i >= self.count.get() {
            return None;
        }
        let s = self.slots.get(i)?.get();
        if s.addr != addr || s.user != user {
            // Not the order of the size pass: no more staged copies.
            self.next.set(SLOTS + 1);
            return None;
        }
        self.next.set(i + 1);
        let len = usize::from(s.len);
        // A read that failed may succeed with less room (the fault beyond
        // it), and a string the scratch cut may go on: read them again.
        if s.err != 0 || (s.cut && buf.len() > len) {
            return None;
        }
        let n = len.min(buf.len());
        let scratch = self.scratch.take()?;
        let off = usize::from(s.off);
        let done = match (buf.get_mut(..n), scratch.get(off..off + n)) {
            (Some(d), Some(src)) => {
                d.copy_from_slice(src);
                if n < len {
                    // Cut as `strncpy_*_nofault()` cuts.
                    if let Some(last) = d.last_mut() {
                        *last = 0;
                    }
                }
                true
            }
            _ => false,
        };
        self.scratch.set(Some(scratch));
        done.then_some(Ok(n))
    }
}

impl<E: FetchEnv + ?Sized> FetchEnv for Staged<'_, E> {
    #[inline(always)]
    fn register(&self, r: Register) -> u64 {
        self.inner.register(r)
    }

    fn stack_nth(&self, n: u32) -> u64 {
        self.inner.stack_nth(n)
    }

    fn stack_pointer(&self) -> u64 {
        self.inner.stack_pointer()
    }

    fn return_value(&self) -> u64 {
        self.inner.return_value()
    }

    fn argument(&self, n: u32) -> u64 {
        self.inner.argument(n)
    }

    fn entry_argument(&self, n: u32) -> u64 {
        self.inner.entry_argument(n)
    }

    fn comm_address(&self) -> u64 {
        self.inner.comm_address()
    }

    fn current_task(&self) -> u64 {
        self.inner.current_task()
    }

    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        self.inner.this_cpu_ptr(addr)
    }

    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.inner.read_kernel(addr, buf)
    }

    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.inner.read_user(addr, buf)
    }

    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.take(addr, buf, false)
            .unwrap_or_else(|| self.inner.strncpy_kernel(addr, buf))
    }

    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.take(addr, buf, true)
            .unwrap_or_else(|| self.inner.strncpy_user(addr, buf))
    }

    fn strnlen_user(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        self.stage(addr, max, true)
            .unwrap_or_else(|| self.inner.strnlen_user(addr, max))
    }

    fn strnlen_kernel(&self, addr: u64, max: usize) -> Result<usize, Errno> {
        self.stage(addr, max, false)
            .unwrap_or_else(|| self.inner.strnlen_kernel(addr, max))
    }

    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        self.inner.symbol_string(addr, room)
    }

    fn task_size(&self) -> u64 {
        self.inner.task_size()
    }

    fn record(&self) -> &[u8] {
        self.inner.record()
    }

    fn record_address(&self) -> u64 {
        self.inner.record_address()
    }
}
