// SPDX-License-Identifier: GPL-2.0

//! The environment the parser needs: what `pure::probe_events` asks the
//! kernel about a command (is a symbol there and unique, is a module loaded,
//! is a location a function's entry, where are the fields `%pd`/`%pD`
//! dereference), answered from kallsyms, the module list and the probe core
//! ([`KernelEnv`]).
//!
//! Process context: the lookups may sleep and allocate, and the symbol
//! iterators take the kernel's `module_mutex`. Nothing here runs in a probe
//! hit.

use super::{btf::ModuleBtf, empty_kprobe, eprobe::Target};
use crate::{
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
    },
    kernel_ext::{module::ModuleRef, str::cstring, sync::PreemptGuard},
    kprobe::{client::Client, Core},
    pure::{
        btf::Btf,
        probe_events::{
            program::EventField, DentryOffsets, Errno, EventFields, EventFilter, FuncEntry,
            ProbeEnv, ProbeKind, SymbolCheck, TracepointCheck, EPROBE_GROUP, FPROBE_GROUP,
            TPROBE_GROUP,
        },
    },
};
use core::cell::{Cell, OnceCell};
use kernel::{
    ffi::{c_char, c_int, c_ulong, c_void},
    prelude::*,
};

/// The kernel state the parser asks about.
pub(super) struct KernelEnv<'a> {
    pub(super) core: &'a Core,
    pub(super) ksyms: &'a Kallsyms,
    /// vmlinux's BTF, `None` without it.
    pub(super) btf: Option<Btf<'a>>,
    /// The BTF of the module whose function the command probes, read
    /// when first asked for: an environment serves one command.
    pub(super) module_btf: OnceCell<Option<ModuleBtf>>,
    /// The target of the `e` command, found when the parser first asks,
    /// with its system and event names; `Events::create` takes it.
    pub(super) eprobe: Cell<Option<FoundTarget>>,
}

/// An `e` command's target and its `SYSTEM` and `EVENT` names.
pub(super) struct FoundTarget {
    system: KVec<u8>,
    event: KVec<u8>,
    target: Target,
}

impl FoundTarget {
    fn is(&self, system: &[u8], event: &[u8]) -> bool {
        self.system[..] == *system && self.event[..] == *event
    }
}

impl KernelEnv<'_> {
    /// The event `system.event` an `e` command is on, found once per
    /// command.
    fn with_target<R>(
        &self,
        system: &[u8],
        event: &[u8],
        f: impl FnOnce(&Target) -> R,
    ) -> Option<R> {
        let mut cache = self.eprobe.take();
        if !cache.as_ref().is_some_and(|c| c.is(system, event)) {
            cache = Target::find(system, event).and_then(|target| {
                let (mut s, mut e) = (KVec::new(), KVec::new());
                s.extend_from_slice(system, GFP_KERNEL).ok()?;
                e.extend_from_slice(event, GFP_KERNEL).ok()?;
                Some(FoundTarget {
                    system: s,
                    event: e,
                    target,
                })
            });
        }
        let r = cache.as_ref().map(|c| f(&c.target));
        self.eprobe.set(cache);
        r
    }

    /// The target [`ProbeEnv::trace_event`] found for `system.event`,
    /// taken for the probe that is made of the command.
    pub(super) fn take_target(&self, system: &[u8], event: &[u8]) -> Option<Target> {
        match self.eprobe.take() {
            Some(c) if c.is(system, event) => Some(c.target),
            _ => Target::find(system, event),
        }
    }
}

impl EventFields for KernelEnv<'_> {
    fn field(&self, system: &[u8], event: &[u8], name: &[u8]) -> Option<EventField> {
        self.with_target(system, event, |t| t.field(name)).flatten()
    }
}

impl KernelEnv<'_> {
    /// Whether the module `name` is loaded; `ENOMEM` without memory to ask.
    pub(super) fn module_loaded(&self, name: &[u8]) -> Result<bool> {
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

    /// Looks up `name` (`SYM` or `MOD:SYM`) for an `@SYM` fetch argument:
    /// any symbol at its address, or a per-CPU variable (for
    /// `this_cpu_ptr(@SYM)`), as the kernel's; `ENOMEM` without memory to.
    pub(super) fn lookup_data(&self, name: &[u8]) -> Result<Option<usize>> {
        let cname = cstring(&[name]).ok_or(ENOMEM)?;
        let mut buf = SymbolBuf::new()?;
        Ok(self
            .ksyms
            .lookup_alias(&mut buf, &cname)
            .or_else(|| self.ksyms.lookup_percpu(&cname)))
    }

    /// The name of the loaded module that has the function `MOD:SYM` or
    /// `SYM`.
    fn module_of(&self, module: Option<&[u8]>, symbol: &[u8]) -> Option<KVec<u8>> {
        let addr = self.lookup_parts(module, symbol).ok()??;
        let m = ModuleRef::of_text_address(self.core.runtime(), addr)?;
        let mut name = KVec::new();
        name.extend_from_slice(m.name(), GFP_KERNEL).ok()?;
        Some(name)
    }

    /// Looks `MOD:SYM` up, or `SYM` without a module.
    pub(super) fn lookup_parts(
        &self,
        module: Option<&[u8]>,
        symbol: &[u8],
    ) -> Result<Option<usize>> {
        let cname = match module {
            Some(m) => cstring(&[m, b":", symbol]),
            None => cstring(&[symbol]),
        }
        .ok_or(ENOMEM)?;
        let mut buf = SymbolBuf::new()?;
        Ok(self.ksyms.lookup(&mut buf, &cname))
    }
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
    fn default_group(&self) -> &'static [u8] {
        super::default_group()
    }

    fn trace_event(&self, system: &[u8], event: &[u8]) -> Option<&dyn EventFields> {
        self.with_target(system, event, |_| ())?;
        Some(self)
    }

    fn check_event_filter(
        &self,
        system: &[u8],
        event: &[u8],
        filter: &EventFilter<'_>,
    ) -> core::result::Result<(), Errno> {
        self.with_target(system, event, |t| t.check_filter(filter))
            .unwrap_or(Err(Errno::ENODEV))
    }

    /// `f` and `t` events' groups: the kernel's (`fprobes`, `tracepoints`)
    /// when rkprobes stands in for the kernel's kprobes
    /// (`default_group=kprobes`), else the same with rkprobes' prefix, so
    /// that they do not meet the kernel's own events of those groups.
    fn default_group_of(&self, kind: ProbeKind) -> &'static [u8] {
        let drop_in = super::default_group() == b"kprobes";
        match kind {
            ProbeKind::Kprobe => super::default_group(),
            ProbeKind::Fprobe if drop_in => FPROBE_GROUP.as_bytes(),
            ProbeKind::Fprobe => b"rkfprobes",
            ProbeKind::Tprobe if drop_in => TPROBE_GROUP.as_bytes(),
            ProbeKind::Tprobe => b"rktracepoints",
            ProbeKind::Eprobe if drop_in => EPROBE_GROUP.as_bytes(),
            ProbeKind::Eprobe => b"rkeprobes",
        }
    }

    fn tracepoint(&self, name: &[u8]) -> TracepointCheck {
        let lookup = |s: &[u8]| self.lookup_parts(None, s);
        match super::tprobe::Tracepoint::find(self.core.runtime(), lookup, name) {
            Ok(Some(_)) => TracepointCheck::Loaded,
            // Perhaps a module's, as 6.12 takes it.
            Ok(None) | Err(_) => TracepointCheck::NotLoaded,
        }
    }

    fn dentry_offsets(&self) -> DentryOffsets {
        kernel_dentry_offsets()
    }

    fn btf(&self, func: &[u8]) -> Option<Btf<'_>> {
        let vmlinux = self.btf.as_ref()?;
        let (module, name) = match func.iter().position(|&c| c == b':') {
            Some(c) => (Some(&func[..c]), &func[c + 1..]),
            None => (None, func),
        };
        if func.is_empty() || (module.is_none() && vmlinux.func_proto(name).is_some()) {
            return Some(*vmlinux);
        }
        // A module's function: its split BTF on vmlinux's, for `MOD:SYM`
        // and for a symbol that a loaded module has.
        let m = self
            .module_btf
            .get_or_init(|| match self.module_of(module, name) {
                Some(m) => {
                    let path = cstring(&[b"/sys/kernel/btf/", &m])?;
                    ModuleBtf::load(&path).ok()?
                }
                // `MOD:SYM` of a module not loaded yet: its file's BTF.
                None if module.is_some_and(|m| matches!(self.module_loaded(m), Ok(false))) => {
                    // SAFETY: the kernel's release string, constant while it
                    // runs.
                    let release =
                        unsafe { kernel::str::CStr::from_char_ptr(ffi::rkp_tev_kernel_release()) };
                    ModuleBtf::from_file(release.as_bytes(), module?).ok()?
                }
                None => None,
            });
        m.as_ref().and_then(|m| m.btf(vmlinux)).or(Some(*vmlinux))
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
        // SAFETY: a probe structure on this stack, valid across the call,
        // with the C string `cname` as its symbol; it is never registered.
        let Some(c) = (unsafe { Client::from_raw(&mut kp) }) else {
            return FuncEntry::NoMemory;
        };
        match self.core.check_func_entry(c) {
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
    // Compared as `strcmp()` would, stopping at the first difference: most
    // names differ early, and measuring each first (`CStr::from_char_ptr`)
    // was most of an event's creation (Rust modules' names are long).
    let mut i = 0;
    loop {
        // SAFETY: `name` is NUL-terminated and `i` does not pass its NUL:
        // the loop stops at the first byte that differs or is NUL.
        let c = unsafe { *name.cast::<u8>().add(i) };
        match ctx.name.get(i) {
            Some(&w) if w == c && c != 0 => i += 1,
            None if c == 0 => {
                ctx.count += 1;
                break;
            }
            _ => break,
        }
    }
    0
}
