// SPDX-License-Identifier: GPL-2.0
/*
 * fail-nth: make one system call with its N-th fault-injection point failed
 * (Documentation/fault-injection/fault-injection.rst, "Systematic faults
 * using fail-nth"), for the guest tests.
 *
 *   fail-nth N write FILE DATA        write(2) DATA and a newline to FILE
 *   fail-nth N insmod FILE [PARAMS]   finit_module(2)
 *   fail-nth N rmmod NAME             delete_module(2), O_NONBLOCK
 *
 * N = 0 makes the call without injecting anything. The failure is armed
 * through /proc/thread-self/fail-nth after everything else is ready (FILE
 * open, DATA formatted), so that only the allocations of the call under test
 * are counted; fail-nth belongs to one task and a child starts with none,
 * which is why this is a program and not a shell redirection.
 *
 * Prints one line, "rc=R errno=NAME injected=0|1", and exits 0 when the call
 * was made whatever it returned (the test judges the result), 2 on a usage or
 * set-up error. injected=1 means the N-th point was reached and failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	int nr;
	const char *name;
} errnames[] = {
	{ 0, "0" },	      { EPERM, "EPERM" },   { ENOENT, "ENOENT" },
	{ EINTR, "EINTR" },   { EIO, "EIO" },	    { E2BIG, "E2BIG" },
	{ ENOEXEC, "ENOEXEC" }, { EBADF, "EBADF" }, { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" },   { EEXIST, "EEXIST" }, { ENODEV, "ENODEV" },
	{ EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" },
	{ ENOSYS, "ENOSYS" }, { ENOTEMPTY, "ENOTEMPTY" },
	{ ENODATA, "ENODATA" }, { EILSEQ, "EILSEQ" },
	{ EOPNOTSUPP, "EOPNOTSUPP" }, { ENOKEY, "ENOKEY" },
	{ EKEYREJECTED, "EKEYREJECTED" },
};

static const char *errname(int e)
{
	static char buf[16];
	size_t i;

	for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].nr == e)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static void usage(void)
{
	fprintf(stderr, "usage: fail-nth N write FILE DATA\n"
			"       fail-nth N insmod FILE [PARAMS]\n"
			"       fail-nth N rmmod NAME\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char nth[32], left[32];
	const char *op, *params = "";
	char *data = NULL;
	long n, rc;
	int nthfd, fd = -1, err;
	ssize_t len;

	if (argc < 4)
		usage();
	n = strtol(argv[1], NULL, 10);
	op = argv[2];
	if (!strcmp(op, "write") && argc == 5) {
		fd = open(argv[3], O_WRONLY | O_APPEND);
		if (fd < 0) {
			perror(argv[3]);
			return 2;
		}
		if (asprintf(&data, "%s\n", argv[4]) < 0)
			return 2;
	} else if (!strcmp(op, "insmod") && (argc == 4 || argc == 5)) {
		fd = open(argv[3], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(argv[3]);
			return 2;
		}
		if (argc == 5)
			params = argv[4];
	} else if (strcmp(op, "rmmod") || argc != 4) {
		usage();
	}

	nthfd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nthfd < 0) {
		perror("/proc/thread-self/fail-nth");
		return 2;
	}
	snprintf(nth, sizeof(nth), "%ld", n);

	/* Nothing between arming and the call but the call. */
	if (write(nthfd, nth, strlen(nth)) < 0) {
		perror("fail-nth");
		return 2;
	}
	if (!strcmp(op, "write"))
		rc = write(fd, data, strlen(data));
	else if (!strcmp(op, "insmod"))
		rc = syscall(SYS_finit_module, fd, params, 0);
	else
		rc = syscall(SYS_delete_module, argv[3], O_NONBLOCK);
	err = rc < 0 ? errno : 0;

	/* 0 left: the N-th point was reached and failed. Then disarm. */
	len = pread(nthfd, left, sizeof(left) - 1, 0);
	if (write(nthfd, "0", 1) < 0 || len <= 0) {
		perror("fail-nth");
		return 2;
	}
	left[len] = 0;
	printf("rc=%ld errno=%s injected=%d\n", rc < 0 ? -1L : rc, errname(err),
	       n > 0 && atoi(left) == 0);
	return 0;
}
