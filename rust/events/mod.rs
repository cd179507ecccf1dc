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
//! This file holds the registry: the events, their probes and the
//! interface's state, with their invariants, and the interface's setup and
//! teardown. The rest is split by job and by the context it runs in:
//!
//! - `env`: what the parser asks the kernel (symbols, modules, function
//!   entries). Process context.
//! - `control`: the control file's commands and the registration of probes
//!   whose module comes. Process context, under `Events::inner`.
//! - `build`: a parsed command made into a probe, an event and its trace
//!   event. Process context.
//! - `destroy`: events and probes taken down. Process context.
//! - `enable`: the tracing core enabling or disabling an event. Process
//!   context, under the kernel's `event_mutex`.
//! - `hit`: what runs when a probe hits: fetching the arguments and
//!   recording them. Probe-hit context.
//! - `output`: formatting records for trace output, and the writers the
//!   pure printers write into. Trace output context and process context.
//! - `files`: the debugfs files. Process context.
//!
//! Lock order: see the table at the top of rust/kprobe/mod.rs.

mod build;
mod control;
mod destroy;
mod enable;
mod env;
mod files;
mod hit;
mod output;
mod scratch;

pub(crate) use files::{ErrorLogFile, KprobeEventsFile, ProfileFile};

use crate::{
    abi::{RkpKprobe, RkpKretprobe},
    arch,
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
        rkp_tev_enabled,
    },
    kernel_ext::{
        mutex::KernelMutex,
        notifier::{Handler, ModuleChain, ModuleEvent, ModuleState, Notifier, Notify},
        sync::rcu_barrier,
    },
    kprobe::Core,
    pure::probe_events::{
        exec::Fast,
        fetch::FetchInsn,
        layout::{Field, NoMemory, TextRef},
        EventLayout, ProbeSpec, Store, FETCH_INSN_MAX,
    },
};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64};
use kernel::{
    ffi::{c_ulong, c_void},
    new_mutex,
    prelude::*,
    str::CString,
    sync::Mutex,
};

/// Size of a kprobe record's header: `struct trace_entry` and the probe
/// address.
const KPROBE_HEADER: usize = 16;
/// Size of a kretprobe record's header: the function and the return site.
const KRETPROBE_HEADER: usize = 24;
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
    /// `exec::fast()` of the program, made once when it is built.
    fast: Option<Fast>,
}

/// One probe of an event (an event may have several: the kernel's
/// multiprobe events).
///
/// # Invariants
///
/// As the kernel's `trace_kprobe`, a probe is a kretprobe structure whose
/// entry probe `rp.kp` is the kprobe of a kprobe event; a return event's
/// probe is the kretprobe itself, told apart by its return handler. That
/// structure (`rp` for a return probe, `rp.kp` otherwise) is registered
/// with the probe core while the probe is in its event and its module is
/// loaded; `event` is the event that owns the probe; `data` holds the
/// immediate strings the programs point to.
#[repr(C)]
struct Probe {
    /// First, so that the handlers find the probe from the structure the
    /// probe core passes them.
    rp: RkpKretprobe,
    /// The probe as the listing shows it.
    spec: ProbeSpec<KVec<TextRef>, KVec<u8>>,
    /// NUL-terminated symbol name of the location, if any.
    symbol: Option<CString>,
    /// The module of a `MOD:SYM` location: a probe on a module not loaded
    /// yet is registered when the module comes.
    module: Option<KVec<u8>>,
    args: KVec<Arg>,
    /// Some argument's field is left as it was when its fetch fails: the
    /// fixed fields are zeroed before the programs run.
    zero_fixed: bool,
    /// Some argument reads a string (`string`, `ustring`; a `symstr` is
    /// made, not read): a hit stages them (`scratch`).
    strings: bool,
    data: KVec<KVec<u8>>,
    event: *const Event,
    nhit: AtomicU64,
}

/// A probe event: a trace event and its probes.
struct Event {
    group: CString,
    name: CString,
    /// The record layout, which every probe of the event shares: for the
    /// hit, trace output (which must not look at `probes`) and the checks
    /// for appending a probe.
    layout: EventLayout<KVec<Field>, KVec<u8>>,
    /// The C side: `struct rkp_tev`.
    tev: *mut c_void,
    /// Changed with both `Events::inner` and the kernel's `event_mutex`
    /// held, so that the tracing core's callbacks (which hold the latter)
    /// see it stable.
    probes: KVec<Pin<KBox<Probe>>>,
    /// The trace event's `perf_on` (`rkp_tev_perf_on_off` into `tev`),
    /// set and cleared with `tev`: while it is 0 a hit records for the
    /// trace instances alone, without asking who else listens.
    perf_on: *const AtomicI32,
    enabled: AtomicBool,
    /// Set before the probes are first enabled (by a trace instance or by
    /// perf) and never cleared: until then no hit has reached the event,
    /// and removing it needs no grace period of its own.
    ever_enabled: AtomicBool,
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

/// What an event keeps of its commands is stored in `KVec`s.
impl<T> Store<T> for KVec<T> {
    fn try_push(&mut self, v: T) -> core::result::Result<(), NoMemory> {
        self.push(v, GFP_KERNEL).map_err(|_| NoMemory)
    }

    fn items(&self) -> &[T] {
        self
    }
}

/// A probe core structure with nothing set: probes are registered
/// disabled, and enabling their event arms them.
fn empty_kprobe() -> RkpKprobe {
    RkpKprobe::new(
        core::ptr::null_mut(),
        core::ptr::null(),
        0,
        crate::abi::flags::DISABLED,
    )
}

impl Probe {
    /// A return probe: the kretprobe has its return handler.
    fn is_return(&self) -> bool {
        self.rp.handler.is_some()
    }

    /// The probe core's structure of this probe (for a kretprobe, its entry
    /// probe), for calls that take a raw pointer.
    fn kp_ptr(&self) -> *mut RkpKprobe {
        core::ptr::addr_of!(self.rp.kp).cast_mut()
    }

    /// Whether the probe is registered with the probe core (a probe on a
    /// module that is not loaded waits). Writer (`Events::inner`), or the
    /// tracing core's callbacks under `event_mutex`.
    fn registered(&self) -> bool {
        if self.is_return() {
            !self.rp.rkp_private.is_null()
        } else {
            !self.rp.kp.rkp_private.is_null()
        }
    }

    /// Hits lost: for a return probe, entries without a free instance too.
    fn nmissed(&self) -> u64 {
        let entry = self.rp.kp.nmissed as u64;
        if self.is_return() {
            entry + self.rp.nmissed as u64
        } else {
            entry
        }
    }

    /// The probe core's structure of this probe.
    fn raw_kp(self: Pin<&mut Self>) -> *mut RkpKprobe {
        // SAFETY: only the address of a field is taken; nothing moves.
        let this = unsafe { self.get_unchecked_mut() };
        core::ptr::addr_of_mut!(this.rp.kp)
    }
}

impl Events {
    /// The interface, with no events yet. Process context.
    pub(crate) fn new(core: &Core, ksyms: &Kallsyms) -> Result<impl PinInit<Self>> {
        // SAFETY: a constant of trace_event.c.
        if unsafe { ffi::rkp_tev_rec_size } as usize != core::mem::size_of::<ffi::RkpTevRec>() {
            pr_err!("struct rkp_tev_rec's size differs from the Rust side's\n");
            return Err(EINVAL);
        }
        // SAFETY: a constant of trace_event.c.
        if unsafe { ffi::rkp_tev_wants_bits }
            != [ffi::RKP_TEV_TRACE, ffi::RKP_TEV_PERF, ffi::RKP_TEV_PERF_RAN]
        {
            pr_err!("glue.h's RKP_TEV_* differ from the Rust side's\n");
            return Err(EINVAL);
        }
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

    /// Sets up the C side's state (`rkp_tev_init`) and hooks the module
    /// notifier, once the interface is at its final address: from here on
    /// the interface's drop undoes both, whatever fails after. Process
    /// context.
    pub(crate) fn start(&self) -> Result {
        let mut buf = SymbolBuf::new()?;
        let call_bpf = self
            .core()
            .ksyms()
            .lookup(&mut buf, kernel::c_str!("trace_call_bpf"));
        // SAFETY: load time, before any event; the address is the start of
        // the function of that name (`Kallsyms::lookup` confirmed it), or 0.
        unsafe { ffi::rkp_tev_init(call_bpf.unwrap_or(0) as c_ulong) };
        // SAFETY: `module_nb` is pinned in `self`, which unregisters it
        // before it is freed.
        unsafe { self.module_nb.register(self) }
    }

    fn core(&self) -> &Core {
        // SAFETY: the core outlives the interface (field order of the
        // module's state).
        unsafe { &*self.core }
    }
}

impl Event {
    /// A kretprobe event.
    fn is_return(&self) -> bool {
        self.layout.get().is_return
    }

    /// Bytes of the fixed fields after the record's header.
    fn fixed_size(&self) -> usize {
        self.layout.get().size as usize
    }

    fn is_enabled(&self) -> bool {
        // SAFETY: a registered trace event, or none.
        !self.tev.is_null() && unsafe { rkp_tev_enabled(self.tev) } != 0
    }
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
        let (busy, _) = self.destroy_many(all, false);
        let all_gone = busy.is_empty();
        if !all_gone {
            // Cannot happen: events hold rkprobes loaded.
            pr_err!("{} probe events still in use at unload\n", busy.len());
            core::mem::forget(busy);
        }
        drop(inner);
        // The links' RCU callbacks are rkprobes' code.
        rcu_barrier();
        if all_gone {
            // SAFETY: every event is destroyed: their probes are
            // unregistered and no hit runs.
            unsafe { scratch::free() };
            // SAFETY: as above; what `rkp_tev_init` allocated in `start`
            // (nothing if it did not run: `free_percpu(NULL)`).
            unsafe { ffi::rkp_tev_exit() };
        }
    }
}
