// SPDX-License-Identifier: GPL-2.0

//! Race windows: the points between two steps of a writer that concurrent
//! hits or tasks must never see apart. In a test build (`RKP_TESTS=y`,
//! `cfg(rkp_race_windows)`) a guest test widens one of them with
//! `race.c`'s module parameters, so that a wrong order fails its test
//! deterministically; in any other build they compile to nothing.

/// A race window. The numbers are `race.c`'s `race_window` values.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Window {
    /// An event's trace event is being published: its `perf_on` and `tev`
    /// pointers are set one after the other while the event can already be
    /// enabled and its probes hit (`events::build`).
    TevPublish = 1,
    /// The kretprobe reclaim has loaded an instance's task and not yet read
    /// its state; the task may return, exit and be freed meanwhile
    /// (`kretprobe::pool`).
    ReclaimTask = 2,
}

/// Waits in `w` if a test chose it. Any context but NMI; busy, so that
/// atomic windows stay atomic.
#[inline(always)]
pub(crate) fn window(w: Window) {
    #[cfg(rkp_race_windows)]
    // SAFETY: no preconditions; a busy wait.
    unsafe {
        crate::ffi::rkp_race_window(w as u32)
    };
    #[cfg(not(rkp_race_windows))]
    let _ = w;
}
