/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unionfs: a namespace-unification filesystem for Linux 6.1.
 *
 * Design after "Unionfs try #4" (2007): branches with priorities and
 * ro/rw modes, lookup by priority, whiteouts ".wh.NAME", opaque directories
 * ".wh.__dir_opaque", duplicate elimination, copy-up, generation numbers.
 *
 * Lock order, outermost first (checked by lockdep on the debug kernel,
 * make check-debug):
 *   1. the VFS's: s_vfs_rename_mutex; union directory i_rwsem, parent
 *      before child; the union object's i_rwsem.
 *   2. cu_lock of the union object an operation changes (copy-up, unlink,
 *      rmdir, link, rename); a rename takes the source's and a replaced
 *      target's in address order (subclass SINGLE_DEPTH_NESTING for the
 *      second).
 *   3. cu_lock of an ancestor directory being copied up to make room for
 *      it (unionfs_copyup_dir: one at a time, subclass UNIONFS_CU_ANCESTOR).
 *      Never the other way round: nothing holding an ancestor's cu_lock
 *      waits for a descendant's.
 *   3a. the mount's ix_lock (index.c): a link group's union inode found
 *      through its index entry (a lookup holds it from unionfs_iget to
 *      d_splice_alias), rekeyed to it after the group's copy-up, and the
 *      inode's ix_publish (set before the group's first copy-up, cleared
 *      after its rekey or its failure: a lookup never takes an entry
 *      whose publish is in flight or that is unlinked). Inside it, a
 *      cu_lock only with mutex_trylock. Never taken with freeze
 *      protection held; nothing under it takes any.
 *   4. the branch's freeze protection (mnt_want_write or, per data chunk
 *      of a copy-up, file_start_write): one level at a time, never nested
 *      on one branch superblock.
 *   4a. not a lock, but a wait: a branch's use count (unionfs_br_use(),
 *      taken by unionfs_want_write() and the open of a branch file). An
 *      operation that meets a del= deciding on that branch waits for the
 *      decision (killable); the decision holds s_umount and bt_lock and
 *      takes nothing of 1-5 (it refuses a branch in use, never waits).
 *   5. branch directory i_rwsem (I_MUTEX_PARENT; lock_rename for two),
 *      then the branch object's.
 *   6. spinlocks: a dentry info's lock, inode->i_lock, d_lock.
 *
 * Credentials (docs/security.md, "With which credentials each branch
 * operation runs"). The VFS checks the caller against the union inode
 * first (unionfs_permission: the caller's credentials; the top branch
 * inode's own ->permission with the mounter's). Then:
 *   - the caller's credentials, as they come: what the caller asked for,
 *     so that the branch fs applies its own rules (owner and default ACL
 *     of new objects, setgid, sticky directories, quotas, its permission
 *     checks where the VFS call makes them; dentry_open makes none, so an
 *     open is decided by unionfs_permission alone): open of a user's
 *     file, create, mkdir, mknod, symlink,
 *     link, O_TMPFILE, the branch rename of a rename, setattr, setxattr,
 *     removexattr, the reads of an open file; and the lookups of a name
 *     under its locked branch parent just before such a change
 *     (unionfs_lock_lookup, unionfs_do_lookup_locked in rename and
 *     unlink/rmdir);
 *   - the mounter's (unionfs_override_creds(), taken at mount): what the
 *     union does for itself, which the caller may have no right to in the
 *     branch and was checked for already: lookups of a union name in the
 *     branches, merged readdir and emptiness checks, copy-up (temporary,
 *     data, owner, xattrs, times, rename into place) and recreated
 *     parents, whiteouts, opaque markers, stashing and disposing of
 *     removed directories, ->get_acl, and the unlink/rmdir of
 *     unionfs_remove_locked.
 * The lower.c wrappers never switch credentials themselves: they run with
 * the ones they are called with. An operation overrides at most once for
 * each run of mounter work between two calls made as the caller (one
 * override if it has none: lookup, readdir, copy-up), and its undo and
 * clean-up (revert, dispose) stay in the last run, overridden lazily if
 * no run is open (rename: before lock_rename, around the whiteout and the
 * stash, after the branch rename; unlink/rmdir: the emptiness check,
 * then the rest). Whoever overrides reverts in the same function.
 */
#ifndef _UNIONFS_UNION_H
#define _UNIONFS_UNION_H

#define pr_fmt(fmt) "unionfs: " fmt

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/rcupdate.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/jump_label.h>
#include <linux/refcount.h>
#include <linux/workqueue.h>
#include <linux/timekeeping.h>

#define UNIONFS_SUPER_MAGIC	0xf15f083d
#define UNIONFS_MAX_BRANCHES	128
/* lockdep subclass of an ancestor's cu_lock (see the lock order above) */
#define UNIONFS_CU_ANCESTOR	2

/* the enum fields of the tracepoints (the lists are trace-header style) */
#include "unionfs_trace_enums.h"

#define UNIONFS_WHPFX		".wh."
#define UNIONFS_WHLEN		4
/*
 * The longest name the union takes: room for the ".wh." of its whiteout
 * (statfs reports branch 0's limit less 4, i.e. this on every fs with a
 * NAME_MAX limit). Longer names get ENAMETOOLONG from lookup, hence from
 * every call that names them (lookup.c).
 */
#define UNIONFS_NAME_MAX	(NAME_MAX - UNIONFS_WHLEN)
#define UNIONFS_DIR_OPAQUE	".wh.__dir_opaque"
#define UNIONFS_DIR_OPAQUE_LEN	16
/*
 * The opaque marker of OCI image layers (and aufs): with markers=oci it is
 * the one the union writes, and both are honoured (unionfs_opaque_name()).
 */
#define UNIONFS_OCI_OPAQUE	".wh..wh..opq"
#define UNIONFS_OCI_OPAQUE_LEN	12
/*
 * Inode numbers (docs/concepts.md "Inode numbers", unionfs_ino()): a branch
 * inode number below 2^UNIONFS_INO_SHIFT with its branch fs's index (fsidx,
 * 0..UNIONFS_FSIDX_MAX) in the top UNIONFS_INO_BITS bits. The last index
 * (UNIONFS_INO_VOLATILE) is never a branch's: it holds the numbers, valid
 * only while the inode is cached, of directories whose branch number does
 * not fit.
 */
#define UNIONFS_INO_BITS	8
#define UNIONFS_INO_SHIFT	(64 - UNIONFS_INO_BITS)
#define UNIONFS_INO_VOLATILE	((1U << UNIONFS_INO_BITS) - 1)
#define UNIONFS_FSIDX_MAX	(UNIONFS_INO_VOLATILE - 1)
/* Temporary names: a whiteout of ".wh.*", which no union name can be. */
#define UNIONFS_TMPPFX		".wh..wh.unionfs."
/* room for one: the prefix, a 64-bit counter in decimal, the NUL */
#define UNIONFS_TMPNAME_LEN	(sizeof(UNIONFS_TMPPFX) + 20)

/* branch modes */
#define UNIONFS_BR_RO		0
#define UNIONFS_BR_RW		1

/* a branch's state against del= (unionfs_br_use(), branch.c) */
enum {
	UNIONFS_BRS_LIVE,	/* in the union: operations go on */
	UNIONFS_BRS_LEAVING,	/* a del= decides: operations wait */
	UNIONFS_BRS_GONE,	/* deleted: operations get -ESTALE */
};

/*
 * A branch. Referenced by every branch table that lists it; freed (and its
 * path released) with the last table, so that objects still built against
 * an old table keep their branch mounts pinned.
 */
struct unionfs_branch {
	refcount_t ref;
	struct path path;	/* branch root (holds the mount and dentry) */
	char *name;		/* canonical path of the branch root */
	int mode;		/* UNIONFS_BR_RO or UNIONFS_BR_RW */
	int id;			/* stable id, never reused within a mount */
	unsigned int fsidx;	/* inode number space of the branch's sb:
				 * 0..UNIONFS_FSIDX_MAX (unionfs_ino())
				 */
	atomic_t open_files;	/* files of the union open on this branch */
	atomic_t writers;	/* operations writing to it now (want_write) */
	int state;		/* UNIONFS_BRS_*: against del= (branch.c) */
	bool private_mnt;	/* path.mnt is our clone (unionfs_branch_hold) */
	bool ever_rw;		/* is or was read-write in this mount: synced */
	struct rcu_head rcu;	/* freed after a grace period: RCU readers of
				 * a table (notify.c) read its branches' ids
				 */
};

/*
 * The branch table: branches in priority order. Replaced as a whole (and
 * the generation bumped) by every branch change; dentries and inodes hold
 * the table they were built against, so their branch indexes stay valid.
 */
struct unionfs_btable {
	refcount_t ref;
	struct super_block *sb;
	int gen;
	int nbr;
	struct rcu_head rcu;
	struct unionfs_branch *br[];
};

/* kinds of direct branch modification detected (hazard counters) */
enum {
	UNIONFS_HZ_VANISHED,	/* the winning lower entry went away */
	UNIONFS_HZ_REPLACED,	/* it now names another object */
	UNIONFS_HZ_DIR_CHANGED,	/* a lower directory changed under a name */
	/* coherency=notify: seen as it happens (fsnotify on branch dirs) */
	UNIONFS_HZ_CREATED,	/* an entry was created in a branch dir */
	UNIONFS_HZ_REMOVED,	/* an entry was removed from a branch dir */
	UNIONFS_HZ_RENAMED,	/* an entry was renamed in/out of a branch dir */
	UNIONFS_HZ_ATTRIB,	/* a branch dir's attributes changed */
	UNIONFS_HZ_COPYUP_RACE,	/* a file changed in its branch while copied up */
	UNIONFS_HZ_REDIRECT,	/* a dir redirect is invalid or leads nowhere */
	UNIONFS_HZ_MAX
};

/* coherency= mount option: how changes made directly in branches are found */
enum {
	UNIONFS_COH_NONE,	/* branches are static: no checks */
	UNIONFS_COH_REVAL,	/* lazy: compare with the branch on revalidation */
	UNIONFS_COH_NOTIFY,	/* eager: fsnotify marks on branch directories */
};

/* markers= : which opaque-directory marker a mount writes and honours */
enum {
	UNIONFS_MARKERS_UNIONFS,	/* ".wh.__dir_opaque" only */
	UNIONFS_MARKERS_OCI,	/* writes ".wh..wh..opq", honours both */
};

struct fsnotify_group;
struct unionfs_nmark;

#define UNIONFS_SB_NOTICED	0	/* flags bit: pr_notice given */

struct unionfs_sb_info {
	struct super_block *sb;
	struct unionfs_btable __rcu *bt;	/* current table */
	struct mutex bt_lock;		/* serializes table changes */
	struct mutex ix_lock;		/* link group inodes (index.c) */
	atomic_t generation;
	const struct cred *creator_cred;
	int next_branch_id;
	atomic64_t tmp_seq;	/* for temporary names */
	atomic64_t ixseq;	/* index entries made or removed (readdir.c) */
	u64 tmp_start;		/* tmp_seq at mount: ours are above */
	struct list_head tmp_live;	/* on the list of live ranges */
	atomic_long_t ndinfo;		/* live dentry infos (debugfs) */
	struct dentry *debugfs_dir;	/* per-mount view */
	struct kobject *sysfs;		/* /sys/fs/unionfs/MAJ:MIN (sysfs.c) */
	atomic_long_t hazards[UNIONFS_HZ_MAX];	/* direct changes seen */
	unsigned long flags;		/* UNIONFS_SB_* bits */
	int coherency;			/* UNIONFS_COH_* */
	int markers;			/* UNIONFS_MARKERS_* */
	/* coherency=notify (notify.c) */
	struct fsnotify_group *ngroup;	/* our marks on branch dirs */
	struct mutex nmutex;		/* mark adoption/release */
	atomic_long_t nmarks;		/* marks in place */
	atomic_long_t nseq;		/* bumped by every direct change */
	spinlock_t actor_lock;
	struct list_head actors;	/* tasks inside a branch call of ours */
};

/* A task making a branch change on the union's behalf (lower.c). */
struct unionfs_actor {
	struct list_head list;
	struct task_struct *task;
};

/*
 * Per-dentry state: the lower dentries, indexed by branch of @bt. The
 * array only holds positive lower dentries. Fields change under @lock; the
 * struct is freed after an RCU grace period because d_revalidate reads it
 * in RCU walk.
 *
 * @ref: one for the dentry's d_fsdata, one for each user that holds the
 * info across a sleep (unionfs_dinfo_get()). An info is replaced whole
 * on a new branch table: the root's by every branch change, another
 * dentry's when it is looked up again on a new generation while in use
 * (dentry.c). A replaced info is freed as soon as the last such user is
 * done, releasing the table and branches it held. A positive non-root
 * dentry's info is replaced only under its inode's cu_lock: a holder of
 * that lock may use it unpinned.
 */
struct unionfs_dentry_info {
	refcount_t ref;
	spinlock_t lock;	/* protects the fields below and lower[] */
	int bstart;		/* first branch holding the name, -1 if none */
	int bend;		/* last branch contributing */
	int bopaque;		/* branch whose dir is opaque, -1 if none */
	int bwh;		/* branch whose whiteout hid the name, or -1 */
	int bredir;		/* a directory's first branch whose copy is not
				 * in the parent's lower directory there (a
				 * redirect, a renamed directory), or -1
				 */
	u64 ixseq;		/* sbi->ixseq before the lookup (unionfs_iget) */
	int generation;
	u64 psnap;		/* parent's lower dirs' ctimes at lookup */
	long nseq;		/* coherency=notify: sbi->nseq when checked */
	int nbr;		/* size of lower[] == bt->nbr */
	struct unionfs_btable *bt;
	union {
		struct rcu_head rcu;
		struct work_struct work;	/* a user's last put */
		/*
		 * A lookup's index entry it did not take (unionfs_index_detach),
		 * put once ix_lock is dropped: its last put may evict a copy
		 * in the branch fs. Before the info is published only.
		 */
		struct dentry *ixdrop;
	};
	struct dentry *lower[];
};

/* The lower inodes of a union inode, indexed by branch of @bt. */
struct unionfs_ivec {
	struct unionfs_btable *bt;
	u64 id;				/* unique per allocation (walk memo) */
	int bstart;
	int bend;
	int nbr;
	struct rcu_work rwork;
	struct unionfs_nmark **marks;	/* coherency=notify, directories */
	bool watched;			/* every lower directory has a mark */
	/* permission cache of a merged directory (inode.c) */
	int perm_state;			/* UNIONFS_PERM_* */
	unsigned int perm_gen;		/* the union inode's attr_gen then */
	long perm_nseq;			/* sbi->nseq then */
	u64 perm_snap;			/* lower ctimes then */
	/*
	 * Whiteout knowledge of a directory (lookup.c), per branch: the
	 * lower directory's ctime when it was read in full, shifted left by
	 * one, | 1 if it held no ".wh." entry. 0: not known. NULL until
	 * something is learnt.
	 */
	u64 *nowh;
	struct inode *lower[];
};

enum {
	UNIONFS_PERM_UNKNOWN,	/* check every contributing branch */
	UNIONFS_PERM_UNIFORM,	/* same mode/owner everywhere, no ACL */
	UNIONFS_PERM_MIXED,	/* known to differ: check every branch */
};

struct unionfs_inode_info {
	struct inode vfs_inode;
	struct mutex cu_lock;	/* serializes copy-up of this object */
	struct unionfs_ivec __rcu *vec;
	struct inode *key;	/* lower inode this inode is hashed by */
	u64 dir_version;	/* bumped by every change made through us */
	u64 snap;		/* lower dirs' ctimes after our own changes */
	unsigned int attr_gen;	/* bumped by every attribute change by us */
	struct unionfs_rdcache *rdcache;	/* merged listing, under i_lock */
	int ix_lower;		/* a link group's lower names shown (index.c), or -1 */
	bool ix_publish;	/* its group's first copy-up runs (ix_lock) */
	/*
	 * S_APPEND/S_IMMUTABLE its winner holds in UNIONFS_XATTR_PROTATTR
	 * (a copy-up's copy of a flagged object: the flags themselves would
	 * refuse the copy-up's own rename and xattrs), or 0
	 */
	unsigned int prot;
};

struct unionfs_file_info {
	struct file *lower;	/* the open branch file (not for merged dirs) */
	struct unionfs_branch *br;	/* its branch, referenced */
	/*
	 * When it was opened, for information only: an open file keeps the
	 * branch file (and branch) it was opened on whatever the generation;
	 * only its dentry is revalidated (unionfs_reval_decide()).
	 */
	int generation;
	struct unionfs_rdcache *rdcache;	/* merged readdir state */
	spinlock_t lock;	/* regular files: guards lower, br (file.c) */
};

static inline struct unionfs_sb_info *UNIONFS_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct unionfs_dentry_info *UNIONFS_D(const struct dentry *d)
{
	return d->d_fsdata;
}

static inline struct unionfs_inode_info *UNIONFS_I(const struct inode *inode)
{
	return container_of(inode, struct unionfs_inode_info, vfs_inode);
}

static inline struct unionfs_file_info *UNIONFS_F(const struct file *file)
{
	return file->private_data;
}

static inline struct unionfs_branch *
unionfs_br(struct unionfs_btable *bt, int bindex)
{
	return bt->br[bindex];
}

static inline struct vfsmount *unionfs_mnt(struct unionfs_btable *bt,
					   int bindex)
{
	return bt->br[bindex]->path.mnt;
}

/*
 * A read-write branch needs a writable mount: the mode is checked when it is
 * given (mount, add=, mode=); a branch fs made read-only later gives EROFS
 * per operation.
 */
static inline bool unionfs_path_rdonly(const struct path *path)
{
	return __mnt_is_readonly(path->mnt);
}

/*
 * The branch table a dentry was built against, only to compare with a
 * table the caller holds (a replaced info may be freed meanwhile): to use
 * it, unionfs_dbt_get(), or hold the info (unionfs_dinfo_get()) and use
 * its ->bt, or hold a positive non-root dentry's cu_lock. A decision on
 * one table is used on another read of a dentry's info only through
 * unionfs_lower_dentry_at() / unionfs_lower_top_at(), which check that
 * the info read is built against the caller's table.
 */
static inline struct unionfs_btable *unionfs_dbt(const struct dentry *d)
{
	struct unionfs_btable *bt;

	rcu_read_lock();	/* the info itself is freed after a grace period */
	bt = ((struct unionfs_dentry_info *)READ_ONCE(d->d_fsdata))->bt;
	rcu_read_unlock();
	return bt;
}

static inline int unionfs_sb_gen(struct super_block *sb)
{
	return atomic_read(&UNIONFS_SB(sb)->generation);
}

/* A branch the union writes by its mode (its fs may be read-only now). */
static inline bool unionfs_branch_rw_mode(struct unionfs_btable *bt,
					  int bindex)
{
	return READ_ONCE(bt->br[bindex]->mode) == UNIONFS_BR_RW;
}

/* A branch we may modify: rw mode and a writable lower mount. */
static inline bool unionfs_br_writable(struct unionfs_branch *br)
{
	return READ_ONCE(br->mode) == UNIONFS_BR_RW &&
	       !sb_rdonly(br->path.mnt->mnt_sb) &&
	       !__mnt_is_readonly(br->path.mnt);
}

/*
 * Does syncfs/fsync write @br back? Where the union may have written: the
 * branch is or was read-write (ever_rw is set before mode turns rw), and
 * its file system is not read-only.
 */
static inline bool unionfs_br_syncable(struct unionfs_branch *br)
{
	return READ_ONCE(br->ever_rw) && !sb_rdonly(br->path.mnt->mnt_sb);
}

static inline bool unionfs_branch_writable(struct unionfs_btable *bt,
					   int bindex)
{
	return unionfs_br_writable(bt->br[bindex]);
}

int unionfs_br_use(struct unionfs_branch *br, atomic_t *count);

/*
 * Account an open file on branch @bindex of @bt; returns the branch, or
 * ERR_PTR(-ESTALE) when a del= took it out meanwhile (-EINTR: a fatal
 * signal while a del= decided).
 */
static inline struct unionfs_branch *unionfs_br_open(struct unionfs_btable *bt,
						     int bindex)
{
	struct unionfs_branch *br = bt->br[bindex];
	int err = unionfs_br_use(br, &br->open_files);

	if (err)
		return ERR_PTR(err);
	refcount_inc(&br->ref);
	return br;
}

static inline bool unionfs_is_whname(const char *name, int len)
{
	return len >= UNIONFS_WHLEN && !strncmp(name, UNIONFS_WHPFX,
						 UNIONFS_WHLEN);
}

/* @l's ctime in ns (unlocked read: a torn value only fails to match). */
static inline s64 unionfs_ctime_ns(const struct inode *l)
{
	return READ_ONCE(l->i_ctime.tv_sec) * NSEC_PER_SEC +
	       READ_ONCE(l->i_ctime.tv_nsec);
}

/*
 * Is @l's ctime too recent to stand for "unchanged since"? Two changes
 * within one timestamp granule (a clock tick, or the branch fs's own
 * granularity, 1 s or 2 s on some) would look like one. A ctime in the
 * future (clock set back) is never trusted either.
 */
static inline bool unionfs_ctime_recent(const struct inode *l)
{
	struct timespec64 now;

	ktime_get_coarse_real_ts64(&now);
	return timespec64_to_ns(&now) - unionfs_ctime_ns(l) <
	       4 * (s64)TICK_NSEC + l->i_sb->s_time_gran;
}

/* @dentry's current info, referenced, or NULL; unionfs_dinfo_put() it. */
struct unionfs_dentry_info *unionfs_dinfo_get(struct dentry *dentry);
void unionfs_dinfo_put(struct unionfs_dentry_info *ud);
struct unionfs_btable *unionfs_dbt_get(struct dentry *dentry);
int unionfs_dentry_gen(struct dentry *dentry);
/* The same as the three below, on an info the caller holds. */
struct dentry *unionfs_ud_lower_get(struct unionfs_dentry_info *ud, int bindex);
struct dentry *unionfs_ud_top_get(struct unionfs_dentry_info *ud, int *bindex);
void unionfs_ud_range(struct unionfs_dentry_info *ud, int *bstart, int *bend);
/* Read the lower dentry of @bindex and take a reference, or NULL. */
struct dentry *unionfs_lower_dentry_get(struct dentry *dentry, int bindex);
/* The winning lower dentry, referenced; *bindex gets its branch. */
struct dentry *unionfs_lower_top_get(struct dentry *dentry, int *bindex);
/* The same two only from an info built against @bt, else -ESTALE. */
struct dentry *unionfs_lower_dentry_at(struct dentry *dentry,
				       struct unionfs_btable *bt, int bindex);
struct dentry *unionfs_lower_top_at(struct dentry *dentry,
				    struct unionfs_btable *bt, int *bindex);
void unionfs_get_range(struct dentry *dentry, int *bstart, int *bend);

/* super.c */
extern struct file_system_type unionfs_fs_type;
const struct cred *unionfs_override_creds(struct super_block *sb);
char *unionfs_opt_find(char *s, char c, bool last);
int unionfs_opt_unescape(struct fs_context *fc, char *s, const char *ctx);

/*
 * A refused mount or remount request: one kernel log line, and the same
 * message in the fs_context log of an fsconfig(2) caller (read(2) of its fs
 * fd gives "e unionfs: ..."); mount(2) callers have no log (fc->log.log).
 * @fc may be NULL (the INCGEN ioctl).
 */
__printf(2, 3)
void unionfs_refuse(struct fs_context *fc, const char *fmt, ...);

/* branch.c */
struct unionfs_btable *unionfs_bt_get(struct super_block *sb);
void unionfs_bt_put(struct unionfs_btable *bt);
struct unionfs_btable *unionfs_bt_alloc(struct super_block *sb, int nbr);
void unionfs_branch_put(struct unionfs_branch *br);
int unionfs_branch_hold(struct unionfs_branch *br);
int unionfs_parse_mode(struct fs_context *fc, const char *s,
		       const char *ctx);
struct unionfs_branch *unionfs_branch_new(struct fs_context *fc,
					  struct super_block *sb,
					  const char *path, int mode,
					  struct unionfs_branch *const *existing,
					  int n, const char *ctx);
void unionfs_prune_inodes(struct super_block *sb);
bool unionfs_branch_is(struct unionfs_branch *br, const struct path *path);
int unionfs_bt_index(struct unionfs_btable *bt, struct unionfs_branch *br);
struct unionfs_dentry_info *unionfs_root_dinfo(struct unionfs_btable *bt);
int unionfs_remount_branches(struct fs_context *fc, struct super_block *sb,
			     char *cmds, bool sb_ro);
void unionfs_bump_gen(struct super_block *sb, enum unionfs_rv_why cause);

/* lookup.c */
struct unionfs_dentry_info *unionfs_alloc_dinfo(struct unionfs_btable *bt);
struct unionfs_dentry_info *unionfs_alloc_dinfo_at(struct dentry *parent);
void unionfs_free_dinfo(struct unionfs_dentry_info *ud);
struct dentry *unionfs_lookup(struct inode *dir, struct dentry *dentry,
			      unsigned int flags);
int unionfs_lookup_branches(struct dentry *parent, const struct qstr *name,
			    struct unionfs_dentry_info *ud, int from,
			    bool learn);
u64 unionfs_nowh_stamp(struct inode *ldir, bool clean);
void unionfs_nowh_record(struct inode *dir, struct unionfs_btable *bt, int b,
			 struct inode *ldir, u64 stamp);
struct inode *unionfs_iget(struct super_block *sb,
			   struct unionfs_dentry_info *ud, bool group);
int unionfs_is_opaque_dir(struct super_block *sb, struct dentry *lower_dir);
const char *unionfs_opaque_name(struct super_block *sb, int *len);
bool unionfs_lower_has_name(struct dentry *parent, const struct qstr *name,
			    int from);

/* dentry.c */
extern const struct dentry_operations unionfs_dops;
void unionfs_dinfo_adopt(struct dentry *alias, struct unionfs_dentry_info *src);
int unionfs_refresh_stale(struct dentry *dir);

/* inode.c */
extern const struct inode_operations unionfs_main_iops;
extern const struct inode_operations unionfs_dir_iops;
extern const struct inode_operations unionfs_symlink_iops;
extern const struct inode_operations unionfs_special_iops;
void unionfs_copy_attr(struct inode *inode, const struct inode *lower);
int unionfs_inode_wq_init(void);
void unionfs_inode_wq_flush(void);
void unionfs_inode_wq_queue(struct work_struct *work);
void unionfs_inode_wq_exit(void);
void unionfs_ivec_free(struct unionfs_ivec *vec);
int unionfs_inode_set_vec(struct inode *inode, struct unionfs_dentry_info *ud);
void unionfs_dir_changed(struct inode *dir);
u64 unionfs_dir_snap(struct inode *dir);
u64 unionfs_dir_snap_walk(struct inode *dir, unsigned long caller);
#define UNIONFS_SNAP_RACY	U64_MAX	/* stands for no state: compare unequal */
u64 unionfs_dir_snap_trusted(struct inode *dir);
void unionfs_perm_forget(struct inode *inode);
bool unionfs_vec_same(struct inode *inode, struct unionfs_dentry_info *ud);
/* A bounded copy of @d's name (@buf: NAME_MAX + 1 bytes); RCU-walk safe. */
static inline void unionfs_dname_copy(char *buf, const struct dentry *d)
{
	rcu_read_lock();
	strscpy(buf, READ_ONCE(d->d_name.name), NAME_MAX + 1);
	rcu_read_unlock();
}

/*
 * Emit tracepoint @event with a stable copy of @dentry's name as its
 * second argument (after @sb): a concurrent rename may rewrite a short
 * name in place, and an event sizes its string with strlen() before it
 * copies it. Nothing is done while the event is off.
 */
#define unionfs_trace_dname(event, sb, dentry, ...)			\
	do {								\
		if (trace_##event##_enabled()) {			\
			char __nm[NAME_MAX + 1];			\
									\
			unionfs_dname_copy(__nm, dentry);		\
			trace_##event(sb, __nm, ##__VA_ARGS__);		\
		}							\
	} while (0)

void unionfs_hazard_note(struct super_block *sb, int kind, int bindex,
			 const char *name, int len, const char *what,
			 bool by_current);
void unionfs_hazard(struct super_block *sb, int kind, int bindex,
		    const char *name, const char *what);
const char *unionfs_hazard_name(int kind);
int unionfs_inode_init(struct inode *inode, struct unionfs_dentry_info *ud);
u64 unionfs_ino(const struct unionfs_branch *br, u64 lino);
void unionfs_inode_rekey(struct inode *inode, struct inode *key,
			 const struct unionfs_branch *br, struct dentry *keep);

/* notify.c: coherency=notify */
int unionfs_notify_init(struct super_block *sb);
void unionfs_notify_exit(struct super_block *sb);
void unionfs_notify_adopt(struct unionfs_ivec *vec, struct super_block *sb);
void unionfs_notify_release(struct unionfs_ivec *vec);
void unionfs_actor_begin(struct unionfs_btable *bt, struct unionfs_actor *a);
void unionfs_actor_end(struct unionfs_btable *bt, struct unionfs_actor *a);
extern const char *const unionfs_coherency_names[];
extern const char *const unionfs_markers_names[];

/* file.c */
extern const struct file_operations unionfs_main_fops;
int unionfs_open_over(struct file *file, struct dentry *dentry,
		      struct file *lf, struct unionfs_btable *bt, int b);

/* readdir.c */
extern const struct file_operations unionfs_dir_fops;
int unionfs_check_empty(struct dentry *dentry, int *has_whiteouts);
void unionfs_rdcache_put(struct unionfs_rdcache *rdc);

/* copyup.c */
int unionfs_nearest_writable(struct unionfs_btable *bt, int bindex);
int unionfs_group_branch(struct unionfs_btable *bt, int b);
/* @target: a branch of @bt (-ESTALE if the dentries are on another) */
int unionfs_copyup_dentry_held(struct dentry *dentry, int target,
			       enum unionfs_cu_reason reason, loff_t len);
int unionfs_dir_shown_writable(struct dentry *dir, struct unionfs_btable *bt,
			       int bound);
int unionfs_dir_shown_above(struct dentry *dir, struct unionfs_btable *bt,
			    int t);
int unionfs_copyup_parents(struct dentry *dentry, struct unionfs_btable *bt,
			   int target);
int unionfs_copyup_dir(struct dentry *dir, struct unionfs_btable *bt,
		       int target);
int unionfs_copyup_for_write(struct dentry *dentry, enum unionfs_cu_reason reason,
			     loff_t len);

/* The phases of a copy-up (tracepoint unionfs_copyup_phase). */
enum unionfs_copyup_phase {
	UNIONFS_COPYUP_PREPARE,	/* the temporary, closed (mode 0, no ACL) */
	UNIONFS_COPYUP_DATA,	/* regular files: the data */
	UNIONFS_COPYUP_META,	/* owner, xattrs and ACLs, mode, times */
	UNIONFS_COPYUP_PUBLISH,	/* verified and linked/renamed into place */
};

void unionfs_tmp_register(struct unionfs_sb_info *sbi);
void unionfs_tmp_unregister(struct unionfs_sb_info *sbi);
bool unionfs_tmp_leftover(const char *name, int len);
void unionfs_clean_leftovers(struct unionfs_btable *bt, int bindex,
			     struct dentry *ldir);

/* whiteout.c (the _locked variants need the lower parent locked) */
int unionfs_whiteout_locked(struct unionfs_btable *bt, int bindex,
			    struct dentry *lparent, const struct qstr *name,
			    enum unionfs_mk_reason reason);
int unionfs_remove_whiteout_locked(struct unionfs_btable *bt, int bindex,
				   struct dentry *lparent,
				   const struct qstr *name, enum unionfs_mk_reason reason);
int unionfs_create_whiteout(struct dentry *parent, struct unionfs_btable *bt,
			    const struct qstr *name, int bindex,
			    enum unionfs_mk_reason reason);
int unionfs_make_opaque(struct unionfs_btable *bt, int bindex,
			struct dentry *lower_dir, const struct dentry *shown,
			enum unionfs_mk_reason reason);
int unionfs_make_opaque_new(struct unionfs_btable *bt, int bindex,
			    struct dentry *ldir, const struct dentry *shown,
			    enum unionfs_mk_reason reason, bool *created);
int unionfs_remove_opaque(struct unionfs_btable *bt, int bindex,
			  struct dentry *lower_dir);
int unionfs_scan_whiteouts(struct unionfs_btable *bt, int bindex,
			   struct dentry *lower_dir, bool must_be_empty,
			   bool *has_wh);
int unionfs_stash_locked(struct unionfs_btable *bt, int bindex,
			 struct dentry *lparent, struct dentry *ld);
void unionfs_dispose(struct unionfs_btable *bt, int bindex,
		     struct dentry *lparent, struct dentry *ld);
void unionfs_remove_tmpdir_locked(struct unionfs_btable *bt, int bindex,
				  struct dentry *lparent, struct dentry *tmp);
int unionfs_clean_whiteouts(struct unionfs_btable *bt, int bindex,
			    struct dentry *lower_dir, bool must_be_empty);
char *unionfs_whname(const struct qstr *name);
int unionfs_tmp_name(struct super_block *sb, char *buf);
struct dentry *unionfs_tmp_lookup(struct unionfs_btable *bt,
				  struct dentry *lparent);

/* index.c: hard links across copy-up (docs/concepts.md "Hard links") */
bool unionfs_index_wanted(struct unionfs_btable *bt, int b, struct dentry *ld);
int unionfs_index_lookup(struct dentry *parent, const struct qstr *name,
			 struct unionfs_dentry_info *ud);
bool unionfs_index_shown(struct unionfs_dentry_info *ud);
bool unionfs_index_related(struct unionfs_dentry_info *ud);
bool unionfs_index_moved(struct super_block *sb,
			 struct unionfs_dentry_info *ud);
int unionfs_index_relook(struct super_block *sb,
			 struct unionfs_dentry_info *ud);
int unionfs_index_detach(struct unionfs_dentry_info *ud);
struct dentry *unionfs_index_drop(struct unionfs_dentry_info *ud);
void unionfs_index_publishing(struct inode *inode, bool on);
void unionfs_index_inode_init(struct inode *inode,
			      struct unionfs_dentry_info *ud);
unsigned int unionfs_index_nlink(const struct inode *inode,
				 unsigned int nlink);
int unionfs_index_copyup_link(struct dentry *dentry, struct dentry *src,
			      int b, struct dentry *lparent, int t,
			      struct dentry **newld);
struct dentry *unionfs_index_create(struct unionfs_btable *bt, int t,
				    struct dentry *tmp, struct inode *origin,
				    const struct dentry *dentry);
void unionfs_index_remove(struct unionfs_btable *bt, int t, struct dentry *e);
bool unionfs_index_copied_up(struct dentry *dentry, struct dentry *src,
			     int t, struct dentry *newld);
int unionfs_index_prepare_remove(struct dentry *dentry);
int unionfs_index_over(struct unionfs_btable *bt, int b);
int unionfs_index_rw_over(struct unionfs_btable *bt, int b);
bool unionfs_index_is_entry(struct unionfs_btable *bt, int t,
			    struct dentry *ld);
u64 unionfs_index_dino(struct unionfs_btable *bt, int b, int t,
		       struct dentry *ldir, const char *name, int len);

/* rename.c */
int unionfs_rename(struct user_namespace *mnt_userns, struct inode *old_dir,
		   struct dentry *old_dentry, struct inode *new_dir,
		   struct dentry *new_dentry, unsigned int flags);

/* ioctl.c */
long unionfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long unionfs_compat_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg);

/* xattr.c */
extern const struct xattr_handler *unionfs_xattr_handlers[];
/* inode.c: the inode operations dir.c's directory operations share */
struct posix_acl *unionfs_get_acl(struct inode *inode, int type, bool rcu);
int unionfs_permission(struct user_namespace *mnt_userns, struct inode *inode,
		       int mask);
int unionfs_getattr(struct user_namespace *mnt_userns, const struct path *path,
		    struct kstat *stat, u32 request_mask, unsigned int flags);
int unionfs_setattr(struct user_namespace *mnt_userns, struct dentry *dentry,
		    struct iattr *ia);
int unionfs_fileattr_get(struct dentry *dentry, struct fileattr *fa);
/* the union's own attributes on branch objects (index.c): never shown */
#define UNIONFS_XATTR_PRIVATE	XATTR_TRUSTED_PREFIX "unionfs."
bool unionfs_xattr_private(const char *name);
/* a renamed directory: where its lower contents live (lookup.c, rename.c) */
#define UNIONFS_XATTR_REDIRECT	UNIONFS_XATTR_PRIVATE "redirect"
/*
 * A copied-up object's append-only/immutable flags ("a", "i", "ai"): kept
 * here, as overlayfs's protattr, and enforced on the union inode
 * (inode.c)
 */
#define UNIONFS_XATTR_PROTATTR	UNIONFS_XATTR_PRIVATE "protattr"
#define UNIONFS_PROT_FLAGS	(S_APPEND | S_IMMUTABLE)
int unionfs_prot_load(struct inode *inode, int bindex, struct dentry *ld);
int unionfs_prot_store(struct unionfs_btable *bt, int bindex,
		       struct dentry *ld, unsigned int prot);
char *unionfs_redirect_get(struct unionfs_btable *bt, int bindex,
			   struct dentry *ld);
ssize_t unionfs_listxattr(struct dentry *dentry, char *list, size_t size);
struct posix_acl;
int unionfs_set_acl(struct user_namespace *mnt_userns, struct inode *inode,
		    struct posix_acl *acl, int type);

/* debugfs.c: per-mount views and (test builds only) fault injection */
int unionfs_debugfs_init(void);
void unionfs_debugfs_exit(void);
void unionfs_debugfs_mount(struct super_block *sb);
void unionfs_debugfs_umount(struct super_block *sb);
int unionfs_sysfs_init(void);
void unionfs_sysfs_exit(void);
int unionfs_sysfs_mount(struct super_block *sb);
void unionfs_sysfs_umount(struct super_block *sb);
/*
 * Fault injection sites (debugfs inject/crash_at take their names, from
 * unionfs_fault_names[] in debugfs.c, indexed by this enum). A site is
 * named in code by its enum constant, so a misspelt site does not build.
 */
enum unionfs_fault_site_id {
	UNIONFS_FSITE_LOOKUP,
	UNIONFS_FSITE_READDIR,
	UNIONFS_FSITE_OPEN,
	UNIONFS_FSITE_CREATE,
	UNIONFS_FSITE_MKDIR,
	UNIONFS_FSITE_MKNOD,
	UNIONFS_FSITE_SYMLINK,
	UNIONFS_FSITE_LINK,
	UNIONFS_FSITE_UNLINK,
	UNIONFS_FSITE_RMDIR,
	UNIONFS_FSITE_RENAME,
	UNIONFS_FSITE_SETATTR,
	UNIONFS_FSITE_SETXATTR,
	UNIONFS_FSITE_REMOVEXATTR,
	UNIONFS_FSITE_COPYUP_CREATE,
	UNIONFS_FSITE_COPYUP_DATA,
	UNIONFS_FSITE_COPYUP_CLONE,
	UNIONFS_FSITE_COPYUP_ATTR,
	UNIONFS_FSITE_COPYUP_RENAME,
	UNIONFS_FSITE_WHITEOUT,
	UNIONFS_FSITE_OPAQUE,
	UNIONFS_FSITE_TMPFILE,
	UNIONFS_FSITE_LOOKUP_LOCKED,
	UNIONFS_FSITE_GETATTR,
	UNIONFS_FSITE_GET_LINK,
	UNIONFS_FSITE_GETXATTR,
	UNIONFS_FSITE_LISTXATTR,
	UNIONFS_FSITE_READ,
	UNIONFS_FSITE_WRITE,
	UNIONFS_FSITE_FSYNC,
	UNIONFS_FSITE_FALLOCATE,
	UNIONFS_FSITE_STATFS,
	UNIONFS_FSITE_REDIRECT,
	UNIONFS_FSITE_INDEX,
	UNIONFS_FSITE_NR
};

#ifdef UNIONFS_FAULT_INJECTION
/* make FAULT_INJECTION=1 (the test build): debugfs inject and crash_at */
int unionfs_fault_slow(enum unionfs_fault_site_id site);
DECLARE_STATIC_KEY_FALSE(unionfs_fault_key);
/* 0, or the negative errno armed for @site in debugfs */
static inline int unionfs_fault(enum unionfs_fault_site_id site)
{
	if (static_branch_unlikely(&unionfs_fault_key))
		return unionfs_fault_slow(site);
	return 0;
}

#define UNIONFS_FAULT(site) unionfs_fault(site)

/*
 * debugfs race_delay_us: a sleep (at most 100 ms) where an operation has
 * decided a branch index on one branch table and has yet to read a
 * dentry's lower dentry for it (create, unlink, copy-up), to widen the
 * window that a concurrent branch change must hit (tests/t/63); and in a
 * link group's copy-up after the index entry is made, and between the
 * copy's publish and the union inode's rekey, and (three times) in a
 * lookup of a group's lower member that found no index entry, before it
 * gets its union inode (tests/t/58).
 */
extern unsigned int unionfs_race_delay_us;
void unionfs_race_window_slow(void);
static inline void unionfs_race_window(void)
{
	if (unlikely(READ_ONCE(unionfs_race_delay_us)))
		unionfs_race_window_slow();
}
#else
/*
 * The module a user installs: no fault sites at all. The constant 0, and
 * still a build error for anything but a site constant.
 */
#define UNIONFS_FAULT(site) BUILD_BUG_ON_ZERO((site) >= UNIONFS_FSITE_NR)
static inline void unionfs_race_window(void)
{
}
#endif

#endif /* _UNIONFS_UNION_H */
