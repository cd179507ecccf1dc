// SPDX-License-Identifier: GPL-2.0
/*
 * readloop N LEN [-p ROW]: N reads of one byte from /dev/zero, each into a buffer
 * whose first LEN bytes are 'a' and then a NUL, restored before every read:
 * the string a probe on ksys_read fetches as +0(%si):ustring (LEN 0: an
 * empty string). Prints the loop's time (CLOCK_MONOTONIC; under -icount
 * the guest's time counts executed instructions) as
 * "readloop: N calls in NS ns" (bench.sh's event matrix). With -p ROW (0
 * to 7) the loop is placed between the markers of that row of the
 * instruction profile (tools/testing/insn-profile --guest).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile-marker.h"

int main(int argc, char **argv)
{
	static char str[4096], buf[4096];
	long long start;
	long i, n;
	int fd, len, row = -1;

	if (argc == 5 && !strcmp(argv[3], "-p"))
		row = atoi(argv[4]);
	if ((argc != 3 && argc != 5) || row > 7) {
		fprintf(stderr, "usage: readloop N LEN [-p ROW]\n");
		return 2;
	}
	n = strtol(argv[1], NULL, 0);
	len = atoi(argv[2]);
	if (len < 0 || len >= (int)sizeof(str)) {
		fprintf(stderr, "readloop: LEN out of range\n");
		return 2;
	}
	memset(str, 'a', len);
	str[len] = 0;
	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0) {
		perror("readloop: /dev/zero");
		return 1;
	}
	start = now_ns();
	if (row >= 0)
		marker(row, 0);
	for (i = 0; i < n; i++) {
		memcpy(buf, str, len + 1);
		if (read(fd, buf, 1) != 1) {
			perror("readloop: read");
			return 1;
		}
	}
	if (row >= 0)
		marker(row, 1);
	printf("readloop: %ld calls in %lld ns\n", n, now_ns() - start);
	return 0;
}
