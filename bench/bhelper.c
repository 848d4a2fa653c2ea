// SPDX-License-Identifier: GPL-2.0
/*
 * bench/bhelper.c: the timed inner loops of the unionfs benchmarks (bench/guest.sh).
 * Built on the host into build/bench/bhelper (the guest runs the host's userland).
 * Each command times only its own loop (CLOCK_MONOTONIC) and prints "SECONDS [extra]".
 *
 *   bhelper stat ROOT LIST [SUFFIX]   lstat ROOT/<line><SUFFIX> for every line of LIST;
 *                                     prints "secs found missing"
 *   bhelper readdir DIR               open + getdents64 until the end; prints "secs entries"
 *   bhelper churn DIR FILES TX SEED   postmark-like: create FILES 4 KiB files, then TX
 *                                     transactions (create+write / read / append / unlink,
 *                                     equal shares), then unlink all; prints "secs ops"
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int do_stat(const char *root, const char *list, const char *suffix)
{
	FILE *f = fopen(list, "r");
	char **names = NULL, line[4096], path[8192];
	size_t n = 0, cap = 0, i, found = 0, missing = 0;
	struct stat st;
	double t0;
	int dfd;

	if (!f) {
		perror(list);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			names = realloc(names, cap * sizeof(*names));
		}
		snprintf(path, sizeof(path), "%s%s", line, suffix);
		names[n++] = strdup(path);
	}
	fclose(f);
	/*
	 * Relative to the root's fd: the walk starts in the measured fs. (From
	 * "/" it would cross the guest's 9p root, whose d_revalidate refuses
	 * RCU walk, and every peer would be measured in ref-walk.)
	 */
	dfd = open(root, O_PATH | O_DIRECTORY);
	if (dfd < 0) {
		perror(root);
		return 1;
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			found++;
		else
			missing++;
	}
	printf("%.6f %zu %zu\n", now() - t0, found, missing);
	close(dfd);
	return 0;
}

static int do_readdir(const char *dir)
{
	static char buf[1 << 16];
	long entries = 0, nread, off;
	double t0 = now();
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0) {
		perror(dir);
		return 1;
	}
	while ((nread = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < nread;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			entries++;
			off += d->d_reclen;
		}
	}
	close(fd);
	if (nread < 0) {
		perror("getdents64");
		return 1;
	}
	printf("%.6f %ld\n", now() - t0, entries - 2);	/* without . and .. */
	return 0;
}

static int writefile(const char *p, int flags, const char *buf, size_t len)
{
	int fd = open(p, flags, 0644);

	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int do_churn(const char *dir, int files, int tx, unsigned int seed)
{
	char buf[8192], p[4096];
	char *live = calloc(files, 1);
	long ops = 0, errs = 0;
	double t0;
	int i;

	memset(buf, 'x', sizeof(buf));
	srand(seed);
	t0 = now();
	for (i = 0; i < files; i++, ops++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		if (writefile(p, O_WRONLY | O_CREAT | O_TRUNC, buf, 4096))
			errs++;
		live[i] = 1;
	}
	for (i = 0; i < tx; i++, ops++) {
		int k = rand() % files, op = rand() % 4, fd;

		snprintf(p, sizeof(p), "%s/f%d", dir, k);
		if (!live[k])
			op = 0;
		switch (op) {
		case 0:		/* (re)create and write */
			if (writefile(p, O_WRONLY | O_CREAT | O_TRUNC, buf, 512 + rand() % 7680))
				errs++;
			live[k] = 1;
			break;
		case 1:		/* read it all */
			fd = open(p, O_RDONLY);
			if (fd < 0) {
				errs++;
				break;
			}
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			close(fd);
			break;
		case 2:		/* append */
			if (writefile(p, O_WRONLY | O_APPEND, buf, 1024))
				errs++;
			break;
		default:	/* unlink */
			if (unlink(p))
				errs++;
			live[k] = 0;
		}
	}
	for (i = 0; i < files; i++) {
		if (!live[i])
			continue;
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		if (unlink(p))
			errs++;
		ops++;
	}
	printf("%.6f %ld %ld\n", now() - t0, ops, errs);
	free(live);
	return errs ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "stat"))
		return do_stat(argv[2], argv[3], argc > 4 ? argv[4] : "");
	if (argc == 3 && !strcmp(argv[1], "readdir"))
		return do_readdir(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "churn"))
		return do_churn(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: see the header of bench/bhelper.c\n");
	return 2;
}
