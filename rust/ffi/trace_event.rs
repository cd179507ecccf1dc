// SPDX-License-Identifier: GPL-2.0

//! The trace events' C (`../events/trace_event.c`, `../events/tprobe.c`)
//! as Rust sees it: the structures and prototypes of their headers.

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
};

/// `struct rkp_field` of `../events/trace_event.c`: a field of a trace
/// event's record.
#[repr(C)]
pub(crate) struct RkpField {
    /// The C type, as the format file shows it.
    pub(crate) ty: *const c_char,
    /// The field's name.
    pub(crate) name: *const c_char,
    /// Offset in the record.
    pub(crate) offset: c_int,
    /// Size in the record.
    pub(crate) size: c_int,
    /// Whether the field is signed.
    pub(crate) is_signed: c_int,
}

/// `struct rkp_tev_rec` of `../events/trace_event.h`: a record being written
/// from Rust, reserved in one trace instance after another. Its layout is
/// checked against C's at compile time (`rust/events/mod.rs`).
#[repr(C)]
pub(crate) struct RkpTevRec {
    /// `__probe_ip`, or `__probe_func` of a return event.
    pub(crate) a0: c_ulong,
    /// `__probe_ret_ip` of a return event.
    pub(crate) a1: c_ulong,
    /// The hit's registers.
    pub(crate) regs: *mut bindings::pt_regs,
    /// C's: the instance being written.
    pub(crate) link: *mut c_void,
    /// The record's bytes after the header.
    pub(crate) size: c_uint,
    /// Whether perf and BPF want the record, and whether its BPF programs
    /// ran ([`RKP_TEV_PERF`], [`RKP_TEV_PERF_RAN`]), as [`rkp_tev_wants`]
    /// said.
    pub(crate) perf: c_int,
    /// C's: the kernel's `struct trace_event_buffer` (six words in 6.12).
    pub(crate) fb: core::mem::MaybeUninit<[u64; 6]>,
}

/// `struct rkp_tev_store` of `../events/trace_event.h`: an argument that
/// [`rkp_tev_trace_regs`] and [`rkp_tev_trace_strings`] store themselves, a
/// register, memory or a string at a register. Its layout is checked against
/// C's at compile time (`rust/events/mod.rs`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RkpTevStore {
    /// The register's byte offset in `struct pt_regs` (for a string: the
    /// register whose value plus `offset` is its address).
    pub(crate) reg: c_uint,
    /// The field's offset after the record's head.
    pub(crate) at: c_uint,
    /// A register's or a memory load's field size: 1, 2, 4 or 8.
    pub(crate) size: c_uint,
    /// A string's kind: `RKP_TEV_STR_USER` (a ustring) or
    /// `RKP_TEV_STR_KERNEL` (a string, user memory below `TASK_SIZE`).
    pub(crate) kind: c_uint,
    /// Added to the register for a memory load's or a string's address.
    pub(crate) offset: c_long,
}

/// `struct rkp_tev_plain` of `../events/trace_event.h`: the arguments
/// [`rkp_tev_trace_regs`] and [`rkp_tev_trace_strings`] store, `nregs`
/// registers at `st`, then `nmems` memory loads, then `nstrs` strings in
/// the order of their fields, and the size of the fields.
#[repr(C)]
pub(crate) struct RkpTevPlain {
    /// The stores.
    pub(crate) st: *const RkpTevStore,
    /// Registers first.
    pub(crate) nregs: c_uint,
    /// Then memory loads.
    pub(crate) nmems: c_uint,
    /// Then strings.
    pub(crate) nstrs: c_uint,
    /// The record's bytes of fields after its head.
    pub(crate) fixed: c_uint,
}

/// [`rkp_tev_wants`]: records in the trace instances.
pub(crate) const RKP_TEV_TRACE: c_uint = 1;
/// `RKP_TEV_STR_USER`: a `ustring`, read as user memory.
pub(crate) const RKP_TEV_STR_USER: c_uint = 0;
/// `RKP_TEV_STR_KERNEL`: a `string`, user memory below `TASK_SIZE`.
pub(crate) const RKP_TEV_STR_KERNEL: c_uint = 1;
/// [`rkp_tev_wants`]: a record for perf and BPF.
pub(crate) const RKP_TEV_PERF: c_uint = 2;
/// [`rkp_tev_wants`]: for perf alone: the BPF programs ran.
pub(crate) const RKP_TEV_PERF_RAN: c_uint = 4;

extern "C" {
    /// Gives the events' C side `trace_call_bpf()`'s confirmed address (0:
    /// none), which becomes a static call. Process context, at load,
    /// before any event.
    pub(crate) fn rkp_tev_init(addr: c_ulong);

    /// Frees what [`rkp_tev_init`] allocated. Process context, at unload,
    /// once no event is left and no hit runs.
    pub(crate) fn rkp_tev_exit();

    /// The `default_group` module parameter: a NUL-terminated string in
    /// static storage, read-only after load.
    pub(crate) fn rkp_tev_default_group() -> *const c_char;

    /// `trace_event.h`'s `RKP_TEV_TRACE`, `RKP_TEV_PERF` and `RKP_TEV_PERF_RAN`,
    /// checked at load against [`RKP_TEV_TRACE`] and its siblings.
    pub(crate) static rkp_tev_wants_bits: [c_uint; 3];

    /// `offsetof(struct rkp_tev, perf_on)`: a hit reads the flag itself,
    /// and asks [`rkp_tev_wants`] only when it is set.
    pub(crate) static rkp_tev_perf_on_off: c_uint;

    /// Creates and registers a trace event (`trace_event.c`); an `ERR_PTR`
    /// on failure. Process context, takes `event_mutex`.
    pub(crate) fn rkp_tev_create(
        event_mutex: *mut bindings::mutex,
        ftrace_events: *mut bindings::list_head,
        group: *const c_char,
        name: *const c_char,
        print_fmt: *const c_char,
        kind: c_int,
        target: *const c_char,
        fields: *const RkpField,
        nfields: c_int,
        owner: *mut c_void,
    ) -> *mut c_void;

    /// Unregisters a trace event, `-EBUSY` while it is in use; the caller
    /// holds `event_mutex`.
    pub(crate) fn rkp_tev_remove(event_mutex: *mut bindings::mutex, ev: *mut c_void) -> c_int;

    /// Frees an unregistered trace event after a grace period.
    pub(crate) fn rkp_tev_free(ev: *mut c_void);

    /// Whether some trace instance has the event enabled.
    pub(crate) fn rkp_tev_enabled(ev: *mut c_void) -> c_int;

    /// Whether an event `group/name` exists. Process context, takes
    /// `event_mutex`.
    pub(crate) fn rkp_tev_name_in_use(
        event_mutex: *mut bindings::mutex,
        ftrace_events: *mut bindings::list_head,
        group: *const c_char,
        name: *const c_char,
    ) -> c_int;

    /// What a hit of the event must build, as `RKP_TEV_*` bits: records
    /// in the trace instances, and one for perf and BPF. BPF programs that
    /// read nothing of the record have run when it returns, on a context
    /// of zeroes of the kernel's full size; perf then gets one only if they
    /// asked for it ([`RKP_TEV_PERF_RAN`]). Probe-hit context.
    pub(crate) fn rkp_tev_wants(ev: *mut c_void, regs: *mut bindings::pt_regs) -> c_uint;

    /// Reserves the first record of a hit, in the first trace instance
    /// that has the event enabled, its header written; null when there is
    /// none. Probe-hit context, with `rec`'s `a0`, `a1`, `regs` and `size`
    /// set.
    pub(crate) fn rkp_tev_reserve(ev: *mut c_void, rec: *mut RkpTevRec) -> *mut c_void;

    /// Commits the record the last reserve or commit gave and reserves the
    /// next instance's, as `rkp_tev_reserve`. Probe-hit context.
    pub(crate) fn rkp_tev_commit(ev: *mut c_void, rec: *mut RkpTevRec) -> *mut c_void;

    /// Records a hit in every trace instance that has the event enabled
    /// (reserve, head, the stores and commit for each), for an event whose
    /// arguments are all registers, [`RkpTevStore`]s, as `plain` says
    /// (`nmems` and `nstrs` 0). Probe-hit context, perf not listening.
    pub(crate) fn rkp_tev_trace_regs(
        ev: *mut c_void,
        regs: *mut bindings::pt_regs,
        a0: c_ulong,
        a1: c_ulong,
        plain: *const RkpTevPlain,
    );

    /// [`rkp_tev_trace_regs`] for an event with memory loads or strings
    /// among its arguments: the strings' size first, then the records.
    pub(crate) fn rkp_tev_trace_strings(
        ev: *mut c_void,
        regs: *mut bindings::pt_regs,
        a0: c_ulong,
        a1: c_ulong,
        plain: *const RkpTevPlain,
    );

    /// Writes the record into perf's buffer through `rkp_event_fill(ctx)`
    /// and hands it to BPF (unless `rec.perf` has `RKP_TEV_PERF_RAN`) and
    /// perf; for a `rec` whose `perf` has `RKP_TEV_PERF`. Probe-hit
    /// context.
    pub(crate) fn rkp_tev_perf(ev: *mut c_void, rec: *mut RkpTevRec, ctx: *mut c_void);

    /// `trace_seq_putmem()`. Trace output context.
    pub(crate) fn rkp_tev_seq_write(seq: *mut c_void, buf: *const c_char, len: c_uint);

    /// `strncpy_from_user_nofault()`: the length copied including the NUL
    /// (at most `count`, the string cut and NUL-terminated there), 0 for an
    /// empty string (as the kernel's) or a `count` of 0, or `-EFAULT`. Any
    /// context.
    pub(crate) fn rkp_strncpy_user_nofault(
        dst: *mut c_char,
        src: *const c_void,
        count: c_long,
    ) -> c_long;

    /// `strnlen_user_nofault()`: the length of the user string at `src`
    /// including its NUL, more than `count` when it has none within
    /// `count` bytes, or 0 when it cannot be read. Any context.
    pub(crate) fn rkp_strnlen_user_nofault(src: *const c_void, count: c_long) -> c_long;

    /// `sprint_symbol()` of `addr` cut to `len` bytes; returns the length.
    /// Any context.
    pub(crate) fn rkp_tev_symstr(addr: c_ulong, room: *mut c_char, len: c_uint) -> c_uint;

    /// `TASK_SIZE` of the current task. Any context.
    pub(crate) fn rkp_tev_task_size() -> c_ulong;

    /// `raw_cpu_ptr()` of a per-CPU variable's address. Probe-hit context.
    pub(crate) fn rkp_tev_this_cpu_ptr(addr: c_ulong) -> c_ulong;

    /// Reads the file `path` whole (at most `max` bytes) into memory
    /// `*buf` that `rkp_tev_free_file()` frees; its size or a negative
    /// errno. Process context.
    pub(crate) fn rkp_tev_read_file(
        path: *const c_char,
        buf: *mut *mut c_void,
        max: c_ulong,
    ) -> c_long;

    /// Frees what `rkp_tev_read_file()` read. Process context.
    pub(crate) fn rkp_tev_free_file(buf: *mut c_void);

    /// The running kernel's release (`init_utsname()->release`), a C
    /// string of the kernel's. Process context.
    pub(crate) fn rkp_tev_kernel_release() -> *const c_char;

    /// `__alloc_percpu(size, 64)`: zeroed per-CPU memory, or null.
    /// Process context.
    pub(crate) fn rkp_tev_scratch_alloc(size: c_ulong) -> *mut c_void;

    /// `free_percpu()` of what `rkp_tev_scratch_alloc` gave. Process
    /// context.
    pub(crate) fn rkp_tev_scratch_free(p: *mut c_void);

    /// The tracepoint `name` of vmlinux (`../events/tprobe.c`), or null.
    /// Process context.
    pub(crate) fn rkp_tp_find(name: *const c_char) -> *mut c_void;

    /// The tracepoint `name` of the module `m`, on which the caller holds a
    /// reference, or null. Process context.
    pub(crate) fn rkp_tp_find_in_module(
        m: *mut bindings::module,
        name: *const c_char,
    ) -> *mut c_void;

    /// The address of the tracepoint's stub function.
    pub(crate) fn rkp_tp_stub(tp: *mut c_void) -> c_ulong;

    /// One more t probe on the tracepoint: the first registers its stub
    /// as one of its probes. Process context.
    pub(crate) fn rkp_tp_attach(tp: *mut c_void) -> c_int;

    /// One t probe fewer: the last removes the stub. Process context.
    pub(crate) fn rkp_tp_detach(tp: *mut c_void);

    /// Whether the mirrors of `../events/eprobe.c` match the running
    /// kernel: `traceon_cmd` is its `trigger_traceon_cmd`, `expect` the
    /// `n` addresses of the functions that command is built with,
    /// `common_fields` its `ftrace_common_fields`. Process context.
    pub(crate) fn rkp_ep_layout_ok(
        traceon_cmd: *const c_void,
        expect: *const c_ulong,
        n: c_uint,
        common_fields: *const bindings::list_head,
    ) -> c_int;

    /// The top instance's file of the event `system.event`, with a
    /// reference, or null when there is none an event probe may attach
    /// to. Process context, without `event_mutex`.
    pub(crate) fn rkp_ep_find(system: *const c_char, event: *const c_char) -> *mut c_void;

    /// Gives back what `rkp_ep_find` took. Process context, without
    /// `event_mutex`.
    pub(crate) fn rkp_ep_put(file: *mut c_void);

    /// The field `name` of the records of `file`'s event: 0 and `info`, or
    /// `-ENOENT`. Process context.
    pub(crate) fn rkp_ep_field(
        file: *mut c_void,
        name: *const c_char,
        info: *mut RkpEpFieldInfo,
    ) -> c_int;

    /// Hooks the event probe `owner` to `file`'s event, with the filter
    /// `filter` (null: none): its trigger, or an `ERR_PTR`. Process
    /// context, with `event_mutex` held.
    pub(crate) fn rkp_ep_attach(
        file: *mut c_void,
        owner: *mut c_void,
        filter: *const c_char,
    ) -> *mut c_void;

    /// Whether `filter` parses as a filter of `file`'s event's records
    /// (the tracing core logs its error): 0 or a negative errno. Process
    /// context.
    pub(crate) fn rkp_ep_filter_check(file: *mut c_void, filter: *const c_char) -> c_int;

    /// Unhooks and frees `trigger`, once no CPU runs it. Process context,
    /// with `event_mutex` held.
    pub(crate) fn rkp_ep_detach(file: *mut c_void, trigger: *mut c_void);
}

/// `struct rkp_ep_field_info` of `../events/eprobe.h`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct RkpEpFieldInfo {
    /// From the record's start.
    pub(crate) offset: c_int,
    /// Bytes.
    pub(crate) size: c_int,
    /// Non-zero for a signed number.
    pub(crate) is_signed: c_int,
    /// `RKP_EP_STR_*`.
    pub(crate) string: c_int,
}

/// `RKP_EP_STR_*` of `../events/eprobe.h`: how a field holds a string.
pub(crate) mod ep_str {
    /// `char[N]` in the record.
    pub(crate) const STATIC: i32 = 1;
    /// `__data_loc char[]`.
    pub(crate) const DYN: i32 = 2;
    /// `__rel_loc char[]`.
    pub(crate) const RDYN: i32 = 3;
    /// `char *`: a pointer to the string.
    pub(crate) const PTR: i32 = 4;
}
