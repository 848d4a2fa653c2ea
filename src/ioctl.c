// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: ioctls (uapi/unionfs.h): UNIONFS_IOCTL_INCGEN and
 * UNIONFS_IOCTL_QUERYFILE. Other ioctls are refused with -ENOTTY: the
 * flag ioctls reach the branch through ->fileattr_get, FIEMAP is not
 * forwarded.
 */
#include "union.h"
#include "lower.h"
#include "uapi/unionfs.h"

#include <linux/compat.h>
#include <linux/uaccess.h>
#include <linux/capability.h>

static long unionfs_ioctl_incgen(struct file *file)
{
	struct super_block *sb = file_inode(file)->i_sb;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	down_write(&sb->s_umount);
	{
		/* a command list: ended by an empty command (KASAN: read past) */
		char cmd[] = "incgen\0";

		err = unionfs_remount_branches(NULL, sb, cmd,
					       sb_rdonly(sb));
	}
	up_write(&sb->s_umount);
	return err ?: unionfs_sb_gen(sb);
}

static long unionfs_ioctl_queryfile(struct file *file, void __user *arg)
{
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_btable *bt = unionfs_dbt_get(dentry);
	struct unionfs_query q = { };
	struct unionfs_dentry_info *pud;
	struct name_snapshot name;
	struct dentry *parent;
	const struct cred *old;
	int b, n = 0, pstart, pend;

	q.nbranches = bt->nbr;
	q.generation = unionfs_sb_gen(dentry->d_sb);
	if (IS_ROOT(dentry)) {
		for (b = 0; b < bt->nbr; b++) {
			q.branches[b / 64] |= 1ULL << (b % 64);
			n++;
		}
		goto out;
	}
	/* the parent's range and lower dentries from one info, on @bt */
	parent = dget_parent(dentry);
	pud = unionfs_dinfo_get(parent);
	if (!pud || pud->bt != bt) {
		unionfs_dinfo_put(pud);
		dput(parent);
		unionfs_bt_put(bt);
		return -ESTALE;
	}
	unionfs_ud_range(pud, &pstart, &pend);
	/* the lookups sleep: a rename meanwhile must not free the name */
	take_dentry_name_snapshot(&name, dentry);
	old = unionfs_override_creds(dentry->d_sb);
	for (b = max(pstart, 0); b <= pend; b++) {
		struct dentry *lp = unionfs_ud_lower_get(pud, b), *ld;

		if (!lp)
			continue;
		ld = d_can_lookup(lp) ?
		     unionfs_do_lookup(bt, b, lp, name.name.name,
				       name.name.len) : NULL;
		if (!IS_ERR_OR_NULL(ld) && d_really_is_positive(ld)) {
			q.branches[b / 64] |= 1ULL << (b % 64);
			n++;
		}
		if (!IS_ERR(ld))
			dput(ld);
		dput(lp);
	}
	revert_creds(old);
	release_dentry_name_snapshot(&name);
	unionfs_dinfo_put(pud);
	dput(parent);
out:
	unionfs_bt_put(bt);
	if (copy_to_user(arg, &q, sizeof(q)))
		return -EFAULT;
	return n;
}

long unionfs_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case UNIONFS_IOCTL_INCGEN:
		return unionfs_ioctl_incgen(file);
	case UNIONFS_IOCTL_QUERYFILE:
		return unionfs_ioctl_queryfile(file, (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

#ifdef CONFIG_COMPAT
long unionfs_compat_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	return unionfs_ioctl(file, cmd, (unsigned long)compat_ptr(arg));
}
#endif
