// SPDX-License-Identifier: GPL-2.0

//! The generic kprobe core: registration, probe points, handler dispatch.
//!
//! This is the counterpart of the kernel's `kernel/kprobes.c`. It knows
//! nothing of x86 encodings: preparing, arming and stepping an instruction is
//! the architecture's (`crate::arch`). A probe point ([`Point`]) is one probed
//! address with every client probe registered there, in registration order
//! (the kernel's aggregate kprobe); its client list is replaced, never edited,
//! and published with a release store, so the hit path walks it lock-free.
//!
//! Lock order: `Core::reg` (the registration mutex), then the kernel's
//! `kprobe_mutex` (waiting for its optimizer, which takes `text_mutex` in
//! its own worker) or `text_mutex` (`crate::kernel_ext::text`); the slot cache's mutex
//! is never taken under `text_mutex`. Nothing on the hit path takes any of
//! them.

pub(crate) mod abi;
pub(crate) mod blacklist;
pub(crate) mod kretprobe;
pub(crate) mod slots;
pub(crate) mod table;

use crate::{
    arch,
    ffi::{
        self,
        kallsyms::{Kallsyms, SymbolBuf},
        runtime::Runtime,
    },
    kernel_ext::{
        debugfs::{SeqFile, Show, Store},
        module::{Module, ModuleRef},
        notifier::{
            DieChain, DieEvent, Handler, ModuleChain, ModuleEvent, ModuleState, Notifier, Notify,
        },
        security,
        str::kstrtobool,
        sync::{synchronize_rcu, synchronize_rcu_tasks, PreemptGuard},
        text::{self, TextGuard},
        vec,
    },
};
use abi::{flags, RkpKprobe};
use blacklist::Blacklist;
use core::{
    cell::Cell,
    fmt::Write,
    pin::Pin,
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};
use kernel::{ffi::c_ulong, new_mutex, prelude::*, str::CStr, sync::Mutex};
use slots::SlotCache;
use table::Table;

/// A registered probe's entry on its point's client list: the kernel's
/// aggregate kprobe list, on which a probe is found by `kp->rkp_private`.
///
/// # Invariants
///
/// `next` is published with release stores, so that the hit path walks the
/// list lock-free. Unlinking a client only redirects its predecessor's link
/// and leaves its own `next` alone (the kernel's `list_del_rcu()`): a reader
/// standing on it walks on, and removal needs no memory. An unlinked client
/// is freed only after a grace period.
struct Client {
    kp: *mut RkpKprobe,
    point: *mut Point,
    next: AtomicPtr<Client>,
    /// Writer only: the next unlinked client waiting for a grace period.
    retired: Cell<*mut Client>,
}

/// One probed address and every probe registered there.
///
/// # Invariants
///
/// `clients` is the head of a list of live `Client`s in registration order,
/// non-empty while the point is in the table. `module` is the module
/// containing `addr` (null for vmlinux), only ever compared: as in the
/// kernel, a probe holds no reference on it, and the module notifier kills
/// the module's points when it goes (`Core::kill_module_points`). The
/// `Cell`s are the writer's, used only with the registration mutex held.
pub(crate) struct Point {
    /// The probed address.
    pub(crate) addr: usize,
    /// The start of the function containing it.
    func: usize,
    /// The architecture's copy of the instruction and how to run it.
    pub(crate) arch: arch::ArchInsn,
    clients: AtomicPtr<Client>,
    armed: AtomicBool,
    /// A copy ran boosted at some time: a task may be inside the slot.
    was_boosted: AtomicBool,
    module: *mut ffi::module,
    /// Writer only: the next point of the batch being worked on.
    batch: Cell<*const Point>,
    in_batch: Cell<bool>,
}

// SAFETY: a `Point` is shared between the writer (under `Core::reg`, which
// alone uses the `Cell`s) and lock-free readers on the hit path, which only
// read `addr`, `arch` and the published client list, and update counters
// atomically.
unsafe impl Sync for Point {}
// SAFETY: as above; a `Point` is freed by the writer after a grace period.
unsafe impl Send for Point {}

/// The client probes of a point, walked lock-free.
struct ClientIter<'a> {
    next: *const Client,
    _point: core::marker::PhantomData<&'a Point>,
}

impl Iterator for ClientIter<'_> {
    type Item = *mut RkpKprobe;

    fn next(&mut self) -> Option<*mut RkpKprobe> {
        // SAFETY: clients reachable from a point stay live for the walker's
        // RCU read-side critical section, or the writer's mutex (the type
        // invariants of `Point` and `Client`).
        let c = unsafe { self.next.as_ref() }?;
        self.next = c.next.load(Ordering::Acquire);
        Some(c.kp)
    }
}

impl Point {
    /// The clients. Hit path or writer; the caller is in an RCU read-side
    /// critical section or holds `Core::reg`.
    fn clients(&self) -> ClientIter<'_> {
        ClientIter {
            next: self.clients.load(Ordering::Acquire),
            _point: core::marker::PhantomData,
        }
    }

    /// Runs the pre-handlers of the enabled clients in registration order.
    /// Returns `None` when one returned non-zero: it changed `regs->ip`, and
    /// the probed instruction must not run; otherwise whether one of the
    /// clients whose pre-handler ran (or might have) has a post-handler, so
    /// that the instruction must not run boosted.
    ///
    /// int3 context: interrupts off, may not sleep, allocate or take locks.
    pub(crate) fn run_pre_handlers(&self, regs: *mut ffi::pt_regs) -> Option<bool> {
        let mut post = false;
        for kp in self.clients() {
            // SAFETY: clients stay valid while registered, and unregistration
            // waits for a grace period that this handler holds off.
            let (h, p, f) =
                unsafe { ((*kp).pre_handler, (*kp).post_handler, RkpKprobe::flags(kp)) };
            if f & flags::DISABLED != 0 {
                continue;
            }
            post |= p.is_some();
            if let Some(h) = h {
                // SAFETY: as above; the handler has the documented contract.
                if unsafe { h(kp, regs) } != 0 {
                    return None;
                }
            }
        }
        Some(post)
    }

    /// Runs the post-handlers of the enabled clients. int3 context.
    pub(crate) fn run_post_handlers(&self, regs: *mut ffi::pt_regs, flags: c_ulong) {
        for kp in self.clients() {
            // SAFETY: as in `run_pre_handlers`.
            let (h, f) = unsafe { ((*kp).post_handler, RkpKprobe::flags(kp)) };
            if let Some(h) = h {
                if f & flags::DISABLED == 0 {
                    // SAFETY: as in `run_pre_handlers`.
                    unsafe { h(kp, regs, flags) };
                }
            }
        }
    }

    /// Calls the fault handlers until one handles the fault. Exception context.
    pub(crate) fn run_fault_handlers(&self, regs: *mut ffi::pt_regs, trapnr: i32) -> bool {
        for kp in self.clients() {
            // SAFETY: as in `run_pre_handlers`.
            if let Some(h) = unsafe { (*kp).fault_handler } {
                // SAFETY: as in `run_pre_handlers`.
                if unsafe { h(kp, regs, trapnr) } != 0 {
                    return true;
                }
            }
        }
        false
    }

    /// Notes that a copy is about to run boosted. Hit path.
    pub(crate) fn ran_boosted(&self) {
        if !self.was_boosted.load(Ordering::Relaxed) {
            self.was_boosted.store(true, Ordering::Relaxed);
        }
    }

    /// Counts a hit whose handlers could not run. Exception context.
    /// Whether the point is armed: its int3 is in the text, or ftrace calls
    /// rkprobes at it. Any context.
    pub(crate) fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    pub(crate) fn missed(&self) {
        for kp in self.clients() {
            // SAFETY: as in `run_pre_handlers`.
            unsafe { RkpKprobe::inc_nmissed(kp) };
        }
    }

    /// Whether any client is enabled. Writer.
    fn any_enabled(&self) -> bool {
        self.clients()
            // SAFETY: registered clients are valid.
            .any(|kp| unsafe { RkpKprobe::flags(kp) } & flags::DISABLED == 0)
    }

    /// Appends a client, published to the hit path at once. Writer.
    fn append(&self, c: *mut Client) {
        let mut link = &self.clients;
        loop {
            let n = link.load(Ordering::Relaxed);
            // SAFETY: linked clients are live; only the writer changes links.
            match unsafe { n.as_ref() } {
                Some(next) => link = &next.next,
                None => break,
            }
        }
        // Release: a reader that sees the client sees it initialised.
        link.store(c, Ordering::Release);
    }

    /// Unlinks `c`, leaving its own link for readers standing on it (the
    /// type invariant of `Client`). Writer; allocates nothing, cannot fail.
    /// Returns whether it was linked.
    fn unlink(&self, c: *mut Client) -> bool {
        let mut link = &self.clients;
        loop {
            let n = link.load(Ordering::Relaxed);
            if n.is_null() {
                return false;
            }
            // SAFETY: linked clients are live; only the writer changes links.
            let next = unsafe { &*n };
            if n == c {
                link.store(next.next.load(Ordering::Relaxed), Ordering::Release);
                return true;
            }
            link = &next.next;
        }
    }
}

/// Points chained through their own `batch` links, so that arming,
/// disarming or freeing any number of them needs no memory. Writer: the
/// registration mutex is held for the batch's whole life.
struct Batch {
    head: *const Point,
}

impl Batch {
    fn new() -> Self {
        Self {
            head: core::ptr::null(),
        }
    }

    /// Adds `p` unless it is already in the batch.
    fn add(&mut self, p: &Point) {
        if !p.in_batch.replace(true) {
            p.batch.set(self.head);
            self.head = p;
        }
    }

    /// The points, most recently added first.
    fn iter(&self) -> impl Iterator<Item = &Point> + '_ {
        let mut next = self.head;
        core::iter::from_fn(move || {
            // SAFETY: batched points are live while the batch exists (the
            // registration mutex is held, and they are freed only after
            // `take`).
            let p = unsafe { next.as_ref() }?;
            next = p.batch.get();
            Some(p)
        })
    }

    /// Ends the batch; returns its points, most recently added first.
    fn take(mut self) -> impl Iterator<Item = *mut Point> {
        let mut next = core::mem::replace(&mut self.head, core::ptr::null());
        core::iter::from_fn(move || {
            // SAFETY: as in `iter`; each point is read before the caller may
            // free it.
            let p = unsafe { next.as_ref() }?;
            next = p.batch.replace(core::ptr::null());
            p.in_batch.set(false);
            Some(core::ptr::from_ref(p).cast_mut())
        })
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for p in self.iter() {
            p.in_batch.set(false);
        }
    }
}

/// What one unregistration takes away: the clients it unlinked and the
/// points it touched, both chained through themselves.
struct Removal {
    retired: *mut Client,
    points: Batch,
}

impl Removal {
    fn new() -> Self {
        Self {
            retired: core::ptr::null_mut(),
            points: Batch::new(),
        }
    }
}

/// What the registration mutex protects.
struct Registry {
    /// Every live point, for listing and teardown.
    points: KVec<*mut Point>,
    /// Points of unloaded code ([GONE]): unpublished and disarmed, freed
    /// when their last client is unregistered.
    gone: KVec<*mut Point>,
    /// Whether probes are armed (`/sys/kernel/debug/rkprobes/enabled`).
    enabled: bool,
    /// Points armed through ftrace; rkprobes' ftrace_ops is registered while
    /// this is non-zero (an ops with an empty filter would trace everything).
    ftrace_armed: usize,
}

// SAFETY: the raw pointers are to points owned by the registry, used only
// with the registration mutex held.
unsafe impl Send for Registry {}

/// Where a probe goes, before it is registered.
struct Target {
    addr: usize,
    func: usize,
    /// The module whose text it is, held while its text is read.
    module: Option<ModuleRef>,
    /// An ftrace call site, probed through ftrace.
    ftrace: bool,
}

/// The probe core: module-wide state.
#[pin_data(PinnedDrop)]
pub(crate) struct Core {
    #[pin]
    reg: Mutex<Registry>,
    table: Table<Point>,
    #[pin]
    slots: SlotCache,
    rt: Runtime,
    ksyms: Kallsyms,
    blacklist: Blacklist,
    /// The architecture's hit-path state: per-CPU blocks.
    #[pin]
    arch: arch::ArchState,
    /// Return probes' pools.
    #[pin]
    kretprobes: kretprobe::Kretprobes,
    /// The die notifier, through which the architecture's int3 and fault
    /// handlers run (the kernel's `kprobe_exceptions_nb`).
    #[pin]
    die_nb: Notifier<DieChain, Core>,
    /// The module notifier, which kills the points of unloaded code.
    #[pin]
    module_nb: Notifier<ModuleChain, Core>,
}

impl Handler<DieChain> for Core {
    /// int3 and faults, handled by the architecture. Exception context,
    /// NMI-like.
    fn notify(&self, event: DieEvent<'_>) -> Notify {
        arch::die_notify(self, event)
    }
}

impl Handler<ModuleChain> for Core {
    /// A module's text goes (`MODULE_STATE_GOING`), or its init text is about
    /// to be freed (`MODULE_STATE_LIVE`). Process context.
    fn notify(&self, event: ModuleEvent<'_>) -> Notify {
        match event.state {
            ModuleState::Going => self.kill_module_points(event.module, true),
            ModuleState::Live => self.kill_module_points(event.module, false),
            ModuleState::Coming => {}
        }
        Notify::Done
    }
}

/// Called by the ftrace callback in `ffi/glue.c` for a hit at the ftrace
/// call site `ip`, with interrupts off and ftrace's recursion protection
/// held; the architecture handles it (`arch::ftrace_hit`).
///
/// # Safety
///
/// `regs` are the registers ftrace saved for this call, writable (IPMODIFY).
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
#[no_mangle]
pub(crate) unsafe extern "C" fn rkp_ftrace_hit(ip: usize, regs: *mut ffi::pt_regs) {
    if let Ok(core) = Core::get() {
        // SAFETY: the caller's contract.
        unsafe { arch::ftrace_hit(core, ip, regs) };
    }
}

/// The core, while the module's state exists; for the exported C functions.
static CORE: AtomicPtr<Core> = AtomicPtr::new(core::ptr::null_mut());

impl Core {
    /// Builds the core. Process context, may sleep.
    pub(crate) fn new(
        ksyms: Kallsyms,
        rt: Runtime,
        blacklist: Blacklist,
    ) -> Result<Pin<KBox<Self>>> {
        let table = Table::new()?;
        let core = KBox::try_pin_init(
            try_pin_init!(Self {
                reg <- new_mutex!(Registry { points: KVec::new(), gone: KVec::new(), enabled: true, ftrace_armed: 0 }, "rkprobes_reg"),
                table,
                slots <- SlotCache::new(rt),
                rt,
                ksyms,
                blacklist,
                arch <- arch::ArchState::new(),
                kretprobes <- kretprobe::Kretprobes::new(),
                die_nb: Notifier::new(arch::DIE_NOTIFIER_PRIORITY),
                module_nb: Notifier::new(0),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the notifiers are pinned in the core, which unregisters
        // them before it is freed.
        unsafe {
            core.die_nb.register(&core)?;
            core.module_nb.register(&core)?;
        }
        CORE.store(
            core::ptr::from_ref::<Self>(&core).cast_mut(),
            Ordering::Release,
        );
        Ok(core)
    }

    /// The core, for the exported functions. `ENODEV` while rkprobes is
    /// being unloaded.
    pub(crate) fn get() -> Result<&'static Self> {
        let p = CORE.load(Ordering::Acquire);
        if p.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: `CORE` is set only while the pinned core is alive, and client
        // modules, the only callers, keep rkprobes loaded while they call in.
        Ok(unsafe { &*p })
    }

    /// The architecture's state, for the architecture's hit path.
    pub(crate) fn arch(&self) -> &arch::ArchState {
        &self.arch
    }

    /// The symbol lookups.
    pub(crate) fn ksyms(&self) -> &Kallsyms {
        &self.ksyms
    }

    /// The blacklist, for debugfs.
    pub(crate) fn blacklist(&self) -> &Blacklist {
        &self.blacklist
    }

    /// The kernel functions found at run time.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The return probes.
    pub(crate) fn kretprobes(&self) -> &kretprobe::Kretprobes {
        &self.kretprobes
    }

    /// The slot cache.
    pub(crate) fn slots(&self) -> &SlotCache {
        &self.slots
    }

    /// The point at `addr`. Hit path (RCU read side) or writer.
    pub(crate) fn lookup(&self, addr: usize) -> Option<&Point> {
        self.table.lookup(addr)
    }

    /// Resolves where `kp` goes: `addr` or `symbol_name`, plus `offset`,
    /// adjusted by the architecture (past ENDBR at a function entry), as the
    /// kernel's `_kprobe_addr()`. Returns the address, and the start and
    /// size of its function. Process context.
    ///
    /// # Safety
    ///
    /// `kp` is valid.
    unsafe fn resolve(&self, kp: *mut RkpKprobe) -> Result<(usize, usize, usize)> {
        // SAFETY: the caller's contract.
        let (addr, sym, offset) = unsafe { ((*kp).addr as usize, (*kp).symbol_name, (*kp).offset) };
        if (addr != 0) != sym.is_null() {
            return Err(EINVAL);
        }
        let mut buf = SymbolBuf::new()?;
        let base = if sym.is_null() {
            addr
        } else {
            // SAFETY: a non-null `symbol_name` is a NUL-terminated string.
            let name = unsafe { CStr::from_char_ptr(sym) };
            self.ksyms.lookup(&mut buf, name).ok_or(ENOENT)?
        };
        let addr = base.checked_add(offset as usize).ok_or(EINVAL)?;
        let sym = buf.symbolise(addr).ok_or(ENOENT)?;
        if crate::pure::ksym::is_preamble_symbol(sym.name) {
            return Err(EINVAL);
        }
        let func = sym.start(addr as u64).ok_or(ENOENT)? as usize;
        let size = sym.size as usize;
        let addr = arch::adjust_addr(func, addr - func)?;
        Ok((addr, func, size))
    }

    /// The kernel's `kprobe_on_func_entry()`: `EINVAL` unless `kp` resolves
    /// to a function's entry (past its ENDBR), `ENOENT` when it does not
    /// resolve. Process context.
    ///
    /// # Safety
    ///
    /// `kp` is valid.
    pub(crate) unsafe fn check_func_entry(&self, kp: *mut RkpKprobe) -> Result {
        // SAFETY: the caller's contract.
        let (addr, func, _) = unsafe { self.resolve(kp) }?;
        if addr != arch::adjust_addr(func, 0)? {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Resolves where `kp` goes and checks that the address may be probed.
    /// Process context.
    ///
    /// # Safety
    ///
    /// `kp` is valid.
    unsafe fn target(&self, kp: *mut RkpKprobe) -> Result<Target> {
        // SAFETY: the caller's contract.
        let (addr, func, size) = unsafe { self.resolve(kp) }?;
        let ftrace = self.is_ftrace_site(addr);
        // An int3 on an ftrace call site would break ftrace's own patching.
        if ftrace && !arch::FTRACE_PROBES {
            return Err(EINVAL);
        }
        if self.blacklisted_origin(addr)? {
            return Err(EINVAL);
        }
        let module = self.check_address_safe(addr, func, size)?;
        Ok(Target {
            addr,
            func,
            module,
            ftrace,
        })
    }

    /// The second half of the kernel's `within_kprobe_blacklist()`: a
    /// suffixed copy of a function (`.cold`, `.part.N`, `.isra.N`,
    /// `.constprop.N`, ...) is blacklisted when the function it was split or
    /// cloned from is. Process context.
    fn blacklisted_origin(&self, addr: usize) -> Result<bool> {
        let mut buf = SymbolBuf::new()?;
        let base = match buf.symbolise(addr) {
            Some(sym) => match sym.name.split_once('.') {
                Some((base, _)) if !base.is_empty() => {
                    let mut name = KVec::with_capacity(base.len() + 1, GFP_KERNEL)?;
                    name.extend_from_slice(base.as_bytes(), GFP_KERNEL)?;
                    name.push(0, GFP_KERNEL)?;
                    name
                }
                _ => return Ok(false),
            },
            None => return Ok(false),
        };
        let Ok(name) = CStr::from_bytes_with_nul(&base) else {
            return Ok(false);
        };
        Ok(self
            .ksyms
            .lookup(&mut buf, name)
            .is_some_and(|a| self.blacklist.contains(a)))
    }

    /// The kernel's `check_kprobe_address_safe()`: kernel or module text,
    /// not blacklisted, not a site another text patcher owns. Takes a
    /// reference on the probed module, which it returns (null for vmlinux).
    /// Process context.
    fn check_address_safe(
        &self,
        addr: usize,
        func: usize,
        size: usize,
    ) -> Result<Option<ModuleRef>> {
        // SAFETY: `core_kernel_text` only compares the address with section
        // bounds.
        let core_text = unsafe { self.rt.core_kernel_text(addr as c_ulong) } != 0;
        // Every error return below drops the reference again.
        let module = if core_text {
            None
        } else {
            Some(ModuleRef::of_text_address(&self.rt, addr).ok_or(EINVAL)?)
        };
        if let Some(m) = &module {
            // Init text is freed once the module is live, and the LIVE
            // notification that kills its probes may already have run: as
            // the kernel, only a coming module's init text may be probed.
            if m.init_text().contains(&addr) && !m.is_coming() {
                return Err(ENOENT);
            }
            // The module's own noinstr text, which the kernel blacklists when
            // the module loads (and not at all without CONFIG_KPROBES).
            if m.noinstr_text().contains(&addr) {
                return Err(EINVAL);
            }
        }
        let p = addr as *mut core::ffi::c_void;
        // SAFETY: these queries read the kernel's site tables, which their
        // owners keep stable for them.
        let reserved = unsafe {
            self.rt.jump_label_text_reserved(p, p) != 0
                || self.rt.static_call_text_reserved(p, p) != 0
        };
        if reserved || addr >= func.saturating_add(size) || self.blacklist.contains(addr) {
            return Err(EINVAL);
        }
        // Checked again, under `text_mutex`, each time the probe is armed.
        if self.native_kprobe_before(func, addr) {
            return Err(EBUSY);
        }
        Ok(module)
    }

    /// Whether a kernel kprobe sits in the function starting at `func`, at
    /// or before `addr`: its int3, or the jump of an optimized probe (which
    /// covers up to `MAX_OPTIMIZED_LENGTH` bytes and never leaves its
    /// function), changes the bytes rkprobes decodes from the function's
    /// start to find instruction boundaries, and two patchers of one
    /// instruction would each restore what they saw. Process context.
    fn native_kprobe_before(&self, func: usize, addr: usize) -> bool {
        self.rt.has_get_kprobe()
            && (func..=addr).any(|a| {
                // Preemption off is an RCU read-side critical section.
                let _rcu = PreemptGuard::new();
                // SAFETY: `get_kprobe` searches the kernel's RCU-protected
                // probe table, in the critical section above. The result is
                // only compared with null.
                unsafe { self.rt.get_kprobe(a as *mut core::ffi::c_void) }
                    .is_some_and(|k| !k.is_null())
            })
    }

    /// Registers `kps`, all or nothing, arming new points with one text
    /// synchronisation. Process context, may sleep.
    pub(crate) fn register_many(&self, kps: &[*mut RkpKprobe]) -> Result {
        // As the kernel's kprobe_events under `LOCKDOWN_KPROBES`, for every
        // way in: the control file, the C ABI and the Rust API.
        security::locked_down_kprobes()?;
        // The kernel's own optimizer restores the text of a removed optprobe
        // asynchronously: until it has, the bytes rkprobes would copy are the
        // kernel's jump into a detour buffer that is about to be freed.
        // SAFETY: process context; it takes only the kernel's kprobe and
        // text mutexes, never one of rkprobes'.
        unsafe { self.rt.wait_for_kprobe_optimizer() };
        let mut reg = self.reg.lock();
        for (i, &kp) in kps.iter().enumerate() {
            // SAFETY: the caller passes valid probes.
            if let Err(e) = unsafe { self.register_one(&mut reg, kp) } {
                // Never armed: unpublish and free what this call added (every
                // probe before `i` was registered by it, or it would have
                // failed there).
                self.unregister_locked(&mut reg, kps.get(..i).unwrap_or(&[]));
                return Err(e);
            }
        }
        if let Err(e) = self.arm_points(&mut reg, kps) {
            // Disarms what was armed, as nothing was registered.
            self.unregister_locked(&mut reg, kps);
            return Err(e);
        }
        Ok(())
    }

    /// Adds `kp` to a new or existing point, unarmed. Process context.
    ///
    /// # Safety
    ///
    /// `kp` is valid and stays allocated until unregistered.
    unsafe fn register_one(&self, reg: &mut Registry, kp: *mut RkpKprobe) -> Result {
        if kp.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: the caller's contract.
        if unsafe { !(*kp).rkp_private.is_null() } {
            // Already registered (the kernel's -EINVAL for re-registration).
            return Err(EINVAL);
        }
        // SAFETY: the caller's contract.
        let target = unsafe { self.target(kp) }?;
        let made = KBox::new(
            Client {
                kp,
                point: core::ptr::null_mut(),
                next: AtomicPtr::new(core::ptr::null_mut()),
                retired: Cell::new(core::ptr::null_mut()),
            },
            GFP_KERNEL,
        )
        .map_err(Error::from)
        .and_then(|client| {
            let point = match self.table.lookup(target.addr) {
                Some(point) => core::ptr::from_ref(point).cast_mut(),
                None => self.new_point(reg, &target)?,
            };
            Ok((point, KBox::into_raw(client)))
        });
        // The reference kept the module from going while its text was read.
        // From now on the module notifier handles its unloading, which waits
        // for the registration mutex that the caller holds.
        drop(target.module);
        let (point, client) = made?;
        // Only DISABLED is the caller's to set.
        // SAFETY: the caller's contract; these fields are ours to write now,
        // and the client is ours until appended.
        unsafe {
            RkpKprobe::update_flags(kp, 0, !flags::DISABLED);
            if target.ftrace {
                RkpKprobe::update_flags(kp, flags::FTRACE, 0);
            }
            (*kp).addr = target.addr as *mut _;
            (*kp).rkp_private = client.cast();
            (*client).point = point;
            (*point).append(client);
        }
        Ok(())
    }

    /// Creates, prepares and publishes a point with no client yet. Writer.
    fn new_point(&self, reg: &mut Registry, t: &Target) -> Result<*mut Point> {
        reg.points.reserve(1, GFP_KERNEL)?;
        // Room in `gone` for every point, so that the module notifier never
        // allocates.
        let want = reg.points.len() + 1;
        reg.gone.reserve(want, GFP_KERNEL)?;
        let insn = arch::prepare(self, t.addr, t.func, t.ftrace)?;
        let point = match KBox::new(
            Point {
                addr: t.addr,
                func: t.func,
                arch: insn,
                clients: AtomicPtr::new(core::ptr::null_mut()),
                armed: AtomicBool::new(false),
                was_boosted: AtomicBool::new(false),
                module: t
                    .module
                    .as_ref()
                    .map_or(core::ptr::null_mut(), |m| m.as_ptr()),
                batch: Cell::new(core::ptr::null()),
                in_batch: Cell::new(false),
            },
            GFP_KERNEL,
        ) {
            Ok(p) => KBox::into_raw(p),
            Err(e) => {
                // `prepare`'s slot: never published.
                return Err(e.into());
            }
        };
        // SAFETY: the registration mutex is held; the point lives until
        // removed and reclaimed.
        if let Err(e) = unsafe { self.table.insert(t.addr, point) } {
            // SAFETY: never published.
            let p = unsafe { KBox::from_raw(point) };
            arch::release(&self.slots, &p.arch);
            return Err(e);
        }
        // Cannot fail: reserved above.
        let _ = reg.points.push(point, GFP_KERNEL);
        Ok(point)
    }

    /// Arms every point of `kps` that should be and is not. Writer.
    fn arm_points(&self, reg: &mut Registry, kps: &[*mut RkpKprobe]) -> Result {
        if !reg.enabled {
            return Ok(());
        }
        let mut batch = Batch::new();
        for &kp in kps {
            // SAFETY: a registered probe's `rkp_private` is its client, whose
            // point is live while the mutex is held.
            batch.add(unsafe { &*(*(*kp).rkp_private.cast::<Client>()).point });
        }
        self.set_armed(reg, &batch, true, Point::any_enabled)
    }

    /// Arms (`on`) or disarms the points of `batch` that `want` it and are
    /// in the other state: int3 sites with one text synchronisation for the
    /// batch, ftrace sites through ftrace (which patches text itself, so not
    /// under `text_mutex`). Best effort, as the kernel's `arm_all_kprobes()`:
    /// a point that cannot be armed stays disarmed, and the first error is
    /// returned. Disarming never fails. Writer.
    fn set_armed(
        &self,
        reg: &mut Registry,
        batch: &Batch,
        on: bool,
        want: impl Fn(&Point) -> bool,
    ) -> Result {
        let want = &want;
        let todo = |ftrace: bool| {
            batch.iter().filter(move |p| {
                p.arch.is_ftrace() == ftrace && p.armed.load(Ordering::Relaxed) != on && want(p)
            })
        };
        let mut result = Ok(());
        if todo(false).next().is_some() {
            if on {
                // The kernel's optimizer restores the text of a removed
                // optprobe asynchronously (see `register_many`).
                // SAFETY: process context; it takes the kernel's kprobe and
                // text mutexes, never while calling into rkprobes.
                unsafe { self.rt.wait_for_kprobe_optimizer() };
            }
            let guard = TextGuard::lock(&self.rt);
            for p in todo(false) {
                // Checked under `text_mutex`, which the kernel's kprobes hold
                // to arm or optimize: no kernel kprobe appears in between,
                // and a jump of one on its way out is still in the text.
                if on
                    && (self.native_kprobe_before(p.func, p.addr)
                        || !arch::text_unchanged(self, p.addr, &p.arch))
                {
                    result = result.and(Err(EBUSY));
                    continue;
                }
                // SAFETY: the point is published in the table (a hit finds
                // it) and in the opposite state.
                unsafe {
                    if on {
                        arch::arm(&guard, p.addr, &p.arch)
                    } else {
                        arch::disarm(&guard, p.addr, &p.arch)
                    }
                };
                p.armed.store(on, Ordering::Relaxed);
            }
            guard.sync();
        }
        for p in todo(true) {
            if !on {
                // Never fails (see `ftrace_disarm`).
                arch::ftrace_disarm(p.addr, reg.ftrace_armed == 1);
                p.armed.store(false, Ordering::Relaxed);
                reg.ftrace_armed -= 1;
                continue;
            }
            // No text conflict here (both would be ftrace callbacks), but the
            // same rule as at registration (`check_address_safe`).
            let r = if self.native_kprobe_before(p.func, p.addr) {
                Err(EBUSY)
            } else {
                arch::ftrace_arm(p.addr, reg.ftrace_armed == 0)
            };
            match r {
                Ok(()) => {
                    p.armed.store(true, Ordering::Relaxed);
                    reg.ftrace_armed += 1;
                }
                Err(e) => result = result.and(Err(e)),
            }
        }
        result
    }

    /// Unregisters `kps`; returns when no CPU can be in their handlers or
    /// slots any more. Never fails, allocates nothing. Process context, may
    /// sleep.
    pub(crate) fn unregister_many(&self, kps: &[*mut RkpKprobe]) {
        let mut reg = self.reg.lock();
        self.unregister_locked(&mut reg, kps);
    }

    /// Removes each of `kps` from its point. Writer.
    fn unregister_locked(&self, reg: &mut Registry, kps: &[*mut RkpKprobe]) {
        let mut removal = Removal::new();
        for &kp in kps {
            self.unlink_client(&mut removal, kp);
        }
        self.finish_removal(reg, removal);
    }

    /// Unlinks `kp` from its point's client list, if it is registered. It is
    /// no longer registered when this returns; its client and point are
    /// freed by [`Core::finish_removal`]. Writer; allocates nothing.
    fn unlink_client(&self, removal: &mut Removal, kp: *mut RkpKprobe) {
        if kp.is_null() {
            return;
        }
        // SAFETY: the caller passes valid probes.
        let c = unsafe { (*kp).rkp_private }.cast::<Client>();
        // SAFETY: a registered probe's `rkp_private` is its live client.
        let Some(client) = (unsafe { c.as_ref() }) else {
            return;
        };
        if client.kp != kp {
            pr_err!("unregistering a probe that is not registered: {:p}\n", kp);
            return;
        }
        // SAFETY: a registered client's point is live.
        let p = unsafe { &*client.point };
        if p.unlink(c) {
            client.retired.set(removal.retired);
            removal.retired = c;
            removal.points.add(p);
        }
        // SAFETY: the caller's probe; it is no longer registered.
        unsafe { (*kp).rkp_private = core::ptr::null_mut() };
    }

    /// Disarms the points of `removal` left with no enabled client,
    /// unpublishes those left with no client, waits until no CPU can be in
    /// what was removed, and frees it. Writer; allocates nothing.
    fn finish_removal(&self, reg: &mut Registry, removal: Removal) {
        if removal.retired.is_null() {
            return;
        }
        let is_dead = |p: &Point| p.clients.load(Ordering::Relaxed).is_null();
        // Disarm before unpublishing: a CPU that trapped on an int3 finds its
        // point until then. Points of unloaded code are disarmed already.
        let _ = self.set_armed(reg, &removal.points, false, |p| !p.any_enabled());
        let mut boosted = false;
        for p in removal.points.iter().filter(|p| is_dead(p)) {
            let ptr = core::ptr::from_ref(p).cast_mut();
            boosted |= p.was_boosted.load(Ordering::Relaxed);
            if let Some(i) = reg.points.iter().position(|&q| q == ptr) {
                // SAFETY: the registration mutex is held; the point is live.
                unsafe { self.table.remove(p.addr) };
                vec::swap_remove(&mut reg.points, i);
            } else if let Some(i) = reg.gone.iter().position(|&q| q == ptr) {
                // Unpublished when its code went.
                vec::swap_remove(&mut reg.gone, i);
            }
        }
        // No CPU can be in a handler, or in a slot with interrupts off, of
        // what was unlinked or unpublished above after this.
        synchronize_rcu();
        // A boosted copy runs with interrupts on: a task may have been
        // preempted in its slot, and leaves it only when it runs again.
        if boosted {
            synchronize_rcu_tasks(&self.rt);
        }
        // SAFETY: the registration mutex is held and a grace period passed.
        unsafe { self.table.reclaim() };
        let mut c = removal.retired;
        while !c.is_null() {
            // SAFETY: unlinked and past a grace period: nothing else reaches
            // it.
            let client = unsafe { KBox::from_raw(c) };
            c = client.retired.get();
        }
        for point in removal.points.take() {
            // SAFETY: the points of a removal are live until freed here.
            if is_dead(unsafe { &*point }) {
                // SAFETY: unpublished and unlisted above, past a grace period.
                let p = unsafe { KBox::from_raw(point) };
                arch::release(&self.slots, &p.arch);
            }
        }
    }

    /// The module notifier's work: when `module` goes (`going`), or when its
    /// init text is freed, the points in that text are disarmed, unpublished
    /// and their probes marked [GONE], as the kernel's `kill_kprobe()` does;
    /// they stay registered until their clients unregister them. Process
    /// context, may sleep.
    fn kill_module_points(&self, module: &Module, going: bool) {
        // The init text's bounds are only compared.
        let init = module.init_text();
        let in_init = |a: usize| init.contains(&a);
        let module = module.as_ptr();
        let mut reg = self.reg.lock();
        // Nothing here allocates: `gone` has room for every point
        // (`new_point` reserves it), and points are handled one at a time.
        let mut killed = 0usize;
        let mut i = 0;
        while let Some(&point) = reg.points.get(i) {
            // SAFETY: registered points are live while the mutex is held.
            let p = unsafe { &*point };
            if p.module != module || !(going || in_init(p.addr)) {
                i += 1;
                continue;
            }
            // The text is still there (it is freed after the notification);
            // restoring it leaves nothing of rkprobes in it, whatever still
            // runs there.
            let mut one = Batch::new();
            one.add(p);
            let _ = self.set_armed(&mut reg, &one, false, |_| true);
            drop(one);
            for kp in p.clients() {
                // SAFETY: registered clients are valid.
                unsafe { RkpKprobe::update_flags(kp, flags::GONE, 0) };
            }
            // SAFETY: the registration mutex is held; the point is live.
            unsafe { self.table.remove(p.addr) };
            vec::swap_remove(&mut reg.points, i);
            // Cannot fail: `new_point` reserved room for every point.
            let _ = reg.gone.push(point, GFP_KERNEL);
            killed += 1;
        }
        if killed == 0 {
            return;
        }
        // No CPU is in a handler of, or stepping, the points after this.
        synchronize_rcu();
        // SAFETY: the registration mutex is held and a grace period passed.
        unsafe { self.table.reclaim() };
        pr_info!("{} probes of unloaded code marked gone\n", killed);
    }

    /// `rkp_enable_kprobe`/`rkp_disable_kprobe`. A probe that cannot be
    /// armed stays disabled, as the kernel's `enable_kprobe()` leaves it.
    /// Process context.
    pub(crate) fn set_enabled(&self, kp: *mut RkpKprobe, enable: bool) -> Result {
        let mut reg = self.reg.lock();
        // SAFETY: the caller passes a valid probe.
        let c = unsafe { (*kp).rkp_private }.cast::<Client>();
        // SAFETY: a registered probe's `rkp_private` is its live client.
        let Some(client) = (unsafe { c.as_ref() }) else {
            return Err(EINVAL);
        };
        // SAFETY: a registered probe.
        if client.kp != kp || unsafe { RkpKprobe::flags(kp) } & flags::GONE != 0 {
            return Err(EINVAL);
        }
        // SAFETY: a registered client's point is live while the mutex is held.
        let p = unsafe { &*client.point };
        let (set, clear) = if enable {
            (0, flags::DISABLED)
        } else {
            (flags::DISABLED, 0)
        };
        // SAFETY: a registered probe.
        unsafe { RkpKprobe::update_flags(kp, set, clear) };
        if enable {
            if let Err(e) = self.arm_points(&mut reg, &[kp]) {
                // SAFETY: a registered probe.
                unsafe { RkpKprobe::update_flags(kp, flags::DISABLED, 0) };
                return Err(e);
            }
            Ok(())
        } else {
            let mut one = Batch::new();
            one.add(p);
            self.set_armed(&mut reg, &one, false, |p| !p.any_enabled())
        }
    }

    /// Arms or disarms every point (`/sys/kernel/debug/rkprobes/enabled`),
    /// best effort as the kernel's `arm_all_kprobes()`: the first error is
    /// returned, and the points that could not be armed stay disarmed.
    /// Process context.
    pub(crate) fn set_all_armed(&self, on: bool) -> Result {
        let mut reg = self.reg.lock();
        if reg.enabled == on {
            return Ok(());
        }
        reg.enabled = on;
        let mut all = Batch::new();
        for &point in reg.points.iter() {
            // SAFETY: registered points are live while the mutex is held.
            all.add(unsafe { &*point });
        }
        let r = self.set_armed(&mut reg, &all, on, |p| !on || p.any_enabled());
        if r.is_err() {
            pr_warn!("probes globally enabled, but some could not be armed\n");
        }
        r
    }

    /// Reads the first `buf.len()` original bytes at `addr`, as they were
    /// before any int3 of rkprobes replaced them. Process context.
    pub(crate) fn read_original(&self, addr: usize, buf: &mut [u8]) -> Result {
        text::read(addr, buf)?;
        for (i, b) in buf.iter_mut().enumerate() {
            if let Some(p) = addr.checked_add(i).and_then(|a| self.table.lookup(a)) {
                // An ftrace site is not patched by rkprobes: its bytes are
                // ftrace's (see `is_ftrace_site`).
                if !p.arch.is_ftrace() {
                    *b = p.arch.orig_byte();
                }
            }
        }
        Ok(())
    }

    /// Whether `addr` is an ftrace call site. Its bytes change whenever
    /// ftrace patches it (a NOP, a call, an int3 in the middle of an update),
    /// so decoders treat it as the 5-byte NOP it is at rest, as the kernel's
    /// `recover_probed_instruction()` does. Process context.
    pub(crate) fn is_ftrace_site(&self, addr: usize) -> bool {
        // SAFETY: `ftrace_location` only searches ftrace's sorted site tables.
        let site = unsafe { self.rt.ftrace_location(addr as c_ulong) };
        site == Some(addr as c_ulong)
    }
}

#[pinned_drop]
impl PinnedDrop for Core {
    fn drop(self: Pin<&mut Self>) {
        CORE.store(core::ptr::null_mut(), Ordering::Release);
        // Returns when no notification runs.
        self.module_nb.unregister();
        // Client modules depend on rkprobes, so none is loaded now; probes of
        // the events interface are gone with it. Whatever is left is removed
        // so that the original bytes are back before the module's text goes.
        {
            let mut reg = self.reg.lock();
            let mut removal = Removal::new();
            let mut left = 0usize;
            for &p in Iterator::chain(reg.points.iter(), reg.gone.iter()) {
                // SAFETY: registered points are live while the mutex is held;
                // unlinking a client leaves its link for the walk.
                for kp in unsafe { &*p }.clients() {
                    self.unlink_client(&mut removal, kp);
                    left += 1;
                }
            }
            if left > 0 {
                pr_warn!("{} probes still registered at unload; removed them\n", left);
            }
            self.finish_removal(&mut reg, removal);
        }
        // Zombie kretprobe pools hold rkprobes loaded, so none is left with
        // frames out unless a probe of rkprobes' own was just removed.
        self.kretprobes.drain(&self.rt);
        // Every probe is disarmed: returns when no CPU runs the handler.
        self.die_nb.unregister();
    }
}

/// `/sys/kernel/debug/rkprobes/enabled`: arms (1) or disarms (0) every probe,
/// as the kernel's `kprobes/enabled`.
pub(crate) struct EnabledFile;

impl Show for EnabledFile {
    type Data = Core;

    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let _ = writeln!(out, "{}", u8::from(core.reg.lock().enabled));
        Ok(())
    }
}

impl Store for EnabledFile {
    fn store(core: &Core, input: &[u8]) -> Result {
        // As the kernel's own file does (y/n/1/0/on/off).
        core.set_all_armed(kstrtobool(input)?)
    }
}

/// `/sys/kernel/debug/rkprobes/list`.
pub(crate) struct ListFile;

impl Show for ListFile {
    type Data = Core;

    /// The format of the kernel's `kprobes/list`: address, type,
    /// symbol+offset, module, flags.
    fn show(core: &Core, out: &mut SeqFile) -> Result {
        let mut buf = SymbolBuf::new()?;
        let reg = core.reg.lock();
        for &point in Iterator::chain(reg.points.iter(), reg.gone.iter()) {
            // SAFETY: registered points are live while the mutex is held.
            let p = unsafe { &*point };
            for kp in p.clients() {
                // SAFETY: registered clients are valid.
                let f = unsafe { RkpKprobe::flags(kp) };
                let kind = if kretprobe::is_kretprobe(kp) {
                    'r'
                } else {
                    'k'
                };
                let _ = write!(out, "{:016x}  {}  ", p.addr, kind);
                let _ = match buf.symbolise(p.addr) {
                    Some(s) => write!(
                        out,
                        "{}+0x{:x}  {} ",
                        s.name,
                        s.offset,
                        s.module.unwrap_or(" ")
                    ),
                    None => write!(out, "0x{:x} ", p.addr),
                };
                let _ = writeln!(
                    out,
                    "{}{}{}{}",
                    if f & flags::GONE != 0 { "[GONE]" } else { "" },
                    if f & flags::DISABLED != 0 && f & flags::GONE == 0 {
                        "[DISABLED]"
                    } else {
                        ""
                    },
                    if f & flags::OPTIMIZED != 0 {
                        "[OPTIMIZED]"
                    } else {
                        ""
                    },
                    if f & flags::FTRACE != 0 {
                        "[FTRACE]"
                    } else {
                        ""
                    },
                );
            }
        }
        Ok(())
    }
}
