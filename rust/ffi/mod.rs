// SPDX-License-Identifier: GPL-2.0

//! Layer 1: raw FFI, the one place where rkprobes names C.
//!
//! Everything rkprobes calls or reads in C is declared or re-exported here:
//! the items of the generated `kernel::bindings` it uses (below), exported
//! kernel symbols the kernel crate has no binding for (`exported`), the C glue
//! of `glue.c` and `../events/trace_event.c` and the kretprobe trampoline
//! (`glue`), and kernel functions and data that 6.12 does not export, found
//! at run time (`kallsyms`, `runtime`). Functions here are raw: `unsafe`,
//! with their C contract; the small abstractions over them (layer 2) wrap
//! them, and the probe logic uses those, or calls in here with a
//! `// SAFETY:` argument where no abstraction fits yet. No file outside this
//! folder names `kernel::bindings` or declares an `extern` block.

mod exported;
mod glue;
pub(crate) mod kallsyms;
pub(crate) mod runtime;

pub(crate) use exported::*;
pub(crate) use glue::*;

/// Items of the generated bindings that rkprobes uses: C types, constants,
/// and functions the kernel exports.
pub(crate) use ::kernel::bindings::{
    // Functions and data.
    copy_from_kernel_nofault,
    copy_from_user_nofault,
    // Types.
    dentry,
    file,
    file_operations,
    inode,
    kstrtobool,
    ktime_get,
    list_head,
    loff_t,
    // Constants.
    mod_mem_type_MOD_INIT_TEXT,
    mod_mem_type_MOD_TEXT,
    module,
    module_put,
    module_state_MODULE_STATE_COMING,
    module_state_MODULE_STATE_GOING,
    module_state_MODULE_STATE_LIVE,
    msleep,
    mutex,
    mutex_lock,
    mutex_unlock,
    notifier_block,
    nr_cpu_ids,
    path,
    pt_regs,
    qstr,
    rcu_barrier,
    register_module_notifier,
    seq_file,
    seq_lseek,
    seq_read,
    seq_write,
    single_open,
    single_release,
    synchronize_rcu,
    try_module_get,
    umode_t,
    unregister_module_notifier,
    EILSEQ,
    EOPNOTSUPP,
    O_TRUNC,
};
