// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: hard links across copy-up (docs/concepts.md "Hard links").
 *
 * A regular file of a read-only branch with several names (nlink > 1) is a
 * link group. Its first copy-up goes to the group's index entry in the
 * writable branch, ".wh..wh.unionfs.index/KEY" (KEY: the lower inode's
 * identity, unionfs_index_key()), and the copied-up name is a hard link of
 * that entry. The other names of the group, still lower, resolve through
 * the index at lookup (their winning copy is the index entry itself), so
 * every name shows the same branch inode: the same content, metadata,
 * st_ino and union inode. A name is given its own link to the index entry
 * only when the namespace changes it (unlink, rename): no data is copied
 * again. The union's st_nlink of the group is the upper inode's nlink less
 * the index entry plus the lower names still shown through the index,
 * kept in the trusted.unionfs.nlink xattr of the entry.
 *
 * Files with one name never come here: every hook first checks the lower
 * nlink (no branch I/O, no lookup in the index for them).
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>
#include <linux/uuid.h>
#include <linux/magic.h>

#include "unionfs_trace.h"

#define UNIONFS_INDEX_DIR	UNIONFS_TMPPFX "index"
#define UNIONFS_INDEX_DIR_LEN	(sizeof(UNIONFS_INDEX_DIR) - 1)
#define UNIONFS_XATTR_ORIGIN	UNIONFS_XATTR_PRIVATE "origin"
#define UNIONFS_XATTR_NLINK	UNIONFS_XATTR_PRIVATE "nlink"
/* "<uuid>-<ino>-<generation>" in hex */
#define UNIONFS_IXKEY_LEN	72
/* names of a group moved over to the index at its copy-up, per pass */
#define UNIONFS_INDEX_ALIASES	16
#define UNIONFS_INDEX_PASSES	4096	/* a bound: 64k names */

static void unionfs_trace_index(struct super_block *sb,
				const struct dentry *dentry, int bindex,
				const char *key, const char *what, int err)
{
	if (!trace_unionfs_index_enabled())
		return;
	if (dentry)
		unionfs_trace_dname(unionfs_index, sb, dentry, bindex, key,
				    what, err);
	else
		trace_unionfs_index(sb, "", bindex, key, what, err);
}

/*
 * Does the lower file system @sb name its files for good: a uuid that no
 * other file system of the union has. A file system without one (squashfs,
 * iso9660, ramfs, NFS, FUSE; ext4 after tune2fs -U clear) has only its
 * device number, which the next mount may give another (a loop device) or
 * another file system: its groups would fall apart, or take another
 * image's entries. Two file systems with one uuid (an image and its copy)
 * have the same inode numbers: their groups would mix; so do subvolumes
 * and snapshots of one btrfs (one superblock). Such files are copied up
 * as files with one name are (as overlayfs falls back to index=off for
 * them).
 */
static bool unionfs_index_fs_ok(struct unionfs_btable *bt,
				const struct super_block *sb)
{
	int i;

	if (uuid_is_null(&sb->s_uuid) || sb->s_magic == BTRFS_SUPER_MAGIC)
		return false;
	for (i = 0; i < bt->nbr; i++) {
		const struct super_block *o = bt->br[i]->path.dentry->d_sb;

		if (o != sb && uuid_equal(&o->s_uuid, &sb->s_uuid))
			return false;
	}
	return true;
}

/*
 * Is @ld (branch @b) a member of a link group whose copy-up and lookup go
 * through an index: a regular file with several names in a branch the
 * union does not write, on a file system with its own uuid. The one test
 * every path makes first.
 */
bool unionfs_index_wanted(struct unionfs_btable *bt, int b, struct dentry *ld)
{
	return d_is_reg(ld) && d_inode(ld)->i_nlink > 1 &&
	       !unionfs_branch_rw_mode(bt, b) &&
	       unionfs_index_fs_ok(bt, d_inode(ld)->i_sb);
}

/*
 * The branch whose index the groups of branch @b use: for a branch the
 * union does not write, the nearest one above it that it does, by the
 * mode; -1 if none. By the mode, not by whether its file system takes
 * writes now: one remounted read-only for a while (or by
 * errors=remount-ro) still shows its entries, else the other names of a
 * group would show the old lower file meanwhile, and be another inode of
 * the group after.
 */
int unionfs_index_rw_over(struct unionfs_btable *bt, int b)
{
	int t;

	if (b <= 0 || b >= bt->nbr || unionfs_branch_rw_mode(bt, b))
		return -1;
	for (t = b - 1; t >= 0; t--)
		if (unionfs_branch_rw_mode(bt, t))
			return t;
	return -1;
}

/*
 * The group's key: the lower inode's file system (its uuid, which
 * unionfs_index_fs_ok() requires), inode number and generation. A number
 * reused by a later file of the branch has another generation, so another
 * key.
 */
static int unionfs_index_key(const struct inode *li, char *buf)
{
	return snprintf(buf, UNIONFS_IXKEY_LEN, "%pUb-%llx-%x",
			&li->i_sb->s_uuid, (u64)li->i_ino, li->i_generation);
}

/*
 * trusted.unionfs.origin: the lower inode's number and generation, little
 * endian, 12 bytes (small: with the count it fits in an ext4 inode's own
 * xattr space, so the copy takes no extra block).
 */
struct unionfs_index_origin {
	__le64 ino;
	__le32 gen;
} __packed;

static void unionfs_index_origin(const struct inode *li,
				 struct unionfs_index_origin *o)
{
	o->ino = cpu_to_le64(li->i_ino);
	o->gen = cpu_to_le32(li->i_generation);
}

/* Does the entry @e say it is the index of @li (trusted.unionfs.origin)? */
static bool unionfs_index_verify(struct unionfs_btable *bt, int t,
				 struct dentry *e, const struct inode *li)
{
	struct unionfs_index_origin want, got;
	ssize_t n;

	unionfs_index_origin(li, &want);
	n = unionfs_do_probe_xattr(bt->sb, t, e, UNIONFS_XATTR_ORIGIN, &got,
				   sizeof(got));
	return n == sizeof(got) && !memcmp(&got, &want, sizeof(got));
}

/* The group's count of lower names shown through the index, or -errno. */
static int unionfs_index_read_shown(struct unionfs_btable *bt, int t,
				    struct dentry *d)
{
	char buf[16];
	unsigned int v;
	ssize_t n;

	n = unionfs_do_probe_xattr(bt->sb, t, d, UNIONFS_XATTR_NLINK, buf,
				   sizeof(buf) - 1);
	if (n < 0)
		return n;
	buf[n] = '\0';
	if (kstrtouint(buf, 10, &v) || v > INT_MAX)
		return -EIO;
	return v;
}

/* Caller holds write access to branch @t. */
static int unionfs_index_write_shown(struct unionfs_btable *bt, int t,
				     struct dentry *d, int v)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%d", max(v, 0));

	return unionfs_do_setxattr(bt, t, d, UNIONFS_XATTR_NLINK, buf, n, 0);
}

/* Is the branch dentry @ld an entry of the index of branch @t? */
bool unionfs_index_is_entry(struct unionfs_btable *bt, int t,
			    struct dentry *ld)
{
	struct dentry *p = READ_ONCE(ld->d_parent);

	return p != ld && READ_ONCE(p->d_parent) == bt->br[t]->path.dentry &&
	       p->d_name.len == UNIONFS_INDEX_DIR_LEN &&
	       !memcmp(p->d_name.name, UNIONFS_INDEX_DIR,
		       UNIONFS_INDEX_DIR_LEN);
}

/*
 * The index entry of @key in branch @t, referenced; NULL if there is none
 * (or only a stale one). Caller: the mounter's credentials.
 */
static struct dentry *unionfs_index_find(struct unionfs_btable *bt, int t,
					 const struct inode *li,
					 const char *key, int len)
{
	struct dentry *root = bt->br[t]->path.dentry, *dir, *e;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_INDEX);

	if (err)
		return ERR_PTR(err);
	dir = unionfs_do_lookup(bt, t, root, UNIONFS_INDEX_DIR,
				UNIONFS_INDEX_DIR_LEN);
	if (IS_ERR_OR_NULL(dir))
		return dir;
	if (d_really_is_negative(dir) || !d_is_dir(dir)) {
		dput(dir);
		return NULL;
	}
	e = unionfs_do_lookup(bt, t, dir, key, len);
	dput(dir);
	if (IS_ERR_OR_NULL(e))
		return e;
	if (d_really_is_negative(e)) {
		dput(e);
		return NULL;
	}
	if (!d_is_reg(e) || !unionfs_index_verify(bt, t, e, li)) {
		unionfs_trace_index(bt->sb, NULL, t, key, "stale", 0);
		dput(e);
		return NULL;
	}
	return e;
}

/*
 * The branch a lower group member @ud's winner shows its index entry from:
 * the nearest writable branch above, when the name has no copy there; -1
 * if the winner is no such member.
 */
static int unionfs_index_branch(struct unionfs_dentry_info *ud)
{
	int b = ud->bstart, t;

	if (b <= 0 || !unionfs_index_wanted(ud->bt, b, ud->lower[b]))
		return -1;
	t = unionfs_index_rw_over(ud->bt, b);
	return t < 0 || ud->lower[t] ? -1 : t;
}

/*
 * @ud's winner becomes the index entry of its group in branch @t, if any:
 * 1 if it does, 0 if there is none, or the error of the look in the index
 * (the lookup fails with it: the lower file would be another inode than
 * the group's, with the old content).
 */
static int unionfs_index_attach(struct unionfs_dentry_info *ud, int t,
				char *key)
{
	struct inode *li = d_inode(ud->lower[ud->bstart]);
	int len = unionfs_index_key(li, key);
	struct dentry *ix = unionfs_index_find(ud->bt, t, li, key, len);

	if (IS_ERR_OR_NULL(ix))
		return PTR_ERR_OR_ZERO(ix);
	spin_lock(&ud->lock);
	ud->lower[t] = ix;
	ud->bstart = t;
	spin_unlock(&ud->lock);
	return 1;
}

/*
 * Lookup (unionfs_lookup_branches, mounter's credentials): a name whose
 * winner is a lower member of a group with an index entry in the nearest
 * writable branch above shows that entry: it becomes the name's winning
 * copy in that branch (@ud is not published yet). 0 or the error.
 */
int unionfs_index_lookup(struct dentry *parent, const struct qstr *name,
			 struct unionfs_dentry_info *ud)
{
	char key[UNIONFS_IXKEY_LEN];
	int t = unionfs_index_branch(ud);
	int found;

	if (t < 0)
		return 0;
	found = unionfs_index_attach(ud, t, key);
	if (found < 0)
		return found;
	if (!found) {
		/* no entry yet: the window to unionfs_iget (tests/t/58) */
		unionfs_race_window();
		unionfs_race_window();
		unionfs_race_window();
		return 0;
	}
	if (trace_unionfs_index_enabled()) {
		char nm[NAME_MAX + 1];

		/* @name: the caller's stable copy, not NUL-terminated */
		snprintf(nm, sizeof(nm), "%.*s", (int)name->len, name->name);
		trace_unionfs_index(ud->bt->sb, nm, t, key, "found", 0);
	}
	return 0;
}

/* Is @ud's winner the index entry of a group (unionfs_index_lookup)? */
bool unionfs_index_shown(struct unionfs_dentry_info *ud)
{
	return unionfs_index_is_entry(ud->bt, ud->bstart,
				      ud->lower[ud->bstart]);
}

/*
 * May @ud (a lookup's, not published yet) show a link group's index entry:
 * it does, or its winner is a lower member that found none? Then
 * unionfs_lookup holds the mount's ix_lock from unionfs_iget until the
 * name is in the dcache, so that a copy-up of another name of the group
 * (which rekeys its inode and adopts its aliases under ix_lock) comes
 * either before, and this name takes the entry (unionfs_index_relook), or
 * after, and finds this name among the inode's aliases.
 */
bool unionfs_index_related(struct unionfs_dentry_info *ud)
{
	return unionfs_index_shown(ud) || unionfs_index_branch(ud) >= 0;
}

/*
 * unionfs_iget over a lower group member that showed no index entry: has
 * an index entry been made or removed since @ud->ixseq, taken before the
 * lookup looked? (A copy-up moves the count when it publishes the entry,
 * before it takes ix_lock to rekey its inode.)
 */
bool unionfs_index_moved(struct super_block *sb,
			 struct unionfs_dentry_info *ud)
{
	return unionfs_index_branch(ud) >= 0 &&
	       atomic64_read_acquire(&UNIONFS_SB(sb)->ixseq) != ud->ixseq;
}

/*
 * Then, under the mount's ix_lock: does the name show its group's index
 * entry now? @ud (not published yet) takes it: 1, else 0 or the error.
 */
int unionfs_index_relook(struct super_block *sb,
			 struct unionfs_dentry_info *ud)
{
	char key[UNIONFS_IXKEY_LEN];
	const struct cred *old;
	int t = unionfs_index_branch(ud);
	int found;

	lockdep_assert_held(&UNIONFS_SB(sb)->ix_lock);
	if (t < 0)
		return 0;
	old = unionfs_override_creds(sb);
	found = unionfs_index_attach(ud, t, key);
	revert_creds(old);
	if (found > 0)
		unionfs_trace_index(sb, NULL, t, key, "found-late", 0);
	return found;
}

/*
 * Mark (@on) or unmark @inode's link group's first copy-up, which makes
 * its index entry (unionfs_copyup_locked, no freeze protection held).
 */
void unionfs_index_publishing(struct inode *inode, bool on)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(inode->i_sb);

	mutex_lock(&sbi->ix_lock);
	WRITE_ONCE(UNIONFS_I(inode)->ix_publish, on);
	mutex_unlock(&sbi->ix_lock);
}

/*
 * unionfs_iget_group, under ix_lock: @ud (not published yet) took an
 * index entry that is not final, made by a copy-up of another name of the
 * group still in flight, or removed after that copy-up failed. The name
 * shows its lower member instead: a copy-up that succeeds adopts it
 * (unionfs_index_copied_up); one that failed left the lower file as it
 * was, and a write through this name copies it up itself. The entry is
 * put after ix_lock (unionfs_index_drop: its last put may evict a copy).
 * -ESTALE if the name has no lower member (never: an entry is attached
 * over one).
 */
int unionfs_index_detach(struct unionfs_dentry_info *ud)
{
	char key[UNIONFS_IXKEY_LEN];
	struct dentry *ix = NULL;
	int t, b;

	lockdep_assert_held(&UNIONFS_SB(ud->bt->sb)->ix_lock);

	spin_lock(&ud->lock);
	t = ud->bstart;
	for (b = t + 1; b <= ud->bend && !ud->lower[b]; b++)
		;
	if (!WARN_ON_ONCE(b > ud->bend)) {
		ix = ud->lower[t];
		ud->lower[t] = NULL;
		ud->bstart = b;
	}
	spin_unlock(&ud->lock);
	if (!ix)
		return -ESTALE;
	if (trace_unionfs_index_enabled()) {
		unionfs_index_key(d_inode(ud->lower[b]), key);
		trace_unionfs_index(ud->bt->sb, "", t, key, "detached", 0);
	}
	WARN_ON_ONCE(ud->ixdrop);
	ud->ixdrop = ix;
	return 0;
}

/*
 * The lookup of @ud, before it publishes @ud: the entry it did not take,
 * for it to put after ix_lock (or NULL).
 */
struct dentry *unionfs_index_drop(struct unionfs_dentry_info *ud)
{
	struct dentry *ix = ud->ixdrop;

	ud->ixdrop = NULL;
	return ix;
}

/*
 * A new union inode over @ud: an upper member of a group (an index entry
 * or a link of one: nlink > 1, or the entry itself) counts its names with
 * the xattr (unionfs_index_nlink). Called before its attributes are set.
 */
void unionfs_index_inode_init(struct inode *inode,
			      struct unionfs_dentry_info *ud)
{
	struct dentry *top = ud->lower[ud->bstart];
	int v;

	UNIONFS_I(inode)->ix_lower = -1;
	if (!d_is_reg(top) || (d_inode(top)->i_nlink < 2 &&
			       !unionfs_index_is_entry(ud->bt, ud->bstart,
						       top)))
		return;
	v = unionfs_index_read_shown(ud->bt, ud->bstart, top);
	if (v >= 0)
		UNIONFS_I(inode)->ix_lower = v;
}

/*
 * The union's nlink of @inode whose winning branch inode has @nlink: for
 * a group, the upper names (less the index entry) and the lower names
 * still shown through the index.
 */
unsigned int unionfs_index_nlink(const struct inode *inode,
				 unsigned int nlink)
{
	int v = READ_ONCE(UNIONFS_I(inode)->ix_lower);

	if (v < 0 || !nlink)
		return nlink;
	return nlink - 1 + v;
}

/* A link in @dir is not a change of it the user made: keep its times. */
static void unionfs_index_restore_times(struct unionfs_btable *bt, int t,
					struct dentry *dir,
					const struct kstat *st)
{
	struct iattr attr = {
		.ia_valid = ATTR_ATIME | ATTR_MTIME | ATTR_ATIME_SET |
			    ATTR_MTIME_SET,
		.ia_atime = st->atime,
		.ia_mtime = st->mtime,
	};

	inode_lock(d_inode(dir));
	unionfs_do_setattr(bt, t, dir, &attr);
	inode_unlock(d_inode(dir));
}

/*
 * Link the index entry @ix (branch @t) to @name in @lparent, in one step
 * under the parent's lock, the group's count of lower names shown through
 * the index lowered first (and restored if the link fails). Caller: the
 * mounter's credentials, write access to @t, the union inode's cu_lock.
 * Returns the new name, referenced; *@shown gets the new count.
 */
static struct dentry *unionfs_index_link_name(struct unionfs_btable *bt,
					      int t, struct dentry *ix,
					      struct dentry *lparent,
					      const struct qstr *name,
					      int *shown)
{
	struct path ppath = { .mnt = unionfs_mnt(bt, t), .dentry = lparent };
	struct dentry *target;
	struct kstat pst;
	int err, v;

	v = unionfs_index_read_shown(bt, t, ix);
	if (v < 0)
		return ERR_PTR(v == -ENODATA ? -EIO : v);
	err = unionfs_do_getattr(bt->sb, t, &ppath, &pst, STATX_BASIC_STATS,
				 AT_STATX_SYNC_AS_STAT);
	if (!err)
		err = unionfs_index_write_shown(bt, t, ix, v - 1);
	if (err)
		return ERR_PTR(err);
	target = unionfs_lock_lookup(bt, t, lparent, name->name, name->len);
	if (IS_ERR(target)) {
		err = PTR_ERR(target);
		goto out_restore;
	}
	if (d_really_is_positive(target)) {
		err = -EEXIST;
	} else {
		err = unionfs_do_link(bt, t, ix, d_inode(lparent), target);
		if (!err && d_really_is_negative(target))
			err = -EIO;	/* a branch fs that does not instantiate */
	}
	inode_unlock(d_inode(lparent));
	if (!err) {
		unionfs_index_restore_times(bt, t, lparent, &pst);
		*shown = max(v - 1, 0);
		return target;
	}
	dput(target);
out_restore:
	unionfs_index_write_shown(bt, t, ix, v);
	return ERR_PTR(err);
}

/*
 * Copy-up (cu_lock held, mounter's credentials, no write access taken) of
 * the lower group member @src (branch @b) to @lparent in branch @t when
 * the group has an index entry there already: the name becomes a link of
 * it, no data copied. Returns 0 (*@newld: the name), 1 when the group has
 * no index entry (a real copy-up follows), or -errno.
 */
int unionfs_index_copyup_link(struct dentry *dentry, struct dentry *src,
			      int b, struct dentry *lparent, int t,
			      struct dentry **newld)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	char key[UNIONFS_IXKEY_LEN];
	struct dentry *ix, *nd;
	int len, err, shown;

	if (!unionfs_index_wanted(bt, b, src))
		return 1;
	len = unionfs_index_key(d_inode(src), key);
	ix = unionfs_index_find(bt, t, d_inode(src), key, len);
	if (IS_ERR_OR_NULL(ix))
		return ix ? PTR_ERR(ix) : 1;
	err = unionfs_want_write(bt, t);
	if (!err) {
		nd = unionfs_index_link_name(bt, t, ix, lparent,
					     &dentry->d_name, &shown);
		unionfs_drop_write(bt, t);
		err = PTR_ERR_OR_ZERO(nd);
		if (!err)
			*newld = nd;
	}
	unionfs_trace_index(bt->sb, dentry, t, key, "linked", err);
	dput(ix);
	return err;
}

/* The index directory of branch @t, made if missing. Caller as below. */
static struct dentry *unionfs_index_mkdir(struct unionfs_btable *bt, int t)
{
	struct dentry *root = bt->br[t]->path.dentry, *d;
	int err = 0;

	d = unionfs_lock_lookup(bt, t, root, UNIONFS_INDEX_DIR,
				UNIONFS_INDEX_DIR_LEN);
	if (IS_ERR(d))
		return d;
	if (d_really_is_negative(d)) {
		err = unionfs_do_mkdir(bt, t, d_inode(root), d, S_IFDIR | 0700);
		if (!err) {	/* our own change of the root's branch dir */
			struct inode *ri = d_inode(bt->sb->s_root);

			WRITE_ONCE(UNIONFS_I(ri)->snap, unionfs_dir_snap(ri));
		}
	} else if (!d_is_dir(d)) {
		pr_warn_ratelimited("branch %d: %s is not a directory\n", t,
				    UNIONFS_INDEX_DIR);
		err = -EIO;
	}
	inode_unlock(d_inode(root));
	if (err) {
		dput(d);
		return ERR_PTR(err);
	}
	return d;
}

/*
 * An index entry was made or removed: cached merged listings that may show
 * a name of its group are stale (readdir.c reads sbi->ixseq before it
 * builds one). The barrier orders the entry's change before the count, so
 * a listing that saw the new count sees the entry's new state too.
 */
static void unionfs_index_changed(struct super_block *sb)
{
	smp_mb__before_atomic();	/* the entry's link or unlink first */
	atomic64_inc(&UNIONFS_SB(sb)->ixseq);
}

/*
 * Publish phase of the first copy-up of a group member (copyup.c): the
 * complete O_TMPFILE copy @tmp gets the group's identity and count, then
 * its index name, in one step under the index directory's lock. A stale
 * entry of the key (whose origin does not match) is replaced. Caller:
 * mounter's credentials, write access to @t, no branch directory locked.
 * Returns the index entry, referenced; unionfs_index_remove() undoes it.
 */
struct dentry *unionfs_index_create(struct unionfs_btable *bt, int t,
				    struct dentry *tmp, struct inode *origin,
				    const struct dentry *dentry)
{
	struct unionfs_index_origin o;
	char key[UNIONFS_IXKEY_LEN];
	struct dentry *dir, *e = NULL;
	int len, err;

	len = unionfs_index_key(origin, key);
	unionfs_index_origin(origin, &o);
	err = unionfs_do_setxattr(bt, t, tmp, UNIONFS_XATTR_ORIGIN, &o,
				  sizeof(o), 0);
	if (!err)
		err = unionfs_index_write_shown(bt, t, tmp,
						(int)origin->i_nlink - 1);
	if (err)
		goto out;
	dir = unionfs_index_mkdir(bt, t);
	if (IS_ERR(dir)) {
		err = PTR_ERR(dir);
		goto out;
	}
	e = unionfs_lock_lookup(bt, t, dir, key, len);
	if (IS_ERR(e)) {
		err = PTR_ERR(e);
		e = NULL;
		dput(dir);
		goto out;
	}
	if (d_really_is_positive(e)) {
		if (d_is_reg(e) && unionfs_index_verify(bt, t, e, origin)) {
			err = -EEXIST;	/* a live group: not ours to replace */
		} else {
			unionfs_trace_index(bt->sb, dentry, t, key, "stale", 0);
			err = d_is_dir(e) ? -EIO :
			      unionfs_do_unlink(bt, t, d_inode(dir), e);
			if (!err) {
				dput(e);
				e = unionfs_do_lookup_undo(bt, t, dir, key, len);
				if (IS_ERR(e)) {
					err = PTR_ERR(e);
					e = NULL;
				}
			}
		}
	}
	if (!err)
		err = unionfs_do_link(bt, t, tmp, d_inode(dir), e);
	if (!err && d_really_is_negative(e))
		err = -EIO;
	if (!err)
		unionfs_index_changed(bt->sb);
	inode_unlock(d_inode(dir));
	dput(dir);
	if (err) {
		dput(e);
		e = NULL;
	}
out:
	unionfs_trace_index(bt->sb, dentry, t, key, "created", err);
	return err ? ERR_PTR(err) : e;
}

/* Undo unionfs_index_create() after a later failure of the copy-up. */
void unionfs_index_remove(struct unionfs_btable *bt, int t, struct dentry *e)
{
	struct dentry *dir = dget_parent(e);
	int err = -ESTALE;

	inode_lock_nested(d_inode(dir), I_MUTEX_PARENT);
	if (e->d_parent == dir && !d_unhashed(e) && d_really_is_positive(e))
		err = unionfs_do_unlink(bt, t, d_inode(dir), e);
	unionfs_index_changed(bt->sb);
	/* the entry's name is its key; stable under the directory's lock */
	unionfs_trace_index(bt->sb, NULL, t, e->d_name.name, "removed", err);
	inode_unlock(d_inode(dir));
	dput(dir);
}

/*
 * Is @alias done with by unionfs_index_copied_up: it shows the index entry
 * @ix of branch @t, or it is unhashed (dropped) and could not (i_lock held)
 */
static bool unionfs_index_settled(struct dentry *alias,
				  struct unionfs_btable *bt, int t,
				  struct dentry *ix)
{
	struct unionfs_dentry_info *aud = READ_ONCE(alias->d_fsdata);

	if (aud && t < aud->nbr && READ_ONCE(aud->lower[t]) == ix)
		return true;
	return d_unhashed(alias) &&
	       !(aud && aud->bt == bt && READ_ONCE(aud->bstart) > t &&
		 !READ_ONCE(aud->lower[t]));
}

/*
 * After the copy-up of @dentry to @newld (branch @t) from @src, its union
 * inode's cu_lock and the mount's ix_lock held: if the copy is a group's
 * (its count xattr is there), the union inode counts its names with it,
 * and the other names of the group in the dcache (aliases of the union
 * inode) show the index entry from now on, instead of being dropped.
 * Returns true then.
 */
bool unionfs_index_copied_up(struct dentry *dentry, struct dentry *src,
			     int t, struct dentry *newld)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	struct inode *inode = d_inode(dentry);
	struct dentry *todo[UNIONFS_INDEX_ALIASES], *alias, *ix;
	char key[UNIONFS_IXKEY_LEN];
	const struct cred *old;
	int i, n, len, v, adopted = 0, pass = 0;

	if (!d_is_reg(newld) || d_inode(newld)->i_nlink < 2 ||
	    d_inode(src)->i_nlink < 2)
		return false;
	v = unionfs_index_read_shown(bt, t, newld);
	if (v < 0)
		return false;
	WRITE_ONCE(UNIONFS_I(inode)->ix_lower, v);
	len = unionfs_index_key(d_inode(src), key);
	old = unionfs_override_creds(bt->sb);
	ix = unionfs_index_find(bt, t, d_inode(src), key, len);
	revert_creds(old);
	if (IS_ERR_OR_NULL(ix))
		return false;
	/*
	 * Every alias, UNIONFS_INDEX_ALIASES at a time: one only dropped
	 * would, while held (an open file, a cwd), keep showing the lower
	 * file. Each pass adopts or drops each alias it takes, and the next
	 * takes only the others (no new alias comes: lookups of the group's
	 * names take ix_lock, which the caller holds).
	 */
	do {
		n = 0;
		spin_lock(&inode->i_lock);
		hlist_for_each_entry(alias, &inode->i_dentry, d_u.d_alias) {
			if (alias == dentry ||
			    unionfs_index_settled(alias, bt, t, ix))
				continue;
			todo[n++] = dget(alias);
			if (n == UNIONFS_INDEX_ALIASES)
				break;
		}
		spin_unlock(&inode->i_lock);
		for (i = 0; i < n; i++) {
			struct unionfs_dentry_info *aud = UNIONFS_D(todo[i]);
			bool done = false;

			if (aud) {
				spin_lock(&aud->lock);
				if (aud->bt == bt && aud->bstart > t &&
				    !aud->lower[t]) {
					aud->lower[t] = dget(ix);
					aud->bstart = t;
				}
				done = aud->bt == bt && aud->lower[t] == ix;
				spin_unlock(&aud->lock);
			}
			if (!done)
				d_drop(todo[i]);
			dput(todo[i]);
		}
		adopted += n;
	} while (n == UNIONFS_INDEX_ALIASES && ++pass < UNIONFS_INDEX_PASSES);
	unionfs_trace_index(bt->sb, dentry, t, key, "adopted", adopted);
	dput(ix);
	return true;
}

/*
 * Give @dentry, whose winning copy is the index entry @ix of branch @t,
 * a link of its own under its name (its parents copied up first). Caller
 * holds the union inode's cu_lock.
 */
static int unionfs_index_linkup(struct dentry *dentry, struct dentry *ix,
				int t)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct unionfs_btable *bt = ud->bt;
	struct dentry *parent = dget_parent(dentry), *lparent, *nd;
	const struct cred *old;
	int err, shown = 0;

	err = unionfs_copyup_dir(parent, bt, t);
	if (err)
		goto out;
	/* @t is a branch of @bt: the parent read on that table only */
	lparent = unionfs_lower_dentry_at(parent, bt, t);
	err = -ESTALE;
	if (IS_ERR_OR_NULL(lparent))
		goto out;
	err = unionfs_want_write(bt, t);
	if (!err) {
		old = unionfs_override_creds(bt->sb);
		nd = unionfs_index_link_name(bt, t, ix, lparent,
					     &dentry->d_name, &shown);
		revert_creds(old);
		unionfs_drop_write(bt, t);
		err = PTR_ERR_OR_ZERO(nd);
	}
	if (!err) {
		spin_lock(&ud->lock);
		if (ud->lower[t] == ix)
			swap(ud->lower[t], nd);	/* nd: our old reference */
		spin_unlock(&ud->lock);
		dput(nd);
		WRITE_ONCE(UNIONFS_I(d_inode(dentry))->ix_lower, shown);
		/* our own change of the parent's lower directory */
		WRITE_ONCE(UNIONFS_I(d_inode(parent))->snap,
			   unionfs_dir_snap(d_inode(parent)));
	}
	if (trace_unionfs_index_enabled()) {
		char key[UNIONFS_IXKEY_LEN];

		snprintf(key, sizeof(key), "%pd", ix);
		unionfs_trace_index(bt->sb, dentry, t, key, "linked", err);
	}
	dput(lparent);
out:
	dput(parent);
	return err;
}

/*
 * Before a namespace change of @dentry (unlink, rename source or target;
 * cu_lock of its union inode held): a name of a link group must be a name
 * of its own in a writable branch, so that removing it removes one name
 * of the group: a lower member is copied up (through the index), a name
 * showing the index entry gets its link. Nothing for any other file.
 */
int unionfs_index_prepare_remove(struct dentry *dentry)
{
	struct unionfs_btable *bt;
	struct dentry *ld;
	int b, t, err = 0;

	if (d_really_is_negative(dentry) || !d_is_reg(dentry))
		return 0;
	bt = unionfs_dbt(dentry);
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return 0;	/* the operation itself says ESTALE */
	/*
	 * Not while the index branch is read-only for now: a whiteout in a
	 * branch above would leave the group's count of names high.
	 */
	if (unionfs_index_is_entry(bt, b, ld)) {
		err = unionfs_branch_writable(bt, b) ?
		      unionfs_index_linkup(dentry, ld, b) : -EROFS;
	} else if (unionfs_index_wanted(bt, b, ld)) {
		t = unionfs_index_rw_over(bt, b);
		if (t >= 0 && !unionfs_branch_writable(bt, t))
			err = -EROFS;
		else if (t >= 0)
			err = unionfs_copyup_dentry_held(dentry, t,
							 UNIONFS_CUR_LINK_GROUP,
							 -1);
	}
	dput(ld);
	return err;
}

/*
 * readdir (readdir.c): has branch @b, read-only, an index in the nearest
 * writable branch above it? Returns that branch, or -1. A listing of a
 * directory of @b then gives its regular files their group's number.
 */
int unionfs_index_over(struct unionfs_btable *bt, int b)
{
	struct dentry *root, *d;
	const struct cred *old;
	int t;

	t = unionfs_index_rw_over(bt, b);
	if (t < 0)
		return -1;
	root = bt->br[t]->path.dentry;
	old = unionfs_override_creds(bt->sb);
	d = unionfs_do_lookup(bt, t, root, UNIONFS_INDEX_DIR,
			      UNIONFS_INDEX_DIR_LEN);
	revert_creds(old);
	if (IS_ERR_OR_NULL(d))
		return -1;
	if (d_really_is_negative(d) || !d_is_dir(d))
		t = -1;
	dput(d);
	return t;
}

/*
 * d_ino of @name in the directory @ldir of the read-only branch @b: the
 * union number of its group's index entry in branch @t, or 0 (not a
 * member of an indexed group). Caller: the mounter's credentials, no
 * branch directory locked.
 */
u64 unionfs_index_dino(struct unionfs_btable *bt, int b, int t,
		       struct dentry *ldir, const char *name, int len)
{
	char key[UNIONFS_IXKEY_LEN];
	struct dentry *ld, *ix;
	u64 ino = 0;

	ld = unionfs_do_lookup(bt, b, ldir, name, len);
	if (IS_ERR_OR_NULL(ld))
		return 0;
	if (d_really_is_positive(ld) && unionfs_index_wanted(bt, b, ld)) {
		ix = unionfs_index_find(bt, t, d_inode(ld), key,
					unionfs_index_key(d_inode(ld), key));
		if (!IS_ERR_OR_NULL(ix)) {
			ino = unionfs_ino(unionfs_br(bt, t), d_inode(ix)->i_ino);
			dput(ix);
		}
	}
	dput(ld);
	return ino;
}
