/* SPDX-License-Identifier: GPL-2.0 */
/* unionfs: calls into branch filesystems (lower.c). */
#ifndef _UNIONFS_LOWER_H
#define _UNIONFS_LOWER_H

#include "union.h"

int unionfs_want_write(struct unionfs_btable *bt, int bindex);
void unionfs_drop_write(struct unionfs_btable *bt, int bindex);
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
				     const struct cred *cred);

#endif /* _UNIONFS_LOWER_H */
