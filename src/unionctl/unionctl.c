// SPDX-License-Identifier: GPL-2.0
/*
 * unionctl: manage the branches of a mounted unionfs (see unionctl(8)).
 *
 *   unionctl MNT --list [--json]
 *   unionctl MNT --add [--before BR | --after BR] DIR[=ro|rw]
 *   unionctl MNT --remove DIR
 *   unionctl MNT --mode DIR=ro|rw
 *   unionctl MNT --query FILE
 *   unionctl MNT --incgen
 *   unionctl MNT --busy BR
 *   unionctl --fsck [--repair] DIR...
 *   unionctl --help | --version
 *
 * Branch changes are remounts (mount(2) MS_REMOUNT with add=/del=/mode=)
 * that keep the mount's own flags (nosuid, nodev, noexec, atime, ro: a
 * plain MS_REMOUNT would clear them),
 * queries and INCGEN are ioctls (uapi/unionfs.h). Exit status: 0 success,
 * 1 the kernel refused (errno printed), 2 usage, 3 MNT is not a union;
 * --busy: 0 something holds BR, 1 nothing does (as fuser(1)); --fsck: 0
 * clean, 1 findings all repaired, 4 findings left, 8 operational error (as
 * fsck(8)). Branches are read from /sys/fs/unionfs/MAJ:MIN/branches, else
 * (an older module, or UNIONCTL_SYSFS=0) from dirs= of /proc/mounts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../uapi/unionfs.h"
#include "../redirect.h"	/* the module's rule for a redirect value */

struct branch {
	char path[PATH_MAX];
	char mode[4];
};

static struct branch branches[UNIONFS_MAX_BRANCHES];
static int nbranches;
static char mount_opts[16384];	/* MNT's options in /proc/mounts */
static const char *prog = "unionctl";

#define UNIONCTL_VERSION "1.2"

static void usage_to(FILE *out, int status)
{
	fprintf(out,
		"usage: %s MNT --list [--json]\n"
		"       %s MNT --add [--before BR|--after BR] DIR[=ro|rw]\n"
		"       %s MNT --remove DIR\n"
		"       %s MNT --mode DIR=ro|rw\n"
		"       %s MNT --query FILE\n"
		"       %s MNT --incgen\n"
		"       %s MNT --busy BR\n"
		"       %s --fsck [--repair] DIR...\n"
		"       %s --help | --version\n"
		"--add without --before/--after: a rw branch becomes branch 0, a ro\n"
		"branch goes just below branch 0 (a rw union's branch 0 must be rw).\n"
		"--busy: the processes whose cwd, root, open files or memory mappings\n"
		"are on branch BR (\"(stale table)\": opened before a branch change,\n"
		"it pins the branches of the table it was opened with).\n"
		"--fsck: check branch directories, highest priority first, of a union\n"
		"that is not mounted: leftover copy-up temporaries, whiteouts beside\n"
		"the name they hide, whiteouts that hide nothing, link-group index\n"
		"entries no name uses any more; --repair removes them. Directory\n"
		"redirects that are not valid (bad-redirect) or lead to no directory\n"
		"below (dangling-redirect) are reported only, never repaired.\n",
		prog, prog, prog, prog, prog, prog, prog, prog, prog);
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

/*
 * The length of the module's escape at @p (a '\\'): "\\:", "\\=", "\\\\",
 * "\\," or "\\ooo" (unionfs(5) "Escapes"), or 0 if it is not one.
 */
static int opt_escape_len(const char *p)
{
	if (p[1] == ':' || p[1] == '=' || p[1] == '\\' || p[1] == ',')
		return 2;
	if (p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
	    p[3] >= '0' && p[3] <= '7')
		return 4;
	return 0;
}

/* Decode the module's escapes of @s (@len bytes) into @out. */
static void opt_unescape(const char *s, size_t len, char *out, size_t n)
{
	size_t o = 0, i = 0;

	while (i < len && o + 1 < n) {
		int e = s[i] == '\\' ? opt_escape_len(s + i) : 0;

		if (e == 2) {
			out[o++] = s[i + 1];
		} else if (e == 4) {
			out[o++] = (char)((s[i + 1] - '0') * 64 +
					  (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
		} else {
			out[o++] = s[i];
			e = 1;
		}
		i += e;
	}
	out[o] = '\0';
}

/*
 * The branches of a dirs= value as /proc/mounts shows it (the module's
 * escapes: an unescaped ':' separates branches, the last unescaped '='
 * starts the mode, ',' is always escaped), up to the end of @p or the
 * first ','.
 */
static void parse_dirs(const char *p)
{
	while (*p && *p != ',' && nbranches < UNIONFS_MAX_BRANCHES) {
		const char *s = p, *eq = NULL;
		struct branch *b = &branches[nbranches++];

		while (*s && *s != ':' && *s != ',') {
			int e = *s == '\\' ? opt_escape_len(s) : 0;

			if (*s == '=')
				eq = s;
			s += e ? e : 1;
		}
		opt_unescape(p, (eq ? eq : s) - p, b->path, sizeof(b->path));
		if (eq)
			snprintf(b->mode, sizeof(b->mode), "%.*s",
				 (int)(s - eq - 1), eq + 1);
		else
			snprintf(b->mode, sizeof(b->mode), "rw");
		p = *s == ':' ? s + 1 : s;
	}
}

/*
 * @path as a branch path in a remount command (add=, del=, mode=): ':', '='
 * and '\\' after a '\\', ',' and whitespace as octal (mount(2)'s option
 * string splits at ','), as the module reads dirs= (unionfs(5) "Escapes").
 */
static const char *opt_escape(const char *path, char *out, size_t n)
{
	size_t o = 0;

	for (; *path && o + 5 < n; path++) {
		unsigned char c = *path;

		if (c == ':' || c == '=' || c == '\\') {
			out[o++] = '\\';
			out[o++] = c;
		} else if (c <= ' ' || c == ',' || c == 0x7f) {
			o += snprintf(out + o, n - o, "\\%03o", c);
		} else {
			out[o++] = c;
		}
	}
	out[o] = '\0';
	return out;
}

/*
 * The branch list from /sys/fs/unionfs/MAJ:MIN/branches (lines "INDEX MODE
 * PATH", PATH escaped as in /proc/mounts): exact for any path, where
 * /proc/mounts' dirs= cannot show a ':' in a path. 0, or -1 if absent.
 */
static int load_sysfs_branches(const char *real)
{
	char path[64], line[PATH_MAX * 4 + 32];
	struct stat st;
	int n = 0;
	FILE *f;

	if (stat(real, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/fs/unionfs/%u:%u/branches",
		 major(st.st_dev), minor(st.st_dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (n < UNIONFS_MAX_BRANCHES && fgets(line, sizeof(line), f)) {
		char mode[8], *p;
		int idx, off = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%d %7s %n", &idx, mode, &off) != 2 || !off)
			continue;
		p = line + off;
		unescape(p);
		snprintf(branches[n].mode, sizeof(branches[n].mode), "%.3s", mode);
		snprintf(branches[n].path, sizeof(branches[n].path), "%s", p);
		n++;
	}
	fclose(f);
	nbranches = n;
	return 0;
}

/* Read MNT's branch list (sysfs, else /proc/mounts); 0, or -1 if not a union. */
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
		char dev[256], dir[PATH_MAX], type[64], *opts, *p;

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
		snprintf(mount_opts, sizeof(mount_opts), "%s", opts);
		p = strstr(opts, ",dirs=");
		if (p)
			parse_dirs(p + 6);
		else if (!strncmp(opts, "dirs=", 5))
			parse_dirs(opts + 5);
		found = 0;	/* the last mount on MNT wins */
		free(opts);
	}
	fclose(f);
	/* UNIONCTL_SYSFS=0: /proc/mounts only (what an older module gives) */
	if (!found && !(getenv("UNIONCTL_SYSFS") &&
			!strcmp(getenv("UNIONCTL_SYSFS"), "0")))
		load_sysfs_branches(real);
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
	const char *c;
	int i;

	printf("%-5s %-4s %s\n", "index", "mode", "path");
	for (i = 0; i < nbranches; i++) {
		printf("%-5d %-4s ", i, branches[i].mode);
		/* one line a branch: tab, newline and backslash as \ooo */
		for (c = branches[i].path; *c; c++)
			if (*c == '\n' || *c == '\t' || *c == '\\')
				printf("\\%03o", (unsigned char)*c);
			else
				putchar(*c);
		putchar('\n');
	}
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

static void json_str(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* The value of option @key in MNT's /proc/mounts options, or @dflt. */
static void mount_opt(const char *key, const char *dflt, char *out, size_t n)
{
	size_t kl = strlen(key);
	const char *p = mount_opts;

	snprintf(out, n, "%s", dflt);
	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(out, n, "%.*s", (int)strcspn(p + kl + 1, ","),
				 p + kl + 1);
			return;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
}

/* /sys/fs/unionfs/MAJ:MIN/hazards ("NAME COUNT" lines) as JSON members */
static void hazards_json(const char *real)
{
	char path[64], name[64];
	unsigned long long n;
	struct stat st;
	int first = 1;
	FILE *f;

	if (stat(real, &st))
		return;
	snprintf(path, sizeof(path), "/sys/fs/unionfs/%u:%u/hazards",
		 major(st.st_dev), minor(st.st_dev));
	f = fopen(path, "r");
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", name, &n) == 2) {
		printf("%s", first ? "" : ", ");
		json_str(name);
		printf(": %llu", n);
		first = 0;
	}
	fclose(f);
}

static int list_json(const char *mnt)
{
	struct unionfs_query q;
	char real[PATH_MAX], coh[32], markers[32];
	int fd, i;

	memset(&q, 0, sizeof(q));
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || ioctl(fd, UNIONFS_IOCTL_QUERYFILE, &q) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	if (!realpath(mnt, real))
		snprintf(real, sizeof(real), "%s", mnt);
	mount_opt("coherency", "reval", coh, sizeof(coh));
	mount_opt("markers", "unionfs", markers, sizeof(markers));
	printf("{\"mount\": ");
	json_str(real);
	printf(", \"generation\": %u, \"coherency\": ", q.generation);
	json_str(coh);
	printf(", \"markers\": ");
	json_str(markers);
	printf(", \"branches\": [");
	for (i = 0; i < nbranches; i++) {
		printf("%s{\"index\": %d, \"path\": ", i ? ", " : "", i);
		json_str(branches[i].path);
		printf(", \"mode\": ");
		json_str(branches[i].mode);
		putchar('}');
	}
	printf("], \"hazards\": {");
	hazards_json(real);
	printf("}}\n");
	return 0;
}

/*
 * Does the object open as @fd (a union object) have an entry on branch
 * @br? Files: the branch that serves them (the first holding the name);
 * directories: any branch they merge. 2: QUERYFILE says ESTALE, the object
 * was opened before a branch change and still holds the table it was opened
 * with, whose branches stay pinned (which of them it uses is not known).
 */
static int on_branch(int fd, dev_t dev, int br)
{
	struct unionfs_query q;
	struct stat st;
	int i;

	if (fstat(fd, &st) || st.st_dev != dev)
		return 0;
	memset(&q, 0, sizeof(q));
	if (ioctl(fd, UNIONFS_IOCTL_QUERYFILE, &q) < 0)
		return errno == ESTALE ? 2 : 0;
	if (S_ISDIR(st.st_mode))
		return !!(q.branches[br / 64] & (1ULL << (br % 64)));
	for (i = 0; i < (int)q.nbranches && i < UNIONFS_MAX_BRANCHES; i++)
		if (q.branches[i / 64] & (1ULL << (i % 64)))
			return i == br;
	return 0;
}

/* Report @link (/proc/PID/cwd, .../fd/N) if what it names is on @br. */
static int busy_one(const char *pid, const char *comm, const char *what,
		    const char *link, dev_t dev, int br)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd, hit;

	if (stat(link, &st) || st.st_dev != dev ||
	    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		return 0;
	fd = open(link, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	hit = on_branch(fd, dev, br);
	close(fd);
	if (!hit)
		return 0;
	n = readlink(link, target, sizeof(target) - 1);
	target[n < 0 ? 0 : n] = '\0';
	printf("%-7s %-15s %-6s %s%s\n", pid, comm, what, target,
	       hit == 2 ? " (stale table)" : "");
	return 1;
}

/*
 * The mappings of union files on branch @br in /proc/@pid/maps: the union
 * maps the branch's file itself (the module's unionfs_mmap), so maps shows
 * the branch file's dev:ino and its path in the branch (the union holds the
 * branch through a private mount rooted at the branch directory). A mapping
 * whose path, taken under @br, is that same file is one; each file once.
 */
static int busy_maps(const char *pid, const char *comm, const char *mnt,
		     int br)
{
	char path[PATH_MAX], line[PATH_MAX + 256], file[PATH_MAX * 2];
	const char *root = branches[br].path;
	unsigned long long seen[64][2];
	int nseen = 0, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long ino;
		struct stat st;
		int off = 0, i;
		char *p;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu %n", &maj, &min,
			   &ino, &off) != 3 || !off || !ino)
			continue;
		p = line + off;
		if (*p != '/')
			continue;
		for (i = 0; i < nseen; i++)
			if (seen[i][0] == makedev(maj, min) && seen[i][1] == ino)
				break;
		if (i < nseen)
			continue;
		snprintf(file, sizeof(file), "%s%s", strcmp(root, "/") ? root : "",
			 p);
		if (stat(file, &st) || st.st_dev != makedev(maj, min) ||
		    st.st_ino != ino)
			continue;
		/* the branch's file mapped directly, not through the union */
		if (strcmp(root, "/") && !stat(p, &st) &&
		    st.st_dev == makedev(maj, min) && st.st_ino == ino)
			continue;
		if (nseen < 64) {
			seen[nseen][0] = makedev(maj, min);
			seen[nseen++][1] = ino;
		}
		printf("%-7s %-15s %-6s %s%s\n", pid, comm, "mmap",
		       strcmp(mnt, "/") ? mnt : "", p);
		found++;
	}
	fclose(f);
	return found;
}

static int busy(const char *mnt, const char *dir)
{
	char path[PATH_MAX + 64], comm[64], m[PATH_MAX];
	struct dirent *p, *f;
	struct stat st;
	DIR *proc, *fds;
	int br = find_branch(dir), found = 0;
	FILE *cf;

	if (br < 0) {
		fprintf(stderr, "%s: %s is not a branch of %s\n", prog, dir,
			mnt);
		return 2;
	}
	if (stat(mnt, &st) || !realpath(mnt, m)) {
		fprintf(stderr, "%s: %s: %s\n", prog, mnt, strerror(errno));
		return 2;
	}
	proc = opendir("/proc");
	if (!proc) {
		fprintf(stderr, "%s: /proc: %s\n", prog, strerror(errno));
		return 2;
	}
	printf("%-7s %-15s %-6s %s\n", "PID", "COMMAND", "WHAT", "PATH");
	while ((p = readdir(proc))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9' ||
		    atoi(p->d_name) == getpid())	/* not ourselves */
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		comm[0] = '\0';
		cf = fopen(path, "r");
		if (cf) {
			if (fgets(comm, sizeof(comm), cf))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(cf);
		}
		snprintf(path, sizeof(path), "/proc/%s/cwd", p->d_name);
		found += busy_one(p->d_name, comm, "cwd", path, st.st_dev, br);
		snprintf(path, sizeof(path), "/proc/%s/root", p->d_name);
		found += busy_one(p->d_name, comm, "root", path, st.st_dev, br);
		found += busy_maps(p->d_name, comm, m, br);
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((f = readdir(fds))) {
			char what[32];

			if (f->d_name[0] == '.')
				continue;
			snprintf(what, sizeof(what), "fd%.20s", f->d_name);
			snprintf(path, sizeof(path), "/proc/%s/fd/%s",
				 p->d_name, f->d_name);
			found += busy_one(p->d_name, comm, what, path,
					  st.st_dev, br);
		}
		closedir(fds);
	}
	closedir(proc);
	return found ? 0 : 1;
}

/* --fsck */
#define TMPPFX ".wh..wh.unionfs."
#define INDEXDIR TMPPFX "index"

/*
 * A copy-up temporary the module left: TMPPFX and a decimal number, as the
 * module's own cleaner reads them (unionfs_tmp_leftover()). Other names in
 * the reserved ".wh..wh.unionfs." family are not temporaries and are left
 * alone.
 */
static int is_temporary(const char *n)
{
	const char *p = n + strlen(TMPPFX);

	if (strncmp(n, TMPPFX, strlen(TMPPFX)) || !*p)
		return 0;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}
static char **fsck_dirs;
static int fsck_n, fsck_repair, fsck_found, fsck_left, fsck_err;

static int rm_tree(int dfd, const char *name)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if (!unlinkat(dfd, name, 0))
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			rm_tree(fd, e->d_name);
	closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

static void finding(int dfd, const char *kind, const char *root,
		    const char *rel, const char *name)
{
	fsck_found++;
	printf("%-20s %s/%s%s%s\n", kind, root, rel, *rel ? "/" : "", name);
	if (!fsck_repair) {
		fsck_left++;
		return;
	}
	if (rm_tree(dfd, name)) {
		fprintf(stderr, "%s: remove %s/%s%s%s: %s\n", prog, root, rel,
			*rel ? "/" : "", name, strerror(errno));
		fsck_left++;
		fsck_err = 1;
		return;
	}
	printf("%-20s %s/%s%s%s\n", "removed", root, rel, *rel ? "/" : "",
	       name);
}

/* Is there a name @rel/@name in any branch below @i? */
static int below(int i, const char *rel, const char *name)
{
	char path[PATH_MAX * 2 + 2];
	struct stat st;

	for (i++; i < fsck_n; i++) {
		snprintf(path, sizeof(path), "%s/%s%s%s", fsck_dirs[i], rel,
			 *rel ? "/" : "", name);
		if (!lstat(path, &st))
			return 1;
	}
	return 0;
}

/*
 * The link-group index of a writable branch (docs/concepts.md "Hard
 * links"): an entry no name of the union uses any more is one whose inode
 * has no other link (no copied-up name) and whose trusted.unionfs.nlink
 * says no lower name is shown through it: it only costs space. Entries
 * still in use, and anything this cannot read, are left alone.
 */
static void fsck_index(int i, int dfd)
{
	struct dirent *e;
	struct stat st;
	char v[16];
	ssize_t n;
	DIR *d;
	int fd = openat(dfd, INDEXDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		fsck_err = 1;
		return;
	}
	while ((e = readdir(d))) {
		char path[PATH_MAX * 2 + 2];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_nlink != 1)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", fd,
			 e->d_name);
		n = lgetxattr(path, "trusted.unionfs.nlink", v, sizeof(v) - 1);
		if (n < 0)
			continue;
		v[n] = '\0';
		if (strcmp(v, "0"))
			continue;
		finding(fd, "unused-index-entry", fsck_dirs[i], INDEXDIR,
			e->d_name);
	}
	closedir(d);
}

/*
 * A finding --repair leaves alone (counted as left): nothing removed or
 * rewritten would be obviously right.
 */
static void finding_kept(const char *kind, const char *root, const char *rel,
			 const char *name)
{
	fsck_found++;
	fsck_left++;
	printf("%-20s %s/%s%s%s\n", kind, root, rel, *rel ? "/" : "", name);
}

/*
 * The deepest directory on the way of the redirect path @v (not its last
 * component) in branch @j that carries a valid redirect of its own: @v
 * becomes "REDIRECT/rest" for the branches below @j. Returns 1 if one on
 * the way is not valid or the result is too long (the module merges no
 * branch below @j then), else 0.
 */
static int redirect_onward(int j, char *v)
{
	static char rd[PATH_MAX + 1], next[2 * PATH_MAX + 2];
	char path[PATH_MAX * 2 + 2];
	const char *rest = NULL;
	struct stat st;
	char *s;
	ssize_t n;

	next[0] = '\0';
	for (s = strchr(v, '/'); s; s = strchr(s + 1, '/')) {
		snprintf(path, sizeof(path), "%s/%.*s", fsck_dirs[j], (int)(s - v), v);
		if (lstat(path, &st) || !S_ISDIR(st.st_mode))
			break;
		n = lgetxattr(path, "trusted.unionfs.redirect", rd, PATH_MAX);
		if (n < 0 && errno == ERANGE)
			return 1;	/* too long: the module merges nothing below */
		if (n <= 0)
			continue;
		rd[n] = '\0';
		if (!unionfs_redirect_valid(rd, n))
			return 1;	/* as the module: nothing below */
		rest = s + 1;
		if ((size_t)n + 1 + strlen(rest) >= PATH_MAX)
			return 1;
		snprintf(next, sizeof(next), "%s/%s", rd, rest);
	}
	if (rest)
		strcpy(v, next);
	return 0;
}

/*
 * The directory redirect (trusted.unionfs.redirect, docs/concepts.md
 * "Directory rename") of @rel/@name, open as @fd, in branch @i: one the
 * module would reject is "bad-redirect"; one whose path names a directory
 * in no branch below @i is "dangling-redirect" (its lower contents are
 * gone, or were never there). Both are only reported: dropping the xattr
 * would merge whatever has the new name below, which the rename replaced
 * or never meant (docs/concepts.md).
 */
static void fsck_redirect(int i, int fd, const char *rel, const char *name)
{
	static char v[PATH_MAX + 1];
	char path[PATH_MAX * 2 + 2];
	struct stat st;
	ssize_t n;
	int j;

	n = fgetxattr(fd, "trusted.unionfs.redirect", v, PATH_MAX);
	if (n < 0 && errno != ERANGE)
		return;		/* none, or no trusted xattrs here */
	if (n < 0) {		/* longer than PATH_MAX */
		finding_kept("bad-redirect", fsck_dirs[i], rel, name);
		return;
	}
	v[n] = '\0';
	if (!unionfs_redirect_valid(v, n)) {
		finding_kept("bad-redirect", fsck_dirs[i], rel, name);
		return;
	}
	if (i == fsck_n - 1)
		return;		/* nothing below: the module ignores it */
	for (j = i + 1; j < fsck_n; j++) {
		snprintf(path, sizeof(path), "%s/%s", fsck_dirs[j], v);
		if (!lstat(path, &st) && S_ISDIR(st.st_mode))
			return;
		/*
		 * A directory on the way renamed in branch j: the branches
		 * below find the rest under its redirect, as the module's
		 * walk does (unionfs_redirect_follow).
		 */
		if (redirect_onward(j, v))
			break;
	}
	finding_kept("dangling-redirect", fsck_dirs[i], rel, name);
}

static void fsck_dir(int i, int dfd, dev_t dev, const char *rel, int depth)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd = dup(dfd);

	if (fd < 0 || depth > 4096) {
		fsck_err = 1;
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		fsck_err = 1;
		return;
	}
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		char sub[PATH_MAX];

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (is_temporary(n)) {
			finding(dfd, "leftover-temporary", fsck_dirs[i], rel, n);
			continue;
		}
		if (!strncmp(n, ".wh.", 4)) {
			/* markers and other reserved ".wh..wh." names */
			if (!strcmp(n, ".wh.__dir_opaque") ||
			    !strncmp(n, ".wh..wh.", 8) || !n[4])
				continue;
			if (!fstatat(dfd, n + 4, &st, AT_SYMLINK_NOFOLLOW))
				finding(dfd, "whiteout-beside-name",
					fsck_dirs[i], rel, n);
			else if (!below(i, rel, n + 4))
				finding(dfd, "whiteout-hides-nothing",
					fsck_dirs[i], rel, n);
			continue;
		}
		if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_dev != dev)
			continue;	/* not a directory, or a mount point */
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", n);
		fd = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0) {
			fprintf(stderr, "%s: %s/%s: %s\n", prog, fsck_dirs[i],
				sub, strerror(errno));
			fsck_err = 1;
			continue;
		}
		fsck_redirect(i, fd, rel, n);
		fsck_dir(i, fd, dev, sub, depth + 1);
		close(fd);
	}
	closedir(d);
}

/* Refuse to repair branches of a mounted union: the module owns them. */
static int fsck_mounted(void)
{
	char line[16384], dir[PATH_MAX], type[64], dev[256], opts[16384];
	FILE *f = fopen("/proc/self/mounts", "r");
	int i, hit = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %4095s %63s %16383s", dev, dir, type,
			   opts) != 4 || strcmp(type, "unionfs"))
			continue;
		unescape(dir);
		if (load_branches(dir))
			continue;
		for (i = 0; i < fsck_n; i++)
			if (find_branch(fsck_dirs[i]) >= 0) {
				fprintf(stderr, "%s: %s is a branch of the union mounted at %s: unmount it first\n",
					prog, fsck_dirs[i], dir);
				hit = 1;
			}
	}
	fclose(f);
	return hit;
}

static int fsck(char **dirs, int n)
{
	int i;

	fsck_dirs = dirs;
	fsck_n = n;
	if (fsck_repair && fsck_mounted())
		return 8;
	for (i = 0; i < n; i++) {
		struct stat st;
		int fd = open(dirs[i], O_RDONLY | O_DIRECTORY);

		if (fd < 0 || fstat(fd, &st)) {
			fprintf(stderr, "%s: %s: %s\n", prog, dirs[i],
				strerror(errno));
			if (fd >= 0)
				close(fd);
			return 8;
		}
		fsck_dir(i, fd, st.st_dev, "", 0);
		fsck_index(i, fd);
		close(fd);
	}
	printf("%d finding%s, %d left\n", fsck_found,
	       fsck_found == 1 ? "" : "s", fsck_left);
	if (fsck_err)
		return 8;
	return fsck_left ? 4 : fsck_found ? 1 : 0;
}

int main(int argc, char **argv)
{
	enum { O_LIST = 1, O_JSON, O_ADD, O_BEFORE, O_AFTER, O_REMOVE, O_MODE,
	       O_QUERY, O_INCGEN, O_BUSY, O_FSCK, O_REPAIR, O_HELP,
	       O_VERSION };
	static const struct option opts[] = {
		{ "list", no_argument, NULL, O_LIST },
		{ "json", no_argument, NULL, O_JSON },
		{ "add", no_argument, NULL, O_ADD },
		{ "before", required_argument, NULL, O_BEFORE },
		{ "after", required_argument, NULL, O_AFTER },
		{ "remove", required_argument, NULL, O_REMOVE },
		{ "mode", required_argument, NULL, O_MODE },
		{ "query", required_argument, NULL, O_QUERY },
		{ "incgen", no_argument, NULL, O_INCGEN },
		{ "busy", required_argument, NULL, O_BUSY },
		{ "fsck", no_argument, NULL, O_FSCK },
		{ "repair", no_argument, NULL, O_REPAIR },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{}
	};
	const char *mnt, *before = NULL, *after = NULL, *arg = NULL;
	char cmd[PATH_MAX * 8 + 16], e1[PATH_MAX * 4], e2[PATH_MAX * 4];
	char dir[PATH_MAX];
	int c, op = 0, json = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_HELP:
			usage_to(stdout, 0);
			break;
		case O_VERSION:
			printf("unionctl %s\n", UNIONCTL_VERSION);
			return 0;
		case O_JSON:
			json = 1;
			break;
		case O_REPAIR:
			fsck_repair = 1;
			break;
		case O_BEFORE:
			before = optarg;
			break;
		case O_AFTER:
			after = optarg;
			break;
		case O_LIST: case O_ADD: case O_REMOVE: case O_MODE:
		case O_QUERY: case O_INCGEN: case O_BUSY: case O_FSCK:
			if (op)
				usage();	/* one command at a time */
			op = c;
			arg = optarg;
			break;
		default:
			usage();
		}
	}
	if ((json && op != O_LIST) || (fsck_repair && op != O_FSCK) ||
	    ((before || after) && op != O_ADD))
		usage();
	if (op == O_FSCK) {
		if (optind >= argc)
			usage();
		return fsck(argv + optind, argc - optind);
	}
	/* MNT, and for --add the DIR */
	if (!op || optind >= argc || argc - optind > (op == O_ADD ? 2 : 1))
		usage();
	mnt = argv[optind];
	if (op == O_ADD) {
		if (argc - optind != 2 || (before && after))
			usage();
		arg = argv[optind + 1];
	}
	if (load_branches(mnt)) {
		fprintf(stderr, "%s: %s is not a mounted unionfs\n", prog, mnt);
		return 3;
	}
	switch (op) {
	case O_LIST:
		return json ? list_json(mnt) : list();
	case O_INCGEN:
		return incgen(mnt);
	case O_QUERY:
		return query(arg);
	case O_BUSY:
		return busy(mnt, arg);
	case O_REMOVE:
		if (find_branch(arg) < 0) {
			fprintf(stderr, "%s: %s is not a branch of %s\n", prog,
				arg, mnt);
			return 1;
		}
		snprintf(cmd, sizeof(cmd), "del=%s",
			 opt_escape(arg, e1, sizeof(e1)));
		return remount(mnt, cmd);
	case O_MODE: {
		const char *eq = strrchr(arg, '=');

		if (!eq || (strcmp(eq, "=ro") && strcmp(eq, "=rw")))
			usage();
		snprintf(dir, sizeof(dir), "%.*s", (int)(eq - arg), arg);
		snprintf(cmd, sizeof(cmd), "mode=%s%s",
			 opt_escape(dir, e1, sizeof(e1)), eq);
		return remount(mnt, cmd);
	}
	}
	/* O_ADD */
	if (after) {
		int a = find_branch(after);

		if (a < 0) {
			fprintf(stderr, "%s: %s is not a branch of %s\n", prog,
				after, mnt);
			return 1;
		}
		before = a + 1 < nbranches ? branches[a + 1].path : "";
	}
	if (!before && nbranches > 0) {
		const char *eq = strrchr(arg, '=');

		/* a ro branch cannot be branch 0 of a rw union */
		if (eq && !strcmp(eq, "=ro") && !strcmp(branches[0].mode, "rw"))
			before = nbranches > 1 ? branches[1].path : "";
	}
	if (before && *before && find_branch(before) < 0) {
		fprintf(stderr, "%s: %s is not a branch of %s\n", prog, before,
			mnt);
		return 1;
	}
	{
		/* DIR[=ro|rw]: only a trailing =ro or =rw is the mode */
		const char *eq = strrchr(arg, '=');

		if (!eq || (strcmp(eq, "=ro") && strcmp(eq, "=rw")))
			eq = arg + strlen(arg);
		snprintf(dir, sizeof(dir), "%.*s", (int)(eq - arg), arg);
		opt_escape(dir, e1, sizeof(e1));
	}
	if (before)
		snprintf(cmd, sizeof(cmd), "add=%s:%s%s",
			 opt_escape(before, e2, sizeof(e2)), e1,
			 arg[strlen(dir)] ? arg + strlen(dir) : "");
	else
		snprintf(cmd, sizeof(cmd), "add=%s%s", e1,
			 arg[strlen(dir)] ? arg + strlen(dir) : "");
	return remount(mnt, cmd);
}
