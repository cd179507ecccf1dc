// SPDX-License-Identifier: GPL-2.0

//! The kprobe_events interface: `/sys/kernel/debug/rkprobes/kprobe_events`,
//! `error_log` and `kprobe_profile`, and the trace events behind them (the
//! counterpart of the kernel's `kernel/trace/trace_kprobe.c`).
//!
//! A write is split into commands and parsed by the pure parser
//! (`pure::probe_events`); a probe command becomes a [`Probe`] (an rkprobes
//! kprobe or kretprobe, registered disabled) in an [`Event`], a real trace
//! event registered with the tracing core by `trace_event.c`. Enabling the
//! event in tracefs arms its probes; a hit runs the fetch programs
//! (`pure::probe_events::exec`) into a ring-buffer record, which trace output
//! prints in the kernel's kprobe format.
//!
//! Lock order: `Events::inner`, then the probe core's locks, then the
//! kernel's `event_mutex`; the tracing core calls
//! [`rkp_event_set_enabled`] with `event_mutex` held, and it takes only the
//! probe core's locks.

use crate::{
    abi::{RkpKretprobe, RkpKretprobeInstance},
    arch,
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
        rkp_current_comm, rkp_tev_create, rkp_tev_enabled, rkp_tev_free, rkp_tev_name_in_use,
        rkp_tev_record, rkp_tev_remove, rkp_tev_seq_write, rkp_tev_symstr, rkp_tev_task_size,
        RkpField,
    },
    kernel_ext::{
        debugfs::{SeqFile, Show, StoreLarge},
        module,
        mutex::{KernelMutex, KernelMutexGuard},
        nofault,
        notifier::{Handler, ModuleChain, ModuleEvent, ModuleState, Notifier, Notify},
        security,
        sync::{rcu_barrier, synchronize_rcu, PreemptGuard},
        vec,
    },
    kprobe::{abi::RkpKprobe, Core},
    pure::probe_events::{
        error::write_error_timestamp,
        exec::{data_size, store_args, ArgSource, FetchEnv},
        fetch::{FetchInsn, Register},
        parse::split_symbol_offset,
        parse_command,
        print::{record_extent, write_print_fmt, write_record_args, Fmt, SymbolResolver},
        write_error_log, write_listing, ByteWrite, Command, DeleteCmd, DentryOffsets, Errno,
        FuncEntry, ParseError, ProbeDef, ProbeEnv, ProbeLocation, SymbolCheck, WriteLines,
        FETCH_INSN_MAX,
    },
};
use core::{
    fmt::Write as _,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use kernel::{
    ffi::{c_char, c_int, c_uint, c_ulong, c_void},
    new_mutex,
    prelude::*,
    str::CString,
    sync::Mutex,
    time::Ktime,
};

/// Size of a kprobe record's header: `struct trace_entry` and the probe
/// address.
const KPROBE_HEADER: usize = 16;
/// Size of a kretprobe record's header: the function and the return site.
const KRETPROBE_HEADER: usize = 24;
/// Entries the error log keeps, as the kernel's `TRACING_LOG_ERRS_MAX`.
const ERROR_LOG_MAX: usize = 8;
/// Largest record rkprobes reserves: dynamic data beyond it is cut.
const MAX_RECORD: usize = 4000;

/// The register arguments of a function, saved at entry for `$argN` at
/// return: a kretprobe instance's data.
type EntryArgs = [u64; arch::NR_REG_ARGUMENTS];

/// One argument, resolved for the hit path.
#[derive(Clone, Copy)]
struct Arg {
    code: [FetchInsn<u64>; FETCH_INSN_MAX],
    offset: u32,
    dynamic: bool,
}

/// One probe of an event (an event may have several: the kernel's
/// multiprobe events).
///
/// # Invariants
///
/// `kp` (for a kprobe) or `rp` (for a kretprobe) is registered with the probe
/// core while the probe is in its event; `event` is the event that owns the
/// probe; `data` holds the immediate strings the programs point to.
#[repr(C)]
struct Probe {
    kp: RkpKprobe,
    rp: RkpKretprobe,
    is_return: bool,
    /// The command as written, re-parsed to list and print the probe.
    cmd: KVec<u8>,
    /// Whether the location was a function entry when the command was parsed.
    on_entry: bool,
    /// NUL-terminated symbol name of the location, if any.
    symbol: Option<CString>,
    /// The module of a `MOD:SYM` location: a probe on a module not loaded
    /// yet is registered when the module comes.
    module: Option<KVec<u8>>,
    args: KVec<Arg>,
    data: KVec<KVec<u8>>,
    event: *const Event,
    nhit: AtomicU64,
}

/// A probe event: a trace event and its probes.
struct Event {
    group: CString,
    name: CString,
    is_return: bool,
    /// The C side: `struct rkp_tev`.
    tev: *mut c_void,
    /// Changed with both `Events::inner` and the kernel's `event_mutex`
    /// held, so that the tracing core's callbacks (which hold the latter)
    /// see it stable.
    probes: KVec<Pin<KBox<Probe>>>,
    /// The first probe's command and whether its location was a function
    /// entry: the argument layout, which every probe of the event shares,
    /// for trace output (which must not look at `probes`).
    layout_cmd: KVec<u8>,
    layout_on_entry: bool,
    /// Bytes of the fixed fields after the header.
    fixed_size: u32,
    enabled: AtomicBool,
}

// SAFETY: an event is shared between the control file's writers (under
// `Events::inner`), the tracing core's callbacks and probe hits, which only
// read it and update atomics.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

/// A logged error: when, the command, and where.
struct LoggedError {
    ts_ns: u64,
    text: KVec<u8>,
}

/// What the control file's lock protects.
struct Inner {
    events: KVec<Pin<KBox<Event>>>,
    errors: KVec<LoggedError>,
}

/// The kprobe_events interface.
#[pin_data(PinnedDrop)]
pub(crate) struct Events {
    #[pin]
    inner: Mutex<Inner>,
    /// The module notifier that registers probes on coming modules.
    #[pin]
    module_nb: Notifier<ModuleChain, Events>,
    event_mutex: KernelMutex,
    ftrace_events: *mut ffi::list_head,
    core: *const Core,
}

// SAFETY: `event_mutex` is the kernel's, `core` outlives the interface; the
// rest is behind `inner`.
unsafe impl Send for Events {}
// SAFETY: as above.
unsafe impl Sync for Events {}

/// The kernel state the parser asks about.
struct KernelEnv<'a> {
    core: &'a Core,
    ksyms: &'a Kallsyms,
}

impl KernelEnv<'_> {
    /// Whether the module `name` is loaded; `ENOMEM` without memory to ask.
    fn module_loaded(&self, name: &[u8]) -> Result<bool> {
        let rt = self.core.runtime();
        if !rt.has_find_module() {
            return Ok(true);
        }
        let cname = cstring(&[name]).ok_or(ENOMEM)?;
        let _preempt = PreemptGuard::new();
        // SAFETY: `find_module` with preemption disabled; the result is
        // only compared with null.
        Ok(unsafe { rt.find_module(cname.as_char_ptr()) }.is_some_and(|m| !m.is_null()))
    }

    /// Looks `name` (`SYM` or `MOD:SYM`) up; `ENOMEM` without memory to.
    fn lookup(&self, name: &[u8]) -> Result<Option<usize>> {
        self.lookup_parts(None, name)
    }

    /// Looks `MOD:SYM` up, or `SYM` without a module.
    fn lookup_parts(&self, module: Option<&[u8]>, symbol: &[u8]) -> Result<Option<usize>> {
        let cname = match module {
            Some(m) => cstring(&[m, b":", symbol]),
            None => cstring(&[symbol]),
        }
        .ok_or(ENOMEM)?;
        let mut buf = SymbolBuf::new()?;
        Ok(self.ksyms.lookup(&mut buf, &cname))
    }
}

/// The concatenation of `parts` as a C string, byte for byte: names in
/// commands are bytes (Latin-1 letters are letters to the kernel), not
/// UTF-8, and the tracing core must get the very bytes the listing shows.
/// `None` without memory or with a NUL inside.
fn cstring(parts: &[&[u8]]) -> Option<CString> {
    let len = parts.iter().map(|p| p.len()).sum::<usize>();
    let mut v = KVec::with_capacity(len + 1, GFP_KERNEL).ok()?;
    for p in parts {
        v.extend_from_slice(p, GFP_KERNEL).ok()?;
    }
    v.push(0, GFP_KERNEL).ok()?;
    let c = kernel::str::CStr::from_bytes_with_nul(&v).ok()?;
    CString::try_from(c).ok()
}

/// The offsets `%pd`/`%pD` dereference, from this kernel's own layout.
fn kernel_dentry_offsets() -> DentryOffsets {
    DentryOffsets {
        dentry_name: (core::mem::offset_of!(ffi::dentry, d_name)
            + core::mem::offset_of!(ffi::qstr, name)) as u64,
        file_dentry: (core::mem::offset_of!(ffi::file, f_path)
            + core::mem::offset_of!(ffi::path, dentry)) as u64,
    }
}

impl ProbeEnv for KernelEnv<'_> {
    fn dentry_offsets(&self) -> DentryOffsets {
        kernel_dentry_offsets()
    }

    fn check_symbol(&self, module: Option<&[u8]>, symbol: &[u8]) -> SymbolCheck {
        if let Some(m) = module {
            match self.module_loaded(m) {
                // Accepted; registered when the module comes.
                Ok(false) => return SymbolCheck::ModuleNotLoaded,
                Ok(true) => {}
                Err(_) => return SymbolCheck::NoMemory,
            }
        }
        // The kernel's `number_of_same_symbols()`: vmlinux (without `MOD:`)
        // and the modules' symbols of that name.
        let rt = self.core.runtime();
        if !rt.has_symbol_iterators() {
            // Without the iterators, a symbol found is taken as unique.
            return match self.lookup_parts(module, symbol) {
                Ok(Some(_)) => SymbolCheck::Unique,
                Ok(None) => SymbolCheck::NotFound,
                Err(_) => SymbolCheck::NoMemory,
            };
        }
        let (Some(sym), Some(modname)) = (cstring(&[symbol]), cstring(&[module.unwrap_or(b"")]))
        else {
            return SymbolCheck::NoMemory;
        };
        let mut ctx = CountCtx {
            count: 0,
            name: sym.as_bytes(),
        };
        let data = core::ptr::from_mut(&mut ctx).cast::<c_void>();
        // SAFETY: the iterators call the callbacks with `data` during the
        // call only; `sym`, `modname` and `ctx` outlive it. Process context.
        unsafe {
            if module.is_none() {
                rt.kallsyms_on_each_match_symbol(Some(count_symbols), sym.as_char_ptr(), data);
            }
            let m = if module.is_some() {
                modname.as_char_ptr()
            } else {
                core::ptr::null()
            };
            rt.module_kallsyms_on_each_symbol(m, Some(count_mod_symbols), data);
        }
        match ctx.count {
            0 => SymbolCheck::NotFound,
            1 => SymbolCheck::Unique,
            _ => SymbolCheck::NotUnique,
        }
    }

    fn func_entry(&self, symbol: &[u8], offset: u64) -> FuncEntry {
        let Some(cname) = cstring(&[symbol]) else {
            return FuncEntry::NoMemory;
        };
        let mut kp = empty_kprobe();
        kp.symbol_name = cname.as_char_ptr();
        kp.offset = offset as u32;
        // SAFETY: a valid probe structure that lives across the call.
        match unsafe { self.core.check_func_entry(&mut kp) } {
            Ok(()) => FuncEntry::Entry,
            Err(e) if e == EINVAL => FuncEntry::NotEntry,
            Err(e) if e == ENOMEM => FuncEntry::NoMemory,
            Err(_) => FuncEntry::Unknown,
        }
    }
}

/// The count of `number_of_same_symbols()`.
struct CountCtx<'a> {
    count: u32,
    name: &'a [u8],
}

/// Counts a vmlinux symbol of the name. Process context.
///
/// # Safety
///
/// `data` is a `CountCtx`.
unsafe extern "C" fn count_symbols(data: *mut c_void, _addr: c_ulong) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { (*data.cast::<CountCtx<'_>>()).count += 1 };
    0
}

/// Counts a module symbol if it has the name. Process context.
///
/// # Safety
///
/// `data` is a `CountCtx`; `name` a NUL-terminated string.
unsafe extern "C" fn count_mod_symbols(
    data: *mut c_void,
    name: *const c_char,
    _addr: c_ulong,
) -> c_int {
    // SAFETY: the caller's contract.
    let ctx = unsafe { &mut *data.cast::<CountCtx<'_>>() };
    // SAFETY: as above.
    if unsafe { kernel::str::CStr::from_char_ptr(name) }.as_bytes() == ctx.name {
        ctx.count += 1;
    }
    0
}

/// A parser environment that repeats the answers given when the command
/// was accepted: for re-parsing a stored command.
struct Replay {
    on_entry: bool,
}

impl ProbeEnv for Replay {
    fn dentry_offsets(&self) -> DentryOffsets {
        kernel_dentry_offsets()
    }

    fn check_symbol(&self, _module: Option<&[u8]>, _symbol: &[u8]) -> SymbolCheck {
        SymbolCheck::Unique
    }

    fn func_entry(&self, _symbol: &[u8], _offset: u64) -> FuncEntry {
        if self.on_entry {
            FuncEntry::Entry
        } else {
            FuncEntry::NotEntry
        }
    }
}

fn empty_kprobe() -> RkpKprobe {
    RkpKprobe {
        addr: core::ptr::null_mut(),
        symbol_name: core::ptr::null(),
        offset: 0,
        pre_handler: None,
        post_handler: None,
        fault_handler: None,
        flags: crate::abi::flags::DISABLED,
        nmissed: 0,
        rkp_private: core::ptr::null_mut(),
    }
}

/// A stored command, parsed again with the answers it was accepted with.
fn replay(cmd: &[u8], on_entry: bool) -> Option<ProbeDef<'_>> {
    match parse_command(cmd, &Replay { on_entry }) {
        Ok(Command::Probe(d)) => Some(d),
        _ => None,
    }
}

impl Probe {
    /// The probe's definition, parsed again from its command.
    fn def(&self) -> Option<ProbeDef<'_>> {
        replay(&self.cmd, self.on_entry)
    }

    /// The probe core's structure of this probe (for a kretprobe, its entry
    /// probe), for calls that take a raw pointer.
    fn kp_ptr(&self) -> *mut RkpKprobe {
        if self.is_return {
            core::ptr::addr_of!(self.rp.kp).cast_mut()
        } else {
            core::ptr::addr_of!(self.kp).cast_mut()
        }
    }

    /// Whether the probe is registered with the probe core (a probe on a
    /// module that is not loaded waits). Writer (`Events::inner`), or the
    /// tracing core's callbacks under `event_mutex`.
    fn registered(&self) -> bool {
        if self.is_return {
            !self.rp.rkp_private.is_null()
        } else {
            !self.kp.rkp_private.is_null()
        }
    }

    /// The probe core's structure of this probe.
    fn raw_kp(self: Pin<&mut Self>) -> *mut RkpKprobe {
        // SAFETY: only the address of a field is taken; nothing moves.
        let this = unsafe { self.get_unchecked_mut() };
        if this.is_return {
            core::ptr::addr_of_mut!(this.rp.kp)
        } else {
            core::ptr::addr_of_mut!(this.kp)
        }
    }
}

impl Events {
    /// The interface, with no events yet. Process context.
    pub(crate) fn new(core: &Core, ksyms: &Kallsyms) -> Result<impl PinInit<Self>> {
        let mut buf = SymbolBuf::new()?;
        let event_mutex = ksyms
            .lookup(&mut buf, kernel::c_str!("event_mutex"))
            .ok_or(ENOENT)? as *mut ffi::mutex;
        // SAFETY: confirmed to be the kernel's `event_mutex`, a static of
        // vmlinux.
        let event_mutex = unsafe { KernelMutex::from_raw(event_mutex) };
        let ftrace_events = ksyms
            .lookup(&mut buf, kernel::c_str!("ftrace_events"))
            .ok_or(ENOENT)? as *mut ffi::list_head;
        let core_ptr: *const Core = core;
        Ok(pin_init!(Self {
            inner <- new_mutex!(Inner { events: KVec::new(), errors: KVec::new() }, "rkprobes_events"),
            module_nb: Notifier::new(0),
            event_mutex,
            ftrace_events,
            core: core_ptr,
        }))
    }

    /// Hooks the module notifier, once the interface is at its final
    /// address. Process context.
    pub(crate) fn start(&self) -> Result {
        // SAFETY: `module_nb` is pinned in `self`, which unregisters it
        // before it is freed.
        unsafe { self.module_nb.register(self) }
    }

    fn core(&self) -> &Core {
        // SAFETY: the core outlives the interface (field order of the
        // module's state).
        unsafe { &*self.core }
    }

    /// Logs a rejected command, keeping the last `ERROR_LOG_MAX`.
    fn log_error(&self, inner: &mut Inner, line: &[u8], err: &ParseError) {
        if err.log.is_none() {
            return;
        }
        let mut text = KVec::new();
        let env = KernelEnv {
            core: self.core(),
            ksyms: self.core().ksyms(),
        };
        let mut w = VecWriter(&mut text);
        if write_error_log(&mut w, "trace_kprobe", line, err, &env).is_err() {
            return;
        }
        if inner.errors.len() >= ERROR_LOG_MAX && !inner.errors.is_empty() {
            let _ = vec::take(&mut inner.errors, 0);
        }
        let ts_ns = Ktime::ktime_get().to_ns() as u64;
        let _ = inner.errors.push(LoggedError { ts_ns, text }, GFP_KERNEL);
    }

    /// A module comes: registers the probes waiting for it, and registers
    /// again those of its earlier load ([GONE]), as the kernel's
    /// `trace_kprobe_module_callback()`. Process context, may sleep.
    pub(crate) fn module_coming(&self, name: &[u8]) {
        let mut inner = self.inner.lock();
        for ev in inner.events.iter_mut() {
            let enabled = {
                let _em = self.event_mutex.lock();
                ev.is_enabled()
            };
            let ev_name = ev.name.as_char_ptr();
            // SAFETY: `probes` is not structurally pinned; the list itself
            // does not change here.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter_mut() {
                if p.module.as_deref() != Some(name) {
                    continue;
                }
                let is_return = p.is_return;
                let kp = p.as_mut().raw_kp();
                if p.registered() {
                    // SAFETY: a registered probe.
                    if unsafe { RkpKprobe::flags(kp) } & crate::abi::flags::GONE == 0 {
                        continue;
                    }
                    self.unregister_raw(is_return, kp);
                }
                // SAFETY: the probe's own structure: its address in the
                // module's old text is forgotten, and it is registered
                // disabled, as at creation.
                unsafe {
                    (*kp).addr = core::ptr::null_mut();
                    (*kp).flags = crate::abi::flags::DISABLED;
                }
                // As the kernel's `__register_trace_kprobe()`, called for
                // a coming module too.
                let r = if let Err(e) = kprobes_locked_down() {
                    Err(e)
                } else if is_return {
                    self.core()
                        .kretprobes()
                        .register(self.core(), &[kp.cast::<RkpKretprobe>()])
                } else {
                    self.core().register_many(&[kp])
                };
                match r {
                    Ok(()) if enabled => {
                        let _em = self.event_mutex.lock();
                        let _ = self.core().set_enabled(kp, true);
                    }
                    Ok(()) => {}
                    Err(e) => pr_warn!(
                        "probe of {} not registered on module load: {}\n",
                        // SAFETY: the event's name, which lives as long as it.
                        unsafe { kernel::str::CStr::from_char_ptr(ev_name) }
                            .to_str()
                            .unwrap_or("?"),
                        e.to_errno()
                    ),
                }
            }
        }
    }

    /// Runs the commands of one write. Process context, may sleep.
    pub(crate) fn write(&self, input: &[u8]) -> Result<usize> {
        let mut inner = self.inner.lock();
        let env = KernelEnv {
            core: self.core(),
            ksyms: self.core().ksyms(),
        };
        let mut lines = WriteLines::new(input);
        for line in lines.by_ref() {
            let line = match line {
                Ok(l) => l,
                Err(e) => return Err(Error::from_errno(-e.errno.0)),
            };
            let r = match parse_command(line, &env) {
                Ok(Command::Empty) => Ok(()),
                Ok(Command::Probe(def)) => self.create(&mut inner, &env, line, &def),
                Ok(Command::Delete(d)) => self.delete(&mut inner, &env, &d),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                self.log_error(&mut inner, line, &e);
                return Err(Error::from_errno(-e.errno.0));
            }
        }
        Ok(lines.consumed())
    }

    /// Removes every event (a truncating open); `EBUSY`, and nothing
    /// removed, when one is enabled. An event whose tracefs file is open
    /// also fails with `EBUSY`, after the events before it went (as with
    /// the kernel's).
    pub(crate) fn clear(&self) -> Result {
        let mut inner = self.inner.lock();
        if inner.events.iter().any(|e| e.is_enabled()) {
            return Err(EBUSY);
        }
        let all = core::mem::replace(&mut inner.events, KVec::new());
        let (busy, err) = self.destroy_many(all);
        inner.events = busy;
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A `p`/`r` command: a new event, or a probe appended to one.
    fn create(
        &self,
        inner: &mut Inner,
        env: &KernelEnv<'_>,
        line: &[u8],
        def: &ProbeDef<'_>,
    ) -> core::result::Result<(), ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let existing = inner.events.iter().position(|e| {
            e.group.as_bytes() == def.group && e.name.as_bytes() == def.event.as_bytes()
        });
        if let Some(i) = existing {
            let ev = inner.events.get(i).ok_or(nomem)?;
            if ev.is_return != def.is_return {
                return Err(ParseError::diff_probe_type());
            }
            if let Some(first) = ev.probes.first().and_then(|p| p.def()) {
                if let Some(n) = first.compare_arg_types(def) {
                    return Err(ParseError::diff_arg_type(n));
                }
                if ev
                    .probes
                    .iter()
                    .any(|p| p.def().is_some_and(|d| d.same_probe(def)))
                {
                    return Err(ParseError::same_probe());
                }
            }
        }
        // Where the kernel's `__register_trace_kprobe()` asks: after the
        // checks against an existing event (and, for a new one, after its
        // name was found free), before anything is resolved or registered,
        // and also for a probe whose module is not loaded yet.
        if let Err(e) = kprobes_locked_down() {
            if existing.is_none() && self.name_in_use(def)? {
                return Err(ParseError::event_exists());
            }
            return Err(ParseError::registration(Errno(-e.to_errno())));
        }
        let on_entry = match def.location {
            ProbeLocation::Symbol { symbol, offset } => {
                env.func_entry(symbol, u64::from(offset)) == FuncEntry::Entry
            }
            ProbeLocation::Address(_) => false,
        };
        // Room first: nothing registered may be lost to a failed push.
        inner.events.reserve(1, GFP_KERNEL).map_err(|_| nomem)?;
        if let Some(i) = existing {
            let ev = inner.events.get_mut(i).ok_or(nomem)?;
            // The tracing core reads `probes` under `event_mutex`.
            let _em = self.event_mutex.lock();
            // SAFETY: `probes` is not structurally pinned.
            unsafe { ev.as_mut().get_unchecked_mut() }
                .probes
                .reserve(1, GFP_KERNEL)
                .map_err(|_| nomem)?;
        }
        let mut probe = self.new_probe(line, def, on_entry)?;
        // The event a new probe joins, or a new one.
        let (ev_ptr, new_event) = match existing {
            Some(i) => {
                let ev = inner.events.get(i).ok_or(nomem)?;
                (core::ptr::from_ref::<Event>(ev), None)
            }
            None => {
                let ev = self.new_event(def, line, on_entry)?;
                (core::ptr::from_ref::<Event>(&ev), Some(ev))
            }
        };
        // SAFETY: the probe is pinned in its box; only this field changes.
        unsafe { probe.as_mut().get_unchecked_mut() }.event = ev_ptr;
        // Registered disabled; enabling the event arms it.
        let kp = probe.as_mut().raw_kp();
        let waiting = match def.location.module() {
            Some(m) => !env
                .module_loaded(m)
                .map_err(|_| ParseError::silent(Errno::ENOMEM))?,
            None => false,
        };
        let reg = if waiting {
            // Registered when the module comes (`module_coming`).
            Ok(())
        } else if def.is_return {
            // `kp` is the first field of the probe's kretprobe.
            self.core()
                .kretprobes()
                .register(self.core(), &[kp.cast::<RkpKretprobe>()])
        } else {
            self.core().register_many(&[kp])
        };
        if let Err(e) = reg {
            return Err(ParseError::registration(Errno(-e.to_errno())));
        }
        match new_event {
            Some(mut ev) => {
                // Not yet known to the tracing core: nothing else reads it.
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                // Cannot fail: `new_event` made room.
                let _ = evm.probes.push(probe, GFP_KERNEL);
                if let Err(e) = self.register_event(&mut ev) {
                    self.unregister_probes(&mut ev);
                    return Err(e);
                }
                // Cannot fail: reserved above.
                let _ = inner.events.push(ev, GFP_KERNEL);
            }
            None => {
                let i = existing.ok_or(nomem)?;
                let ev = inner.events.get_mut(i).ok_or(nomem)?;
                // Joining and the enabled state are decided together, under
                // the mutex the tracing core enables and disables under.
                let _em = self.event_mutex.lock();
                if ev.is_enabled() && !waiting {
                    let _ = self.core().set_enabled(kp, true);
                }
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                // Cannot fail: reserved above.
                let _ = evm.probes.push(probe, GFP_KERNEL);
            }
        }
        Ok(())
    }

    /// Whether the event name of `def` is taken (by an event of the kernel's
    /// or of rkprobes'). Process context.
    fn name_in_use(&self, def: &ProbeDef<'_>) -> core::result::Result<bool, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let group = cstring(&[def.group]).ok_or(nomem)?;
        let name = cstring(&[def.event.as_bytes()]).ok_or(nomem)?;
        // SAFETY: `event_mutex` and `ftrace_events` are the kernel's (found
        // at load); the names are NUL-terminated and outlive the call.
        Ok(unsafe {
            rkp_tev_name_in_use(
                self.event_mutex.as_ptr(),
                self.ftrace_events,
                group.as_char_ptr(),
                name.as_char_ptr(),
            )
        } != 0)
    }

    /// Builds a probe from a parsed command: its programs resolved.
    fn new_probe(
        &self,
        line: &[u8],
        def: &ProbeDef<'_>,
        on_entry: bool,
    ) -> core::result::Result<Pin<KBox<Probe>>, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let mut cmd = KVec::new();
        cmd.extend_from_slice(line, GFP_KERNEL).map_err(|_| nomem)?;
        let mut args = KVec::with_capacity(def.nr_args, GFP_KERNEL).map_err(|_| nomem)?;
        let mut data: KVec<KVec<u8>> = KVec::new();
        for a in def.args() {
            let a = a.map_err(|_| ParseError::silent(Errno::EINVAL))?;
            let mut code = [FetchInsn::End; FETCH_INSN_MAX];
            let mut pending_symbol: Option<u64> = None;
            for (slot, insn) in code.iter_mut().zip(a.program.insns()) {
                let resolved = match *insn {
                    FetchInsn::Data(text) => {
                        let mut s =
                            KVec::with_capacity(text.len() + 1, GFP_KERNEL).map_err(|_| nomem)?;
                        s.extend_from_slice(text, GFP_KERNEL).map_err(|_| nomem)?;
                        s.push(0, GFP_KERNEL).map_err(|_| nomem)?;
                        let addr = s.as_ptr() as u64;
                        data.push(s, GFP_KERNEL).map_err(|_| nomem)?;
                        FetchInsn::Data(addr)
                    }
                    FetchInsn::Symbol(text) => {
                        let (sym, off) = split_symbol_offset(text)
                            .map_err(|_| ParseError::registration(Errno::ENOENT))?;
                        let env = KernelEnv {
                            core: self.core(),
                            ksyms: self.core().ksyms(),
                        };
                        let base = env
                            .lookup(sym)
                            .map_err(|_| nomem)?
                            .ok_or(ParseError::registration(Errno::ENOENT))?;
                        pending_symbol = Some((base as u64).wrapping_add(off as u64));
                        FetchInsn::Symbol(0)
                    }
                    FetchInsn::Imm(v) => FetchInsn::Imm(pending_symbol.take().unwrap_or(v)),
                    other => other.map(|_| 0),
                };
                *slot = resolved;
            }
            args.push(
                Arg {
                    code,
                    offset: a.offset,
                    dynamic: a.ty.base.is_string(),
                },
                GFP_KERNEL,
            )
            .map_err(|_| nomem)?;
        }
        let (mut kp, symbol) = (
            empty_kprobe(),
            match def.location {
                ProbeLocation::Symbol { symbol, .. } => Some(cstring(&[symbol]).ok_or(nomem)?),
                ProbeLocation::Address(_) => None,
            },
        );
        match def.location {
            ProbeLocation::Symbol { offset, .. } => kp.offset = offset,
            ProbeLocation::Address(a) => kp.addr = a as usize as *mut c_void,
        }
        if let Some(s) = &symbol {
            kp.symbol_name = s.as_char_ptr();
        }
        let mut rp = RkpKretprobe {
            kp: empty_kprobe(),
            handler: Some(ret_handler),
            entry_handler: Some(entry_handler),
            maxactive: def.maxactive as c_int,
            nmissed: 0,
            data_size: core::mem::size_of::<EntryArgs>(),
            rkp_private: core::ptr::null_mut(),
        };
        if def.is_return {
            rp.kp = kp;
            kp = empty_kprobe();
        } else {
            kp.pre_handler = Some(kprobe_handler);
        }
        let module = match def.location.module() {
            Some(m) => {
                let mut v = KVec::new();
                v.extend_from_slice(m, GFP_KERNEL).map_err(|_| nomem)?;
                Some(v)
            }
            None => None,
        };
        KBox::pin(
            Probe {
                kp,
                rp,
                is_return: def.is_return,
                cmd,
                on_entry,
                symbol,
                module,
                args,
                data,
                event: core::ptr::null(),
                nhit: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )
        .map_err(|_| nomem)
    }

    /// A new, unregistered event for `def`.
    fn new_event(
        &self,
        def: &ProbeDef<'_>,
        line: &[u8],
        on_entry: bool,
    ) -> core::result::Result<Pin<KBox<Event>>, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let mut layout_cmd = KVec::new();
        layout_cmd
            .extend_from_slice(line, GFP_KERNEL)
            .map_err(|_| nomem)?;
        let group = cstring(&[def.group]).ok_or(nomem)?;
        let name = cstring(&[def.event.as_bytes()]).ok_or(nomem)?;
        KBox::pin(
            Event {
                group,
                name,
                is_return: def.is_return,
                tev: core::ptr::null_mut(),
                // Room for the first probe, taken before it is registered.
                probes: KVec::with_capacity(1, GFP_KERNEL).map_err(|_| nomem)?,
                layout_cmd,
                layout_on_entry: on_entry,
                fixed_size: def.size,
                enabled: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )
        .map_err(|_| nomem)
    }

    /// Registers the trace event of a new event (whose first probe is
    /// registered).
    fn register_event(&self, ev: &mut Pin<KBox<Event>>) -> core::result::Result<(), ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let def = ev.layout().ok_or(nomem)?;
        let hdr = if def.is_return {
            KRETPROBE_HEADER
        } else {
            KPROBE_HEADER
        };
        let mut print_fmt = KVec::new();
        write_print_fmt(&mut VecWriter(&mut print_fmt), &def).map_err(|_| nomem)?;
        print_fmt.push(0, GFP_KERNEL).map_err(|_| nomem)?;
        // Field types and names, NUL-terminated, kept until the C side has
        // copied them.
        let mut texts: KVec<KVec<u8>> = KVec::new();
        let mut fields: KVec<RkpField> = KVec::new();
        for a in def.args() {
            let a = a.map_err(|_| nomem)?;
            let base = a.ty.base;
            let ty: &str = base.format_type();
            let mut t = KVec::new();
            let mut w = VecWriter(&mut t);
            let _ = w.write_bytes(ty.as_bytes());
            if a.ty.count > 0 {
                let _ = core::write!(Fmt(&mut w), "[{}]", a.ty.count);
            }
            t.push(0, GFP_KERNEL).map_err(|_| nomem)?;
            let mut n = KVec::new();
            n.extend_from_slice(a.name.as_bytes(), GFP_KERNEL)
                .map_err(|_| nomem)?;
            n.push(0, GFP_KERNEL).map_err(|_| nomem)?;
            fields
                .push(
                    RkpField {
                        ty: t.as_ptr().cast(),
                        name: n.as_ptr().cast(),
                        offset: (hdr as u32 + a.offset) as c_int,
                        size: a.ty.record_size() as c_int,
                        is_signed: c_int::from(base.is_signed()),
                    },
                    GFP_KERNEL,
                )
                .map_err(|_| nomem)?;
            texts.push(t, GFP_KERNEL).map_err(|_| nomem)?;
            texts.push(n, GFP_KERNEL).map_err(|_| nomem)?;
        }
        let owner = core::ptr::from_ref::<Event>(ev).cast_mut().cast::<c_void>();
        // SAFETY: the strings and fields are valid for the call, which copies
        // them; `owner` is the pinned event, which destroys the trace event
        // before it is freed.
        let tev = unsafe {
            rkp_tev_create(
                self.event_mutex.as_ptr(),
                self.ftrace_events,
                ev.group.as_char_ptr(),
                ev.name.as_char_ptr(),
                print_fmt.as_ptr().cast(),
                c_int::from(def.is_return),
                fields.as_ptr(),
                fields.len() as c_int,
                owner,
            )
        };
        if let Err(e) = kernel::error::from_err_ptr(tev) {
            let errno = Errno(-e.to_errno());
            return Err(if errno == Errno::EEXIST {
                ParseError::event_exists()
            } else {
                ParseError::registration(errno)
            });
        }
        // SAFETY: `tev` is not structurally pinned.
        unsafe { ev.as_mut().get_unchecked_mut() }.tev = tev;
        // An event's trace event calls into rkprobes (and an open tracefs
        // file of it keeps it): rkprobes stays loaded while events exist.
        // Dropped when the event is destroyed.
        module::get_self();
        Ok(())
    }

    /// Unregisters one probe structure.
    fn unregister_raw(&self, is_return: bool, kp: *mut RkpKprobe) {
        if is_return {
            // `kp` is the first field of the kretprobe.
            self.core()
                .kretprobes()
                .unregister(self.core(), &[kp.cast::<RkpKretprobe>()]);
        } else {
            self.core().unregister_many(&[kp]);
        }
    }

    /// Unregisters every probe of `ev`, one at a time (for errors and
    /// allocation failures; `destroy_many` batches).
    fn unregister_probes(&self, ev: &mut Pin<KBox<Event>>) {
        // SAFETY: `probes` is not structurally pinned.
        let evm = unsafe { ev.as_mut().get_unchecked_mut() };
        for p in evm.probes.iter_mut() {
            let is_return = p.is_return;
            let kp = p.as_mut().raw_kp();
            self.unregister_raw(is_return, kp);
        }
    }

    /// Removes the trace events and the probes of `evs`, with a few grace
    /// periods for the whole batch; gives back, with the error, the events
    /// whose trace event is in use (`EBUSY`). Writer.
    fn destroy_many(&self, evs: KVec<Pin<KBox<Event>>>) -> (KVec<Pin<KBox<Event>>>, Option<Error>) {
        let n = evs.len();
        let (Ok(mut removed), Ok(mut busy)) = (
            KVec::<Pin<KBox<Event>>>::with_capacity(n, GFP_KERNEL),
            KVec::<Pin<KBox<Event>>>::with_capacity(n, GFP_KERNEL),
        ) else {
            // Without memory for the batch, one at a time.
            let mut back = KVec::new();
            let mut err = None;
            for ev in evs {
                if let Err((ev, e)) = self.destroy(ev) {
                    err = Some(e);
                    let _ = back.push(ev, GFP_KERNEL);
                }
            }
            return (back, err);
        };
        // Hits that saw an instance's link before the events were disabled
        // may still be committing into its file.
        synchronize_rcu();
        let mut err = None;
        {
            let em = self.event_mutex.lock();
            for ev in evs {
                let r = if ev.tev.is_null() {
                    0
                } else {
                    // SAFETY: a trace event made by `register_event`; the
                    // mutex is held.
                    unsafe { rkp_tev_remove(self.event_mutex.as_ptr(), ev.tev) }
                };
                // Cannot fail: room for all of them.
                if r == 0 {
                    let _ = removed.push(ev, GFP_KERNEL);
                } else {
                    err = Some(Error::from_errno(r));
                    let _ = busy.push(ev, GFP_KERNEL);
                }
            }
            self.reset_buffers(&em);
        }
        // A hit may still read the removed events' C side.
        synchronize_rcu();
        let mut kps: KVec<*mut RkpKprobe> = KVec::new();
        let mut rps: KVec<*mut RkpKretprobe> = KVec::new();
        let mut batched = true;
        for ev in removed.iter_mut() {
            if !ev.tev.is_null() {
                // SAFETY: removed from the tracing core, past a grace period.
                unsafe { rkp_tev_free(ev.tev) };
                // SAFETY: `tev` is not structurally pinned.
                unsafe { ev.as_mut().get_unchecked_mut() }.tev = core::ptr::null_mut();
                // SAFETY: the reference `register_event` took.
                unsafe { module::put_self() };
            }
            // SAFETY: `probes` is not structurally pinned.
            let evm = unsafe { ev.as_mut().get_unchecked_mut() };
            for p in evm.probes.iter_mut() {
                let is_return = p.is_return;
                let kp = p.as_mut().raw_kp();
                let pushed = if is_return {
                    rps.push(kp.cast(), GFP_KERNEL).is_ok()
                } else {
                    kps.push(kp, GFP_KERNEL).is_ok()
                };
                if !pushed {
                    batched = false;
                }
            }
        }
        if batched {
            self.core().unregister_many(&kps);
            self.core().kretprobes().unregister(self.core(), &rps);
        } else {
            for ev in removed.iter_mut() {
                self.unregister_probes(ev);
            }
        }
        drop(removed);
        (busy, err)
    }

    /// Removes the trace event and the probes of `ev`; gives it back with
    /// `EBUSY` when the trace event is in use.
    fn destroy(
        &self,
        mut ev: Pin<KBox<Event>>,
    ) -> core::result::Result<(), (Pin<KBox<Event>>, Error)> {
        if !ev.tev.is_null() {
            // See `destroy_many`.
            synchronize_rcu();
            let r = {
                let em = self.event_mutex.lock();
                // SAFETY: a trace event made by `register_event`; the mutex
                // is held.
                let r = unsafe { rkp_tev_remove(self.event_mutex.as_ptr(), ev.tev) };
                self.reset_buffers(&em);
                r
            };
            if r != 0 {
                return Err((ev, Error::from_errno(r)));
            }
            synchronize_rcu();
            // SAFETY: removed and past a grace period.
            unsafe { rkp_tev_free(ev.tev) };
            // SAFETY: `tev` is not structurally pinned.
            unsafe { ev.as_mut().get_unchecked_mut() }.tev = core::ptr::null_mut();
            // SAFETY: the reference `register_event` took.
            unsafe { module::put_self() };
        }
        self.unregister_probes(&mut ev);
        Ok(())
    }

    /// Empties the buffers of the trace instances that had an event just
    /// removed enabled (the tracing core marks them), as the kernel's
    /// `dyn_event_release()` does before it lets go of `event_mutex`: a
    /// later event may get a removed one's id, and must not be shown its
    /// records. Process context.
    fn reset_buffers(&self, _held: &KernelMutexGuard) {
        // SAFETY: the kernel's `tracing_reset_all_online_cpus()`, found and
        // confirmed at load; process context, called with `event_mutex` held
        // as the kernel calls it.
        unsafe { self.core().runtime().tracing_reset_all_online_cpus() };
    }

    /// A `-:` command.
    fn delete(
        &self,
        inner: &mut Inner,
        env: &KernelEnv<'_>,
        d: &DeleteCmd<'_>,
    ) -> core::result::Result<(), ParseError> {
        let matching = |e: &Pin<KBox<Event>>| {
            d.group.map_or(true, |g| g == e.group.as_bytes())
                && e.probes
                    .iter()
                    .any(|p| p.def().is_some_and(|def| d.matches(&def, env)))
        };
        if !inner.events.iter().any(matching) {
            return Err(ParseError::silent(Errno(2)));
        }
        if inner
            .events
            .iter()
            .filter(|e| matching(e))
            .any(|e| e.is_enabled())
        {
            return Err(ParseError::silent(Errno(16)));
        }
        let mut gone: KVec<Pin<KBox<Event>>> = KVec::with_capacity(inner.events.len(), GFP_KERNEL)
            .map_err(|_| ParseError::silent(Errno::ENOMEM))?;
        let mut i = 0;
        while i < inner.events.len() {
            let Some(ev) = inner.events.get_mut(i) else {
                break;
            };
            if !matching(ev) {
                i += 1;
                continue;
            }
            let all = ev
                .probes
                .iter()
                .all(|p| p.def().is_some_and(|def| d.matches(&def, env)));
            if !all {
                // Some probes of a multiprobe event: those go, the event
                // stays.
                // SAFETY: `probes` is not structurally pinned.
                let evm = unsafe { ev.as_mut().get_unchecked_mut() };
                let mut j = 0;
                while j < evm.probes.len() {
                    let hit = evm
                        .probes
                        .get(j)
                        .and_then(|p| p.def())
                        .is_some_and(|def| d.matches(&def, env));
                    if !hit {
                        j += 1;
                        continue;
                    }
                    let taken = {
                        // The tracing core reads `probes` under this mutex.
                        let _em = self.event_mutex.lock();
                        vec::take(&mut evm.probes, j)
                    };
                    if let Some(mut p) = taken {
                        let is_return = p.is_return;
                        let kp = p.as_mut().raw_kp();
                        self.unregister_raw(is_return, kp);
                    }
                }
                i += 1;
                continue;
            }
            let Some(ev) = vec::take(&mut inner.events, i) else {
                break;
            };
            if let Err(e) = gone.push(ev, GFP_KERNEL) {
                // The event was dropped with the failed push: cannot happen
                // with the room reserved below.
                let _ = e;
                return Err(ParseError::silent(Errno::ENOMEM));
            }
        }
        let (busy, err) = self.destroy_many(gone);
        for ev in busy {
            // Back in the list (at its end); nothing else was lost.
            let _ = inner.events.push(ev, GFP_KERNEL);
        }
        match err {
            Some(e) => Err(ParseError::silent(Errno(-e.to_errno()))),
            None => Ok(()),
        }
    }
}

impl Event {
    /// The argument layout's definition, for trace output.
    fn layout(&self) -> Option<ProbeDef<'_>> {
        replay(&self.layout_cmd, self.layout_on_entry)
    }

    fn is_enabled(&self) -> bool {
        // SAFETY: a registered trace event, or none.
        !self.tev.is_null() && unsafe { rkp_tev_enabled(self.tev) } != 0
    }
}

/// `security_locked_down(LOCKDOWN_KPROBES)`: `EPERM` while the kernel's
/// lockdown forbids new kprobes (confidentiality), as the kernel's
/// kprobe_events asks before registering each probe. Process context.
fn kprobes_locked_down() -> Result {
    security::locked_down_kprobes()
}

impl Handler<ModuleChain> for Events {
    /// A module comes: its waiting probes are registered. Process context.
    fn notify(&self, event: ModuleEvent<'_>) -> Notify {
        if event.state == ModuleState::Coming {
            self.module_coming(event.module.name());
        }
        Notify::Done
    }
}

#[pinned_drop]
impl PinnedDrop for Events {
    fn drop(self: Pin<&mut Self>) {
        // Returns when no notification runs.
        self.module_nb.unregister();
        let mut inner = self.inner.lock();
        let all = core::mem::replace(&mut inner.events, KVec::new());
        let (busy, _) = self.destroy_many(all);
        if !busy.is_empty() {
            // Cannot happen: events hold rkprobes loaded.
            pr_err!("{} probe events still in use at unload\n", busy.len());
            core::mem::forget(busy);
        }
        drop(inner);
        // The links' RCU callbacks are rkprobes' code.
        rcu_barrier();
    }
}

/// Writes into a `KVec<u8>`.
struct VecWriter<'a>(&'a mut KVec<u8>);

impl ByteWrite for VecWriter<'_> {
    fn write_bytes(&mut self, b: &[u8]) -> core::fmt::Result {
        self.0
            .extend_from_slice(b, GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}

/// The registers of a hit, and the arguments saved at entry of a return
/// probe.
struct HitEnv<'a> {
    regs: &'a ffi::pt_regs,
    entry: Option<&'a EntryArgs>,
    /// `TASK_SIZE` of the task the hit is in.
    task_size: u64,
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

    fn read_kernel(&self, addr: u64, buf: &mut [u8]) -> bool {
        nofault::read_kernel(addr as usize, buf).is_ok()
    }

    fn read_user(&self, addr: u64, buf: &mut [u8]) -> bool {
        nofault::read_user(addr as usize, buf).is_ok()
    }

    fn strncpy_kernel(&self, addr: u64, buf: &mut [u8]) -> core::result::Result<usize, Errno> {
        // `strncpy_from_kernel_nofault()` is not exported: byte by byte.
        strncpy_with(buf, |i, b| self.read_kernel(addr.wrapping_add(i), b))
    }

    fn strncpy_user(&self, addr: u64, buf: &mut [u8]) -> core::result::Result<usize, Errno> {
        // `strncpy_from_user_nofault()` is not exported either.
        strncpy_with(buf, |i, b| self.read_user(addr.wrapping_add(i), b))
    }

    fn strnlen_user(&self, addr: u64, max: usize) -> core::result::Result<usize, Errno> {
        for i in 0..max {
            let mut c = [0u8; 1];
            if !self.read_user(addr.wrapping_add(i as u64), &mut c) {
                return Err(Errno(14));
            }
            if c[0] == 0 {
                return Ok(i + 1);
            }
        }
        Ok(max)
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

    fn task_size(&self) -> u64 {
        self.task_size
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
}

/// The kernel's `strncpy_from_*_nofault()` contract over a one-byte reader:
/// the length copied including the NUL, the string cut and NUL-terminated
/// at the end of `buf`; `-EFAULT` when a byte cannot be read.
fn strncpy_with(
    buf: &mut [u8],
    mut read: impl FnMut(u64, &mut [u8]) -> bool,
) -> core::result::Result<usize, Errno> {
    let n = buf.len();
    for (i, slot) in buf.iter_mut().enumerate() {
        let mut c = [0u8; 1];
        if !read(i as u64, &mut c) {
            return Err(Errno(14));
        }
        *slot = c[0];
        if c[0] == 0 {
            return Ok(i + 1);
        }
    }
    if let Some(last) = buf.last_mut() {
        *last = 0;
    }
    Ok(n)
}

/// What `rkp_event_fill` needs during one record.
struct FillCtx<'a> {
    probe: &'a Probe,
    env: &'a HitEnv<'a>,
    hdr: usize,
    fixed: usize,
    dsize: usize,
}

/// Records a hit of `probe` into every trace instance that enabled its
/// event. Probe-hit context: interrupts off, may not sleep, allocate or
/// take locks.
fn record(probe: &Probe, regs: *mut ffi::pt_regs, entry: Option<&EntryArgs>, a0: usize, a1: usize) {
    // SAFETY: the probe's event owns it and outlives its registration.
    let ev = unsafe { &*probe.event };
    if ev.tev.is_null() || !ev.enabled.load(Ordering::Acquire) {
        return;
    }
    probe.nhit.fetch_add(1, Ordering::Relaxed);
    let env = HitEnv {
        // SAFETY: the hit's registers, live for the handler.
        regs: unsafe { &*regs },
        entry,
        // SAFETY: no preconditions.
        task_size: unsafe { rkp_tev_task_size() } as u64,
    };
    let hdr = if ev.is_return {
        KRETPROBE_HEADER
    } else {
        KPROBE_HEADER
    };
    let fixed = ev.fixed_size as usize;
    let dsize = data_size(&probe.args, &env).min(MAX_RECORD.saturating_sub(hdr + fixed));
    let mut ctx = FillCtx {
        probe,
        env: &env,
        hdr,
        fixed,
        dsize,
    };
    // SAFETY: the event's trace event is registered while it has probes;
    // `ctx` lives across the call, which calls `rkp_event_fill` with it.
    unsafe {
        rkp_tev_record(
            ev.tev,
            regs,
            a0 as c_ulong,
            a1 as c_ulong,
            (fixed + dsize) as c_uint,
            core::ptr::from_mut(&mut ctx).cast(),
        )
    };
}

/// Fills a reserved record: zeroes the fixed fields (a failed fetch leaves
/// its field as it is) and runs the programs. Probe-hit context.
///
/// # Safety
///
/// `ctx` is the `FillCtx` given to `rkp_tev_record`, `ent` a record of
/// `size` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_event_fill(ctx: *mut c_void, ent: *mut c_void, size: c_uint) {
    // SAFETY: the caller's contract.
    let ctx = unsafe { &*ctx.cast::<FillCtx<'_>>() };
    // SAFETY: the caller's contract: a reserved record, ours to write.
    let rec = unsafe { core::slice::from_raw_parts_mut(ent.cast::<u8>(), size as usize) };
    if let Some(f) = rec.get_mut(ctx.hdr..ctx.hdr + ctx.fixed) {
        f.fill(0);
    }
    store_args(&ctx.probe.args, ctx.env, rec, ctx.hdr, ctx.fixed, ctx.dsize);
}

/// The pre-handler of a kprobe event's probe. int3 context.
///
/// # Safety
///
/// Called by the probe core with the `kp` of a registered `Probe`.
unsafe extern "C" fn kprobe_handler(kp: *mut RkpKprobe, regs: *mut ffi::pt_regs) -> c_int {
    // SAFETY: `kp` is the first field of a registered `Probe`.
    let probe = unsafe { &*kernel::container_of!(kp, Probe, kp) };
    // SAFETY: a registered probe's address is set.
    let addr = unsafe { (*kp).addr } as usize;
    record(probe, regs, None, addr, 0);
    0
}

/// The entry handler of a kretprobe event's probe: saves the arguments for
/// `$argN` at return. int3 context.
///
/// # Safety
///
/// Called by the probe core with an instance of a registered `Probe`'s
/// kretprobe, whose data holds six words.
unsafe extern "C" fn entry_handler(
    ri: *mut RkpKretprobeInstance,
    regs: *mut ffi::pt_regs,
) -> c_int {
    // SAFETY: the caller's contract.
    let (r, data) = unsafe {
        (
            &*regs,
            core::ptr::addr_of_mut!((*ri).data).cast::<EntryArgs>(),
        )
    };
    // The register arguments (an entry argument beyond them reads as 0).
    let args: EntryArgs =
        core::array::from_fn(|i| arch::regs_get_kernel_argument(r, i as u32, |_| 0));
    // SAFETY: the instance's data area has room for `EntryArgs`, 8-aligned.
    unsafe { data.write(args) };
    0
}

/// The return handler of a kretprobe event's probe. Trampoline context,
/// interrupts off.
///
/// # Safety
///
/// As for `entry_handler`.
unsafe extern "C" fn ret_handler(ri: *mut RkpKretprobeInstance, regs: *mut ffi::pt_regs) -> c_int {
    // SAFETY: the instance's kretprobe is the `rp` field of a registered
    // `Probe`.
    let (rp, ret, data) = unsafe {
        (
            (*ri).rp,
            (*ri).ret_addr,
            &*core::ptr::addr_of!((*ri).data).cast::<EntryArgs>(),
        )
    };
    // SAFETY: as above.
    let probe = unsafe { &*kernel::container_of!(rp, Probe, rp) };
    // SAFETY: a registered probe's address is set.
    let func = unsafe { (*rp).kp.addr } as usize;
    record(probe, regs, Some(data), func, ret);
    0
}

/// Called by `trace_event.c`, with the kernel's `event_mutex` held, when the
/// first trace instance enables the event or the last one disables it.
/// Process context.
///
/// # Safety
///
/// `owner` is a registered `Event`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_event_set_enabled(owner: *mut c_void, on: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let ev = unsafe { &*owner.cast::<Event>() };
    let Ok(core) = Core::get() else {
        return ENODEV.to_errno();
    };
    let on = on != 0;
    if on {
        ev.enabled.store(true, Ordering::Release);
    }
    let mut ret = Ok(());
    for p in ev.probes.iter() {
        let kp = p.kp_ptr();
        // A probe waiting for its module, or of unloaded code, stays as it
        // is, as the kernel's do.
        // SAFETY: the probe's own structure.
        if !p.registered() || unsafe { RkpKprobe::flags(kp) } & crate::abi::flags::GONE != 0 {
            continue;
        }
        let r = core.set_enabled(kp, on);
        if r.is_err() && on {
            ret = r;
        }
    }
    if !on {
        ev.enabled.store(false, Ordering::Release);
    }
    match ret {
        Ok(()) => 0,
        Err(e) => {
            // All or nothing.
            for p in ev.probes.iter() {
                let _ = core.set_enabled(p.kp_ptr(), false);
            }
            ev.enabled.store(false, Ordering::Release);
            e.to_errno()
        }
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
    let Some(def) = ev.layout() else {
        return;
    };
    let hdr = if ev.is_return {
        KRETPROBE_HEADER
    } else {
        KPROBE_HEADER
    };
    let len = match usize::try_from(size) {
        Ok(n) if n > 0 => n,
        _ => {
            let fixed_end = hdr + ev.fixed_size as usize;
            // SAFETY: a record rkprobes just wrote for this event has its
            // header and fixed fields (the caller's contract).
            let head = unsafe { core::slice::from_raw_parts(ent.cast::<u8>(), fixed_end) };
            record_extent(&def, head, hdr, MAX_RECORD)
        }
    };
    // SAFETY: `len` bytes of the record: its size in the ring buffer, or
    // the extent rkprobes wrote.
    let rec = unsafe { core::slice::from_raw_parts(ent.cast::<u8>(), len) };
    // On the stack: trace output may run where nothing may be allocated
    // (`tp_printk`, `ftrace_dump()`).
    let syms = KernelSymbols(core::cell::UnsafeCell::new(SymbolBuf::zeroed()));
    let _ = write_record_args(&mut SeqWriter(seq), &def, rec, hdr, &syms);
}

/// `/sys/kernel/debug/rkprobes/kprobe_events`.
pub(crate) struct KprobeEventsFile;

impl Show for KprobeEventsFile {
    type Data = Events;

    /// Every probe in the kernel's listing form.
    fn show(events: &Events, out: &mut SeqFile) -> Result {
        let inner = events.inner.lock();
        let env = KernelEnv {
            core: events.core(),
            ksyms: events.core().ksyms(),
        };
        for ev in inner.events.iter() {
            for p in ev.probes.iter() {
                if let Some(def) = p.def() {
                    let _ = write_listing(&mut *out, &def, &env);
                }
            }
        }
        Ok(())
    }
}

impl StoreLarge for KprobeEventsFile {
    fn store(events: &Events, input: &[u8]) -> Result<usize> {
        events.write(input)
    }

    fn truncate(events: &Events) -> Result {
        events.clear()
    }
}

/// `/sys/kernel/debug/rkprobes/error_log`.
pub(crate) struct ErrorLogFile;

impl Show for ErrorLogFile {
    type Data = Events;

    fn show(events: &Events, out: &mut SeqFile) -> Result {
        let inner = events.inner.lock();
        for e in inner.errors.iter() {
            let _ = write_error_timestamp(&mut *out, e.ts_ns);
            out.write_raw(&e.text);
        }
        Ok(())
    }
}

/// `/sys/kernel/debug/rkprobes/kprobe_profile`: hits and misses per event.
pub(crate) struct ProfileFile;

impl Show for ProfileFile {
    type Data = Events;

    fn show(events: &Events, out: &mut SeqFile) -> Result {
        let inner = events.inner.lock();
        // One line per probe, as the kernel's (probes of one event share
        // its name).
        for ev in inner.events.iter() {
            for p in ev.probes.iter() {
                let missed = if p.is_return {
                    p.rp.nmissed as u64 + p.rp.kp.nmissed as u64
                } else {
                    p.kp.nmissed as u64
                };
                // `seq_printf("  %-44s %15lu %15lu\n")`, with the name's
                // bytes as they are.
                let name = ev.name.as_bytes();
                out.write_raw(b"  ");
                out.write_raw(name);
                for _ in name.len()..44 {
                    out.write_raw(b" ");
                }
                let _ = writeln!(
                    out,
                    " {:>15} {:>15}",
                    p.nhit.load(Ordering::Relaxed),
                    missed
                );
            }
        }
        Ok(())
    }
}
