/* SPDX-License-Identifier: GPL-2.0 */
/* unionfs: calls into branch filesystems (lower.c). */
#ifndef _UNIONFS_LOWER_H
#define _UNIONFS_LOWER_H

#include "union.h"

#include <linux/tracepoint-defs.h>
#include <linux/uio.h>

struct fileattr;
struct kstatfs;

/*
 * Tracing (tracepoint unionfs_branch_op): the test is a static branch, so
 * that the wrappers on the data path (read, write, getattr, lookup) cost
 * nothing more than the call they wrap while nobody traces.
 */
#ifdef NOTRACE	/* tracepoints compiled out (bench/trace-cost.sh) */
#define unionfs_bop_traced()	false
#else
DECLARE_TRACEPOINT(unionfs_branch_op);
#define unionfs_bop_traced()	tracepoint_enabled(unionfs_branch_op)
#endif
void unionfs_trace_op_slow(struct super_block *sb, enum unionfs_bop op,
			   int bindex, struct dentry *d, int err);
void unionfs_trace_op_name(struct super_block *sb, enum unionfs_bop op,
			   int bindex, const char *name, int len, int err);

void unionfs_trace_file_slow(struct super_block *sb, enum unionfs_bop op,
			     struct file *lower, long err);

static inline int unionfs_trace_op(struct super_block *sb, enum unionfs_bop op,
				   int bindex, struct dentry *d, int err)
{
	if (unionfs_bop_traced())
		unionfs_trace_op_slow(sb, op, bindex, d, err);
	return err;
}

/*
 * A call on open branch file @lower: traced with the index of its branch
 * in the current table (found only while tracing), -1 if a branch change
 * has removed it since the file was opened.
 */
static inline long unionfs_trace_file(struct super_block *sb, enum unionfs_bop op,
				      struct file *lower, long ret)
{
	if (unionfs_bop_traced())
		unionfs_trace_file_slow(sb, op, lower, ret < 0 ? ret : 0);
	return ret;
}

/*
 * Data path: calls on an open branch file @lower of the union file whose
 * superblock is @sb.
 */
static inline ssize_t unionfs_do_read_iter(struct super_block *sb,
					   struct file *lower,
					   struct iov_iter *iter, loff_t *pos,
					   rwf_t flags)
{
	ssize_t ret = UNIONFS_FAULT(UNIONFS_FSITE_READ);

	if (!ret)
		ret = vfs_iter_read(lower, iter, pos, flags);
	unionfs_trace_file(sb, UNIONFS_BOP_READ, lower, ret);
	return ret;
}

/* Caller holds file_start_write(@lower). */
static inline ssize_t unionfs_do_write_iter(struct super_block *sb,
					    struct file *lower,
					    struct iov_iter *iter, loff_t *pos,
					    rwf_t flags)
{
	ssize_t ret = UNIONFS_FAULT(UNIONFS_FSITE_WRITE);

	if (!ret)
		ret = vfs_iter_write(lower, iter, pos, flags);
	unionfs_trace_file(sb, UNIONFS_BOP_WRITE, lower, ret);
	return ret;
}

static inline loff_t unionfs_do_llseek(struct super_block *sb,
				       struct file *lower, loff_t offset,
				       int whence)
{
	loff_t ret = vfs_llseek(lower, offset, whence);

	unionfs_trace_file(sb, UNIONFS_BOP_LLSEEK, lower, ret);
	return ret;
}

static inline int unionfs_do_getattr(struct super_block *sb, int bindex,
				     const struct path *path,
				     struct kstat *stat, u32 request_mask,
				     unsigned int flags)
{
	int err = UNIONFS_FAULT(UNIONFS_FSITE_GETATTR);

	if (!err)
		err = vfs_getattr(path, stat, request_mask, flags);
	return unionfs_trace_op(sb, UNIONFS_BOP_GETATTR, bindex, path->dentry, err);
}

int unionfs_do_fsync(struct super_block *sb, int bindex, struct file *lower,
		     loff_t start, loff_t end, int datasync);
long unionfs_do_fallocate(struct super_block *sb, struct file *lower,
			  int mode, loff_t offset, loff_t len);
int unionfs_do_fadvise(struct super_block *sb, struct file *lower,
		       loff_t offset, loff_t len, int advice);
loff_t unionfs_do_clone(struct super_block *sb, int bindex, struct file *in,
			struct file *out, loff_t len);
long unionfs_do_splice(struct super_block *sb, struct file *in, loff_t *ppos,
		       struct file *out, loff_t *opos, size_t len,
		       unsigned int flags);
int unionfs_do_iterate(struct super_block *sb, int bindex, struct file *dir,
		       struct dir_context *ctx);
int unionfs_do_iterate_own(struct super_block *sb, int bindex,
			   struct file *dir, struct dir_context *ctx);
const char *unionfs_do_get_link(struct super_block *sb, int bindex,
				struct dentry *d, struct delayed_call *done);
int unionfs_do_fileattr_get(struct super_block *sb, int bindex,
			    struct dentry *d, struct fileattr *fa);
ssize_t unionfs_do_getxattr(struct super_block *sb, int bindex,
			    struct dentry *d, const char *name, void *value,
			    size_t size);
ssize_t unionfs_do_probe_xattr(struct super_block *sb, int bindex,
			       struct dentry *d, const char *name,
			       void *value, size_t size);
ssize_t unionfs_do_listxattr(struct super_block *sb, int bindex,
			     struct dentry *d, char *list, size_t size);
int unionfs_do_statfs(struct unionfs_btable *bt, int bindex,
		      struct kstatfs *buf);
int unionfs_do_sync_fs(struct unionfs_btable *bt, int bindex);
struct dentry *unionfs_do_lookup_locked(struct unionfs_btable *bt,
					int bindex, struct dentry *parent,
					const char *name, int len);
struct dentry *unionfs_do_lookup_undo(struct unionfs_btable *bt, int bindex,
				      struct dentry *parent, const char *name,
				      int len);
int unionfs_do_lookup_marker(struct super_block *sb, struct dentry *dir,
			     const char *name, int len);

int unionfs_want_write(struct unionfs_btable *bt, int bindex);
void unionfs_drop_write(struct unionfs_btable *bt, int bindex);
void unionfs_pause_write(struct unionfs_btable *bt, int bindex);
int unionfs_resume_write(struct unionfs_btable *bt, int bindex);
struct dentry *unionfs_do_lookup(struct unionfs_btable *bt, int bindex,
				 struct dentry *base, const char *name,
				 int len);
struct dentry *unionfs_lock_lookup(struct unionfs_btable *bt, int bindex,
				   struct dentry *parent, const char *name,
				   int len);
int unionfs_do_create(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d, umode_t mode);
int unionfs_do_mkdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode);
int unionfs_do_mknod(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d, umode_t mode, dev_t dev);
int unionfs_do_symlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		       struct dentry *d, const char *target);
int unionfs_do_link(struct unionfs_btable *bt, int bindex, struct dentry *old,
		    struct inode *dir, struct dentry *d);
int unionfs_do_unlink(struct unionfs_btable *bt, int bindex, struct inode *dir,
		      struct dentry *d);
int unionfs_do_rmdir(struct unionfs_btable *bt, int bindex, struct inode *dir,
		     struct dentry *d);
int unionfs_do_rename(struct unionfs_btable *bt, int bindex,
		      struct inode *olddir, struct dentry *old,
		      struct inode *newdir, struct dentry *new,
		      unsigned int flags);
int unionfs_do_setattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
		       struct iattr *attr);
int unionfs_do_setxattr(struct unionfs_btable *bt, int bindex, struct dentry *d,
			const char *name, const void *value, size_t size,
			int flags);
int unionfs_do_removexattr(struct unionfs_btable *bt, int bindex,
			   struct dentry *d, const char *name);
struct file *unionfs_do_open(struct unionfs_btable *bt, int bindex,
			     struct dentry *d, int flags,
			     const struct cred *cred);
int unionfs_do_scan(struct unionfs_btable *bt, int bindex, struct dentry *d,
		    struct dir_context *ctx);
struct file *unionfs_do_tmpfile_open(struct unionfs_btable *bt, int bindex,
				     struct dentry *dir, umode_t mode,
				     int flags, const struct cred *cred);

#endif /* _UNIONFS_LOWER_H */
