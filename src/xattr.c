// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: extended attributes. Reads come from the winning branch;
 * changes copy the object up first and are made on the writable copy with
 * the caller's credentials (the branch fs checks them). What the branch
 * would refuse is refused before the copy-up, so that a refused change
 * copies nothing up (unionfs_xattr_precheck()).
 *
 * The union's own attributes on branch objects ("trusted.unionfs.*": the
 * link-group index's, index.c) are not the file's: they are left out of
 * listings and copy-ups, and reading, setting or removing one through the
 * union gives EOPNOTSUPP (as overlayfs does for "trusted.overlay.*").
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

bool unionfs_xattr_private(const char *name)
{
	return !strncmp(name, UNIONFS_XATTR_PRIVATE,
			sizeof(UNIONFS_XATTR_PRIVATE) - 1);
}

static int unionfs_xattr_get(const struct xattr_handler *handler,
			     struct dentry *dentry, struct inode *inode,
			     const char *name, void *buffer, size_t size)
{
	struct dentry *ld;
	int b, ret;

	if (unionfs_xattr_private(name))
		return -EOPNOTSUPP;
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	ret = unionfs_do_getxattr(dentry->d_sb, b, ld, name, buffer, size);
	dput(ld);
	return ret;
}

/*
 * Before a change of @dentry's xattr @name copies it up: refuse what the
 * branch would refuse anyway. The VFS has already run xattr_permission()
 * and the security modules on the union inode, whose owner, mode and
 * flags mirror the winning branch's; left are the branch fs's own checks:
 * a namespace the writable branch's fs does not have (EOPNOTSUPP), a
 * POSIX ACL (set_posix_acl(): a malformed value, a default ACL on a
 * non-directory, a caller not the owner), a removal or XATTR_REPLACE of
 * an attribute the object does not have (ENODATA) and XATTR_CREATE of one
 * it has (EEXIST); copy-up copies every xattr the target fs can hold.
 * Returns 0 to go on, 1 for "nothing to do" (the removal of a default ACL
 * of a non-directory), or -errno.
 */
static int unionfs_xattr_precheck(struct dentry *dentry, struct inode *inode,
				  const char *name, const void *value,
				  size_t size, int flags)
{
	struct unionfs_btable *bt;
	struct dentry *ld, *root;
	bool acl_access, acl_default;
	int b, t, err = 0;
	ssize_t ret;

	bt = unionfs_dbt_get(dentry);	/* the root's may be replaced */
	ld = unionfs_lower_top_at(dentry, bt, &b);	/* a branch of @bt */
	if (IS_ERR_OR_NULL(ld)) {
		unionfs_bt_put(bt);
		return -ESTALE;
	}
	if (unionfs_branch_writable(bt, b))
		goto out;	/* no copy-up: the branch fs decides */
	t = unionfs_nearest_writable(bt, b);
	if (t < 0)
		goto out;	/* the copy-up says why */
	root = bt->br[t]->path.dentry;
	ret = unionfs_do_probe_xattr(bt->sb, t, root, name, NULL, 0);
	if (ret == -EOPNOTSUPP) {
		err = ret;
		goto out;
	}
	acl_access = !strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS);
	acl_default = !strcmp(name, XATTR_NAME_POSIX_ACL_DEFAULT);
	if (acl_access || acl_default) {
		if (value) {
			struct posix_acl *acl;

			acl = posix_acl_from_xattr(&init_user_ns, value, size);
			if (IS_ERR(acl)) {
				err = PTR_ERR(acl);
				goto out;
			}
			/* set_posix_acl's own check: no mask, duplicates */
			if (acl)
				err = posix_acl_valid(&init_user_ns, acl);
			posix_acl_release(acl);
			if (err)
				goto out;
		}
		if (acl_default && !S_ISDIR(inode->i_mode))
			err = value ? -EACCES : 1;
		else if (!inode_owner_or_capable(&init_user_ns, inode))
			err = -EPERM;
		goto out;
	}
	if (value && !(flags & (XATTR_CREATE | XATTR_REPLACE)))
		goto out;
	ret = unionfs_do_probe_xattr(bt->sb, b, ld, name, NULL, 0);
	if (ret == -ENODATA && (!value || (flags & XATTR_REPLACE)))
		err = -ENODATA;
	else if (ret >= 0 && value && (flags & XATTR_CREATE))
		err = -EEXIST;
out:
	unionfs_bt_put(bt);
	dput(ld);
	return err;
}

/*
 * Set (@value) or remove xattr @name of @dentry: refused before any copy-up
 * when the branch would refuse it, else copied up and made on the copy
 * with the caller's credentials, so the branch fs checks them again (a
 * POSIX ACL: its owner check, its mode update and SGID clearing).
 */
static int unionfs_xattr_change(struct dentry *dentry, struct inode *inode,
				const char *name, const void *value,
				size_t size, int flags)
{
	struct unionfs_btable *bt;
	struct dentry *ld;
	int b, err;

	err = unionfs_xattr_precheck(dentry, inode, name, value, size, flags);
	if (err)
		return err < 0 ? err : 0;
	err = unionfs_copyup_for_write(dentry, UNIONFS_CUR_XATTR, -1);
	if (err)
		return err;
	bt = unionfs_dbt_get(dentry);	/* the root's may be replaced */
	ld = unionfs_lower_top_at(dentry, bt, &b);	/* a branch of @bt */
	if (IS_ERR_OR_NULL(ld)) {
		unionfs_bt_put(bt);
		return -ESTALE;
	}
	err = unionfs_want_write(bt, b);
	if (!err) {
		if (value)
			err = unionfs_do_setxattr(bt, b, ld, name, value, size,
						  flags);
		else
			err = unionfs_do_removexattr(bt, b, ld, name);
		unionfs_drop_write(bt, b);
	}
	unionfs_bt_put(bt);
	if (d_really_is_positive(ld))
		unionfs_copy_attr(inode, d_inode(ld));
	unionfs_perm_forget(inode);
	dput(ld);
	return err;
}

static int unionfs_xattr_set(const struct xattr_handler *handler,
			     struct user_namespace *mnt_userns,
			     struct dentry *dentry, struct inode *inode,
			     const char *name, const void *value, size_t size,
			     int flags)
{
	if (unionfs_xattr_private(name)) {
		pr_warn_ratelimited("xattr %*pE of %pd: reserved for the union (EOPNOTSUPP)\n",
				    (int)strlen(name), name, dentry);
		return -EOPNOTSUPP;
	}
	return unionfs_xattr_change(dentry, inode, name, value, size, flags);
}

/*
 * ->set_acl (set_posix_acl(): nfsd, ksmbd; the VFS has checked the owner
 * and the ACL): the same path as setxattr of the ACL's xattr, so a
 * lower-only object is copied up first (after the precheck) and the
 * branch sets the ACL on the copy.
 */
int unionfs_set_acl(struct user_namespace *mnt_userns, struct inode *inode,
		    struct posix_acl *acl, int type)
{
	const char *name = type == ACL_TYPE_ACCESS ?
			   XATTR_NAME_POSIX_ACL_ACCESS :
			   XATTR_NAME_POSIX_ACL_DEFAULT;
	struct dentry *dentry;
	void *value = NULL;
	size_t size = 0;
	int err;

	if (type != ACL_TYPE_ACCESS && type != ACL_TYPE_DEFAULT)
		return -EINVAL;
	dentry = d_find_alias(inode);
	if (!dentry)
		return -ESTALE;
	if (acl) {
		size = posix_acl_xattr_size(acl->a_count);
		value = kmalloc(size, GFP_KERNEL);
		err = -ENOMEM;
		if (!value)
			goto out;
		err = posix_acl_to_xattr(&init_user_ns, acl, value, size);
		if (err < 0)
			goto out;
	}
	err = unionfs_xattr_change(dentry, inode, name, value, size, 0);
out:
	kfree(value);
	dput(dentry);
	return err;
}

/* Drop the union's own names from @list (@len bytes): the new length. */
static ssize_t unionfs_xattr_filter(char *list, ssize_t len)
{
	char *s = list, *d = list;

	while (s < list + len) {
		size_t n = strnlen(s, list + len - s) + 1;

		if (!unionfs_xattr_private(s)) {
			memmove(d, s, n);
			d += n;
		}
		s += n;
	}
	return d - list;
}

ssize_t unionfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	struct dentry *ld;
	char *buf = NULL;
	ssize_t ret = -ERANGE;
	int b;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	/* the branch's list, less the union's own names, filtered in place */
	if (size)
		ret = unionfs_do_listxattr(dentry->d_sb, b, ld, list, size);
	if (ret > 0) {
		ret = unionfs_xattr_filter(list, ret);
	} else if (ret == -ERANGE) {
		/*
		 * A size query, or a list that fits @size only once filtered:
		 * read it whole into a buffer of ours first.
		 */
		ret = unionfs_do_listxattr(dentry->d_sb, b, ld, NULL, 0);
		if (ret > 0) {
			buf = kvmalloc(ret, GFP_KERNEL);
			ret = buf ? unionfs_do_listxattr(dentry->d_sb, b, ld,
							 buf, ret) : -ENOMEM;
		}
		if (ret > 0)
			ret = unionfs_xattr_filter(buf, ret);
		if (ret > 0 && size) {
			if (ret > size)
				ret = -ERANGE;
			else
				memcpy(list, buf, ret);
		}
		kvfree(buf);
	}
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
