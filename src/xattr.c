// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: extended attributes. Reads come from the winning branch;
 * changes copy the object up first and are made on the writable copy with
 * the caller's credentials (the branch fs checks them).
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>

static int unionfs_xattr_get(const struct xattr_handler *handler,
			     struct dentry *dentry, struct inode *inode,
			     const char *name, void *buffer, size_t size)
{
	struct dentry *ld;
	int b, ret;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	ret = vfs_getxattr(&init_user_ns, ld, name, buffer, size);
	dput(ld);
	return ret;
}

static int unionfs_xattr_set(const struct xattr_handler *handler,
			     struct user_namespace *mnt_userns,
			     struct dentry *dentry, struct inode *inode,
			     const char *name, const void *value, size_t size,
			     int flags)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	struct dentry *ld;
	int b, err;

	err = unionfs_copyup_for_write(dentry, "xattr", -1);
	if (err)
		return err;
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	err = unionfs_want_write(bt, b);
	if (!err) {
		if (value)
			err = unionfs_do_setxattr(bt, b, ld, name, value, size,
						  flags);
		else
			err = unionfs_do_removexattr(bt, b, ld, name);
		unionfs_drop_write(bt, b);
	}
	if (d_really_is_positive(ld))
		unionfs_copy_attr(inode, d_inode(ld));
	unionfs_perm_forget(inode);
	dput(ld);
	return err;
}

ssize_t unionfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	struct dentry *ld;
	ssize_t ret;
	int b;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	ret = vfs_listxattr(ld, list, size);
	dput(ld);
	return ret;
}

static const struct xattr_handler unionfs_xattr_handler = {
	.prefix	= "",	/* every name: the branch decides */
	.get	= unionfs_xattr_get,
	.set	= unionfs_xattr_set,
};

const struct xattr_handler *unionfs_xattr_handlers[] = {
	&unionfs_xattr_handler,
	NULL
};
