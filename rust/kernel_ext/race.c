// SPDX-License-Identifier: GPL-2.0
/*
 * Race windows (rust/kernel_ext/race.rs), in test builds only (RKP_TESTS=y):
 * a guest test widens the window between two steps of a writer that a
 * concurrent hit or task must never see apart, so that a wrong order fails
 * the test instead of one run in a million. Two module parameters: which
 * window (race_window, the numbers of race.rs's Window) and for how long
 * (race_window_ms, a busy wait: some windows are atomic).
 */
#include <linux/delay.h>
#include <linux/moduleparam.h>

#include "race.h"

static unsigned int race_window;
module_param(race_window, uint, 0644);
MODULE_PARM_DESC(race_window, "test builds: the race window to widen (0: none)");

static unsigned int race_window_ms;
module_param(race_window_ms, uint, 0644);
MODULE_PARM_DESC(race_window_ms, "test builds: how long, in milliseconds (busy)");

/* Waits race_window_ms if window is the chosen one. Any context but NMI. */
void rkp_race_window(unsigned int window)
{
	if (READ_ONCE(race_window) == window)
		mdelay(READ_ONCE(race_window_ms));
}
