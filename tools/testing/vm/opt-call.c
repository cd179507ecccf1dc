// SPDX-License-Identifier: GPL-2.0
/*
 * opt-call: the calls of 58-optprobes-sweep.sh's register comparison. One
 * process, pinned to CPU 0, that makes the same four system calls each time
 * it reads a line on stdin, from the same call sites and with the same
 * arguments: pread64() of /proc/version (vfs_read), pwrite64() to /dev/null
 * (vfs_write), openat() of /proc/version (do_sys_openat2) and fork()
 * (kernel_clone). So a probe in those functions is hit from the same stack
 * with the same arguments each round, and the registers a handler sees can
 * be compared between an int3 hit and a hit through the jump. It prints its
 * pid first, then one line of results per round (what each call returned),
 * which must not change when the probe is optimized. Its own input and
 * output go through readv() and writev(), which do not enter vfs_read() and
 * vfs_write(), so that each round hits each function exactly once.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[64];

static void say(const char *s)
{
	struct iovec v = { .iov_base = (void *)s, .iov_len = strlen(s) };

	if (writev(1, &v, 1) != (ssize_t)v.iov_len)
		exit(1);
}

/* Waits for one line on stdin; false at its end. */
static int next_round(void)
{
	char c;
	struct iovec v = { .iov_base = &c, .iov_len = 1 };

	do {
		if (readv(0, &v, 1) != 1)
			return 0;
	} while (c != '\n');
	return 1;
}

int main(void)
{
	char out[160];
	cpu_set_t cpus;
	int rfd, wfd;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		return 1;
	rfd = open("/proc/version", O_RDONLY);
	wfd = open("/dev/null", O_WRONLY);
	if (rfd < 0 || wfd < 0)
		return 1;
	snprintf(out, sizeof(out), "%d\n", getpid());
	say(out);
	while (next_round()) {
		unsigned int sum = 0;
		ssize_t r, w;
		int fd, status = -1;
		pid_t pid;

		memset(buf, 0, sizeof(buf));
		r = pread(rfd, buf, sizeof(buf), 0);
		for (size_t i = 0; i < sizeof(buf); i++)
			sum = sum * 31 + (unsigned char)buf[i];
		w = pwrite(wfd, buf, sizeof(buf), 0);
		fd = openat(AT_FDCWD, "/proc/version", O_RDONLY);
		if (fd >= 0)
			close(fd);
		pid = fork();
		if (pid == 0)
			_exit(7);
		if (pid > 0)
			waitpid(pid, &status, 0);
		snprintf(out, sizeof(out), "read=%zd sum=%08x write=%zd open=%d fork=%d\n",
			 r, sum, w, fd, pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		say(out);
	}
	return 0;
}
