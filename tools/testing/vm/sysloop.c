// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop N PATH: calls openat(AT_FDCWD, PATH, O_RDONLY) N times, and no
 * other system call that opens a file, so that a probe on do_sys_openat2
 * hits exactly N times in this task (86-perf-bpf.sh). Static, so that the
 * dynamic loader opens nothing either.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long i, n;

	if (argc != 3) {
		fprintf(stderr, "usage: sysloop N PATH\n");
		return 2;
	}
	n = strtol(argv[1], NULL, 0);
	for (i = 0; i < n; i++) {
		long fd = syscall(SYS_openat, AT_FDCWD, argv[2], O_RDONLY);

		if (fd >= 0)
			close(fd);
	}
	return 0;
}
