// SPDX-License-Identifier: GPL-2.0

//! x86-64 probing, the counterpart of the kernel's
//! `arch/x86/kernel/kprobes/core.c`: how a probed instruction is analysed and
//! copied out of line (`insn`) and armed (`arm`), and the int3 handler that
//! runs probes (`kprobes`), probes on ftrace call sites (`ftrace`), and jump
//! optimization (`opt`, with `optprobe_trampoline.S`; the counterpart of
//! `opt.c`); each CPU's probe state (`ctl`).

mod arch_insn;
mod arm;
mod ctl;
mod ftrace;
mod insn;
mod kprobes;
mod opt;
mod opt_insn;
mod page_fault;
mod regs;
mod rethook;
mod rethook_callback;
mod slot;
mod trap_path;

pub(crate) use arch_insn::ArchInsn;
pub(crate) use arm::set_int3;
pub(crate) use ctl::{init_ctl, run_busy};
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
pub(crate) use ftrace::{
    check_ftrace_ops, ftrace_arm, ftrace_arm_many, ftrace_disarm, ftrace_disarm_many, FTRACE_PROBES,
};
pub(crate) use insn::{adjust_addr, prepare, release, text_unchanged};
pub(crate) use kprobes::{die_notify, DIE_NOTIFIER_PRIORITY};
pub(crate) use opt::{
    can_optimize_here, detour_in_use, detour_unused, jump_taken_out, optimize, prepare_optimized,
    release_optimized, unoptimize_finish, unoptimize_start, OptRefusal,
};
pub(crate) use opt_insn::{OptInsn, OptW, MAX_REGION};
pub(crate) use page_fault::{hook_page_faults, unhook_page_faults};
pub(crate) use regs::{argument_register_offset, regs_get_kernel_argument, NR_REG_ARGUMENTS};
pub(crate) use rethook::{
    rethook_stub, stub_page_header, EntryRegs, ReturnFrame, RETHOOK_STUB_SIZE, STUB_HEADER,
};
pub(crate) use slot::{SLOT_SIZE, TRAP_FILL};
pub(crate) use trap_path::trace_int3_path;
