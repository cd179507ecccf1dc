// SPDX-License-Identifier: GPL-2.0

//! Layer 1: raw FFI, the one place where rkprobes names C.
//!
//! Everything rkprobes calls or reads in C is declared or re-exported here:
//! the items of the generated `kernel::bindings` it uses (below), exported
//! kernel symbols the kernel crate has no binding for (`exported`),
//! rkprobes' own C and trampolines, one `extern` block per C header
//! (`glue`, `trace_event`), and kernel functions and data that 6.12 does
//! not export, found at run time (`kallsyms`, `runtime`) and called through
//! this module's static calls (`kcalls`), never through a pointer.
//! Functions here are raw: `unsafe`, with their C contract; the small
//! abstractions of `crate::kernel_ext` (layer 2) wrap them, and the probe
//! logic uses those, or calls in here with a `// SAFETY:` argument where no
//! abstraction fits yet. No file outside this folder names
//! `kernel::bindings` or declares an `extern` block (`tools/testing/layers`,
//! a stage of `make check`).

pub mod abi;
mod exported;
mod glue;
pub(crate) mod kallsyms;
mod kcalls;
pub(crate) mod percpu;
pub(crate) mod runtime;
mod trace_event;

pub(crate) use exported::*;
pub(crate) use glue::*;
pub(crate) use trace_event::*;

/// Types of the generated bindings that rkprobes uses.
pub(crate) use ::kernel::bindings::{
    cred, dentry, file, file_operations, inode, list_head, loff_t, module, mutex, notifier_block,
    path, pt_regs, qstr, seq_file, task_struct, umode_t,
};

/// Constants of the generated bindings that rkprobes uses.
pub(crate) use ::kernel::bindings::{
    mod_mem_type_MOD_INIT_TEXT, mod_mem_type_MOD_TEXT, module_state_MODULE_STATE_COMING,
    module_state_MODULE_STATE_GOING, module_state_MODULE_STATE_LIVE, EILSEQ, EOPNOTSUPP,
    HARDIRQ_BITS, HARDIRQ_SHIFT, NMI_BITS, NMI_SHIFT, O_TRUNC, SOFTIRQ_OFFSET,
};

/// Functions and data the kernel exports, through the generated bindings.
pub(crate) use ::kernel::bindings::{
    cond_synchronize_rcu, copy_from_kernel_nofault, copy_from_user_nofault,
    get_state_synchronize_rcu, kstrtobool, module_put, msleep, mutex_lock, mutex_unlock,
    rcu_barrier, register_module_notifier, seq_lseek, seq_read, seq_write, single_open,
    single_release, synchronize_rcu, try_module_get, unregister_module_notifier,
};
