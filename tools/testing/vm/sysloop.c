// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop N PATH [-t]: calls openat(AT_FDCWD, PATH, O_RDONLY) N times, and
 * no other system call that opens a file, so that a probe on do_sys_openat2
 * hits exactly N times in this task (86-perf-bpf.sh). Static, so that the
 * dynamic loader opens nothing either. With -t it prints the loop's time
 * (CLOCK_MONOTONIC) as "sysloop: N calls in NS ns" (bench.sh: under
 * -icount, the guest's time counts executed instructions). With -p ROW
 * (0 to 7) the loop is placed between the markers of that row of the
 * instruction profile (tools/testing/insn-profile --events: its QEMU plugin
 * counts the kernel's instructions between them).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "profile-marker.h"

int main(int argc, char **argv)
{
	int timed = 0, row = -1;
	long long start;
	long i, n;

	if (argc == 4 && !strcmp(argv[3], "-t"))
		timed = 1;
	else if (argc == 5 && !strcmp(argv[3], "-p"))
		row = atoi(argv[4]);
	else if (argc != 3)
		row = 8;
	if (row > 7) {
		fprintf(stderr, "usage: sysloop N PATH [-t | -p ROW]\n");
		return 2;
	}
	n = strtol(argv[1], NULL, 0);
	start = now_ns();
	if (row >= 0)
		marker(row, 0);
	for (i = 0; i < n; i++) {
		long fd = syscall(SYS_openat, AT_FDCWD, argv[2], O_RDONLY);

		if (fd >= 0)
			close(fd);
	}
	if (row >= 0)
		marker(row, 1);
	if (timed)
		printf("sysloop: %ld calls in %lld ns\n", n, now_ns() - start);
	return 0;
}
