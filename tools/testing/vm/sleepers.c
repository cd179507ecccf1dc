// SPDX-License-Identifier: GPL-2.0
/*
 * sleepers N MS: forks N processes that each sleep MS milliseconds in one
 * nanosleep(), all at once (each waits for a go-ahead first, so that all N
 * are inside the kernel's sleep together), and waits for them. Prints
 * "sleepers: N slept" and the children's pids to stdout, one per line
 * after it, for a test that counts the records of a probe on the sleep
 * (89-fprobe-events.sh: every return recorded).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int go[2], i, n, ms, slept = 0;
	pid_t *pids;
	char c;

	if (argc != 3 || (n = atoi(argv[1])) <= 0 || (ms = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: sleepers N MS\n");
		return 2;
	}
	pids = calloc(n, sizeof(*pids));
	if (!pids || pipe(go))
		return 1;
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			n = i;
			break;
		}
		if (!pids[i]) {
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

			close(go[1]);
			/* Blocks until the parent closes its end: all start together. */
			if (read(go[0], &c, 1) < 0)
				_exit(1);
			_exit(nanosleep(&ts, NULL) ? 1 : 0);
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < n; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && !WEXITSTATUS(st))
			slept++;
	}
	printf("sleepers: %d slept\n", slept);
	for (i = 0; i < n; i++)
		printf("%d\n", pids[i]);
	return slept == n ? 0 : 1;
}
