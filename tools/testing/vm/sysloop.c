// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop N PATH [-t]: calls openat(AT_FDCWD, PATH, O_RDONLY) N times, and
 * no other system call that opens a file, so that a probe on do_sys_openat2
 * hits exactly N times in this task (86-perf-bpf.sh). Static, so that the
 * dynamic loader opens nothing either. With -t it prints the loop's time
 * (CLOCK_MONOTONIC) as "sysloop: N calls in NS ns" (bench.sh: under
 * -icount, the guest's time counts executed instructions).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long long start;
	long i, n;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "-t"))) {
		fprintf(stderr, "usage: sysloop N PATH [-t]\n");
		return 2;
	}
	n = strtol(argv[1], NULL, 0);
	start = now_ns();
	for (i = 0; i < n; i++) {
		long fd = syscall(SYS_openat, AT_FDCWD, argv[2], O_RDONLY);

		if (fd >= 0)
			close(fd);
	}
	if (argc == 4)
		printf("sysloop: %ld calls in %lld ns\n", n, now_ns() - start);
	return 0;
}
