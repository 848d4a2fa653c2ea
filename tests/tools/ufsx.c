// SPDX-License-Identifier: GPL-2.0
/*
 * ufsx: an fsx-style random file operation exerciser for unionfs.
 *
 *   ufsx [-N OPS] [-s SEED] [-l MAXLEN] [-o MAXOP] [-R] [-M] [-F] [-q] FILE
 *
 * Runs OPS random operations on FILE (read, write, ftruncate, truncate(2) by
 * path, mmap read, mmap write, fallocate, fallocate KEEP_SIZE, punch hole,
 * fsync, close + reopen) and keeps an in-memory model of the file's bytes.
 * After EVERY operation the whole file is read back (pread on the descriptor)
 * and compared with the model, and the size seen by fstat(2) and by stat(2)
 * on the path must equal the model's. FILE's initial content (it may live on
 * a read-only branch and be copied up by the first write) is the model's
 * starting point; a missing FILE is created.
 *
 *   -N OPS    number of operations (default 2000)
 *   -s SEED   PRNG seed (default: from time and pid); always printed, and
 *             the same seed on the same starting file replays the same ops
 *   -l MAXLEN file size limit for the ops (default 256 KiB)
 *   -o MAXOP  largest single read/write/punch (default 64 KiB)
 *   -R        start with an O_RDONLY descriptor: the first mutating op
 *             reopens O_RDWR (so a copy-up happens mid-run), and reopens
 *             pick O_RDONLY a third of the time
 *   -M        no mmap ops     -F  no fallocate/punch ops
 *   -q        only the seed line and the summary
 *
 * Output: "ufsx: seed S file F" first, then on success one line
 * "ufsx: OK N ops seed S size Z read=.. write=.. ..." (per-op counts), exit 0.
 * On a mismatch or an unexpected error: the last 16 ops, the first differing
 * offset, "ufsx: FAIL ..." and exit 1. Usage errors exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum op {
	OP_READ, OP_WRITE, OP_FTRUNC, OP_PTRUNC, OP_MREAD, OP_MWRITE,
	OP_FALLOC, OP_FALLOC_KEEP, OP_PUNCH, OP_FSYNC, OP_REOPEN, OP_NR
};
static const char *const op_name[OP_NR] = {
	"read", "write", "ftruncate", "truncate", "mapread", "mapwrite",
	"fallocate", "falloc_keep", "punch", "fsync", "reopen"
};
/* relative weights */
static const int op_weight[OP_NR] = { 20, 24, 6, 3, 8, 8, 4, 3, 6, 4, 6 };

static uint64_t rng_state;
static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static const char *path;
static int fd = -1, fd_rw;
static unsigned char *model, *buf;
static size_t msize, maxlen = 256 << 10, maxop = 64 << 10, cap;
static long pagesz;
static int quiet, startro, nommap, nofalloc;
static unsigned long opno;
static uint64_t seed;
static unsigned long count[OP_NR];

#define LOGN 16
static char oplog[LOGN][128];

static void logop(const char *fmt, ...)
{
	va_list ap;
	char *s = oplog[opno % LOGN];
	int n = snprintf(s, sizeof(oplog[0]), "%lu ", opno);

	va_start(ap, fmt);
	vsnprintf(s + n, sizeof(oplog[0]) - n, fmt, ap);
	va_end(ap);
	if (!quiet && opno < 40)
		printf("  %s\n", s);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;
	unsigned long i, first = opno >= LOGN ? opno - LOGN + 1 : 0;

	fflush(stdout);
	fprintf(stderr, "ufsx: last operations (op# op offset len):\n");
	for (i = first; i <= opno; i++)
		fprintf(stderr, "  %s\n", oplog[i % LOGN]);
	fprintf(stderr, "ufsx: FAIL at op %lu (seed %" PRIu64 ", replay: ufsx -s %" PRIu64
		" -N %lu ... on the same starting file): ", opno, seed, seed, opno + 1);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void grow_model(size_t n)
{
	if (n > cap) {
		size_t ncap = cap ? cap : 4096;

		while (ncap < n)
			ncap *= 2;
		model = realloc(model, ncap);
		buf = realloc(buf, ncap);
		if (!model || !buf)
			fail("out of memory");
		cap = ncap;
	}
	if (n > msize)
		memset(model + msize, 0, n - msize);
}

static void set_size(size_t n)
{
	grow_model(n);
	msize = n;
}

static void do_open(int rw)
{
	if (fd >= 0 && close(fd))
		fail("close: %s", strerror(errno));
	fd = open(path, rw ? O_RDWR : O_RDONLY);
	if (fd < 0)
		fail("open(%s, %s): %s", path, rw ? "O_RDWR" : "O_RDONLY", strerror(errno));
	fd_rw = rw;
}

static void need_rw(void)
{
	if (!fd_rw)
		do_open(1);
}

static void full_pread(size_t off, size_t len, unsigned char *dst)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, dst + done, len - done, off + done);

		if (r < 0)
			fail("pread(%zu, %zu): %s", off + done, len - done, strerror(errno));
		if (r == 0)
			fail("pread(%zu, %zu): short read (EOF) at %zu, model size %zu",
			     off, len, off + done, msize);
		done += r;
	}
}

static void compare(const unsigned char *got, size_t off, size_t len, const char *what)
{
	size_t i;

	if (!memcmp(got, model + off, len))
		return;
	for (i = 0; i < len && got[i] == model[off + i]; i++)
		;
	fail("%s: data mismatch at offset %zu (0x%zx): got 0x%02x, expected 0x%02x",
	     what, off + i, off + i, got[i], model[off + i]);
}

static void check_all(void)
{
	struct stat st, st2;
	unsigned char extra;

	if (fstat(fd, &st))
		fail("fstat: %s", strerror(errno));
	if ((size_t)st.st_size != msize)
		fail("fstat size %jd, model %zu", (intmax_t)st.st_size, msize);
	if (stat(path, &st2))
		fail("stat(%s): %s", path, strerror(errno));
	if ((size_t)st2.st_size != msize)
		fail("stat size %jd, model %zu", (intmax_t)st2.st_size, msize);
	if (msize) {
		full_pread(0, msize, buf);
		compare(buf, 0, msize, "check");
	}
	if (pread(fd, &extra, 1, msize) != 0)
		fail("read past model EOF (%zu) returned data", msize);
}

static void rand_range(size_t limit, size_t *off, size_t *len)
{
	*off = rnd_below(limit + 1);
	*len = 1 + rnd_below(maxop);
	if (rnd_below(4) == 0) {	/* page-aligned quarter of the time */
		*off &= ~(size_t)(pagesz - 1);
		*len = (*len + pagesz - 1) & ~(size_t)(pagesz - 1);
	}
}

static void op_write(void)
{
	size_t off, len, i;
	ssize_t r;

	rand_range(maxlen - 1, &off, &len);
	if (off + len > maxlen)
		len = maxlen - off;
	logop("write 0x%zx 0x%zx (size 0x%zx)", off, len, msize);
	need_rw();
	for (i = 0; i < len; i++)
		buf[i] = rnd() >> 56;
	r = pwrite(fd, buf, len, off);
	if (r != (ssize_t)len)
		fail("pwrite(%zu, %zu) = %zd: %s", off, len, r, r < 0 ? strerror(errno) : "short");
	if (off + len > msize)
		set_size(off + len);
	memcpy(model + off, buf, len);
}

static void op_read(void)
{
	size_t off, len;

	if (!msize) {
		logop("read (empty)");
		return;
	}
	rand_range(msize - 1, &off, &len);
	if (off >= msize)
		off = msize - 1;
	if (off + len > msize)
		len = msize - off;
	logop("read 0x%zx 0x%zx", off, len);
	full_pread(off, len, buf);
	compare(buf, off, len, "read");
}

static void op_truncate(int bypath)
{
	size_t n = rnd_below(maxlen + 1);

	if (rnd_below(4) == 0)
		n &= ~(size_t)(pagesz - 1);
	logop("%s 0x%zx (from 0x%zx)", bypath ? "truncate" : "ftruncate", n, msize);
	if (bypath) {
		if (truncate(path, n))
			fail("truncate(%zu): %s", n, strerror(errno));
		/*
		 * On a descriptor opened before a copy-up the union keeps
		 * showing the original (docs/concepts.md): a read-only
		 * descriptor is reopened after a truncate by path.
		 */
		if (!fd_rw)
			do_open(0);
	} else {
		need_rw();
		if (ftruncate(fd, n))
			fail("ftruncate(%zu): %s", n, strerror(errno));
	}
	if (n < msize)
		msize = n;
	else
		set_size(n);
}

static void op_mapread(void)
{
	size_t off, len, pg;
	unsigned char *p;

	if (!msize) {
		logop("mapread (empty)");
		return;
	}
	rand_range(msize - 1, &off, &len);
	if (off >= msize)
		off = msize - 1;
	if (off + len > msize)
		len = msize - off;
	logop("mapread 0x%zx 0x%zx", off, len);
	pg = off & ~(size_t)(pagesz - 1);
	p = mmap(NULL, len + off - pg, PROT_READ, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		fail("mmap(PROT_READ, %zu, %zu): %s", len + off - pg, pg, strerror(errno));
	compare(p + (off - pg), off, len, "mapread");
	if (munmap(p, len + off - pg))
		fail("munmap: %s", strerror(errno));
}

static void op_mapwrite(void)
{
	size_t off, len, pg, i;
	unsigned char *p;

	rand_range(maxlen - 1, &off, &len);
	if (off + len > maxlen)
		len = maxlen - off;
	logop("mapwrite 0x%zx 0x%zx (size 0x%zx)", off, len, msize);
	need_rw();
	if (off + len > msize) {
		/* a shared mapping cannot extend the file: grow it first */
		if (ftruncate(fd, off + len))
			fail("mapwrite: ftruncate(%zu): %s", off + len, strerror(errno));
		set_size(off + len);
	}
	pg = off & ~(size_t)(pagesz - 1);
	p = mmap(NULL, len + off - pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		fail("mmap(PROT_WRITE, %zu, %zu): %s", len + off - pg, pg, strerror(errno));
	for (i = 0; i < len; i++)
		model[off + i] = rnd() >> 56;
	memcpy(p + (off - pg), model + off, len);
	if (msync(p, len + off - pg, MS_SYNC))
		fail("msync: %s", strerror(errno));
	if (munmap(p, len + off - pg))
		fail("munmap: %s", strerror(errno));
}

static void op_fallocate(int mode)
{
	size_t off, len;

	rand_range(maxlen - 1, &off, &len);
	if (off + len > maxlen)
		len = maxlen - off;
	logop("%s 0x%zx 0x%zx (size 0x%zx)", mode == FALLOC_FL_KEEP_SIZE ? "falloc_keep" :
	      mode ? "punch" : "fallocate", off, len, msize);
	need_rw();
	if (fallocate(fd, mode, off, len))
		fail("fallocate(mode 0x%x, %zu, %zu): %s", mode, off, len, strerror(errno));
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		if (off < msize)
			memset(model + off, 0, (off + len > msize ? msize : off + len) - off);
	} else if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > msize) {
		set_size(off + len);
	}
}

static enum op pick(void)
{
	int total = 0, i, r;

	for (i = 0; i < OP_NR; i++)
		total += op_weight[i];
	for (;;) {
		r = rnd_below(total);
		for (i = 0; r >= op_weight[i]; i++)
			r -= op_weight[i];
		if (nommap && (i == OP_MREAD || i == OP_MWRITE))
			continue;
		if (nofalloc && (i == OP_FALLOC || i == OP_FALLOC_KEEP || i == OP_PUNCH))
			continue;
		return i;
	}
}

int main(int argc, char **argv)
{
	unsigned long nops = 2000;
	int c, seeded = 0;
	struct stat st;

	while ((c = getopt(argc, argv, "N:s:l:o:RMFq")) != -1) {
		switch (c) {
		case 'N': nops = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); seeded = 1; break;
		case 'l': maxlen = strtoul(optarg, NULL, 0); break;
		case 'o': maxop = strtoul(optarg, NULL, 0); break;
		case 'R': startro = 1; break;
		case 'M': nommap = 1; break;
		case 'F': nofalloc = 1; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr, "usage: ufsx [-N ops] [-s seed] [-l maxlen] [-o maxop] [-R] [-M] [-F] [-q] FILE\n");
			return 2;
		}
	}
	if (optind != argc - 1 || !maxlen || !maxop) {
		fprintf(stderr, "usage: ufsx [-N ops] [-s seed] [-l maxlen] [-o maxop] [-R] [-M] [-F] [-q] FILE\n");
		return 2;
	}
	path = argv[optind];
	pagesz = sysconf(_SC_PAGESIZE);
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000000007ULL) ^ ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	}
	rng_state = seed ? seed : 1;
	printf("ufsx: seed %" PRIu64 " file %s ops %lu maxlen %zu maxop %zu%s%s%s\n",
	       seed, path, nops, maxlen, maxop, startro ? " start-ro" : "",
	       nommap ? " no-mmap" : "", nofalloc ? " no-falloc" : "");
	fflush(stdout);

	if (stat(path, &st)) {
		int cfd;

		if (errno != ENOENT)
			fail("stat(%s): %s", path, strerror(errno));
		cfd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (cfd < 0)
			fail("create(%s): %s", path, strerror(errno));
		close(cfd);
		st.st_size = 0;
	}
	do_open(!startro);
	grow_model(st.st_size > (off_t)maxlen ? (size_t)st.st_size : maxlen);
	msize = st.st_size;
	if (msize)
		full_pread(0, msize, model);	/* the starting content is the model */
	check_all();

	for (opno = 0; opno < nops; opno++) {
		enum op o = pick();

		switch (o) {
		case OP_READ: op_read(); break;
		case OP_WRITE: op_write(); break;
		case OP_FTRUNC: op_truncate(0); break;
		case OP_PTRUNC: op_truncate(1); break;
		case OP_MREAD: op_mapread(); break;
		case OP_MWRITE: op_mapwrite(); break;
		case OP_FALLOC: op_fallocate(0); break;
		case OP_FALLOC_KEEP: op_fallocate(FALLOC_FL_KEEP_SIZE); break;
		case OP_PUNCH: op_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE); break;
		case OP_FSYNC:
			logop("fsync");
			if (fsync(fd))
				fail("fsync: %s", strerror(errno));
			break;
		case OP_REOPEN: {
			int rw = startro ? rnd_below(3) != 0 : 1;

			logop("reopen %s", rw ? "rw" : "ro");
			do_open(rw);
			break;
		}
		default:
			break;
		}
		count[o]++;
		check_all();
	}
	if (close(fd))
		fail("final close: %s", strerror(errno));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("final open: %s", strerror(errno));
	check_all();
	printf("ufsx: OK %lu ops seed %" PRIu64 " size %zu", nops, seed, msize);
	for (c = 0; c < OP_NR; c++)
		printf(" %s=%lu", op_name[c], count[c]);
	printf("\n");
	return 0;
}
