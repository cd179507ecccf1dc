// SPDX-License-Identifier: GPL-2.0
/*
 * timeit [-p ROW] CMD [ARG...]: runs CMD, waits for it, and prints
 * "timeit: NS ns" (CLOCK_MONOTONIC) on stderr; exits with CMD's status.
 * Busybox's date has no nanoseconds; under -icount the guest's time counts
 * executed instructions (bench.sh). With -p ROW (0 to 7) the fork, the
 * command and the wait are between the markers of that row of the
 * instruction profile (tools/testing/insn-profile --guest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profile-marker.h"

int main(int argc, char **argv)
{
	long long start;
	int status, row = -1;
	pid_t pid;

	if (argc > 3 && !strcmp(argv[1], "-p")) {
		row = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	if (argc < 2 || row > 7) {
		fprintf(stderr, "usage: timeit [-p ROW] CMD [ARG...]\n");
		return 2;
	}
	if (row >= 0)
		marker(row, 0);
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
	if (row >= 0)
		marker(row, 1);
	fprintf(stderr, "timeit: %lld ns\n", now_ns() - start);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
