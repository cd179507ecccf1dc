// SPDX-License-Identifier: GPL-2.0
/*
 * sweeploop MODE N [CTL]: the workload of bench.sh's sweep rows. N calls,
 * each of which enters one of the swept functions once:
 *
 *   fork   vfork() and the child's _exit(), waited for (kernel_clone;
 *          vfork: no copy of the address space, whose cost varies by
 *          more than a probe hit's)
 *   open   openat() and close() of /dev/null (do_sys_openat2)
 *   read   pread64() of one byte of /dev/zero (vfs_read)
 *   write  pwrite64() of one byte to /dev/null (vfs_write)
 *   mix    open, then the same reads and writes, fstat() and close() of
 *          /dev/zero, a pipe's write and read: the workload whose
 *          functions the rows draw random functions from
 *
 * It runs on CPU 1 alone, and so does the vfork() child: a wake-up on the
 * other CPU would leave idle time in the loop, which under -icount passes
 * as the host's time, not as instructions.
 *
 * Prints "sweeploop: N calls in NS ns" (CLOCK_MONOTONIC; under -icount,
 * executed instructions), and with CTL (rkp_trapfree's control file) the
 * probe hits counted between the start and the end of the loop, read from
 * CTL's "hits H" line before and after: ", H hits". Static, so that no
 * loader runs in the loop's task.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in nanoseconds: under -icount, executed instructions. */
static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The "hits H" of CTL; -1 when it cannot be read. */
static long long hits(int ctl)
{
	char buf[256], *p;
	ssize_t n;

	if (ctl < 0)
		return -1;
	n = pread(ctl, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "hits ");
	return p ? atoll(p + 5) : -1;
}

int main(int argc, char **argv)
{
	int zero, null, ctl = -1, pfd[2];
	long long start, t, h0, h1;
	const char *mode;
	cpu_set_t cpus;
	struct stat st;
	char c = 0;
	long i, n;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: sweeploop fork|open|read|write|mix N [CTL]\n");
		return 2;
	}
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
		perror("sweeploop: sched_setaffinity");
		return 1;
	}
	mode = argv[1];
	n = strtol(argv[2], NULL, 0);
	zero = open("/dev/zero", O_RDONLY);
	null = open("/dev/null", O_WRONLY);
	if (zero < 0 || null < 0 || pipe(pfd)) {
		perror("sweeploop");
		return 1;
	}
	if (argc == 4)
		ctl = open(argv[3], O_RDONLY);
	h0 = hits(ctl);
	start = now_ns();
	if (!strcmp(mode, "fork")) {
		for (i = 0; i < n; i++) {
			pid_t pid = vfork();

			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, NULL, 0);
		}
	} else if (!strcmp(mode, "open")) {
		for (i = 0; i < n; i++) {
			int fd = open("/dev/null", O_RDONLY);

			if (fd >= 0)
				close(fd);
		}
	} else if (!strcmp(mode, "read")) {
		for (i = 0; i < n; i++)
			if (pread(zero, &c, 1, 0) != 1)
				return 1;
	} else if (!strcmp(mode, "write")) {
		for (i = 0; i < n; i++)
			if (pwrite(null, &c, 1, 0) != 1)
				return 1;
	} else if (!strcmp(mode, "mix")) {
		for (i = 0; i < n; i++) {
			int fd = open("/dev/zero", O_RDONLY);

			if (fd < 0 || pread(fd, &c, 1, 0) != 1 || pwrite(null, &c, 1, 0) != 1 ||
			    fstat(fd, &st) || close(fd) || write(pfd[1], &c, 1) != 1 ||
			    read(pfd[0], &c, 1) != 1)
				return 1;
		}
	} else {
		fprintf(stderr, "sweeploop: unknown mode %s\n", mode);
		return 2;
	}
	t = now_ns() - start;
	h1 = hits(ctl);
	if (ctl >= 0)
		printf("sweeploop: %ld calls in %lld ns, %lld hits\n", n, t,
		       h0 >= 0 && h1 >= 0 ? h1 - h0 : -1);
	else
		printf("sweeploop: %ld calls in %lld ns\n", n, t);
	return 0;
}
