// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: the one place through which every call into a branch
 * filesystem goes (like overlayfs' ovl_do_*). Each helper traces the call
 * (tracepoint unionfs_branch_op: op, branch index, name, errno) and fault
 * injection sites hang off the same helpers.
 *
 * Locking contract: callers hold mnt write access (unionfs_want_write) and
 * the lower parent's i_rwsem (I_MUTEX_PARENT) for namespace changes, as the
 * vfs_* helpers require.
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>
#include <linux/file.h>

#include "unionfs_trace.h"

/*
 * Run a modifying branch call as a union actor, so that coherency=notify
 * does not take the union's own changes for direct modifications.
 */
#define UNIONFS_ACT(bt, call)					\
	({							\
		struct unionfs_btable *__bt = (bt);		\
		struct unionfs_actor __act;			\
		int __err;					\
								\
		unionfs_actor_begin(__bt, &__act);		\
		__err = (call);					\
		unionfs_actor_end(__bt, &__act);		\
		__err;						\
	})

static noinline void unionfs_trace_op_slow(struct super_block *sb,
					   const char *op, int bindex,
					   struct dentry *d, int err)
{
	char nm[NAME_MAX + 1] = "";

	if (d)
		unionfs_dname_copy(nm, d);
	trace_unionfs_branch_op(sb, op, bindex, nm, err);
}

static inline int unionfs_trace_op(struct super_block *sb, const char *op,
				   int bindex, struct dentry *d, int err)
{
	if (trace_unionfs_branch_op_enabled())
		unionfs_trace_op_slow(sb, op, bindex, d, err);
	return err;
}

int unionfs_want_write(struct unionfs_btable *bt, int bindex)
{
	if (!unionfs_branch_writable(bt, bindex))
		return -EROFS;
	return mnt_want_write(unionfs_mnt(bt, bindex));
}

void unionfs_drop_write(struct unionfs_btable *bt, int bindex)
{
	mnt_drop_write(unionfs_mnt(bt, bindex));
}

struct dentry *unionfs_do_lookup(struct unionfs_btable *bt, int bindex,
				 struct dentry *base, const char *name,
				 int len)
{
	struct dentry *d;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_LOOKUP);

	if (err)
		return ERR_PTR(err);
	d = lookup_one_unlocked(&init_user_ns, name, base, len);
	/* ".wh." + a long name may exceed NAME_MAX: that is "no whiteout". */
	if (IS_ERR(d) && PTR_ERR(d) == -ENAMETOOLONG)
		return NULL;
	return d;
}

struct dentry *unionfs_lock_lookup(struct unionfs_btable *bt, int bindex,
				   struct dentry *parent, const char *name,
				   int len)
{
	struct dentry *d;

	inode_lock_nested(d_inode(parent), I_MUTEX_PARENT);
	d = lookup_one_len(name, parent, len);
	if (IS_ERR(d))
		inode_unlock(d_inode(parent));
	return d;
}

int unionfs_do_create(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d, umode_t mode)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_CREATE);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_create(&init_user_ns, dir, d, mode, true));
	return unionfs_trace_op(bt->sb, "create", bindex, d, err);
}

int unionfs_do_mkdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_MKDIR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_mkdir(&init_user_ns, dir, d, mode));
	if (!err && d_unhashed(d))
		err = -EIO;	/* a branch fs that does not instantiate */
	return unionfs_trace_op(bt->sb, "mkdir", bindex, d, err);
}

int unionfs_do_mknod(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode, dev_t dev)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_MKNOD);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_mknod(&init_user_ns, dir, d, mode, dev));
	return unionfs_trace_op(bt->sb, "mknod", bindex, d, err);
}

int unionfs_do_symlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		       struct dentry *d, const char *target)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SYMLINK);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_symlink(&init_user_ns, dir, d, target));
	return unionfs_trace_op(bt->sb, "symlink", bindex, d, err);
}

int unionfs_do_link(struct unionfs_btable *bt, int bindex, struct dentry *old,
		    struct inode *dir, struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_LINK);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_link(old, &init_user_ns, dir, d, NULL));
	return unionfs_trace_op(bt->sb, "link", bindex, d, err);
}

int unionfs_do_unlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_UNLINK);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_unlink(&init_user_ns, dir, d, NULL));
	return unionfs_trace_op(bt->sb, "unlink", bindex, d, err);
}

int unionfs_do_rmdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_RMDIR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_rmdir(&init_user_ns, dir, d));
	return unionfs_trace_op(bt->sb, "rmdir", bindex, d, err);
}

int unionfs_do_rename(struct unionfs_btable *bt, int bindex,
		      struct inode *olddir, struct dentry *old,
		      struct inode *newdir, struct dentry *new,
		      unsigned int flags)
{
	struct renamedata rd = {
		.old_mnt_userns	= &init_user_ns,
		.old_dir	= olddir,
		.old_dentry	= old,
		.new_mnt_userns	= &init_user_ns,
		.new_dir	= newdir,
		.new_dentry	= new,
		.flags		= flags,
	};
	int err = UNIONFS_FAULT(UNIONFS_FSITE_RENAME);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_rename(&rd));
	return unionfs_trace_op(bt->sb, "rename", bindex, new, err);
}

/* Caller holds inode_lock(d_inode(d)). */
int unionfs_do_setattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
		       struct iattr *attr)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SETATTR);

	if (!err)
		err = UNIONFS_ACT(bt, notify_change(&init_user_ns, d, attr, NULL));
	return unionfs_trace_op(bt->sb, "setattr", bindex, d, err);
}

int unionfs_do_setxattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
			const char *name, const void *value, size_t size,
			int flags)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SETXATTR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_setxattr(&init_user_ns, d, name,
						   value, size, flags));
	return unionfs_trace_op(bt->sb, "setxattr", bindex, d, err);
}

int unionfs_do_removexattr(struct unionfs_btable *bt, int bindex,
			   struct dentry *d, const char *name)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_REMOVEXATTR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_removexattr(&init_user_ns, d, name));
	return unionfs_trace_op(bt->sb, "removexattr", bindex, d, err);
}

struct file *unionfs_do_open(struct unionfs_btable *bt, int bindex,
			     struct dentry *d, int flags,
			     const struct cred *cred)
{
	struct path path = { .mnt = unionfs_mnt(bt, bindex), .dentry = d };
	struct file *f;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_OPEN);

	if (err)
		return ERR_PTR(unionfs_trace_op(bt->sb, "open", bindex, d, err));
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC);
	f = dentry_open(&path, flags | O_LARGEFILE, cred);
	unionfs_trace_op(bt->sb, "open", bindex, d, PTR_ERR_OR_ZERO(f));
	return f;
}

/*
 * Read the lower directory @d in full for the union's own purposes (the
 * whiteout knowledge, lookup.c): not an access of a user's, so no atime
 * update, and no fault site (injected "open" faults stay with the opens
 * users asked for). Traced as "scan".
 */
int unionfs_do_scan(struct unionfs_btable *bt, int bindex, struct dentry *d,
		    struct dir_context *ctx)
{
	struct path path = { .mnt = unionfs_mnt(bt, bindex), .dentry = d };
	struct file *f;
	int err;

	f = dentry_open(&path, O_RDONLY | O_DIRECTORY | O_LARGEFILE,
			current_cred());
	err = PTR_ERR_OR_ZERO(f);
	if (!err) {
		f->f_flags |= O_NOATIME;
		err = iterate_dir(f, ctx);
		fput(f);
	}
	return unionfs_trace_op(bt->sb, "scan", bindex, d, err);
}

/*
 * O_TMPFILE: an open unnamed regular file in branch directory @dir, made
 * by the branch fs's ->tmpfile with the caller's credentials (@cred, the
 * opener's: the owner, the umask or default ACL and the security label
 * are the branch's rules, as for create) and opened with @flags. The
 * branch inode is linkable (I_LINKABLE) unless @flags has O_EXCL. Caller
 * holds write access to the branch; the branch directory is not locked
 * (vfs_tmpfile adds no name to it).
 */
struct file *unionfs_do_tmpfile_open(struct unionfs_btable *bt, int bindex,
				     struct dentry *dir, umode_t mode,
				     int flags, const struct cred *cred)
{
	struct path path = { .mnt = unionfs_mnt(bt, bindex), .dentry = dir };
	struct unionfs_actor act;
	struct file *f;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_TMPFILE);

	if (err)
		return ERR_PTR(unionfs_trace_op(bt->sb, "tmpfile", bindex, dir,
						err));
	flags &= ~(O_CREAT | O_NOCTTY | O_TRUNC);
	unionfs_actor_begin(bt, &act);
	f = vfs_tmpfile_open(&init_user_ns, &path, mode, flags | O_LARGEFILE,
			     cred);
	unionfs_actor_end(bt, &act);
	unionfs_trace_op(bt->sb, "tmpfile", bindex, dir, PTR_ERR_OR_ZERO(f));
	return f;
}
