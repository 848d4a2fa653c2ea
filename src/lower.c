// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: the one place through which every call into a branch
 * filesystem goes (like overlayfs' ovl_do_*). Each helper traces the call
 * (tracepoint unionfs_branch_op: op, branch index, name, errno) and the
 * fault injection sites (enum unionfs_fault_site_id) hang off the same
 * helpers. The data-path ones (read, write, llseek, getattr) are static
 * inline in lower.h: with tracing off they cost the call they wrap.
 *
 * Locking contract: callers hold mnt write access (unionfs_want_write) and
 * the lower parent's i_rwsem (I_MUTEX_PARENT) for namespace changes, as the
 * vfs_* helpers require; lookups of a name that is then created, removed
 * or renamed (unionfs_do_lookup_locked, _undo) are made under that lock,
 * asserted here. Credentials: the helpers run with the credentials they
 * are called with (the rule is in union.h, next to the lock order).
 *
 * Deliberately not wrapped (not calls on a branch's objects):
 * - kern_path() of a user-given branch path (branch.c, super.c): it
 *   resolves the mount option, before there is a branch;
 * - sync_filesystem() of the union's own superblock at remount (super.c);
 * - inode_permission() on branch inodes (inode.c): a permission query
 *   under the caller's or the mounter's credentials, made on the hot
 *   path of every path walk and never failing for an injected reason;
 * - ->flush and ->mmap of the branch file (file.c): the file's own
 *   methods, called as the VFS would (call_mmap, f_op->flush);
 * - lock_rename()/inode_lock() of branch directories: locking, the
 *   callers' part of the contract above.
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/fadvise.h>
#include <linux/splice.h>
#include <linux/statfs.h>

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

noinline void unionfs_trace_op_slow(struct super_block *sb, enum unionfs_bop op,
				    int bindex, struct dentry *d, int err)
{
	char nm[NAME_MAX + 1] = "";

	if (d)
		unionfs_dname_copy(nm, d);
	trace_unionfs_branch_op(sb, op, bindex, nm, err);
}

/* the same for a call on an open branch file: its branch's index */
noinline void unionfs_trace_file_slow(struct super_block *sb, enum unionfs_bop op,
				      struct file *lower, long err)
{
	struct unionfs_btable *bt = unionfs_bt_get(sb);
	int i, b = -1;

	for (i = 0; i < bt->nbr; i++) {
		if (bt->br[i]->path.mnt == lower->f_path.mnt) {
			b = i;
			break;
		}
	}
	unionfs_bt_put(bt);
	unionfs_trace_op_slow(sb, op, b, lower->f_path.dentry, err);
}

/* the same for a name not (yet) in a dentry: a failed lookup */
noinline void unionfs_trace_op_name(struct super_block *sb, enum unionfs_bop op,
				    int bindex, const char *name, int len,
				    int err)
{
	char nm[NAME_MAX + 1];

	len = clamp(len, 0, NAME_MAX);
	memcpy(nm, name, len);
	nm[len] = '\0';
	trace_unionfs_branch_op(sb, op, bindex, nm, err);
}

static struct dentry *unionfs_trace_lookup(struct super_block *sb,
					   int bindex, const char *name,
					   int len, struct dentry *d)
{
	if (unionfs_bop_traced())
		unionfs_trace_op_name(sb, UNIONFS_BOP_LOOKUP, bindex, name, len,
				      PTR_ERR_OR_ZERO(d));
	return d;
}

/*
 * Write access to branch @bindex of @bt for one change: the branch's own
 * (freeze protection) and the union's (counted in ->writers, so that a
 * del= in between is refused with EBUSY; -ESTALE once it is deleted).
 */
int unionfs_want_write(struct unionfs_btable *bt, int bindex)
{
	struct unionfs_branch *br = bt->br[bindex];
	int err;

	if (!unionfs_br_writable(br))
		return -EROFS;
	err = unionfs_br_use(br, &br->writers);
	if (err)
		return err;
	err = mnt_want_write(br->path.mnt);
	if (err)
		atomic_dec(&br->writers);
	return err;
}

void unionfs_drop_write(struct unionfs_btable *bt, int bindex)
{
	struct unionfs_branch *br = bt->br[bindex];

	mnt_drop_write(br->path.mnt);
	atomic_dec(&br->writers);
}

/*
 * Around a copy-up's data phase, whose chunks take the branch's freeze
 * protection themselves: only that is dropped; the union's count stays,
 * so del= still sees the copy in flight.
 */
void unionfs_pause_write(struct unionfs_btable *bt, int bindex)
{
	mnt_drop_write(unionfs_mnt(bt, bindex));
}

/* After unionfs_pause_write(); on failure nothing is held any more. */
int unionfs_resume_write(struct unionfs_btable *bt, int bindex)
{
	struct unionfs_branch *br = bt->br[bindex];
	int err = mnt_want_write(br->path.mnt);

	if (err)
		atomic_dec(&br->writers);
	return err;
}

struct dentry *unionfs_do_lookup(struct unionfs_btable *bt, int bindex,
				 struct dentry *base, const char *name,
				 int len)
{
	struct dentry *d;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_LOOKUP);

	if (err)
		return unionfs_trace_lookup(bt->sb, bindex, name, len,
					    ERR_PTR(err));
	d = lookup_one_unlocked(&init_user_ns, name, base, len);
	/* ".wh." + a long name may exceed NAME_MAX: that is "no whiteout". */
	if (IS_ERR(d) && PTR_ERR(d) == -ENAMETOOLONG)
		return NULL;
	return unionfs_trace_lookup(bt->sb, bindex, name, len, d);
}

/*
 * A lookup in branch directory @parent, which the caller holds locked
 * (I_MUTEX_PARENT or I_MUTEX_CHILD), of a name it then creates, removes or
 * renames. Fault site "lookup_locked".
 */
struct dentry *unionfs_do_lookup_locked(struct unionfs_btable *bt,
					int bindex, struct dentry *parent,
					const char *name, int len)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_LOOKUP_LOCKED);

	lockdep_assert_held(&d_inode(parent)->i_rwsem);
	if (err)
		return unionfs_trace_lookup(bt->sb, bindex, name, len,
					    ERR_PTR(err));
	return unionfs_trace_lookup(bt->sb, bindex, name, len,
				    lookup_one_len(name, parent, len));
}

/*
 * The same for the undoing of a failed operation and the removal of the
 * union's own markers and temporaries: no fault site, so that an injected
 * fault tests the operation's undo, not a failure of its undo.
 */
struct dentry *unionfs_do_lookup_undo(struct unionfs_btable *bt, int bindex,
				      struct dentry *parent, const char *name,
				      int len)
{
	lockdep_assert_held(&d_inode(parent)->i_rwsem);
	return unionfs_trace_lookup(bt->sb, bindex, name, len,
				    lookup_one_len(name, parent, len));
}

/*
 * Is there a marker @name (an opaque marker) in branch directory @dir?
 * 1, 0 or -errno. Part of every lookup of a directory (the "lookup" site
 * is that lookup's); traced with branch -1.
 */
int unionfs_do_lookup_marker(struct super_block *sb, struct dentry *dir,
			     const char *name, int len)
{
	struct dentry *d;
	int ret;

	d = lookup_one_unlocked(&init_user_ns, name, dir, len);
	unionfs_trace_lookup(sb, -1, name, len, d);
	if (IS_ERR(d))
		return PTR_ERR(d);
	ret = d_really_is_positive(d);
	dput(d);
	return ret;
}

struct dentry *unionfs_lock_lookup(struct unionfs_btable *bt, int bindex,
				   struct dentry *parent, const char *name,
				   int len)
{
	struct dentry *d;

	inode_lock_nested(d_inode(parent), I_MUTEX_PARENT);
	d = unionfs_do_lookup_locked(bt, bindex, parent, name, len);
	if (IS_ERR(d))
		inode_unlock(d_inode(parent));
	return d;
}

int unionfs_do_create(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d, umode_t mode)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_CREATE);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_create(&init_user_ns, dir, d, mode, true));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_CREATE, bindex, d, err);
}

int unionfs_do_mkdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_MKDIR);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_mkdir(&init_user_ns, dir, d, mode));
	if (!err && d_unhashed(d))
		err = -EIO;	/* a branch fs that does not instantiate */
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_MKDIR, bindex, d, err);
}

int unionfs_do_mknod(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode, dev_t dev)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_MKNOD);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_mknod(&init_user_ns, dir, d, mode, dev));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_MKNOD, bindex, d, err);
}

int unionfs_do_symlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		       struct dentry *d, const char *target)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SYMLINK);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_symlink(&init_user_ns, dir, d, target));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_SYMLINK, bindex, d, err);
}

int unionfs_do_link(struct unionfs_btable *bt, int bindex, struct dentry *old,
		    struct inode *dir, struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_LINK);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_link(old, &init_user_ns, dir, d, NULL));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_LINK, bindex, d, err);
}

int unionfs_do_unlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_UNLINK);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_unlink(&init_user_ns, dir, d, NULL));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_UNLINK, bindex, d, err);
}

int unionfs_do_rmdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_RMDIR);

	lockdep_assert_held(&dir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_rmdir(&init_user_ns, dir, d));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_RMDIR, bindex, d, err);
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

	lockdep_assert_held(&olddir->i_rwsem);
	lockdep_assert_held(&newdir->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, vfs_rename(&rd));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_RENAME, bindex, new, err);
}

/* Caller holds inode_lock(d_inode(d)). */
int unionfs_do_setattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
		       struct iattr *attr)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SETATTR);

	lockdep_assert_held(&d_inode(d)->i_rwsem);
	if (!err)
		err = UNIONFS_ACT(bt, notify_change(&init_user_ns, d, attr, NULL));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_SETATTR, bindex, d, err);
}

int unionfs_do_setxattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
			const char *name, const void *value, size_t size,
			int flags)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_SETXATTR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_setxattr(&init_user_ns, d, name,
						   value, size, flags));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_SETXATTR, bindex, d, err);
}

int unionfs_do_removexattr(struct unionfs_btable *bt, int bindex,
			   struct dentry *d, const char *name)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_REMOVEXATTR);

	if (!err)
		err = UNIONFS_ACT(bt, vfs_removexattr(&init_user_ns, d, name));
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_REMOVEXATTR, bindex, d, err);
}

struct file *unionfs_do_open(struct unionfs_btable *bt, int bindex,
			     struct dentry *d, int flags,
			     const struct cred *cred)
{
	struct path path = { .mnt = unionfs_mnt(bt, bindex), .dentry = d };
	struct file *f;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_OPEN);

	if (err)
		return ERR_PTR(unionfs_trace_op(bt->sb, UNIONFS_BOP_OPEN, bindex, d, err));
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC);
	f = dentry_open(&path, flags | O_LARGEFILE, cred);
	unionfs_trace_op(bt->sb, UNIONFS_BOP_OPEN, bindex, d, PTR_ERR_OR_ZERO(f));
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
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_SCAN, bindex, d, err);
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
		return ERR_PTR(unionfs_trace_op(bt->sb, UNIONFS_BOP_TMPFILE, bindex, dir,
						err));
	flags &= ~(O_CREAT | O_NOCTTY | O_TRUNC);
	unionfs_actor_begin(bt, &act);
	f = vfs_tmpfile_open(&init_user_ns, &path, mode, flags | O_LARGEFILE,
			     cred);
	unionfs_actor_end(bt, &act);
	unionfs_trace_op(bt->sb, UNIONFS_BOP_TMPFILE, bindex, dir, PTR_ERR_OR_ZERO(f));
	return f;
}

/*
 * Read branch directory @dir (an open file) into @ctx for the union's
 * readdir (readdir.c: merged, passed through, or to see whether a
 * directory is empty). Fault site "readdir".
 */
int unionfs_do_iterate(struct super_block *sb, int bindex, struct file *dir,
		       struct dir_context *ctx)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_READDIR);

	if (!err)
		err = iterate_dir(dir, ctx);
	return unionfs_trace_op(sb, UNIONFS_BOP_ITERATE, bindex, dir->f_path.dentry,
				err);
}

/*
 * The same for the union's own reads of a branch directory (the whiteout
 * knowledge, the whiteouts a removal cleans): no fault site, the ones of
 * the opens and lookups around them stand for them.
 */
int unionfs_do_iterate_own(struct super_block *sb, int bindex,
			   struct file *dir, struct dir_context *ctx)
{
	return unionfs_trace_op(sb, UNIONFS_BOP_SCAN, bindex, dir->f_path.dentry,
				iterate_dir(dir, ctx));
}

int unionfs_do_fsync(struct super_block *sb, int bindex, struct file *lower,
		     loff_t start, loff_t end, int datasync)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_FSYNC);

	if (!err)
		err = vfs_fsync_range(lower, start, end, datasync);
	if (bindex < 0)		/* an open file's: its branch */
		return unionfs_trace_file(sb, UNIONFS_BOP_FSYNC, lower, err);
	return unionfs_trace_op(sb, UNIONFS_BOP_FSYNC, bindex, lower->f_path.dentry,
				err);
}

/* Caller holds the union inode's lock (as the VFS holds it for fallocate). */
long unionfs_do_fallocate(struct super_block *sb, struct file *lower,
			  int mode, loff_t offset, loff_t len)
{
	long err = UNIONFS_FAULT(UNIONFS_FSITE_FALLOCATE);

	if (!err)
		err = vfs_fallocate(lower, mode, offset, len);
	return unionfs_trace_file(sb, UNIONFS_BOP_FALLOCATE, lower, err);
}

/* Advice: nothing to fail meaningfully, no fault site. */
int unionfs_do_fadvise(struct super_block *sb, struct file *lower,
		       loff_t offset, loff_t len, int advice)
{
	return unionfs_trace_file(sb, UNIONFS_BOP_FADVISE, lower,
				  vfs_fadvise(lower, offset, len, advice));
}

/*
 * Copy-up's data: @len bytes from branch file @in to @out. The fault site
 * is the caller's ("copyup_data", per chunk); the caller holds
 * file_start_write(@out).
 */
long unionfs_do_splice(struct super_block *sb, struct file *in, loff_t *ppos,
		       struct file *out, loff_t *opos, size_t len,
		       unsigned int flags)
{
	long ret = do_splice_direct(in, ppos, out, opos, len, flags);

	if (unionfs_bop_traced())
		unionfs_trace_op_slow(sb, UNIONFS_BOP_SPLICE, -1, out->f_path.dentry,
				      ret < 0 ? ret : 0);
	return ret;
}

/*
 * Copy-up's data as a clone: the first @len bytes of @in shared with @out
 * (the same branch superblock; reflink on xfs, btrfs, ...). The bytes
 * cloned, or -errno (EOPNOTSUPP, EXDEV, EINVAL: no clone here; the caller
 * copies instead). vfs_clone_file_range() takes @out's freeze protection
 * itself: the caller holds none. Fault site "copyup_clone".
 */
loff_t unionfs_do_clone(struct super_block *sb, int bindex, struct file *in,
			struct file *out, loff_t len)
{
	loff_t ret = UNIONFS_FAULT(UNIONFS_FSITE_COPYUP_CLONE);

	if (!ret)
		ret = vfs_clone_file_range(in, 0, out, 0, len, 0);
	unionfs_trace_op(sb, UNIONFS_BOP_CLONE, bindex, out->f_path.dentry,
			 ret < 0 ? ret : 0);
	return ret;
}

const char *unionfs_do_get_link(struct super_block *sb, int bindex,
				struct dentry *d, struct delayed_call *done)
{
	const char *p;
	int err = UNIONFS_FAULT(UNIONFS_FSITE_GET_LINK);

	p = err ? ERR_PTR(err) : vfs_get_link(d, done);
	unionfs_trace_op(sb, UNIONFS_BOP_GET_LINK, bindex, d, PTR_ERR_OR_ZERO(p));
	return p;
}

/* FS_IOC_GETFLAGS and statx attributes: a query, no fault site. */
int unionfs_do_fileattr_get(struct super_block *sb, int bindex,
			    struct dentry *d, struct fileattr *fa)
{
	return unionfs_trace_op(sb, UNIONFS_BOP_FILEATTR_GET, bindex, d,
				vfs_fileattr_get(d, fa));
}

/* xattr @name of branch object @d, permission-checked as the caller. */
ssize_t unionfs_do_getxattr(struct super_block *sb, int bindex,
			    struct dentry *d, const char *name, void *value,
			    size_t size)
{
	ssize_t ret = UNIONFS_FAULT(UNIONFS_FSITE_GETXATTR);

	if (!ret)
		ret = vfs_getxattr(&init_user_ns, d, name, value, size);
	unionfs_trace_op(sb, UNIONFS_BOP_GETXATTR, bindex, d, ret < 0 ? ret : 0);
	return ret;
}

/*
 * Xattr @name of @d (its size if @value is NULL), with no permission check
 * and no fault site: the union's own probe of what a branch fs holds
 * (xattr.c, before a copy-up; index.c, its link-group entries), not a read
 * of a user's.
 */
ssize_t unionfs_do_probe_xattr(struct super_block *sb, int bindex,
			       struct dentry *d, const char *name,
			       void *value, size_t size)
{
	ssize_t ret = __vfs_getxattr(d, d_inode(d), name, value, size);

	unionfs_trace_op(sb, UNIONFS_BOP_PROBE_XATTR, bindex, d, ret < 0 ? ret : 0);
	return ret;
}

ssize_t unionfs_do_listxattr(struct super_block *sb, int bindex,
			     struct dentry *d, char *list, size_t size)
{
	ssize_t ret = UNIONFS_FAULT(UNIONFS_FSITE_LISTXATTR);

	if (!ret)
		ret = vfs_listxattr(d, list, size);
	unionfs_trace_op(sb, UNIONFS_BOP_LISTXATTR, bindex, d, ret < 0 ? ret : 0);
	return ret;
}

int unionfs_do_statfs(struct unionfs_btable *bt, int bindex,
		      struct kstatfs *buf)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_STATFS);

	if (!err)
		err = vfs_statfs(&bt->br[bindex]->path, buf);
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_STATFS, bindex,
				bt->br[bindex]->path.dentry, err);
}

/*
 * Write back branch @bindex's filesystem (syncfs of the union). Its
 * errors come from the branch's writeback, which a fault site would not
 * model: none here.
 */
int unionfs_do_sync_fs(struct unionfs_btable *bt, int bindex)
{
	struct super_block *lsb = bt->br[bindex]->path.mnt->mnt_sb;
	int err;

	down_read(&lsb->s_umount);
	err = sync_filesystem(lsb);
	up_read(&lsb->s_umount);
	return unionfs_trace_op(bt->sb, UNIONFS_BOP_SYNC_FS, bindex,
				bt->br[bindex]->path.dentry, err);
}
