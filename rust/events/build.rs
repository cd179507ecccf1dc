// SPDX-License-Identifier: GPL-2.0

//! A parsed probe command made into the structures that serve it: a
//! [`Probe`] with its fetch programs resolved (symbols looked up, immediate
//! strings copied), a new [`Event`], and the event's trace event, registered
//! with the tracing core through `trace_event.c` with the fields and print
//! format of its arguments.
//!
//! Process context, may sleep and allocate; called by the control file's
//! commands with `Events::inner` held.

use super::{
    empty_kprobe,
    handlers::{entry_handler, kprobe_handler, ret_handler, site_kprobe_handler, site_ret_handler},
    output::VecWriter,
    scratch, tev_offsets, Arg, EntryArgs, Event, Events, PlainStores, Probe, Site, EPROBE_HEADER,
    KPROBE_HEADER, KRETPROBE_HEADER,
};
use crate::{
    abi::{RkpKprobe, RkpKretprobe, RkpKretprobeInstance},
    arch,
    ffi::{self, rkp_tev_create, RkpField},
    kernel_ext::{
        module,
        race::{self, Window},
        str::cstring,
    },
    pure::probe_events::{
        bytes::Fmt,
        exec::{self, always_stores, Base, Fast},
        parse::split_symbol_offset,
        print::write_print_fmt,
        program::FetchInsn,
        ByteWrite, Errno, EventLayout, ParseError, ProbeDef, ProbeKind, ProbeLocation, ProbeSpec,
        FETCH_INSN_MAX,
    },
};
use core::{
    fmt::Write as _,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU64},
};
use kernel::{
    ffi::{c_int, c_long, c_uint, c_void},
    prelude::*,
    types::Opaque,
};

/// The arguments' stores for the plain record (`rkp_tev_trace_regs`,
/// `rkp_tev_trace_strings`), when every argument is a register (or the
/// return value) stored as it is, memory at a register plus an offset, or
/// a string there (`$argN` of an entry probe being its register): the
/// registers first, then the memory loads, then the strings in the order
/// of their fields, which is the order of their data; `fixed` is the size
/// of the fields. `None` when an argument is none of these.
fn plain_stores(
    args: &[Arg],
    is_return: bool,
    fixed: usize,
) -> core::result::Result<Option<PlainStores>, kernel::alloc::AllocError> {
    /// Which of the plain record's lists a store goes to.
    enum List {
        Reg,
        Mem,
        Str,
    }
    let mut st = KVec::with_capacity(args.len(), GFP_KERNEL)?;
    let mut mems = KVec::new();
    let mut strs = KVec::new();
    // The register an argument of an entry probe is passed in.
    let arg_reg = |n: u32| {
        if is_return {
            None
        } else {
            arch::argument_register_offset(n)
        }
    };
    let base_reg = |base: Base| match base {
        Base::Reg(r) => Some(usize::from(r.pt_regs_offset())),
        Base::Arg(n) => arg_reg(n),
    };
    for a in args {
        let (reg, size, offset, list, kind) = match a.fast {
            Some(Fast::Reg(r, size)) => (Some(r.pt_regs_offset().into()), size, 0, List::Reg, 0),
            Some(Fast::Retval(size)) => (
                Some(core::mem::offset_of!(ffi::pt_regs, ax)),
                size,
                0,
                List::Reg,
                0,
            ),
            Some(Fast::Arg(n, size)) => (arg_reg(n), size, 0, List::Reg, 0),
            Some(Fast::Mem { base, offset, size }) => (base_reg(base), size, offset, List::Mem, 0),
            Some(Fast::String { base, offset, user }) => {
                let kind = if user {
                    ffi::RKP_TEV_STR_USER
                } else {
                    ffi::RKP_TEV_STR_KERNEL
                };
                (base_reg(base), 4, offset, List::Str, kind)
            }
            None => return Ok(None),
        };
        let Some(reg) = reg else {
            return Ok(None);
        };
        // A whole word of the registers, and a size the C stores know.
        if reg + 8 > core::mem::size_of::<ffi::pt_regs>() || !matches!(size, 1 | 2 | 4 | 8) {
            return Ok(None);
        }
        let store = ffi::RkpTevStore {
            reg: reg as c_uint,
            at: a.offset,
            size: size.into(),
            kind,
            offset: offset as c_long,
        };
        match list {
            List::Reg => st.push(store, GFP_KERNEL)?,
            List::Mem => mems.push(store, GFP_KERNEL)?,
            List::Str => strs.push(store, GFP_KERNEL)?,
        }
    }
    let nregs = st.len();
    st.extend_from_slice(&mems, GFP_KERNEL)?;
    st.extend_from_slice(&strs, GFP_KERNEL)?;
    let c = ffi::RkpTevPlain {
        // Kept while `st` is: a vector's buffer does not move with it.
        st: st.as_ptr(),
        nregs: nregs as c_uint,
        nmems: mems.len() as c_uint,
        nstrs: strs.len() as c_uint,
        fixed: fixed as c_uint,
    };
    Ok(Some(PlainStores { _st: st, c }))
}

/// The probe core's structure of one site of `def`'s probe at `kp`: a
/// kretprobe with `ret` and the entry handler for a return probe, else a
/// kprobe with `pre`.
fn probe_rp(
    mut kp: RkpKprobe,
    def: &ProbeDef<'_>,
    pre: unsafe extern "C" fn(*mut RkpKprobe, *mut ffi::pt_regs) -> c_int,
    ret: unsafe extern "C" fn(*mut RkpKretprobeInstance, *mut ffi::pt_regs) -> c_int,
) -> RkpKretprobe {
    if def.is_return {
        RkpKretprobe::new(
            kp,
            Some(ret),
            Some(entry_handler),
            def.maxactive as c_int,
            core::mem::size_of::<EntryArgs>(),
        )
    } else {
        kp.pre_handler = Some(pre);
        RkpKretprobe::new(kp, None, None, 0, 0)
    }
}

impl Events {
    /// Builds a probe from a parsed command: its programs resolved; an `f`
    /// or `t` probe at the ftrace call sites `sites` (found by
    /// `fprobe_sites`), one structure for the probe core each.
    pub(super) fn new_probe(
        &self,
        def: &ProbeDef<'_>,
        sites: &[usize],
    ) -> core::result::Result<Pin<KBox<Probe>>, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let spec = ProbeSpec::new(def, KVec::new(), KVec::new()).map_err(|e| e.to_parse_error())?;
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
                        let env = self.env();
                        let base = env
                            .lookup_data(sym)
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
                    fast: exec::fast(&code, a.ty.base.is_string()),
                },
                GFP_KERNEL,
            )
            .map_err(|_| nomem)?;
        }
        let fprobe = def.kind != ProbeKind::Kprobe;
        let (mut kp, symbol) = (
            empty_kprobe(),
            match def.location {
                ProbeLocation::Symbol { symbol, .. } if !fprobe => {
                    Some(cstring(&[symbol]).ok_or(nomem)?)
                }
                _ => None,
            },
        );
        match def.location {
            // A `t` probe whose tracepoint no module has brought yet gets
            // its address when one does (`tprobe`).
            _ if def.kind == ProbeKind::Tprobe && sites.is_empty() => {}
            // An event probe has no kprobe: its trigger is hooked when its
            // event is enabled (`eprobe`).
            _ if def.kind == ProbeKind::Eprobe => {}
            _ if fprobe => {
                let &first = sites
                    .first()
                    .ok_or(ParseError::registration(Errno::EINVAL))?;
                kp.addr = first as *mut c_void;
            }
            ProbeLocation::Symbol { offset, .. } => kp.offset = offset,
            ProbeLocation::Address(a) => kp.addr = a as usize as *mut c_void,
            ProbeLocation::Event { .. } => {}
        }
        if let Some(s) = &symbol {
            kp.symbol_name = s.as_char_ptr();
        }
        let mut more =
            KVec::with_capacity(sites.len().saturating_sub(1), GFP_KERNEL).map_err(|_| nomem)?;
        for &site in sites.iter().skip(1) {
            let mut kp = empty_kprobe();
            kp.addr = site as *mut c_void;
            let rp = probe_rp(kp, def, site_kprobe_handler, site_ret_handler);
            // Cannot fail: capacity reserved.
            let _ = more.push(
                Site {
                    rp: Opaque::new(rp),
                    probe: core::ptr::null(),
                },
                GFP_KERNEL,
            );
        }
        let rp = probe_rp(kp, def, kprobe_handler, ret_handler);
        // Staged (read once into the per-CPU scratch, `pure::probe_events::
        // stage`) when there is a kernel string, whose measure is a chunked
        // read: not a `symstr`, the module's own text. User strings alone
        // are read twice, as the kernel reads them: `strnlen_user_nofault()`
        // costs less than staging a short string (the event matrix:
        // performance.rst).
        let strings = args.iter().any(|a| {
            a.code
                .iter()
                .any(|i| matches!(i, FetchInsn::StString { .. }))
        });
        if strings {
            scratch::ensure();
        }
        let stores = plain_stores(&args, def.is_return, def.size as usize).map_err(|_| nomem)?;
        let tracepoint_name = match def.location {
            ProbeLocation::Symbol { symbol, .. } if def.kind == ProbeKind::Tprobe => {
                let mut v = KVec::new();
                v.extend_from_slice(symbol, GFP_KERNEL).map_err(|_| nomem)?;
                Some(v)
            }
            _ => None,
        };
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
                rp: Opaque::new(rp),
                spec,
                symbol,
                module,
                zero_fixed: args.iter().any(|a| !always_stores(&a.code, a.dynamic)),
                strings,
                stores,
                args,
                data,
                event: core::ptr::null(),
                nhit: AtomicU64::new(0),
                kind: def.kind,
                eprobe: None,
                ep_trigger: AtomicPtr::new(core::ptr::null_mut()),
                tracepoint_name,
                tracepoint: None,
                sites: more,
            },
            GFP_KERNEL,
        )
        .map_err(|_| nomem)
        .map(|mut probe| {
            let this = core::ptr::from_ref::<Probe>(&probe);
            // SAFETY: `sites` is not structurally pinned, and its buffer is
            // never reallocated: the sites stay where they are. INVARIANT:
            // each site names its probe before it is registered.
            for s in unsafe { probe.as_mut().get_unchecked_mut() }
                .sites
                .iter_mut()
            {
                s.probe = this;
            }
            probe
        })
    }

    /// A new, unregistered event for `def`.
    pub(super) fn new_event(
        &self,
        def: &ProbeDef<'_>,
    ) -> core::result::Result<Pin<KBox<Event>>, ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let layout =
            EventLayout::new(def, KVec::new(), KVec::new()).map_err(|e| e.to_parse_error())?;
        let group = cstring(&[def.group]).ok_or(nomem)?;
        let name = cstring(&[def.event.as_bytes()]).ok_or(nomem)?;
        KBox::pin(
            Event {
                group,
                name,
                header: match layout.kind() {
                    ProbeKind::Eprobe => EPROBE_HEADER,
                    _ if layout.is_return() => KRETPROBE_HEADER,
                    _ => KPROBE_HEADER,
                },
                layout,
                tev: core::ptr::null_mut(),
                // Room for the first probe, taken before it is registered.
                probes: KVec::with_capacity(1, GFP_KERNEL).map_err(|_| nomem)?,
                perf_on: core::ptr::null(),
                enabled: AtomicBool::new(false),
                ever_enabled: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )
        .map_err(|_| nomem)
    }

    /// Registers the trace event of a new event (whose first probe is
    /// registered).
    pub(super) fn register_event(
        &self,
        ev: &mut Pin<KBox<Event>>,
    ) -> core::result::Result<(), ParseError> {
        let nomem = ParseError::silent(Errno::ENOMEM);
        let layout = ev.layout.get();
        let hdr = ev.header;
        let mut print_fmt = KVec::new();
        write_print_fmt(&mut VecWriter(&mut print_fmt), &layout).map_err(|_| nomem)?;
        print_fmt.push(0, GFP_KERNEL).map_err(|_| nomem)?;
        // Field types and names, NUL-terminated, kept until the C side has
        // copied them.
        let mut texts: KVec<KVec<u8>> = KVec::new();
        let mut fields: KVec<RkpField> = KVec::new();
        for a in layout.fields() {
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
            n.extend_from_slice(a.name, GFP_KERNEL).map_err(|_| nomem)?;
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
        let kind = match layout.kind {
            ProbeKind::Eprobe => tev_offsets::TEV_EPROBE,
            _ if layout.is_return => tev_offsets::TEV_KRETPROBE,
            _ => tev_offsets::TEV_KPROBE,
        } as c_int;
        // An event probe's records print their target as `(SYSTEM.EVENT)`.
        let target = match ev.probes.first().map(|p| p.spec.get().location()) {
            Some(ProbeLocation::Event(e)) => {
                Some(cstring(&[e.system(), b".", e.event()]).ok_or(nomem)?)
            }
            _ => None,
        };
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
                kind,
                target
                    .as_ref()
                    .map_or(core::ptr::null(), |t| t.as_char_ptr()),
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
        // SAFETY: `tev` and `perf_on` are not structurally pinned; the
        // offset is C's `offsetof()` of an aligned `int` in `*tev`. A hit
        // that sees `tev` set reads `perf_on` after its acquire load of
        // `enabled` (`hit::record`): `perf_on` is written first, and the
        // volatile stores keep that order (x86 keeps stores in order).
        unsafe {
            let e = ev.as_mut().get_unchecked_mut();
            core::ptr::write_volatile(
                &mut e.perf_on,
                tev.cast::<u8>()
                    .add(ffi::rkp_tev_perf_on_off as usize)
                    .cast::<core::sync::atomic::AtomicI32>(),
            );
            race::window(Window::TevPublish);
            core::ptr::write_volatile(&mut e.tev, tev);
        }
        // An event's trace event calls into rkprobes (and an open tracefs
        // file of it keeps it): rkprobes stays loaded while events exist.
        // Dropped when the event is destroyed.
        module::get_self();
        Ok(())
    }
}
