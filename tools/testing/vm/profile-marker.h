/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the guest's helper programs (sysloop.c, timeit.c): a monotonic clock
 * in nanoseconds, and the markers of the instruction profile
 * (tools/testing/insn-profile, tools/testing/qemu-plugin/insn-profile.c),
 * placed in user space around what a row counts.
 */
#ifndef RKP_PROFILE_MARKER_H
#define RKP_PROFILE_MARKER_H

#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds: under -icount, executed instructions. */
static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The profile marker `nopl ID(%rax)`, ID = 0x524b0000 | row << 1 | end. */
#define RKP_MARK(id) asm volatile(".byte 0x0f, 0x1f, 0x80\n\t.long %c0" : : "i"(id))
#define RKP_ROW(r)                                      \
	case r:                                         \
		if (end)                                \
			RKP_MARK(0x524b0000 | (r) << 1 | 1); \
		else                                    \
			RKP_MARK(0x524b0000 | (r) << 1); \
		break

/* The start (end = 0) or end (end = 1) marker of row 0 to 7; none else. */
static void marker(int row, int end)
{
	switch (row) {
	RKP_ROW(0); RKP_ROW(1); RKP_ROW(2); RKP_ROW(3);
	RKP_ROW(4); RKP_ROW(5); RKP_ROW(6); RKP_ROW(7);
	}
}

#endif
