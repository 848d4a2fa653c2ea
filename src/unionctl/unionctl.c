// SPDX-License-Identifier: GPL-2.0
/*
 * unionctl: manage the branches of a mounted unionfs (see unionctl(8)).
 *
 *   unionctl MNT --list
 *   unionctl MNT --add [--before BR | --after BR] DIR[=ro|rw]
 *   unionctl MNT --remove DIR
 *   unionctl MNT --mode DIR=ro|rw
 *   unionctl MNT --query FILE
 *   unionctl MNT --incgen
 *   unionctl --help | --version
 *
 * Branch changes are remounts (mount(2) MS_REMOUNT with add=/del=/mode=)
 * that keep the mount's own flags (nosuid, nodev, noexec, atime, ro: a
 * plain MS_REMOUNT would clear them),
 * queries and INCGEN are ioctls (uapi/unionfs.h). Exit status: 0 success,
 * 1 the kernel refused (errno printed), 2 usage, 3 MNT is not a union.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../uapi/unionfs.h"

struct branch {
	char path[PATH_MAX];
	char mode[4];
};

static struct branch branches[UNIONFS_MAX_BRANCHES];
static int nbranches;
static const char *prog = "unionctl";

#define UNIONCTL_VERSION "1.1"

static void usage_to(FILE *out, int status)
{
	fprintf(out,
		"usage: %s MNT --list\n"
		"       %s MNT --add [--before BR|--after BR] DIR[=ro|rw]\n"
		"       %s MNT --remove DIR\n"
		"       %s MNT --mode DIR=ro|rw\n"
		"       %s MNT --query FILE\n"
		"       %s MNT --incgen\n"
		"       %s --help | --version\n"
		"--add without --before/--after: a rw branch becomes branch 0, a ro\n"
		"branch goes just below branch 0 (a rw union's branch 0 must be rw).\n",
		prog, prog, prog, prog, prog, prog, prog);
	exit(status);
}

static void usage(void)
{
	usage_to(stderr, 2);
}

/* /proc/mounts escapes ' ', '\t', '\n' and '\\' as octal */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*d++ = (char)strtol((char[4]){ s[1], s[2], s[3], 0 },
					    NULL, 8);
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Read MNT's branch list from /proc/mounts; 0 or -1 if not a union. */
static int load_branches(const char *mnt)
{
	char real[PATH_MAX], line[16384];
	FILE *f;
	int found = -1;

	if (!realpath(mnt, real))
		return -1;
	f = fopen("/proc/self/mounts", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char dev[256], dir[PATH_MAX], type[64], *opts, *p, *tok;

		opts = malloc(sizeof(line));
		if (!opts)
			break;
		if (sscanf(line, "%255s %4095s %63s %16383s", dev, dir, type,
			   opts) != 4 || strcmp(type, "unionfs")) {
			free(opts);
			continue;
		}
		unescape(dir);
		if (strcmp(dir, real)) {
			free(opts);
			continue;
		}
		nbranches = 0;
		p = strstr(opts, "dirs=");
		if (p) {
			p += 5;
			p[strcspn(p, ",")] = '\0';
			while ((tok = strsep(&p, ":")) && nbranches < UNIONFS_MAX_BRANCHES) {
				char *eq = strrchr(tok, '=');
				struct branch *b = &branches[nbranches++];

				snprintf(b->mode, sizeof(b->mode), "%s",
					 eq ? eq + 1 : "rw");
				if (eq)
					*eq = '\0';
				unescape(tok);
				snprintf(b->path, sizeof(b->path), "%s", tok);
			}
		}
		found = 0;	/* the last mount on MNT wins */
		free(opts);
	}
	fclose(f);
	return found;
}

static int find_branch(const char *dir)
{
	char real[PATH_MAX];
	int i;

	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	for (i = 0; i < nbranches; i++)
		if (!strcmp(branches[i].path, real))
			return i;
	return -1;
}

static int remount(const char *mnt, const char *cmd)
{
	static const struct { unsigned long st, ms; } keep[] = {
		{ ST_RDONLY, MS_RDONLY },	{ ST_NOSUID, MS_NOSUID },
		{ ST_NODEV, MS_NODEV },		{ ST_NOEXEC, MS_NOEXEC },
		{ ST_SYNCHRONOUS, MS_SYNCHRONOUS },
		{ ST_MANDLOCK, MS_MANDLOCK },	{ ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	unsigned long flags = MS_REMOUNT;
	struct statvfs st;
	size_t i;

	/*
	 * MS_REMOUNT sets the mount's flags to exactly those given: keep
	 * what the mount has now, or a branch change would silently turn a
	 * nosuid,nodev,noexec union into a suid,dev,exec one.
	 */
	if (statvfs(mnt, &st)) {
		fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(errno));
		return 1;
	}
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (st.f_flag & keep[i].st)
			flags |= keep[i].ms;
	if (!(st.f_flag & (ST_NOATIME | ST_RELATIME)))
		flags |= MS_STRICTATIME;
	if (mount("none", mnt, NULL, flags, cmd)) {
		int e = errno;

		fprintf(stderr, "%s: %s: %s (see dmesg)\n", prog, cmd,
			strerror(e));
		return 1;
	}
	return 0;
}

static int list(void)
{
	int i;

	printf("%-5s %-4s %s\n", "index", "mode", "path");
	for (i = 0; i < nbranches; i++)
		printf("%-5d %-4s %s\n", i, branches[i].mode, branches[i].path);
	return 0;
}

static int query(const char *file)
{
	struct unionfs_query q;
	int fd, n, i;

	fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		fd = open(file, O_PATH);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno));
		return 1;
	}
	memset(&q, 0, sizeof(q));
	n = ioctl(fd, UNIONFS_IOCTL_QUERYFILE, &q);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "%s: query %s: %s\n", prog, file,
			strerror(errno));
		return 1;
	}
	printf("%s: %d of %u branches (generation %u)\n", file, n,
	       q.nbranches, q.generation);
	for (i = 0; i < (int)q.nbranches && i < UNIONFS_MAX_BRANCHES; i++)
		if (q.branches[i / 64] & (1ULL << (i % 64)))
			printf("%d %s\n", i, i < nbranches ? branches[i].path : "?");
	return 0;
}

static int incgen(const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY), gen;

	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(errno));
		return 1;
	}
	gen = ioctl(fd, UNIONFS_IOCTL_INCGEN, 0);
	close(fd);
	if (gen < 0) {
		fprintf(stderr, "%s: incgen: %s\n", prog, strerror(errno));
		return 1;
	}
	printf("generation %d\n", gen);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mnt, *op, *before = NULL, *after = NULL;
	char cmd[PATH_MAX * 2 + 16];
	int i;

	if (argc == 2 && !strcmp(argv[1], "--help"))
		usage_to(stdout, 0);
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("unionctl %s\n", UNIONCTL_VERSION);
		return 0;
	}
	if (argc < 3)
		usage();
	mnt = argv[1];
	op = argv[2];
	if (load_branches(mnt)) {
		fprintf(stderr, "%s: %s is not a mounted unionfs\n", prog, mnt);
		return 3;
	}
	if (!strcmp(op, "--list") && argc == 3)
		return list();
	if (!strcmp(op, "--incgen") && argc == 3)
		return incgen(mnt);
	if (!strcmp(op, "--query") && argc == 4)
		return query(argv[3]);
	if (!strcmp(op, "--remove") && argc == 4) {
		if (find_branch(argv[3]) < 0) {
			fprintf(stderr, "%s: %s is not a branch of %s\n", prog,
				argv[3], mnt);
			return 1;
		}
		snprintf(cmd, sizeof(cmd), "del=%s", argv[3]);
		return remount(mnt, cmd);
	}
	if (!strcmp(op, "--mode") && argc == 4) {
		char *eq = strrchr(argv[3], '=');

		if (!eq || (strcmp(eq, "=ro") && strcmp(eq, "=rw")))
			usage();
		snprintf(cmd, sizeof(cmd), "mode=%s", argv[3]);
		return remount(mnt, cmd);
	}
	if (!strcmp(op, "--add")) {
		const char *dir = NULL;

		for (i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--before") && i + 1 < argc)
				before = argv[++i];
			else if (!strcmp(argv[i], "--after") && i + 1 < argc)
				after = argv[++i];
			else if (!dir && argv[i][0] != '-')
				dir = argv[i];
			else
				usage();
		}
		if (!dir || (before && after))
			usage();
		if (after) {
			int a = find_branch(after);

			if (a < 0) {
				fprintf(stderr, "%s: %s is not a branch of %s\n",
					prog, after, mnt);
				return 1;
			}
			if (a + 1 < nbranches)
				before = branches[a + 1].path;
			else
				before = "";	/* append */
		}
		if (!before && !after && nbranches > 0) {
			const char *eq = strrchr(dir, '=');

			/* a ro branch cannot be branch 0 of a rw union */
			if (eq && !strcmp(eq, "=ro") &&
			    !strcmp(branches[0].mode, "rw"))
				before = nbranches > 1 ? branches[1].path : "";
		}
		if (before && *before && find_branch(before) < 0) {
			fprintf(stderr, "%s: %s is not a branch of %s\n", prog,
				before, mnt);
			return 1;
		}
		if (before)
			snprintf(cmd, sizeof(cmd), "add=%s:%s", before, dir);
		else
			snprintf(cmd, sizeof(cmd), "add=%s", dir);
		return remount(mnt, cmd);
	}
	usage();
	return 2;
}
