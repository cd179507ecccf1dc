// SPDX-License-Identifier: GPL-2.0

//! Notifier registration: the die chain, the module chain and the
//! tracepoint module chain.
//!
//! A [`Notifier`] is a `struct notifier_block` that calls a Rust handler
//! with the chain's notification decoded ([`Chain::Event`]). It is embedded,
//! pinned, in its owner, registered once the owner is at its final address,
//! and unregistered (waiting for running callbacks) before the owner goes.

use crate::{
    ffi::{self, die_val, DieArgs, NOTIFY_DONE, NOTIFY_STOP},
    kernel_ext::module::Module,
};
use core::{
    marker::PhantomData,
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};
use kernel::{
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
    types::Opaque,
};

/// What a handler tells the chain.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    /// Not handled here: the next notifier looks (`NOTIFY_DONE`).
    Done,
    /// Handled: the chain stops (`NOTIFY_STOP`).
    Stop,
}

/// A notifier chain.
pub(crate) trait Chain {
    /// A notification, as the handler sees it.
    type Event<'a>;

    /// Adds `nb` to the chain; 0 or a negative errno.
    ///
    /// # Safety
    ///
    /// `nb` is an initialised notifier block that stays valid and in place
    /// until [`Chain::unregister`] returns.
    unsafe fn register(nb: *mut ffi::notifier_block) -> c_int;

    /// Removes `nb` from the chain; returns once no CPU runs its callback.
    ///
    /// # Safety
    ///
    /// `nb` was registered by [`Chain::register`].
    unsafe fn unregister(nb: *mut ffi::notifier_block) -> c_int;

    /// Decodes a notification; `None` for those that handlers never see.
    ///
    /// # Safety
    ///
    /// `val` and `data` are what this chain passes to its callbacks, and the
    /// event is used only during the callback (`'a`).
    unsafe fn event<'a>(val: c_ulong, data: *mut c_void) -> Option<Self::Event<'a>>;
}

/// A handler of the notifications of chain `C`.
pub(crate) trait Handler<C: Chain>: Sync {
    /// Handles one notification, in the chain's context (see the chain).
    fn notify(&self, event: C::Event<'_>) -> Notify;
}

/// The die chain (`register_die_notifier()`): exceptions, in exception
/// context, NMI-like: handlers may not sleep, allocate or take locks.
///
/// Handlers see the events a kprobes implementation takes: int3, and the
/// faults a probe's handler or copy may raise.
pub(crate) struct DieChain;

/// The die events handlers see.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Die {
    /// `DIE_OOPS`: an oops is being reported; the task will not go on.
    Oops,
    /// `DIE_INT3`: a breakpoint.
    Int3,
    /// `DIE_DEBUG`: a debug exception (#DB), with the address of DR6's
    /// value (which the handler may change).
    Debug(*mut c_ulong),
    /// `DIE_GPF`: a general protection fault the exception table did not
    /// fix, with its error code.
    Gpf(c_ulong),
    /// `DIE_TRAP`: #DE, #OF, #BR, #UD, #TS, #NP, #SS or #AC.
    Trap,
}

/// A die notification.
pub(crate) struct DieEvent<'a> {
    /// Which exception.
    pub(crate) die: Die,
    /// The registers saved at the exception, which the handler may change.
    pub(crate) regs: &'a mut ffi::pt_regs,
    /// The trap number.
    pub(crate) trapnr: c_int,
}

impl Chain for DieChain {
    type Event<'a> = DieEvent<'a>;

    unsafe fn register(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::register_die_notifier(nb) }
    }

    unsafe fn unregister(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::unregister_die_notifier(nb) }
    }

    unsafe fn event<'a>(val: c_ulong, data: *mut c_void) -> Option<DieEvent<'a>> {
        // SAFETY: the die chain passes `struct die_args` with every event
        // (the caller's contract).
        let args = unsafe { data.cast::<DieArgs>().as_ref() }?;
        let die = match val as u64 {
            die_val::DIE_OOPS => Die::Oops,
            die_val::DIE_INT3 => Die::Int3,
            die_val::DIE_DEBUG => Die::Debug(args.err as *mut c_ulong),
            die_val::DIE_GPF => Die::Gpf(args.err as c_ulong),
            die_val::DIE_TRAP => Die::Trap,
            _ => return None,
        };
        // SAFETY: the exception's saved registers, the callback's to change
        // until it returns.
        let regs = unsafe { args.regs.as_mut() }?;
        Some(DieEvent {
            die,
            regs,
            trapnr: args.trapnr,
        })
    }
}

/// The module chain (`register_module_notifier()`): modules coming and
/// going, in process context.
pub(crate) struct ModuleChain;

/// A module's state change.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModuleState {
    /// `MODULE_STATE_COMING`: loaded, before its init function.
    Coming,
    /// `MODULE_STATE_LIVE`: its init function returned; its init text is
    /// about to be freed.
    Live,
    /// `MODULE_STATE_GOING`: after its exit function, before its memory is
    /// freed.
    Going,
}

impl ModuleState {
    /// The state a module notification's `val` names; `None` for others.
    fn of(val: c_ulong) -> Option<ModuleState> {
        if val == ffi::module_state_MODULE_STATE_COMING as c_ulong {
            Some(ModuleState::Coming)
        } else if val == ffi::module_state_MODULE_STATE_LIVE as c_ulong {
            Some(ModuleState::Live)
        } else if val == ffi::module_state_MODULE_STATE_GOING as c_ulong {
            Some(ModuleState::Going)
        } else {
            None
        }
    }
}

/// A module notification.
pub(crate) struct ModuleEvent<'a> {
    /// The new state.
    pub(crate) state: ModuleState,
    /// The module, live during the notification.
    pub(crate) module: &'a Module,
}

impl Chain for ModuleChain {
    type Event<'a> = ModuleEvent<'a>;

    unsafe fn register(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::register_module_notifier(nb) }
    }

    unsafe fn unregister(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::unregister_module_notifier(nb) }
    }

    unsafe fn event<'a>(val: c_ulong, data: *mut c_void) -> Option<ModuleEvent<'a>> {
        let state = ModuleState::of(val)?;
        if data.is_null() {
            return None;
        }
        // SAFETY: the module chain passes the `struct module` concerned,
        // live during the notification (the caller's contract).
        let module = unsafe { Module::from_raw(data.cast()) };
        Some(ModuleEvent { state, module })
    }
}

/// The tracepoint module chain (`register_tracepoint_module_notifier()`):
/// modules with tracepoints coming (after their ftrace sites are ready,
/// before their init function) and going (before the tracepoint code
/// checks that none of their tracepoints has a probe left), in process
/// context, with the tracepoint code's module list mutex held. Registering
/// calls the handler with [`ModuleState::Coming`] for each loaded module
/// that has tracepoints, unregistering with [`ModuleState::Going`].
pub(crate) struct TracepointModuleChain;

impl Chain for TracepointModuleChain {
    type Event<'a> = ModuleEvent<'a>;

    unsafe fn register(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::register_tracepoint_module_notifier(nb) }
    }

    unsafe fn unregister(nb: *mut ffi::notifier_block) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { ffi::unregister_tracepoint_module_notifier(nb) }
    }

    unsafe fn event<'a>(val: c_ulong, data: *mut c_void) -> Option<ModuleEvent<'a>> {
        // This chain tells only of coming and going.
        let state = ModuleState::of(val)?;
        // SAFETY: this chain passes a `struct tp_module`, live during the
        // notification (the caller's contract).
        let tp_mod = unsafe { data.cast::<ffi::TpModule>().as_ref() }?;
        if tp_mod.module.is_null() {
            return None;
        }
        // SAFETY: the module concerned, live during the notification.
        let module = unsafe { Module::from_raw(tp_mod.module) };
        Some(ModuleEvent { state, module })
    }
}

/// A notifier block on chain `C` that calls the handler `T`.
///
/// Its context is the chain's (see [`DieChain`], [`ModuleChain`]);
/// registering and unregistering are process context.
///
/// # Invariants
///
/// `nb` calls [`Notifier::call`] with this priority; `handler` is null or,
/// while `registered` is true, a handler that outlives the registration.
/// `nb` is registered on `C` exactly while `registered` is true.
pub(crate) struct Notifier<C: Chain, T: Handler<C>> {
    nb: Opaque<ffi::notifier_block>,
    handler: AtomicPtr<T>,
    registered: AtomicBool,
    _chain: PhantomData<C>,
}

// SAFETY: the block is written only before registration; the chain, not
// Rust code, uses it afterwards, and the handler is `Sync`.
unsafe impl<C: Chain, T: Handler<C>> Sync for Notifier<C, T> {}
// SAFETY: as above; nothing is tied to a thread.
unsafe impl<C: Chain, T: Handler<C>> Send for Notifier<C, T> {}

impl<C: Chain, T: Handler<C>> Notifier<C, T> {
    /// An unregistered notifier of priority `priority` (higher runs first).
    pub(crate) fn new(priority: c_int) -> Self {
        Self {
            nb: Opaque::new(ffi::notifier_block {
                notifier_call: Some(Self::call),
                next: core::ptr::null_mut(),
                priority,
            }),
            handler: AtomicPtr::new(core::ptr::null_mut()),
            registered: AtomicBool::new(false),
            _chain: PhantomData,
        }
    }

    /// Registers the notifier, which calls `handler` from now on. Process
    /// context.
    ///
    /// # Safety
    ///
    /// `self` does not move and `handler` stays valid until the notifier is
    /// unregistered ([`Notifier::unregister`], or its drop).
    pub(crate) unsafe fn register(&self, handler: &T) -> Result {
        if self.registered.load(Ordering::Acquire) {
            return Err(EBUSY);
        }
        self.handler
            .store(core::ptr::from_ref(handler).cast_mut(), Ordering::Release);
        // SAFETY: the block is initialised and, by the caller's contract,
        // stays in place until `unregister`.
        let ret = unsafe { C::register(self.nb.get()) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered just above.
        self.registered.store(true, Ordering::Release);
        Ok(())
    }

    /// Unregisters the notifier if it is registered; returns when no CPU
    /// runs its callback any more. Process context, may sleep.
    pub(crate) fn unregister(&self) {
        if self.registered.swap(false, Ordering::AcqRel) {
            // SAFETY: registered by `register` (type invariant); the chain
            // waits for running callbacks before this returns.
            unsafe { C::unregister(self.nb.get()) };
        }
    }

    /// The C callback: decodes the notification and calls the handler. In
    /// the chain's context.
    ///
    /// # Safety
    ///
    /// Called by chain `C` with the `nb` of a registered `Notifier<C, T>`.
    unsafe extern "C" fn call(
        nb: *mut ffi::notifier_block,
        val: c_ulong,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `nb` is the `nb` field of a registered notifier (the
        // caller's contract), which stays in place while registered;
        // `Opaque` has the layout of its content.
        let this = unsafe { &*kernel::container_of!(nb, Self, nb) };
        // SAFETY: the handler of a registered notifier outlives the
        // registration (type invariant).
        let Some(handler) = (unsafe { this.handler.load(Ordering::Acquire).as_ref() }) else {
            return NOTIFY_DONE;
        };
        // SAFETY: the chain's own arguments, used only during this call.
        match unsafe { C::event(val, data) } {
            Some(event) => match handler.notify(event) {
                Notify::Done => NOTIFY_DONE,
                Notify::Stop => NOTIFY_STOP,
            },
            None => NOTIFY_DONE,
        }
    }
}

impl<C: Chain, T: Handler<C>> Drop for Notifier<C, T> {
    fn drop(&mut self) {
        self.unregister();
    }
}
