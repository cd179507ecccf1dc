// SPDX-License-Identifier: GPL-2.0
/*
 * timeit CMD [ARG...]: runs CMD, waits for it, and prints
 * "timeit: NS ns" (CLOCK_MONOTONIC) on stderr; exits with CMD's status.
 * Busybox's date has no nanoseconds; under -icount the guest's time counts
 * executed instructions (bench.sh).
 */
#include <stdio.h>
#include <sys/wait.h>
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
	int status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: timeit CMD [ARG...]\n");
		return 2;
	}
	start = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 2;
	}
	if (!pid) {
		execvp(argv[1], argv + 1);
		perror("timeit: exec");
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("timeit: waitpid");
		return 2;
	}
	fprintf(stderr, "timeit: %lld ns\n", now_ns() - start);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
