// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: copy-up.
 *
 * An object on a read-only branch that is about to change is copied to the
 * nearest writable branch of higher priority (seed: copyup_dentry), in
 * four phases (struct unionfs_copyup_ctx; docs/concepts.md, "Copy-up
 * phases"), one path for every file type:
 *  - prepare: the temporary, in the target directory: an O_TMPFILE file
 *    for a regular file where the branch fs has them (no name at all until
 *    it is complete), else a hidden name ".wh..wh.unionfs.N" (a whiteout of
 *    an impossible name). It is never more open than the original: made
 *    with mode 0 by the mounter, the ACLs it inherits from a default ACL of
 *    the target directory removed at once;
 *  - data: regular files (holes preserved, 1 MiB chunks, interruptible by
 *    a fatal signal);
 *  - meta: the owner, then the xattrs (the ACLs set the permission bits),
 *    then the full mode and the times;
 *  - publish: under the parent's lock, verified, linked (O_TMPFILE) or
 *    renamed into place.
 * A failure at any phase removes the temporary, restores the parent's
 * times and leaves the original untouched. Each phase is a fault site and
 * ends with a unionfs_copyup_phase event. Copy-ups of one object are
 * serialized by the union inode's cu_lock; parents are copied top-down,
 * one at a time, each from its winning copy, whatever branch that is in
 * (docs/concepts.md, "Copy-up with several writable branches"). Named
 * temporaries left by a crash are removed when the union reads their
 * directory (unionfs_clean_leftovers).
 *
 * Freeze protection of the target branch is held at one level at a time:
 * mnt_want_write for the namespace and attribute steps, file_start_write
 * per data chunk with nothing around it (6.1's do_splice_direct expects
 * its caller to hold it; holding both deadlocked against fsfreeze).
 */
#include "union.h"
#include "lower.h"

#include <linux/file.h>
#include <linux/splice.h>
#include <linux/xattr.h>
#include <linux/security.h>
#include <linux/sched/signal.h>
#include <linux/ktime.h>
#include <linux/sizes.h>
#include <linux/posix_acl_xattr.h>
#include <linux/ctype.h>

#include "unionfs_trace.h"

#define UNIONFS_CHUNK	SZ_1M

int unionfs_nearest_writable(struct unionfs_btable *bt, int bindex)
{
	int t;

	for (t = min(bindex, bt->nbr - 1); t >= 0; t--)
		if (unionfs_branch_writable(bt, t))
			return t;
	return -EROFS;
}

/*
 * The one branch where a file with other names (a link group) at branch
 * @b keeps them: @b if the union writes it, else the nearest one above it
 * that it does, where its copy-up goes through the group's index entry. By
 * the mode, as the index (unionfs_index_rw_over): a branch of rw mode whose
 * file system is read-only for now is still the group's, and the file is
 * not copied elsewhere meanwhile (another file: review 21) but refused
 * with EROFS, as the index does (unionfs_index_prepare_remove). -EROFS
 * also if no branch at or above @b is of rw mode.
 */
int unionfs_group_branch(struct unionfs_btable *bt, int b)
{
	int g;

	for (g = min(b, bt->nbr - 1); g >= 0; g--)
		if (unionfs_branch_rw_mode(bt, g))
			return unionfs_branch_writable(bt, g) ? g : -EROFS;
	return -EROFS;
}

/*
 * @size bytes of @in to @out, at offset 0 of both. Where the two are on one
 * superblock whose fs can share extents, the data is cloned (O(1) in the
 * size, as overlayfs' copy-up does; *@cloned set); else, or if the clone is
 * refused or partial, copied chunk by chunk, holes kept.
 */
static int unionfs_copy_data(struct super_block *sb, int t, struct file *in,
			     struct file *out, loff_t size, loff_t *copied,
			     bool *cloned)
{
	bool skip_holes = in->f_mode & FMODE_LSEEK;
	loff_t pos = 0, data_end = 0;
	int err = 0;

	if (size && out->f_op->remap_file_range &&
	    file_inode(in)->i_sb == file_inode(out)->i_sb &&
	    unionfs_do_clone(sb, t, in, out, size) == size) {
		*copied = size;
		*cloned = true;
		return 0;
	}
	while (pos < size) {
		loff_t in_pos, out_pos, chunk = min_t(loff_t, UNIONFS_CHUNK,
						      size - pos);
		long bytes;

		if (fatal_signal_pending(current))
			return -EINTR;
		/*
		 * Holes are kept: where the next data extent starts and ends
		 * is asked once per extent (asking per chunk walked a dense
		 * tmpfs file's page cache to its end every time: quadratic).
		 */
		if (skip_holes && pos >= data_end) {
			loff_t data = unionfs_do_llseek(sb, in, pos,
							SEEK_DATA);

			if (data == -ENXIO)
				break;		/* only a hole is left */
			if (data < 0) {
				skip_holes = false;
			} else if (data > pos) {
				pos = min(data, size);
				continue;
			} else {
				loff_t hole = unionfs_do_llseek(sb, in, pos,
								SEEK_HOLE);

				data_end = hole > pos ? hole : size;
			}
		}
		if (skip_holes)
			chunk = min(chunk, data_end - pos);
		err = UNIONFS_FAULT(UNIONFS_FSITE_COPYUP_DATA);
		if (err)
			return err;
		in_pos = pos;
		out_pos = pos;
		file_start_write(out);
		bytes = unionfs_do_splice(sb, in, &in_pos, out, &out_pos,
					  chunk, SPLICE_F_MOVE);
		file_end_write(out);
		if (bytes < 0)
			return bytes;
		if (!bytes)
			return -EIO;	/* the source shrank under us */
		pos += bytes;
		*copied += bytes;
		cond_resched();
	}
	return 0;
}

static bool unionfs_must_copy_xattr(const char *name)
{
	return !strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS) ||
	       !strcmp(name, XATTR_NAME_POSIX_ACL_DEFAULT) ||
	       !strncmp(name, XATTR_SECURITY_PREFIX,
			XATTR_SECURITY_PREFIX_LEN);
}

static int unionfs_copy_xattrs(struct unionfs_btable *bt, int b, int t,
			       struct dentry *src, struct dentry *dst)
{
	ssize_t list_size, size;
	char *list, *name, *value = NULL;
	int err = 0;

	list_size = unionfs_do_listxattr(bt->sb, b, src, NULL, 0);
	if (list_size <= 0)
		return list_size == -EOPNOTSUPP ? 0 : list_size;
	list = kvzalloc(list_size, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	list_size = unionfs_do_listxattr(bt->sb, b, src, list, list_size);
	if (list_size < 0) {
		err = list_size;
		goto out;
	}
	for (name = list; name < list + list_size;
	     name += strlen(name) + 1) {
		if (unionfs_xattr_private(name))
			continue;	/* the union's own (index.c) */
		err = security_inode_copy_up_xattr(name);
		if (err < 0 && err != -EOPNOTSUPP)
			break;
		if (err == 1) {
			err = 0;
			continue;	/* the LSM discards it */
		}
		size = unionfs_do_getxattr(bt->sb, b, src, name, NULL, 0);
		if (size < 0) {
			err = size;
			break;
		}
		kvfree(value);
		value = kvmalloc(size ?: 1, GFP_KERNEL);
		if (!value) {
			err = -ENOMEM;
			break;
		}
		size = unionfs_do_getxattr(bt->sb, b, src, name, value, size);
		if (size < 0) {
			err = size;
			break;
		}
		err = unionfs_do_setxattr(bt, t, dst, name, value, size, 0);
		if (err == -EOPNOTSUPP && !unionfs_must_copy_xattr(name))
			err = 0;	/* the target fs has no such namespace */
		if (err)
			break;
	}
out:
	kvfree(value);
	kvfree(list);
	return err;
}

/*
 * The temporary was made with mode 0 in a directory that may have a default
 * ACL: remove what it inherited (an access ACL, a directory's default ACL),
 * so that only the original's ACLs (copied with the xattrs) end up on it.
 */
static int unionfs_strip_acls(struct unionfs_btable *bt, int t,
			      struct dentry *dst)
{
	static const char *const names[] = { XATTR_NAME_POSIX_ACL_ACCESS,
					     XATTR_NAME_POSIX_ACL_DEFAULT };
	int i, err;

	if (!IS_POSIXACL(d_inode(dst)) || d_is_symlink(dst))
		return 0;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (i == 1 && !d_is_dir(dst))
			break;
		err = unionfs_do_removexattr(bt, t, dst, names[i]);
		if (err && err != -ENODATA && err != -EOPNOTSUPP)
			return err;
	}
	return 0;
}

/* The owner first: the ACLs and the mode are set for the final owner. */
static int unionfs_copy_owner(struct unionfs_btable *bt, int t,
			      struct dentry *dst, struct kstat *st)
{
	struct iattr attr;
	int err;

	inode_lock(d_inode(dst));
	attr.ia_valid = ATTR_UID | ATTR_GID;
	attr.ia_vfsuid = VFSUIDT_INIT(st->uid);
	attr.ia_vfsgid = VFSGIDT_INIT(st->gid);
	err = unionfs_do_setattr(bt, t, dst, &attr);
	inode_unlock(d_inode(dst));
	return err;
}

/* Then the mode (after the ACLs, which set the permission bits) and times. */
static int unionfs_copy_attrs(struct unionfs_btable *bt, int t,
			      struct dentry *dst, struct kstat *st)
{
	struct iattr attr;
	int err = 0;

	inode_lock(d_inode(dst));
	if (!S_ISLNK(st->mode)) {
		attr.ia_valid = ATTR_MODE;
		attr.ia_mode = st->mode;
		err = unionfs_do_setattr(bt, t, dst, &attr);
	}
	if (!err) {
		attr.ia_valid = ATTR_ATIME | ATTR_MTIME | ATTR_ATIME_SET |
				ATTR_MTIME_SET;
		attr.ia_atime = st->atime;
		attr.ia_mtime = st->mtime;
		err = unionfs_do_setattr(bt, t, dst, &attr);
	}
	inode_unlock(d_inode(dst));
	return err;
}

/* A copy-up is not a change of its parent: keep the parent's times. */
static void unionfs_restore_times(struct unionfs_btable *bt, int t,
				  struct dentry *dir, struct kstat *st)
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

static int unionfs_set_size(struct unionfs_btable *bt, int t, struct dentry *dst,
			    loff_t size)
{
	struct iattr attr = { .ia_valid = ATTR_SIZE, .ia_size = size };
	int err;

	inode_lock(d_inode(dst));
	err = unionfs_do_setattr(bt, t, dst, &attr);
	inode_unlock(d_inode(dst));
	return err;
}

/*
 * One copy-up (model: overlayfs' struct ovl_copy_up_ctx): what is copied,
 * from where to where, and what has been built so far. The phases
 * (enum unionfs_copyup_phase) each take it, are each a fault site and end
 * with a unionfs_copyup_phase event; the same path serves every file type.
 */
struct unionfs_copyup_ctx {
	struct unionfs_btable *bt;
	struct dentry *dentry;		/* the union name */
	const struct qstr *name;	/* its name, also in the branch */
	struct path spath;		/* the winning copy, branch @b */
	struct dentry *lparent;		/* the parent in branch @t */
	int b, t;
	struct kstat st;		/* of the source */
	struct kstat pst;		/* of @lparent: restored afterwards */
	loff_t len;			/* >= 0: data limit (truncate) */
	loff_t copied;			/* bytes of data copied */
	bool cloned;			/* ... by a clone of the extents */
	bool opaque;			/* a directory: mark the copy opaque */
	bool write;			/* we hold write access to branch @t */
	bool index;			/* a link group's: published to the index */
	struct file *tmpfile;		/* O_TMPFILE temporary, or NULL */
	struct dentry *tmp;		/* the temporary (named or tmpfile's) */
	struct dentry *dest;		/* the published copy */
};

static void unionfs_copyup_phase_end(struct unionfs_copyup_ctx *c,
				     enum unionfs_copyup_phase phase, int err)
{
	unionfs_trace_dname(unionfs_copyup_phase, c->bt->sb, c->dentry, c->t,
			    phase, !!c->tmpfile, err);
}

/* Remove the named temporary (never published) and its opaque marker. */
static void unionfs_remove_tmp(struct unionfs_copyup_ctx *c)
{
	struct unionfs_btable *bt = c->bt;
	struct dentry *tmp = c->tmp, *lparent = c->lparent;
	int t = c->t;

	if (d_really_is_positive(tmp) && d_is_dir(tmp)) {
		int len;
		const char *name = unionfs_opaque_name(bt->sb, &len);
		struct dentry *op;

		/* the opaque marker a copied directory may have got */
		inode_lock_nested(d_inode(tmp), I_MUTEX_CHILD);
		op = unionfs_do_lookup_undo(bt, t, tmp, name, len);
		if (!IS_ERR(op)) {
			if (d_really_is_positive(op))
				unionfs_do_unlink(bt, t, d_inode(tmp), op);
			dput(op);
		}
		inode_unlock(d_inode(tmp));
	}
	inode_lock_nested(d_inode(lparent), I_MUTEX_PARENT);
	if (tmp->d_parent == lparent && !d_unhashed(tmp) &&
	    d_really_is_positive(tmp)) {
		if (d_is_dir(tmp))
			unionfs_do_rmdir(bt, t, d_inode(lparent), tmp);
		else
			unionfs_do_unlink(bt, t, d_inode(lparent), tmp);
	}
	inode_unlock(d_inode(lparent));
}

/*
 * Did the source change since @st, or is it open for writing (a write in
 * progress updated the times before it started copying data; an mmap
 * writer may change no time at all)? Updates @st to what it is now.
 *
 * Open for writing says "a direct writer" only in a branch the union does
 * not write: in a writable one the writer may be the union itself, and
 * one that has finished. A copy-up's own O_TMPFILE file is released by a
 * deferred fput, at the return to user space, so a copy-up of that copy in
 * the same call (a link group's name given its own link in the index
 * branch, then renamed into a higher branch: udiff seed 3147) saw it open
 * for writing three times and failed with ESTALE and false hazards.
 */
static bool unionfs_src_changed(struct unionfs_btable *bt, int b,
				const struct path *spath, struct kstat *st)
{
	struct kstat now;
	bool changed;

	if (unionfs_do_getattr(bt->sb, b, spath, &now, STATX_BASIC_STATS,
			       AT_STATX_SYNC_AS_STAT))
		return true;
	changed = (!unionfs_branch_writable(bt, b) &&
		   atomic_read(&d_inode(spath->dentry)->i_writecount) > 0) ||
		  now.size != st->size ||
		  !timespec64_equal(&now.mtime, &st->mtime) ||
		  !timespec64_equal(&now.ctime, &st->ctime);
	*st = now;
	return changed;
}

/*
 * A regular file's temporary, where the branch fs can make one: an
 * O_TMPFILE file, with no name until the publish phase links it in (no
 * other name ever appears in the directory, and nothing is left behind by
 * a crash). The mode is S_IFREG | 0 (umask and default ACL apply as to a
 * create: the ACLs inherited are then removed, as for a named one).
 */
static int unionfs_copyup_tmpfile(struct unionfs_copyup_ctx *c)
{
	struct file *f;

	f = unionfs_do_tmpfile_open(c->bt, c->t, c->lparent, S_IFREG,
				    O_WRONLY, current_cred());
	if (IS_ERR(f))
		return PTR_ERR(f);
	c->tmpfile = f;
	c->tmp = dget(f->f_path.dentry);
	return unionfs_strip_acls(c->bt, c->t, c->tmp);
}

/*
 * Phase 1: the temporary in @lparent, made by the mounter with mode 0 (the
 * permission bits come last), of the source's type, then closed to
 * everyone: the ACLs it inherited from a default ACL of the target
 * directory are removed before anything goes into it. Takes write access
 * to branch @t (held until the end, except around the data).
 */
static int unionfs_copyup_prepare(struct unionfs_copyup_ctx *c)
{
	struct unionfs_btable *bt = c->bt;
	struct path ppath = { .mnt = unionfs_mnt(bt, c->t),
			      .dentry = c->lparent };
	struct inode *dir = d_inode(c->lparent);
	char tmpname[UNIONFS_TMPNAME_LEN];
	struct dentry *tmp;
	int err, tmplen;

	err = unionfs_do_getattr(bt->sb, c->b, &c->spath, &c->st,
				 STATX_BASIC_STATS, AT_STATX_SYNC_AS_STAT);
	if (!err)	/* the parent's times are restored afterwards */
		err = unionfs_do_getattr(bt->sb, c->t, &ppath, &c->pst,
					 STATX_BASIC_STATS,
					 AT_STATX_SYNC_AS_STAT);
	if (err)
		return err;
	err = unionfs_want_write(bt, c->t);
	if (err)
		return err;
	c->write = true;
	err = UNIONFS_FAULT(UNIONFS_FSITE_COPYUP_CREATE);
	if (err)
		return err;
	if (S_ISREG(c->st.mode)) {
		err = unionfs_copyup_tmpfile(c);
		if (c->tmpfile || (err != -EOPNOTSUPP && err != -EINVAL))
			return err;
		/* the branch fs has no O_TMPFILE: a named temporary */
	}

	tmplen = unionfs_tmp_name(bt->sb, tmpname);
	tmp = unionfs_lock_lookup(bt, c->t, c->lparent, tmpname, tmplen);
	if (IS_ERR(tmp))
		return PTR_ERR(tmp);
	if (d_really_is_positive(tmp)) {
		err = -EEXIST;
		goto out_unlock;
	}
	switch (c->st.mode & S_IFMT) {
	case S_IFREG:
		err = unionfs_do_create(bt, c->t, dir, tmp, S_IFREG);
		break;
	case S_IFDIR:
		err = unionfs_do_mkdir(bt, c->t, dir, tmp, S_IFDIR);
		break;
	case S_IFLNK: {
		DEFINE_DELAYED_CALL(done);
		const char *link = unionfs_do_get_link(bt->sb, c->b,
						       c->spath.dentry, &done);

		err = PTR_ERR_OR_ZERO(link);
		if (!err)
			err = unionfs_do_symlink(bt, c->t, dir, tmp, link);
		do_delayed_call(&done);
		break;
	}
	default:
		err = unionfs_do_mknod(bt, c->t, dir, tmp, c->st.mode & S_IFMT,
				       c->st.rdev);
		break;
	}
out_unlock:
	inode_unlock(dir);
	if (err) {
		dput(tmp);
		return err;
	}
	c->tmp = tmp;
	return unionfs_strip_acls(bt, c->t, tmp);
}

/*
 * Phase 2, regular files: copy the data (up to @len) until the source
 * held still during the copy: a direct change racing with the copy-up
 * (new times or size, or the file open for writing) makes it start over,
 * so the union never settles on a mix of old and new data; after 3 tries
 * it gives up with ESTALE.
 *
 * Runs without write access to branch @t held: each chunk takes the
 * branch's freeze protection itself (unionfs_copy_data), so a freeze of
 * the branch waits for one chunk, not for the whole file, and the copy
 * resumes after the thaw. The union's count of writers to @t stays taken
 * (unionfs_pause_write): a del= of @t meanwhile is refused.
 */
static int unionfs_copyup_data(struct unionfs_copyup_ctx *c)
{
	struct unionfs_btable *bt = c->bt;
	loff_t size = 0;
	int err = 0, werr, tries;

	if (!S_ISREG(c->st.mode))
		return 0;
	/* one freeze-protection level: the chunks take their own */
	unionfs_pause_write(bt, c->t);
	c->write = false;
	for (tries = 0; tries < 3; tries++) {
		struct file *in, *out;

		size = (c->len >= 0 && c->len < c->st.size) ? c->len :
			c->st.size;
		in = unionfs_do_open(bt, c->b, c->spath.dentry, O_RDONLY,
				     current_cred());
		if (IS_ERR(in)) {
			err = PTR_ERR(in);
			goto out;
		}
		out = c->tmpfile ? get_file(c->tmpfile) :
		      unionfs_do_open(bt, c->t, c->tmp, O_WRONLY,
				      current_cred());
		if (IS_ERR(out)) {
			fput(in);
			err = PTR_ERR(out);
			goto out;
		}
		c->copied = 0;
		err = unionfs_copy_data(c->bt->sb, c->t, in, out, size,
					&c->copied, &c->cloned);
		fput(in);
		fput(out);
		if ((err && err != -EIO) ||
		    !unionfs_src_changed(bt, c->b, &c->spath, &c->st))
			goto out;
		unionfs_hazard(bt->sb, UNIONFS_HZ_COPYUP_RACE, c->b,
			       c->name->name,
			       "the branch file changed during copy-up");
	}
	pr_warn_ratelimited("copy-up of '%*pE' from branch %d: the file kept changing in the branch; giving up (ESTALE)\n",
			    (int)c->name->len, c->name->name, c->b);
	err = -ESTALE;
out:
	werr = unionfs_resume_write(bt, c->t);
	if (werr) {
		/* cannot even remove it: a named temporary stays (hidden) */
		pr_warn_ratelimited("copy-up to branch %d: no write access to remove %pd (%d)\n",
				    c->t, c->tmp, werr);
		return err ?: werr;
	}
	c->write = true;
	if (!err && i_size_read(d_inode(c->tmp)) != size)
		err = unionfs_set_size(bt, c->t, c->tmp, size);
	return err;
}

/*
 * Phase 3: the opaque marker of a directory that needs one, the owner
 * (first: the ACLs and the mode are set for the final owner), the xattrs
 * (the ACLs among them, which set the permission bits), the append-only
 * and immutable flags (as UNIONFS_XATTR_PROTATTR), then the full mode and
 * the times.
 */
static int unionfs_copyup_meta(struct unionfs_copyup_ctx *c)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_COPYUP_ATTR);

	if (!err && c->opaque && S_ISDIR(c->st.mode))
		err = unionfs_make_opaque(c->bt, c->t, c->tmp, NULL,
					  UNIONFS_MKR_COPYUP);
	if (!err)
		err = unionfs_copy_owner(c->bt, c->t, c->tmp, &c->st);
	if (!err)
		err = unionfs_copy_xattrs(c->bt, c->b, c->t, c->spath.dentry,
					  c->tmp);
	/* append-only, immutable: kept aside (the flags would refuse the rename) */
	if (!err)
		err = unionfs_prot_store(c->bt, c->t, c->tmp,
					 d_inode(c->dentry)->i_flags &
					 UNIONFS_PROT_FLAGS);
	if (!err)
		err = unionfs_copy_attrs(c->bt, c->t, c->tmp, &c->st);
	return err;
}

/*
 * Is @dentry still the union name whose winner @src (branch @b) is being
 * copied up? An unlink or rename serialized before the publish step (on
 * cu_lock) or a stale dentry (open file of a removed name) must not get
 * the copy linked back under the name.
 */
static int unionfs_copyup_valid(struct dentry *dentry, struct dentry *src,
				int b)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	int err = 0;

	if (d_unhashed(dentry) || d_really_is_negative(dentry))
		return -ENOENT;
	spin_lock(&ud->lock);
	if (ud->bstart != b || ud->lower[b] != src)
		err = -ESTALE;
	spin_unlock(&ud->lock);
	return err;
}

/*
 * Phase 4: under the lock of the target directory, check that the union
 * name still stands for the source and that the name is free in branch
 * @t, then put the complete copy there in one step: a link of the
 * O_TMPFILE temporary, or a rename of the named one. The parent's times
 * are those it had before.
 */
static int unionfs_copyup_publish(struct unionfs_copyup_ctx *c)
{
	struct unionfs_btable *bt = c->bt;
	struct inode *dir = d_inode(c->lparent);
	struct dentry *target, *ixd = NULL;
	int err;

	/* a link group's copy: its index entry first (index.c) */
	if (c->index && c->tmpfile) {
		ixd = unionfs_index_create(bt, c->t, c->tmp,
					   d_inode(c->spath.dentry), c->dentry);
		if (IS_ERR(ixd))
			return PTR_ERR(ixd);
		unionfs_race_window();	/* tests/t/58 "failed publish" */
	}
	target = unionfs_lock_lookup(bt, c->t, c->lparent, c->name->name,
				     c->name->len);
	if (IS_ERR(target)) {
		err = PTR_ERR(target);
		target = NULL;
		goto out_index;
	}
	err = UNIONFS_FAULT(UNIONFS_FSITE_COPYUP_RENAME);
	if (!err)
		err = unionfs_copyup_valid(c->dentry, c->spath.dentry, c->b);
	if (!err && d_really_is_positive(target))
		err = -EEXIST;
	if (!err && c->tmpfile) {
		err = unionfs_do_link(bt, c->t, c->tmp, dir, target);
		if (!err && d_really_is_negative(target))
			err = -EIO;	/* a branch fs that does not instantiate */
	} else if (!err) {
		if (c->tmp->d_parent != c->lparent || d_unhashed(c->tmp))
			err = -ESTALE;
		else
			err = unionfs_do_rename(bt, c->t, dir, c->tmp, dir,
						target, 0);
	}
	inode_unlock(dir);
	if (err) {
		dput(target);
		goto out_index;
	}
	dput(ixd);
	if (c->tmpfile) {
		c->dest = target;
	} else {
		/* the branch fs moved the tmp dentry to the name */
		dput(target);
		c->dest = c->tmp;
		c->tmp = NULL;
	}
	unionfs_restore_times(bt, c->t, c->lparent, &c->pst);
	return 0;
out_index:
	if (ixd) {
		unionfs_index_remove(bt, c->t, ixd);
		dput(ixd);
	}
	return err;
}

/*
 * After a failure: nothing of the copy stays in branch @t (an O_TMPFILE
 * temporary goes with its last reference; a named one is removed) and the
 * parent keeps its times. Then everything the context holds is released.
 */
static void unionfs_copyup_cleanup(struct unionfs_copyup_ctx *c, int err)
{
	if (err && c->tmp && !c->tmpfile && c->write) {
		unionfs_remove_tmp(c);
		unionfs_restore_times(c->bt, c->t, c->lparent, &c->pst);
	}
	dput(c->tmp);
	if (c->tmpfile)
		fput(c->tmpfile);
	if (c->write)
		unionfs_drop_write(c->bt, c->t);
}

/*
 * Copy @src (branch @b) to @name in @lparent (branch @t): prepare, data,
 * meta, publish. @len >= 0 limits the data copied (truncate); @opaque
 * marks a copied directory opaque. Runs with the mounter's credentials.
 * Returns the new lower dentry.
 */
static struct dentry *unionfs_copyup_one(struct unionfs_btable *bt,
					 struct dentry *dentry,
					 struct dentry *src, int b,
					 struct dentry *lparent, int t,
					 const struct qstr *name, loff_t len,
					 loff_t *copied, bool opaque, bool index)
{
	struct unionfs_copyup_ctx c = {
		.bt = bt, .dentry = dentry, .name = name,
		.spath = { .mnt = unionfs_mnt(bt, b), .dentry = src },
		.lparent = lparent, .b = b, .t = t, .len = len,
		.opaque = opaque, .index = index,
	};
	int err;

	err = unionfs_copyup_prepare(&c);
	unionfs_copyup_phase_end(&c, UNIONFS_COPYUP_PREPARE, err);
	if (!err) {
		err = unionfs_copyup_data(&c);
		if (S_ISREG(c.st.mode))
			unionfs_copyup_phase_end(&c, UNIONFS_COPYUP_DATA, err);
	}
	if (!err) {
		err = unionfs_copyup_meta(&c);
		unionfs_copyup_phase_end(&c, UNIONFS_COPYUP_META, err);
	}
	if (!err) {
		err = unionfs_copyup_publish(&c);
		unionfs_copyup_phase_end(&c, UNIONFS_COPYUP_PUBLISH, err);
	}
	*copied = c.copied;
	unionfs_copyup_cleanup(&c, err);
	return err ? ERR_PTR(err) : c.dest;
}

/* Is @name in branch directory @lp of branch @k? Errors count as "yes". */
static bool unionfs_name_in(struct unionfs_btable *bt, int k,
			    struct dentry *lp, const char *name, int len)
{
	struct dentry *ld = unionfs_do_lookup(bt, k, lp, name, len);
	bool in = IS_ERR(ld) || (ld && d_really_is_positive(ld));

	if (!IS_ERR_OR_NULL(ld))
		dput(ld);
	return in;
}

/*
 * Would a copy of @dentry in branch @t, below the range its lookup saw
 * (@bend < @t), be hidden, or not fit? By an opaque copy or a whiteout of
 * the name in a branch between, or the name itself in a branch between
 * or in @t: an object the union does not show there (a file shadowed by
 * the directory, below the end of its merge) that a copy can neither
 * replace nor go beside (udiff seed 223652: EEXIST before). Errors count
 * as "hidden": the caller then makes the name in the branch the directory
 * shows from, which is right whatever the failed lookup would have said
 * (a failed lookup costs a copy-up that was not needed, never a name).
 */
static bool unionfs_hidden_below(struct dentry *dentry, struct dentry *parent,
				 int bend, int t)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct unionfs_btable *bt = ud->bt;
	const struct qstr *name = &dentry->d_name;
	bool hidden = false;
	char *whname;
	int k;

	spin_lock(&ud->lock);
	if (ud->bopaque >= 0 || (ud->bwh >= 0 && ud->bwh < t))
		hidden = true;
	spin_unlock(&ud->lock);
	if (hidden)
		return true;
	whname = unionfs_whname(name);
	if (!whname)
		return true;
	for (k = bend + 1; k <= t && !hidden; k++) {
		struct dentry *lp = unionfs_lower_dentry_at(parent, bt, k);

		if (IS_ERR(lp)) {
			hidden = true;	/* the parent is on another table */
			break;
		}
		if (!lp)
			continue;
		/* the name itself (here or in @t), or its whiteout between */
		hidden = unionfs_name_in(bt, k, lp, name->name, name->len) ||
			 (k < t && unionfs_name_in(bt, k, lp, whname,
						   strlen(whname)));
		dput(lp);
	}
	kfree(whname);
	return hidden;
}

/*
 * Would a copy of the directory @ud in branch @t be one no lookup finds? A
 * renamed directory's branches below the copy that carries its redirect
 * are looked up at the redirect's path, not at its union name, so a copy
 * made there under its name would be (review 22: `mv Q/f1 Q/f2` made f2 in
 * such a copy, and f1 showed again at once). The caller goes higher, to
 * where the directory shows from (EXDEV, as for unionfs_hidden_below).
 */
static bool unionfs_redirect_skips(struct unionfs_dentry_info *ud, int t)
{
	bool skips = false;
	int c;

	spin_lock(&ud->lock);
	if (ud->bredir >= 0 && t > ud->bstart) {
		/* the carrier: the copy just above the first one it led to */
		for (c = ud->bredir - 1; c > ud->bstart && !ud->lower[c]; c--)
			;
		skips = t > c;
	}
	spin_unlock(&ud->lock);
	return skips;
}

/*
 * The inode (cu_lock held) may have been copied up to @t through another
 * alias of it, whose dentry info was updated while @dentry's was not (a
 * name looked up again while a copy-up was in flight). Copying again would
 * find the name taken (EEXIST): take the published copy instead, if the
 * name in @t is the very inode the union inode now has there. Returns 0
 * when adopted, 1 when there is nothing to adopt, or a negative errno.
 */
static int unionfs_copyup_adopt(struct dentry *dentry, struct dentry *parent,
				int t)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct unionfs_btable *bt = ud->bt;
	struct unionfs_ivec *vec;
	struct inode *li = NULL;
	struct dentry *lparent, *ld;
	int ret = 1;

	rcu_read_lock();
	vec = rcu_dereference(UNIONFS_I(d_inode(dentry))->vec);
	if (vec && vec->bt == bt && t < vec->nbr && vec->bstart >= 0 &&
	    vec->bstart <= t)
		li = vec->lower[t];
	rcu_read_unlock();
	if (!li || d_is_dir(dentry))
		return 1;
	lparent = unionfs_lower_dentry_at(parent, bt, t);
	if (IS_ERR(lparent))
		return PTR_ERR(lparent);
	if (!lparent)
		return 1;
	ld = unionfs_do_lookup(bt, t, lparent, dentry->d_name.name,
			       dentry->d_name.len);
	dput(lparent);
	if (IS_ERR_OR_NULL(ld))
		return ld ? PTR_ERR(ld) : 1;
	if (d_inode(ld) == li) {
		spin_lock(&ud->lock);
		if (!ud->lower[t]) {
			ud->lower[t] = dget(ld);
			if (ud->bstart < 0 || t < ud->bstart)
				ud->bstart = t;
			if (t > ud->bend)
				ud->bend = t;
		}
		spin_unlock(&ud->lock);
		ret = 0;
	}
	dput(ld);
	return ret;
}

/*
 * Give the object @dentry a copy in branch @t (docs/concepts.md, "Copy-up
 * with several writable branches"). Done when it has one there. An object
 * whose winning copy is below @t is copied up and wins from then on; a
 * directory whose winning copy is above @t (a parent of something that
 * goes to @t) gets a copy in @t from that winning copy, with its
 * attributes; when @t lies below the range its lookup saw, that copy is
 * opaque (what is below was not part of the directory), or, if a whiteout
 * or an opaque copy between would hide it, the answer is EXDEV. A
 * non-directory winning above @t needs nothing. Parent directories must
 * already exist in @t.
 *
 * @t is a branch of @bt, the table the caller decided it on: @dentry's
 * info (stable under its cu_lock, which the caller holds) and every read
 * of the parent's (which a refresh or a branch change may replace
 * meanwhile) must be built against that very table, or the index would
 * name another branch: -ESTALE then.
 */
static int unionfs_copyup_locked(struct dentry *dentry, struct dentry *parent,
				 struct unionfs_btable *bt, int t,
				 enum unionfs_cu_reason reason, loff_t len)
{
	struct super_block *sb = dentry->d_sb;
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct inode *inode = d_inode(dentry);
	struct dentry *src, *lparent, *newld;
	const struct cred *old;
	loff_t copied = 0, size;
	bool top, opaque = false, group, first, ixl = false;
	int b, bend, err, ixt;
	u64 t0;

	if (ud->bt != bt || unionfs_dbt(parent) != bt)
		return -ESTALE;	/* built against another branch table */
	unionfs_race_window();
	newld = unionfs_lower_dentry_get(dentry, t);
	if (newld) {
		dput(newld);
		return 0;	/* there already, or done meanwhile */
	}
	err = unionfs_copyup_adopt(dentry, parent, t);
	if (err <= 0)
		return err;	/* another alias copied it up meanwhile */
	src = unionfs_lower_top_get(dentry, &b);
	if (!src)
		return -ESTALE;
	if (b < t && !d_is_dir(src)) {
		dput(src);
		return 0;	/* wins above @t: nothing to copy */
	}
	err = unionfs_copyup_valid(dentry, src, b);
	if (!err && unionfs_redirect_skips(ud, t))
		err = -EXDEV;
	if (err) {
		dput(src);
		return err;	/* removed or renamed meanwhile, or unseen */
	}
	lparent = unionfs_lower_dentry_at(parent, bt, t);
	if (IS_ERR_OR_NULL(lparent)) {
		dput(src);
		return -ESTALE;
	}
	size = i_size_read(d_inode(src));
	t0 = ktime_get_ns();
	unionfs_trace_dname(unionfs_copyup_start, sb, dentry, inode->i_ino, b,
			    t, size, 0, reason, 0, 0);
	old = unionfs_override_creds(sb);
	spin_lock(&ud->lock);
	bend = ud->bend;
	spin_unlock(&ud->lock);
	err = 0;
	if (t > bend) {
		if (unionfs_hidden_below(dentry, parent, bend, t))
			err = -EXDEV;
		opaque = true;
	}
	newld = NULL;
	/* a link group's other name: a link of its index entry (index.c) */
	group = !err && unionfs_index_wanted(bt, b, src);
	/*
	 * A group's copy goes to its index branch (unionfs_index_rw_over),
	 * and a name that shows the entry is written there: neither is
	 * copied above that branch because its file system is read-only for
	 * now (the group's lookups would not find the copy: it would split).
	 */
	ixt = group ? unionfs_index_rw_over(bt, b) :
	      unionfs_index_is_entry(bt, b, src) ? b : -1;
	if (!err && ixt > t && !unionfs_branch_writable(bt, ixt))
		err = -EROFS;
	if (group && !err)
		err = unionfs_index_copyup_link(dentry, src, b, lparent, t,
						&newld);
	/*
	 * The group's first copy-up (it makes the index entry): until it
	 * has rekeyed this inode or failed and removed the entry, a lookup
	 * of another name does not take the entry (unionfs_iget_group).
	 */
	first = group && err == 1;
	if (first)
		unionfs_index_publishing(inode, true);
	if (err == 1 || (!err && !group)) {
		newld = unionfs_copyup_one(bt, dentry, src, b, lparent, t,
					   &dentry->d_name, len, &copied,
					   opaque, group);
		err = PTR_ERR_OR_ZERO(newld);
	}
	revert_creds(old);
	if (!err) {
		spin_lock(&ud->lock);
		ud->lower[t] = newld;
		top = t < ud->bstart;
		if (top)
			ud->bstart = t;
		if (t > ud->bend)
			ud->bend = t;
		if (opaque) {
			ud->bopaque = t;
			ud->bwh = -1;
		}
		spin_unlock(&ud->lock);
		/*
		 * The other names of a link group follow (index.c). From
		 * the index entry's publish (unionfs_copyup_one) to the
		 * rekey, a lookup of one of them finds the entry while this
		 * inode is hashed by the lower member: under the mount's
		 * ix_lock, it looks for this inode by both keys and does not
		 * take the entry while ix_publish is set
		 * (unionfs_iget_group). The vector is set under it too, so
		 * that such a lookup's (of the lower member) comes before.
		 */
		ixl = top && group;
		if (ixl) {
			unionfs_race_window();
			mutex_lock(&UNIONFS_SB(sb)->ix_lock);
		}
		err = unionfs_inode_set_vec(inode, ud);
		if (ixl)
			group = unionfs_index_copied_up(dentry, src, t, newld);
		/*
		 * A copy that was no group candidate (from a writable branch,
		 * where the group's index is, to a higher one) leaves the
		 * group: its names no longer count through the index entry.
		 */
		if (top && !ixl)
			WRITE_ONCE(UNIONFS_I(inode)->ix_lower, -1);
		if (top)
			unionfs_inode_rekey(inode, d_inode(newld),
					    unionfs_br(bt, t),
					    group ? NULL : dentry);
		if (ixl) {
			WRITE_ONCE(UNIONFS_I(inode)->ix_publish, false);
			mutex_unlock(&UNIONFS_SB(sb)->ix_lock);
		}
		/* our own change of the parent's lower directory */
		WRITE_ONCE(UNIONFS_I(d_inode(parent))->snap,
			   unionfs_dir_snap(d_inode(parent)));
		if (top) {
			/* the flags its copy keeps (unionfs_copyup_meta) */
			WRITE_ONCE(UNIONFS_I(inode)->prot,
				   inode->i_flags & UNIONFS_PROT_FLAGS);
			unionfs_copy_attr(inode, d_inode(newld));
		}
	}
	if (first && !ixl)
		unionfs_index_publishing(inode, false);
	unionfs_trace_dname(unionfs_copyup_end, sb, dentry, inode->i_ino, b, t,
			    size, copied, reason, err, ktime_get_ns() - t0);
	dput(lparent);
	dput(src);
	return err;
}

/*
 * Copy @dentry up to branch @t of @bt. With @held, the caller (a namespace
 * operation serializing against copy-up) already holds the inode's
 * cu_lock.
 */
static int __unionfs_copyup_dentry(struct dentry *dentry,
				   struct unionfs_btable *bt, int t,
				   enum unionfs_cu_reason reason, loff_t len, bool held)
{
	struct unionfs_inode_info *ui;
	struct dentry *parent;
	int err;

	if (d_really_is_negative(dentry))
		return -ENOENT;
	if (IS_ROOT(dentry))
		return 0;	/* every branch root exists */
	parent = dget_parent(dentry);
	err = unionfs_copyup_dir(parent, bt, t);
	if (!err) {
		ui = UNIONFS_I(d_inode(dentry));
		if (!held)
			mutex_lock(&ui->cu_lock);
		lockdep_assert_held(&ui->cu_lock);
		err = unionfs_copyup_locked(dentry, parent, bt, t, reason,
					    len);
		if (!held)
			mutex_unlock(&ui->cu_lock);
	}
	dput(parent);
	return err;
}

/*
 * The same, for a caller that holds d_inode(@dentry)'s cu_lock and
 * decided @t on @dentry's info, stable under that lock.
 */
int unionfs_copyup_dentry_held(struct dentry *dentry, int t,
			       enum unionfs_cu_reason reason, loff_t len)
{
	struct unionfs_btable *bt = unionfs_dbt_get(dentry);
	int err;

	err = __unionfs_copyup_dentry(dentry, bt, t, reason, len, true);
	unionfs_bt_put(bt);
	return err;
}

/*
 * Make sure the union directory @dir exists in branch @t: its ancestors
 * missing there are created top-down, one per round, each from its winning
 * copy (unionfs_copyup_locked). Every round must give one more ancestor a
 * copy in @t, so the loop is bounded by the depth; a round that does not
 * is a bug (WARN, EIO), and a fatal signal ends it (EINTR). @t is a
 * branch of @bt: an ancestor on another table (refreshed, or the root
 * rebuilt by a branch change since the caller decided) gives -ESTALE.
 */
int unionfs_copyup_dir(struct dentry *dir, struct unionfs_btable *bt, int t)
{
	int err = 0;

	while (!err) {
		struct dentry *d, *parent, *ld;

		ld = unionfs_lower_dentry_at(dir, bt, t);
		if (IS_ERR(ld))
			return PTR_ERR(ld);
		if (ld) {
			dput(ld);
			return 0;
		}
		if (fatal_signal_pending(current))
			return -EINTR;
		/* find the highest ancestor missing in @t */
		d = dget(dir);
		if (WARN_ON_ONCE(IS_ROOT(d))) {
			dput(d);
			return -EIO;	/* every branch root exists */
		}
		parent = dget_parent(d);
		while (!(ld = unionfs_lower_dentry_at(parent, bt, t))) {
			if (WARN_ON_ONCE(IS_ROOT(parent))) {
				dput(parent);
				dput(d);
				return -EIO;
			}
			dput(d);
			d = parent;
			parent = dget_parent(d);
		}
		if (IS_ERR(ld)) {
			dput(parent);
			dput(d);
			return PTR_ERR(ld);
		}
		dput(ld);
		mutex_lock_nested(&UNIONFS_I(d_inode(d))->cu_lock,
				  UNIONFS_CU_ANCESTOR);
		err = unionfs_copyup_locked(d, parent, bt, t, UNIONFS_CUR_PARENT,
					    -1);
		mutex_unlock(&UNIONFS_I(d_inode(d))->cu_lock);
		if (!err) {
			/* no progress would be a livelock */
			ld = unionfs_lower_dentry_at(d, bt, t);
			if (IS_ERR(ld))
				err = PTR_ERR(ld);	/* refreshed meanwhile */
			else if (WARN_ON_ONCE(!ld))
				err = -EIO;
			else
				dput(ld);
		}
		dput(parent);
		dput(d);
	}
	return err;
}

/*
 * rename and link make a name in @dir at a writable branch, @dir copied
 * there first. Where @dir is hidden at that branch (copying it there
 * gives EXDEV: a whiteout or an opaque copy above ends its merge), or the
 * name is (its whiteout above), the name goes higher: to the nearest
 * writable branch at or above both @bound and the branch @dir shows from.
 * That branch, or an errno.
 */
int unionfs_dir_shown_writable(struct dentry *dir, struct unionfs_btable *bt,
			       int bound)
{
	int pstart, pend;

	unionfs_get_range(dir, &pstart, &pend);
	if (pstart < 0)
		return -ESTALE;
	return unionfs_nearest_writable(bt, min(bound, pstart));
}

/*
 * After EXDEV at @t (a copy of @dir there would not be seen: below the
 * copy that carries its redirect, unionfs_redirect_skips): the writable
 * branch @dir shows from, if it is above @t; else -EXDEV, or the errno.
 */
int unionfs_dir_shown_above(struct dentry *dir, struct unionfs_btable *bt,
			    int t)
{
	int t2 = unionfs_dir_shown_writable(dir, bt, t);

	return t2 >= t ? -EXDEV : t2;
}

int unionfs_copyup_parents(struct dentry *dentry, struct unionfs_btable *bt,
			   int t)
{
	struct dentry *parent = dget_parent(dentry);
	int err = unionfs_copyup_dir(parent, bt, t);

	dput(parent);
	return err;
}

/*
 * Copy @dentry up if its winning branch cannot be written. The target is
 * decided on one info (range and table), and the copy-up fails (-ESTALE)
 * if the dentry is on another table by the time it holds the cu_lock.
 */
int unionfs_copyup_for_write(struct dentry *dentry, enum unionfs_cu_reason reason,
			     loff_t len)
{
	struct unionfs_dentry_info *ud;
	struct unionfs_btable *bt;
	int bstart, bend, t, err;

	/* built on an older table (an fd kept across a del=): the current */
	if (!IS_ROOT(dentry)) {
		err = unionfs_refresh_stale(dentry);
		if (err == -EINTR)
			return err;
	}
	ud = unionfs_dinfo_get(dentry);
	if (!ud)
		return -ESTALE;
	bt = ud->bt;
	refcount_inc(&bt->ref);
	unionfs_ud_range(ud, &bstart, &bend);
	unionfs_dinfo_put(ud);
	if (bstart < 0)
		t = -ESTALE;
	else if (unionfs_branch_writable(bt, bstart))
		t = INT_MAX;
	else
		t = unionfs_nearest_writable(bt, bstart);
	err = t < 0 ? t : 0;
	if (t >= 0 && t != INT_MAX)
		err = __unionfs_copyup_dentry(dentry, bt, t, reason, len,
					      false);
	/*
	 * A parent's copy in @t would not be seen (a renamed directory's
	 * branches below its redirect, unionfs_redirect_skips): once more,
	 * in the branch the parent shows from.
	 */
	if (err == -EXDEV && !IS_ROOT(dentry)) {
		struct dentry *parent = dget_parent(dentry);

		t = unionfs_dir_shown_above(parent, bt, t);
		dput(parent);
		err = t < 0 ? t : __unionfs_copyup_dentry(dentry, bt, t, reason,
							  len, false);
	}
	unionfs_bt_put(bt);
	return err;
}

/*
 * Leftover temporaries. A crash in the middle of a copy-up with a named
 * temporary (or of a removal that stashed a directory) leaves a hidden
 * ".wh..wh.unionfs.N" behind. Every live mount gives out the numbers
 * above the random point it started at (unionfs_tmp_name); a name outside
 * all of those ranges belongs to no operation in flight, and is removed
 * when the union reads the directory that holds it (and, at mount, from
 * each writable branch root).
 */
static LIST_HEAD(unionfs_tmp_ranges);
static DEFINE_SPINLOCK(unionfs_tmp_lock);

void unionfs_tmp_register(struct unionfs_sb_info *sbi)
{
	sbi->tmp_start = atomic64_read(&sbi->tmp_seq);
	spin_lock(&unionfs_tmp_lock);
	list_add(&sbi->tmp_live, &unionfs_tmp_ranges);
	spin_unlock(&unionfs_tmp_lock);
}

void unionfs_tmp_unregister(struct unionfs_sb_info *sbi)
{
	spin_lock(&unionfs_tmp_lock);
	list_del_init(&sbi->tmp_live);
	spin_unlock(&unionfs_tmp_lock);
}

/* Is @name a temporary name that no live mount gave out? */
bool unionfs_tmp_leftover(const char *name, int len)
{
	const int plen = sizeof(UNIONFS_TMPPFX) - 1;
	struct unionfs_sb_info *sbi;
	bool live = false;
	u64 seq = 0;
	int i;

	if (len <= plen || len > plen + 20 ||
	    memcmp(name, UNIONFS_TMPPFX, plen))
		return false;
	for (i = plen; i < len; i++) {
		if (!isdigit(name[i]) || check_mul_overflow(seq, 10ULL, &seq) ||
		    check_add_overflow(seq, (u64)(name[i] - '0'), &seq))
			return false;
	}
	spin_lock(&unionfs_tmp_lock);
	list_for_each_entry(sbi, &unionfs_tmp_ranges, tmp_live) {
		if (seq > sbi->tmp_start &&
		    seq <= (u64)atomic64_read(&sbi->tmp_seq)) {
			live = true;
			break;
		}
	}
	spin_unlock(&unionfs_tmp_lock);
	return !live;
}

#define UNIONFS_LEFTOVERS_MAX	64	/* removed per read of a directory */

struct unionfs_leftovers {
	struct dir_context ctx;
	int n;
	u8 len[UNIONFS_LEFTOVERS_MAX];
	char name[UNIONFS_LEFTOVERS_MAX][UNIONFS_TMPNAME_LEN];
};

static bool unionfs_leftover_actor(struct dir_context *ctx, const char *name,
				   int len, loff_t pos, u64 ino,
				   unsigned int type)
{
	struct unionfs_leftovers *lo = container_of(ctx,
						    struct unionfs_leftovers,
						    ctx);

	if (len >= UNIONFS_TMPNAME_LEN || !unionfs_tmp_leftover(name, len))
		return true;
	memcpy(lo->name[lo->n], name, len);
	lo->len[lo->n] = len;
	return ++lo->n < UNIONFS_LEFTOVERS_MAX;
}

/* Remove the leftover @d in the locked @ldir: a directory if it is empty
 * of anything but ".wh.*" entries.
 */
static int unionfs_remove_leftover(struct unionfs_btable *bt, int bindex,
				   struct dentry *ldir, struct dentry *d)
{
	int err;

	if (!d_is_dir(d))
		return unionfs_do_unlink(bt, bindex, d_inode(ldir), d);
	err = unionfs_clean_whiteouts(bt, bindex, d, true);
	if (!err)
		err = unionfs_do_rmdir(bt, bindex, d_inode(ldir), d);
	return err;
}

/*
 * Remove the leftover temporaries (at most UNIONFS_LEFTOVERS_MAX) from the
 * directory @ldir of the writable branch @bindex, with one line in the log
 * for the directory. Nothing else in it is touched; an error only leaves
 * a leftover for the next read. Caller overrides creds (the mounter's).
 */
void unionfs_clean_leftovers(struct unionfs_btable *bt, int bindex,
			     struct dentry *ldir)
{
	struct unionfs_leftovers *lo;
	int i, n = 0;

	if (!unionfs_branch_writable(bt, bindex) || !d_is_dir(ldir))
		return;
	/* a reader does not wait for a thaw: the next read cleans */
	if (READ_ONCE(ldir->d_sb->s_writers.frozen) != SB_UNFROZEN)
		return;
	lo = kzalloc(sizeof(*lo), GFP_KERNEL);
	if (!lo)
		return;
	lo->ctx.actor = unionfs_leftover_actor;
	if (unionfs_do_scan(bt, bindex, ldir, &lo->ctx) || !lo->n ||
	    unionfs_want_write(bt, bindex))
		goto out;
	for (i = 0; i < lo->n; i++) {
		struct dentry *d;

		if (fatal_signal_pending(current))
			break;
		d = unionfs_lock_lookup(bt, bindex, ldir, lo->name[i],
					lo->len[i]);
		if (IS_ERR(d))
			break;
		/* checked again: nothing in flight may lose its temporary */
		if (d_really_is_positive(d) &&
		    unionfs_tmp_leftover(lo->name[i], lo->len[i]) &&
		    !unionfs_remove_leftover(bt, bindex, ldir, d))
			n++;
		inode_unlock(d_inode(ldir));
		dput(d);
	}
	unionfs_drop_write(bt, bindex);
	if (n)
		pr_info("branch %d: removed %d leftover temporar%s of an earlier mount from %pd\n",
			bindex, n, n == 1 ? "y" : "ies", ldir);
out:
	kfree(lo);
}
