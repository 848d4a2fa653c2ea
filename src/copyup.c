// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: copy-up.
 *
 * An object on a read-only branch that is about to change is copied to the
 * nearest writable branch of higher priority (seed: copyup_dentry). The
 * copy is built under a temporary name ".wh..wh.unionfs.N" in the target
 * directory (hidden from the union: it is a whiteout of an impossible
 * name), gets its data (holes preserved, 1 MiB chunks, interruptible by a
 * fatal signal), xattrs, owner, mode and times, and is then renamed into
 * place. A failure at any step removes the temporary and leaves the
 * original untouched. Copy-ups of one object are serialized by the union
 * inode's cu_lock; parents are copied top-down, one at a time.
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

static int unionfs_copy_data(struct file *in, struct file *out, loff_t size,
			     loff_t *copied)
{
	bool skip_holes = in->f_mode & FMODE_LSEEK;
	loff_t pos = 0, data_end = 0;
	int err = 0;

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
			loff_t data = vfs_llseek(in, pos, SEEK_DATA);

			if (data == -ENXIO)
				break;		/* only a hole is left */
			if (data < 0) {
				skip_holes = false;
			} else if (data > pos) {
				pos = min(data, size);
				continue;
			} else {
				loff_t hole = vfs_llseek(in, pos, SEEK_HOLE);

				data_end = hole > pos ? hole : size;
			}
		}
		if (skip_holes)
			chunk = min(chunk, data_end - pos);
		err = UNIONFS_FAULT("copyup_data");
		if (err)
			return err;
		in_pos = pos;
		out_pos = pos;
		file_start_write(out);
		bytes = do_splice_direct(in, &in_pos, out, &out_pos, chunk,
					 SPLICE_F_MOVE);
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

static int unionfs_copy_xattrs(struct unionfs_btable *bt, int t,
			       struct dentry *src, struct dentry *dst)
{
	ssize_t list_size, size;
	char *list, *name, *value = NULL;
	int err = 0;

	list_size = vfs_listxattr(src, NULL, 0);
	if (list_size <= 0)
		return list_size == -EOPNOTSUPP ? 0 : list_size;
	list = kvzalloc(list_size, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	list_size = vfs_listxattr(src, list, list_size);
	if (list_size < 0) {
		err = list_size;
		goto out;
	}
	for (name = list; name < list + list_size;
	     name += strlen(name) + 1) {
		err = security_inode_copy_up_xattr(name);
		if (err < 0 && err != -EOPNOTSUPP)
			break;
		if (err == 1) {
			err = 0;
			continue;	/* the LSM discards it */
		}
		size = vfs_getxattr(&init_user_ns, src, name, NULL, 0);
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
		size = vfs_getxattr(&init_user_ns, src, name, value, size);
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

static int unionfs_copy_attrs(struct unionfs_btable *bt, int t,
			      struct dentry *dst, struct kstat *st)
{
	struct iattr attr;
	int err;

	err = UNIONFS_FAULT("copyup_attr");
	if (err)
		return err;
	inode_lock(d_inode(dst));
	attr.ia_valid = ATTR_UID | ATTR_GID;
	attr.ia_vfsuid = VFSUIDT_INIT(st->uid);
	attr.ia_vfsgid = VFSGIDT_INIT(st->gid);
	err = unionfs_do_setattr(bt, t, dst, &attr);
	if (!err && !S_ISLNK(st->mode)) {
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

static void unionfs_remove_tmp(struct unionfs_btable *bt, int t,
			       struct dentry *lparent, struct dentry *tmp)
{
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
 * Copy @src (branch @b) to @name in @lparent (branch @t). @len >= 0 limits
 * the data copied (truncate). Runs with the mounter's credentials and
 * write access to branch @t. Returns the new lower dentry.
 */
/*
 * Did the source change since @st, or is it open for writing (a write in
 * progress updated the times before it started copying data)? Updates @st
 * to what it is now.
 */
static bool unionfs_src_changed(const struct path *spath, struct kstat *st)
{
	struct kstat now;
	bool changed;

	if (vfs_getattr(spath, &now, STATX_BASIC_STATS, AT_STATX_SYNC_AS_STAT))
		return true;
	changed = atomic_read(&d_inode(spath->dentry)->i_writecount) > 0 ||
		  now.size != st->size ||
		  !timespec64_equal(&now.mtime, &st->mtime) ||
		  !timespec64_equal(&now.ctime, &st->ctime);
	*st = now;
	return changed;
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

static struct dentry *unionfs_copyup_one(struct unionfs_btable *bt,
					 struct dentry *dentry,
					 struct dentry *src, int b,
					 struct dentry *lparent, int t,
					 const struct qstr *name, loff_t len,
					 loff_t *copied)
{
	struct path spath = { .mnt = unionfs_mnt(bt, b), .dentry = src };
	struct unionfs_sb_info *sbi = UNIONFS_SB(bt->sb);
	char tmpname[sizeof(UNIONFS_TMPPFX) + 24];
	struct dentry *tmp, *target = NULL;
	struct kstat st;
	int err, tries;

	struct path ppath = { .mnt = unionfs_mnt(bt, t), .dentry = lparent };
	struct kstat pst;

	err = vfs_getattr(&spath, &st, STATX_BASIC_STATS,
			  AT_STATX_SYNC_AS_STAT);
	if (!err)	/* the parent's times are restored afterwards */
		err = vfs_getattr(&ppath, &pst, STATX_BASIC_STATS,
				  AT_STATX_SYNC_AS_STAT);
	if (err)
		return ERR_PTR(err);
	snprintf(tmpname, sizeof(tmpname), UNIONFS_TMPPFX "%llu",
		 (unsigned long long)atomic64_inc_return(&sbi->tmp_seq));

	tmp = unionfs_lock_lookup(bt, t, lparent, tmpname, strlen(tmpname));
	if (IS_ERR(tmp))
		return tmp;
	err = UNIONFS_FAULT("copyup_create");
	if (err)
		goto out_unlock;
	if (d_really_is_positive(tmp)) {
		err = -EEXIST;
		goto out_unlock;
	}
	switch (st.mode & S_IFMT) {
	case S_IFREG:
		err = unionfs_do_create(bt, t, d_inode(lparent), tmp,
					S_IFREG | 0600);
		break;
	case S_IFDIR:
		err = unionfs_do_mkdir(bt, t, d_inode(lparent), tmp,
				       S_IFDIR | 0700);
		break;
	case S_IFLNK: {
		DEFINE_DELAYED_CALL(done);
		const char *link = vfs_get_link(src, &done);

		err = PTR_ERR_OR_ZERO(link);
		if (!err)
			err = unionfs_do_symlink(bt, t, d_inode(lparent), tmp,
						 link);
		do_delayed_call(&done);
		break;
	}
	default:
		err = unionfs_do_mknod(bt, t, d_inode(lparent), tmp, st.mode,
				       st.rdev);
		break;
	}
out_unlock:
	inode_unlock(d_inode(lparent));
	if (err) {
		dput(tmp);
		return ERR_PTR(err);
	}

	/*
	 * A regular file is copied until its source held still during the
	 * copy: a direct change racing with the copy-up (new times or size,
	 * or the file open for writing) makes it start over, so the union
	 * never settles on a mix of old and new data; after 3 tries it gives
	 * up with ESTALE.
	 */
	for (tries = 0; S_ISREG(st.mode); tries++) {
		loff_t size = (len >= 0 && len < st.size) ? len : st.size;
		struct file *in, *out;

		in = unionfs_do_open(bt, b, src, O_RDONLY, current_cred());
		if (IS_ERR(in)) {
			err = PTR_ERR(in);
			goto out_cleanup;
		}
		out = unionfs_do_open(bt, t, tmp, O_WRONLY, current_cred());
		if (IS_ERR(out)) {
			fput(in);
			err = PTR_ERR(out);
			goto out_cleanup;
		}
		*copied = 0;
		err = unionfs_copy_data(in, out, size, copied);
		fput(in);
		fput(out);
		if ((!err || err == -EIO) && unionfs_src_changed(&spath, &st)) {
			unionfs_hazard(bt->sb, UNIONFS_HZ_COPYUP_RACE, b,
				       name->name,
				       "the branch file changed during copy-up");
			if (tries < 2)
				continue;
			pr_warn_ratelimited("copy-up of '%s' from branch %d: the file kept changing in the branch; giving up (ESTALE)\n",
					    name->name, b);
			err = -ESTALE;
		}
		if (!err && i_size_read(d_inode(tmp)) != size)
			err = unionfs_set_size(bt, t, tmp, size);
		if (err)
			goto out_cleanup;
		break;
	}
	err = unionfs_copy_xattrs(bt, t, src, tmp);
	if (!err)
		err = unionfs_copy_attrs(bt, t, tmp, &st);
	if (err)
		goto out_cleanup;

	/* publish: rename the complete copy into place */
	target = unionfs_lock_lookup(bt, t, lparent, name->name, name->len);
	if (IS_ERR(target)) {
		err = PTR_ERR(target);
		target = NULL;
		goto out_cleanup;
	}
	err = UNIONFS_FAULT("copyup_rename");
	if (!err)
		err = unionfs_copyup_valid(dentry, src, b);
	if (!err && d_really_is_positive(target))
		err = -EEXIST;
	if (!err && (tmp->d_parent != lparent || d_unhashed(tmp)))
		err = -ESTALE;
	if (!err)
		err = unionfs_do_rename(bt, t, d_inode(lparent), tmp,
					d_inode(lparent), target, 0);
	inode_unlock(d_inode(lparent));
	if (err)
		goto out_cleanup;
	/* the branch fs moved the tmp dentry to the name; @target is stale */
	dput(target);
	unionfs_restore_times(bt, t, lparent, &pst);
	return tmp;

out_cleanup:
	dput(target);
	unionfs_remove_tmp(bt, t, lparent, tmp);
	dput(tmp);
	return ERR_PTR(err);
}

static void unionfs_rekey_inode(struct inode *inode, struct inode *key)
{
	struct unionfs_inode_info *ui = UNIONFS_I(inode);

	remove_inode_hash(inode);
	ui->key = key;
	__insert_inode_hash(inode, (unsigned long)key);
}

/*
 * Copy the object @dentry up to branch @t, which must be left of its
 * current winning branch. Parent directories must already exist in @t.
 */
static int unionfs_copyup_locked(struct dentry *dentry, struct dentry *parent,
				 int t, const char *reason, loff_t len)
{
	struct super_block *sb = dentry->d_sb;
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct unionfs_btable *bt = ud->bt;
	struct inode *inode = d_inode(dentry);
	struct dentry *src, *lparent, *newld;
	const struct cred *old;
	loff_t copied = 0, size;
	u64 t0;
	int b, err;

	if (unionfs_dbt(parent) != bt)
		return -ESTALE;	/* built against another branch table */
	src = unionfs_lower_top_get(dentry, &b);
	if (!src)
		return -ESTALE;
	if (b <= t) {
		dput(src);
		return 0;	/* done meanwhile */
	}
	err = unionfs_copyup_valid(dentry, src, b);
	if (err) {
		dput(src);
		return err;	/* removed or renamed meanwhile */
	}
	lparent = unionfs_lower_dentry_get(parent, t);
	if (!lparent) {
		dput(src);
		return -ESTALE;
	}
	size = i_size_read(d_inode(src));
	t0 = ktime_get_ns();
	unionfs_trace_dname(unionfs_copyup_start, sb, dentry, inode->i_ino, b,
			    t, size, 0, reason, 0, 0);
	err = unionfs_want_write(bt, t);
	if (!err) {
		old = unionfs_override_creds(sb);
		newld = unionfs_copyup_one(bt, dentry, src, b, lparent, t,
					   &dentry->d_name, len, &copied);
		revert_creds(old);
		unionfs_drop_write(bt, t);
		err = PTR_ERR_OR_ZERO(newld);
	}
	if (!err) {
		spin_lock(&ud->lock);
		ud->lower[t] = newld;
		ud->bstart = t;
		spin_unlock(&ud->lock);
		err = unionfs_inode_set_vec(inode, ud);
		unionfs_rekey_inode(inode, d_inode(newld));
		/* our own change of the parent's lower directory */
		WRITE_ONCE(UNIONFS_I(d_inode(parent))->snap,
			   unionfs_dir_snap(d_inode(parent)));
		unionfs_copy_attr(inode, d_inode(newld));
	}
	unionfs_trace_dname(unionfs_copyup_end, sb, dentry, inode->i_ino, b, t,
			    size, copied, reason, err, ktime_get_ns() - t0);
	dput(lparent);
	dput(src);
	return err;
}

/*
 * Copy @dentry up to branch @t. With @held, the caller (a namespace
 * operation serializing against copy-up) already holds the inode's
 * cu_lock.
 */
static int __unionfs_copyup_dentry(struct dentry *dentry, int t,
				   const char *reason, loff_t len, bool held)
{
	struct unionfs_inode_info *ui;
	struct dentry *parent;
	int err;

	if (d_really_is_negative(dentry))
		return -ENOENT;
	if (IS_ROOT(dentry))
		return 0;	/* every branch root exists */
	parent = dget_parent(dentry);
	err = unionfs_copyup_dir(parent, t);
	if (!err) {
		ui = UNIONFS_I(d_inode(dentry));
		if (!held)
			mutex_lock(&ui->cu_lock);
		lockdep_assert_held(&ui->cu_lock);
		err = unionfs_copyup_locked(dentry, parent, t, reason, len);
		if (!held)
			mutex_unlock(&ui->cu_lock);
	}
	dput(parent);
	return err;
}

int unionfs_copyup_dentry(struct dentry *dentry, int t, const char *reason,
			  loff_t len)
{
	return __unionfs_copyup_dentry(dentry, t, reason, len, false);
}

/* The same, for a caller that holds d_inode(@dentry)'s cu_lock. */
int unionfs_copyup_dentry_held(struct dentry *dentry, int t,
			       const char *reason, loff_t len)
{
	return __unionfs_copyup_dentry(dentry, t, reason, len, true);
}

/* Make sure the union directory @dir exists in branch @t (top-down). */
int unionfs_copyup_dir(struct dentry *dir, int t)
{
	for (;;) {
		struct dentry *d = dget(dir), *parent, *ld;
		int err;

		ld = unionfs_lower_dentry_get(d, t);
		if (ld) {
			dput(ld);
			dput(d);
			return 0;
		}
		/* find the highest ancestor missing in @t */
		for (;;) {
			if (IS_ROOT(d)) {
				dput(d);
				WARN_ON_ONCE(1);
				return -EIO;
			}
			parent = dget_parent(d);
			ld = unionfs_lower_dentry_get(parent, t);
			if (ld)
				break;
			dput(d);
			d = parent;
		}
		dput(ld);
		mutex_lock(&UNIONFS_I(d_inode(d))->cu_lock);
		err = unionfs_copyup_locked(d, parent, t, "parent", -1);
		mutex_unlock(&UNIONFS_I(d_inode(d))->cu_lock);
		dput(parent);
		dput(d);
		if (err)
			return err;
	}
}

int unionfs_copyup_parents(struct dentry *dentry, int t)
{
	struct dentry *parent = dget_parent(dentry);
	int err = unionfs_copyup_dir(parent, t);

	dput(parent);
	return err;
}

/* Copy @dentry up if its winning branch cannot be written. */
int unionfs_copyup_for_write(struct dentry *dentry, const char *reason,
			     loff_t len)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	int bstart, bend, t;

	unionfs_get_range(dentry, &bstart, &bend);
	if (bstart < 0)
		return -ESTALE;
	if (unionfs_branch_writable(bt, bstart))
		return 0;
	t = unionfs_nearest_writable(bt, bstart);
	if (t < 0)
		return t;
	return unionfs_copyup_dentry(dentry, t, reason, len);
}
