// SPDX-License-Identifier: GPL-2.0

//! The hit path: what runs when a probe of an event hits. The handlers the
//! probe core calls (`handlers.rs`) hand the hit to [`record`], which
//! fetches the arguments from the registers, the stack and memory
//! ([`HitEnv`], the fetch programs' environment) and records them into the
//! ring buffer of every trace instance that enabled the event.
//!
//! Probe-hit context (int3 with interrupts off; an ftrace site, a detour or
//! the kretprobe trampoline with preemption off): nothing here may sleep,
//! allocate or take a lock, and memory is only read
//! through the non-faulting accessors. rkprobes' whole text is blacklisted,
//! so probing this code cannot recurse.

use super::scratch::Scratch;
use super::{Arg, EntryArgs, Event, Probe};
use crate::{
    arch,
    ffi::{
        self, rkp_current_comm, rkp_tev_commit, rkp_tev_perf, rkp_tev_reserve, rkp_tev_symstr,
        rkp_tev_task_size, rkp_tev_this_cpu_ptr, rkp_tev_trace_regs, rkp_tev_trace_strings,
        rkp_tev_wants, RkpTevRec, RKP_TEV_PERF, RKP_TEV_PERF_RAN, RKP_TEV_TRACE,
    },
    kernel_ext::nofault,
    pure::probe_events::{
        exec::{
            data_size, store_args, strncpy_chunked, strnlen_chunked, ArgSource, Fast, FetchEnv,
        },
        program::FetchInsn,
        regs::Register,
        stage::Staged,
        Errno,
    },
};
use core::{cell::Cell, mem::MaybeUninit, sync::atomic::Ordering};
use kernel::ffi::{c_int, c_long, c_uint, c_ulong, c_void};

/// The offset of `r`'s word in the kernel's `struct pt_regs` (bindgen):
/// the independent side of the check below. The `match` is exhaustive, so
/// a register added to `Register` must be added here.
const fn pt_regs_field(r: Register) -> usize {
    use core::mem::offset_of;
    use ffi::pt_regs as R;
    match r {
        Register::R15 => offset_of!(R, r15),
        Register::R14 => offset_of!(R, r14),
        Register::R13 => offset_of!(R, r13),
        Register::R12 => offset_of!(R, r12),
        Register::Bp => offset_of!(R, bp),
        Register::Bx => offset_of!(R, bx),
        Register::R11 => offset_of!(R, r11),
        Register::R10 => offset_of!(R, r10),
        Register::R9 => offset_of!(R, r9),
        Register::R8 => offset_of!(R, r8),
        Register::Ax => offset_of!(R, ax),
        Register::Cx => offset_of!(R, cx),
        Register::Dx => offset_of!(R, dx),
        Register::Si => offset_of!(R, si),
        Register::Di => offset_of!(R, di),
        Register::OrigAx => offset_of!(R, orig_ax),
        Register::Ip => offset_of!(R, ip),
        Register::Cs => offset_of!(R, __bindgen_anon_1),
        Register::Flags => offset_of!(R, flags),
        Register::Sp => offset_of!(R, sp),
        Register::Ss => offset_of!(R, __bindgen_anon_2),
    }
}

// `Register::pt_regs_offset()` is the register's discriminant times 8:
// checked at build, for every register, against the kernel's layout.
const _: () = {
    let mut i = 0;
    while i < Register::ALL.len() {
        let r = Register::ALL[i];
        assert!(r.pt_regs_offset() as usize == pt_regs_field(r));
        i += 1;
    }
};

/// The page size, the granule of the chunked string reads.
const PAGE: u64 = kernel::page::PAGE_SIZE as u64;

/// The registers of a hit, and the arguments saved at entry of a return
/// probe.
struct HitEnv<'a> {
    regs: &'a ffi::pt_regs,
    entry: Option<&'a EntryArgs>,
    /// An event probe's hit: the target's record its fields are read from
    /// (empty at a probe's hit).
    record: &'a [u8],
    /// `TASK_SIZE` of the task the hit is in, asked of the kernel the first
    /// time a memory fetch needs it (0 until then: never its value); most
    /// events fetch registers only.
    task_size: Cell<u64>,
}

impl HitEnv<'_> {
    fn stack_word(&self, n: u64) -> u64 {
        let addr = (self.regs.sp as u64).wrapping_add(n.wrapping_mul(8));
        let mut w = [0u8; 8];
        if self.read_kernel(addr, &mut w) {
            u64::from_ne_bytes(w)
        } else {
            0
        }
    }
}

impl FetchEnv for HitEnv<'_> {
    // Inlined into the interpreter: a call per register read was 20
    // instructions (insn-profile --events).
    #[inline(always)]
    fn register(&self, r: Register) -> u64 {
        let off = usize::from(r.pt_regs_offset());
        let base = core::ptr::from_ref(self.regs).cast::<u8>();
        if off + 8 > core::mem::size_of::<ffi::pt_regs>() {
            return 0;
        }
        // SAFETY: an in-bounds, 8-byte aligned word of the live registers.
        unsafe { base.add(off).cast::<u64>().read() }
    }

    fn stack_nth(&self, n: u32) -> u64 {
        self.stack_word(u64::from(n))
    }

    fn stack_pointer(&self) -> u64 {
        self.regs.sp as u64
    }

    fn return_value(&self) -> u64 {
        self.regs.ax as u64
    }

    fn argument(&self, n: u32) -> u64 {
        arch::regs_get_kernel_argument(self.regs, n, |k| self.stack_word(k))
    }

    fn entry_argument(&self, n: u32) -> u64 {
        self.entry
            .and_then(|e| e.get(n as usize).copied())
            .unwrap_or(0)
    }

    fn comm_address(&self) -> u64 {
        // SAFETY: no preconditions.
        unsafe { rkp_current_comm() as u64 }
    }

    fn current_task(&self) -> u64 {
        // SAFETY: no preconditions.
        unsafe { ffi::rkp_current_task() as u64 }
    }

    fn this_cpu_ptr(&self, addr: u64) -> u64 {
        // SAFETY: no preconditions; the result is only an address, read
        // (if at all) by the nofault reads of the next instructions. A
        // hit runs with preemption disabled, so the CPU stays.
        unsafe { rkp_tev_this_cpu_ptr(addr as c_ulong) as u64 }
    }

    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        nofault::read_kernel(addr as usize, buf).is_ok()
    }

    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        nofault::read_user(addr as usize, buf).is_ok()
    }

    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> core::result::Result<usize, Errno> {
        // `strncpy_from_kernel_nofault()` is not exported: by chunks.
        strncpy_chunked(addr, buf, PAGE, |a, b| self.read_kernel(a, b))
    }

    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> core::result::Result<usize, Errno> {
        let count = c_long::try_from(buf.len()).unwrap_or(c_long::MAX);
        // SAFETY: `buf` is valid for writes of `count` bytes; the source is
        // read without faulting.
        let n = unsafe {
            ffi::rkp_strncpy_user_nofault(buf.as_mut_ptr().cast(), addr as *const _, count)
        };
        usize::try_from(n).map_err(|_| Errno::EFAULT)
    }

    fn strnlen_kernel(&self, addr: u64, max: usize) -> core::result::Result<usize, Errno> {
        // By chunks, which fault where the kernel's byte reads would.
        strnlen_chunked(addr, max, PAGE, |a, b| self.read_kernel(a, b))
    }

    fn strnlen_user(&self, addr: u64, max: usize) -> core::result::Result<usize, Errno> {
        let count = c_long::try_from(max).unwrap_or(c_long::MAX);
        // SAFETY: the source is read without faulting.
        let n = unsafe { ffi::rkp_strnlen_user_nofault(addr as *const _, count) };
        // 0: not readable; more than `max`: no NUL within it.
        match usize::try_from(n) {
            Ok(0) | Err(_) => Err(Errno::EFAULT),
            Ok(n) => Ok(n.min(max)),
        }
    }

    fn symbol_string(&self, addr: u64, room: &mut [u8]) -> usize {
        // The C side formats into a buffer of the kernel's `KSYM_SYMBOL_LEN`
        // (bindgen cannot give that constant: it is a `sizeof` expression)
        // and copies at most `len` bytes.
        let len = c_uint::try_from(room.len()).unwrap_or(c_uint::MAX);
        // SAFETY: `room` is valid for writes of `len` bytes; any address
        // may be symbolised.
        let n = unsafe { rkp_tev_symstr(addr as c_ulong, room.as_mut_ptr().cast(), len) };
        n as usize
    }

    fn record(&self) -> &[u8] {
        self.record
    }

    fn task_size(&self) -> u64 {
        let mut t = self.task_size.get();
        if t == 0 {
            // SAFETY: no preconditions.
            t = unsafe { rkp_tev_task_size() } as u64;
            self.task_size.set(t);
        }
        t
    }
}

impl ArgSource for Arg {
    fn code(&self) -> &[FetchInsn<u64>] {
        &self.code
    }

    fn offset(&self) -> u32 {
        self.offset
    }

    fn dynamic(&self) -> bool {
        self.dynamic
    }

    fn fast(&self) -> Option<Fast> {
        self.fast
    }
}

/// What the programs of a hit read: the hit itself, or, for a probe with
/// string arguments, the hit with its strings staged (`scratch`).
#[derive(Clone, Copy)]
enum Env<'a> {
    Plain(&'a HitEnv<'a>),
    Staged(&'a Staged<'a, HitEnv<'a>>),
}

/// What `rkp_event_fill` needs to fill perf's copy of a record.
struct FillCtx<'a> {
    probe: &'a Probe,
    env: Env<'a>,
    hdr: usize,
    fixed: usize,
    dsize: usize,
}

/// Records a hit of `probe` into every trace instance that enabled its
/// event, then for perf and BPF when they listen. Probe-hit context:
/// preemption (or interrupts) off, may not sleep, allocate or take locks.
///
/// An event whose arguments are all registers or user strings at a
/// register (or none), with perf not listening, is recorded by one C call
/// that measures, reserves, stores and commits for every trace instance
/// (`rkp_tev_trace_regs`, `rkp_tev_trace_strings`): the handlers are this
/// test and that call, with the rest out of line ([`record_others`]). The
/// test of who listens is inlined into the handlers, which are all it is.
#[inline(always)]
pub(super) fn record(
    probe: &Probe,
    regs: *mut ffi::pt_regs,
    entry: Option<&EntryArgs>,
    addrs: impl FnOnce() -> (usize, usize),
) {
    // SAFETY: the probe's event owns it and outlives its registration.
    let ev = unsafe { &*probe.event };
    if ev.tev.is_null() || !ev.enabled.load(Ordering::Acquire) {
        return;
    }
    probe.nhit.fetch_add(1, Ordering::Relaxed);
    // Without perf (the flag is in the trace event, which lives as long as
    // `tev`), only the trace instances listen: nothing to ask. Acquire:
    // `rkp_tev_wants` reads perf's list, published before the flag, without
    // reading the flag again (a plain load on x86).
    // SAFETY: set with `tev`, checked above; an aligned `int`.
    let perf_on = unsafe { &*ev.perf_on }.load(Ordering::Acquire) != 0;
    if let (false, Some(plain)) = (perf_on, &probe.stores) {
        let (a0, a1) = addrs();
        // SAFETY: the event's trace event is registered while it has
        // probes; the stores are the probe's, each inside `pt_regs` and the
        // fixed fields, the registers first (`build::plain_stores`); `regs`
        // are the hit's.
        unsafe {
            if plain.c.nstrs == 0 && plain.c.nmems == 0 {
                rkp_tev_trace_regs(ev.tev, regs, a0 as c_ulong, a1 as c_ulong, &plain.c)
            } else {
                rkp_tev_trace_strings(ev.tev, regs, a0 as c_ulong, a1 as c_ulong, &plain.c)
            }
        };
        return;
    }
    record_others(probe, ev, regs, entry, perf_on, addrs);
}

/// [`record`] for the other events, or with perf listening: who wants a
/// record, then the records. Here the loop over the trace instances is in
/// Rust ([`build`]), with the trace core's reserve and commit behind two
/// thin C calls, so that the arguments are stored by Rust itself (building
/// the record across calls between Rust and C costs 60 instructions a hit
/// more; performance.rst).
#[inline(never)]
fn record_others(
    probe: &Probe,
    ev: &Event,
    regs: *mut ffi::pt_regs,
    entry: Option<&EntryArgs>,
    perf_on: bool,
    addrs: impl FnOnce() -> (usize, usize),
) {
    let wants = if perf_on {
        // SAFETY: the event's trace event is registered while it has probes.
        unsafe { rkp_tev_wants(ev.tev, regs) }
    } else {
        RKP_TEV_TRACE
    };
    if wants != 0 {
        // The header's addresses read only now: fewer registers kept
        // across the call above.
        let (a0, a1) = addrs();
        build(probe, ev, regs, entry, &[], a0, a1, wants);
    }
    // Otherwise nobody else listens, or only BPF programs that read nothing
    // of the record, which ran: the hit is done, with no argument fetched.
}

/// [`record`]'s records, once it is known who wants them. A record is never
/// cut: one larger than a trace instance's ring buffer takes is dropped
/// there, and one larger than perf's buffer (`PERF_MAX_TRACE_SIZE`) by
/// `rkp_tev_perf`, as the kernel's kprobe events drop them (a cut record
/// of a read of `trace` itself, on `ksys_read` with the buffer as a
/// string, would feed the reader without end). Out of line, so
/// that a hit that builds none (its BPF programs read nothing of the
/// record, or nobody listens) saves no registers for it: inline, the
/// strings' staging had put `bpf-empty`'s handler at 38 instructions
/// (insn-profile).
#[inline(never)]
#[expect(clippy::too_many_arguments)]
fn build(
    probe: &Probe,
    ev: &Event,
    regs: *mut ffi::pt_regs,
    entry: Option<&EntryArgs>,
    record: &[u8],
    a0: usize,
    a1: usize,
    wants: c_uint,
) {
    let env = HitEnv {
        // SAFETY: the hit's registers, live for the handler.
        regs: unsafe { &*regs },
        entry,
        record,
        task_size: Cell::new(0),
    };
    let hdr = ev.header;
    if probe.strings {
        // Read once, in the size pass; copied from this CPU's scratch into
        // each record. Dropped after `staged`, which borrows it.
        let mut slot = Scratch::take();
        let staged = Staged::new(&env, slot.as_mut().map(|s| s.bytes()));
        let dsize = data_size(&probe.args, &staged);
        emit(
            probe,
            ev,
            regs,
            Env::Staged(&staged),
            hdr,
            dsize,
            a0,
            a1,
            wants,
        );
    } else {
        // A `symstr` still has dynamic data; without one, no argument is
        // dynamic and this is a loop over the arguments' flags.
        let dsize = data_size(&probe.args, &env);
        emit(probe, ev, regs, Env::Plain(&env), hdr, dsize, a0, a1, wants);
    }
}

/// [`build`]'s records, of `dsize` bytes of dynamic data.
#[inline(always)]
#[expect(clippy::too_many_arguments)]
fn emit<'a>(
    probe: &'a Probe,
    ev: &Event,
    regs: *mut ffi::pt_regs,
    env: Env<'a>,
    hdr: usize,
    dsize: usize,
    a0: usize,
    a1: usize,
    wants: c_uint,
) {
    let fixed = ev.fixed_size();
    let trace = wants & RKP_TEV_TRACE != 0;
    let mut rec = RkpTevRec {
        a0: a0 as c_ulong,
        a1: a1 as c_ulong,
        regs,
        link: core::ptr::null_mut(),
        size: (fixed + dsize) as c_uint,
        perf: (wants & (RKP_TEV_PERF | RKP_TEV_PERF_RAN)) as c_int,
        fb: MaybeUninit::uninit(),
    };
    if trace {
        // SAFETY: as above; `rec` is set as the C side needs.
        let mut ent = unsafe { rkp_tev_reserve(ev.tev, &mut rec) };
        while !ent.is_null() {
            // SAFETY: a reserved record of the header and `rec.size` bytes,
            // ours to write until committed.
            let buf =
                unsafe { core::slice::from_raw_parts_mut(ent.cast::<u8>(), hdr + fixed + dsize) };
            fill(probe, env, buf, hdr, fixed, dsize);
            // SAFETY: as above; commits what the last call reserved.
            ent = unsafe { rkp_tev_commit(ev.tev, &mut rec) };
        }
    }
    if wants & RKP_TEV_PERF != 0 {
        let mut ctx = FillCtx {
            probe,
            env,
            hdr,
            fixed,
            dsize,
        };
        // SAFETY: as above; `ctx` lives across the call, which calls
        // `rkp_event_fill` with it.
        unsafe { rkp_tev_perf(ev.tev, &mut rec, core::ptr::from_mut(&mut ctx).cast()) };
    }
}

/// Fills a reserved record: zeroes the fixed fields when a failed fetch
/// would leave one as the buffer had it, and runs the programs, the staged
/// strings taken from the first.
#[inline(always)]
fn fill(probe: &Probe, env: Env<'_>, rec: &mut [u8], hdr: usize, fixed: usize, dsize: usize) {
    if probe.zero_fixed {
        if let Some(f) = rec.get_mut(hdr..hdr + fixed) {
            f.fill(0);
        }
    }
    match env {
        Env::Plain(e) => store_args(&probe.args, e, rec, hdr, fixed, dsize),
        Env::Staged(s) => {
            s.rewind();
            store_args(&probe.args, s, rec, hdr, fixed, dsize);
        }
    }
}

/// Fills perf's copy of a record (`rkp_tev_perf`). Probe-hit context.
///
/// # Safety
///
/// `ctx` is the `FillCtx` given to `rkp_tev_perf`, `ent` a record of
/// `size` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_event_fill(ctx: *mut c_void, ent: *mut c_void, size: c_uint) {
    // SAFETY: the caller's contract.
    let ctx = unsafe { &*ctx.cast::<FillCtx<'_>>() };
    // SAFETY: the caller's contract: a reserved record, ours to write.
    let rec = unsafe { core::slice::from_raw_parts_mut(ent.cast::<u8>(), size as usize) };
    fill(ctx.probe, ctx.env, rec, ctx.hdr, ctx.fixed, ctx.dsize);
}

/// Records a hit of the event probe `probe`, whose target recorded `rec`,
/// into every trace instance that enabled its event (an event probe
/// records nothing for perf, as 6.12's). In the target's tracepoint, with
/// preemption off: may not sleep, allocate or take locks.
pub(super) fn record_event(probe: &Probe, rec: &[u8]) {
    // SAFETY: the probe's event owns it and outlives its trigger.
    let ev = unsafe { &*probe.event };
    if ev.tev.is_null() || !ev.enabled.load(Ordering::Acquire) {
        return;
    }
    probe.nhit.fetch_add(1, Ordering::Relaxed);
    // No registers: an event probe's programs read the record, `$comm`,
    // memory and immediates; a register reads as 0.
    // SAFETY: `pt_regs` is plain integers, valid when zeroed.
    let mut regs: ffi::pt_regs = unsafe { MaybeUninit::zeroed().assume_init() };
    build(probe, ev, &mut regs, None, rec, 0, 0, RKP_TEV_TRACE);
}
