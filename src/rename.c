// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: rename, after the seed's rename table (rename.txt):
 *
 *                  none    file    dir     child   wh
 *   file           o       o       E       E       E
 *   dir            o       E       o       E       o
 *   child          X       E       X       E       X
 *   wh             o       E       o       E       o
 *
 * (o success, E error from the VFS or ENOTEMPTY, X EXDEV; "dir" an empty
 * directory, "child" a non-empty one, "wh" one holding only whiteouts.)
 * A non-empty directory can move only when it lives entirely in one
 * writable branch. Everything else is copied up to the writable branch the
 * rename happens in. Renamed directories are made opaque, and the source
 * name gets a whiteout when a lower branch still holds it.
 *
 * Ordering keeps the union consistent on failure: the source whiteout is
 * created before the lower rename (a same-branch name hides its own
 * whiteout) and removed again if the rename fails; directories are marked
 * opaque before they move (they are logically empty, or have no lower
 * copies, so that changes nothing visible).
 */
#include "union.h"
#include "lower.h"

#include "unionfs_trace.h"

/* After a successful rename, @dentry (moving to the new name) is only at t. */
static void unionfs_dentry_narrow(struct dentry *dentry, int t,
				  struct dentry *lnew, bool opaque)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct dentry **old;
	int b, n = ud->nbr;

	old = kcalloc(n, sizeof(*old), GFP_KERNEL | __GFP_NOFAIL);
	spin_lock(&ud->lock);
	for (b = 0; b < n; b++) {
		old[b] = ud->lower[b];
		ud->lower[b] = NULL;
	}
	ud->lower[t] = dget(lnew);
	ud->bstart = t;
	ud->bend = t;
	ud->bopaque = opaque ? t : -1;
	ud->bwh = -1;
	spin_unlock(&ud->lock);
	for (b = 0; b < n; b++)
		dput(old[b]);
	kfree(old);
}

int unionfs_rename(struct user_namespace *mnt_userns, struct inode *old_dir,
		   struct dentry *old_dentry, struct inode *new_dir,
		   struct dentry *new_dentry, unsigned int flags)
{
	struct super_block *sb = old_dir->i_sb;
	struct dentry *old_parent = old_dentry->d_parent;
	struct dentry *new_parent = new_dentry->d_parent;
	struct unionfs_dentry_info *nud = UNIONFS_D(new_dentry);
	struct unionfs_btable *bt = unionfs_dbt(old_dentry);
	struct dentry *lold_parent = NULL, *lnew_parent = NULL;
	struct dentry *lold = NULL, *cur_old = NULL, *lnew = NULL, *trap;
	bool isdir = d_is_dir(old_dentry), need_wh, made_wh = false;
	const struct cred *cred;
	int ostart, oend, limit, t, err, has_wh;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;	/* RENAME_EXCHANGE, RENAME_WHITEOUT */
	if (!nud || nud->bt != bt || unionfs_dbt(old_parent) != bt ||
	    unionfs_dbt(new_parent) != bt)
		return -ESTALE;	/* built against another branch table */

	if (d_really_is_positive(new_dentry) && d_is_dir(new_dentry)) {
		err = unionfs_check_empty(new_dentry, &has_wh);
		if (err)
			return err;
	}

	unionfs_get_range(old_dentry, &ostart, &oend);
	if (ostart < 0)
		return -ESTALE;

	/* where the rename happens: at or above both names */
	limit = ostart;
	if (d_really_is_positive(new_dentry))
		limit = min(limit, nud->bstart);
	else if (nud->bwh >= 0)
		limit = min(limit, nud->bwh);
	t = unionfs_nearest_writable(bt, limit);
	if (t < 0)
		return t;

	if (isdir) {
		err = unionfs_check_empty(old_dentry, &has_wh);
		if (err == -ENOTEMPTY) {
			/* a non-empty directory moves only within its branch */
			if (t != ostart || oend != ostart ||
			    unionfs_lower_has_name(old_parent,
						   &old_dentry->d_name,
						   ostart + 1))
				return -EXDEV;
		} else if (err) {
			return err;
		}
	}

	err = unionfs_copyup_dentry(old_dentry, t, "rename", -1);
	if (!err)
		err = unionfs_copyup_dir(new_parent, t);
	if (err)
		return err;

	need_wh = unionfs_lower_has_name(old_parent, &old_dentry->d_name,
					 t + 1);
	lold = unionfs_lower_dentry_get(old_dentry, t);
	lold_parent = unionfs_lower_dentry_get(old_parent, t);
	lnew_parent = unionfs_lower_dentry_get(new_parent, t);
	err = -ESTALE;
	if (!lold || !lold_parent || !lnew_parent)
		goto out_dput;

	err = unionfs_want_write(bt, t);
	if (err)
		goto out_dput;

	cred = unionfs_override_creds(sb);
	if (isdir) {
		/* logically empty (or wholly ours): mark opaque before moving */
		err = unionfs_clean_whiteouts(bt, t, lold, false);
		if (!err && d_really_is_positive(new_dentry)) {
			struct dentry *ln = unionfs_lower_dentry_get(new_dentry,
								     t);
			if (ln) {
				if (d_is_dir(ln))
					err = unionfs_clean_whiteouts(bt, t,
								      ln, false);
				dput(ln);
			}
		}
		if (!err)
			err = unionfs_make_opaque(bt, t, lold, "rename");
	}
	revert_creds(cred);
	if (err)
		goto out_drop;

	trap = lock_rename(lold_parent, lnew_parent);
	err = -EINVAL;
	if (trap == lold)
		goto out_unlock;
	cur_old = lookup_one_len(old_dentry->d_name.name, lold_parent,
				 old_dentry->d_name.len);
	if (IS_ERR(cur_old)) {
		err = PTR_ERR(cur_old);
		cur_old = NULL;
		goto out_unlock;
	}
	err = -ESTALE;
	if (cur_old != lold)
		goto out_unlock;
	lnew = lookup_one_len(new_dentry->d_name.name, lnew_parent,
			      new_dentry->d_name.len);
	if (IS_ERR(lnew)) {
		err = PTR_ERR(lnew);
		lnew = NULL;
		goto out_unlock;
	}
	err = -ENOTEMPTY;
	if (trap == lnew)
		goto out_unlock;
	if (need_wh) {
		cred = unionfs_override_creds(sb);
		err = unionfs_whiteout_locked(bt, t, lold_parent,
					      &old_dentry->d_name, "rename");
		revert_creds(cred);
		if (err)
			goto out_unlock;
		made_wh = true;
	}
	/* RENAME_NOREPLACE: also a name made in the branch behind our back */
	err = unionfs_do_rename(bt, t, d_inode(lold_parent), lold,
				d_inode(lnew_parent), lnew, flags);
	cred = unionfs_override_creds(sb);
	if (err && made_wh)
		unionfs_remove_whiteout_locked(bt, t, lold_parent,
					       &old_dentry->d_name, "revert");
	if (!err && nud->bwh == t)
		unionfs_remove_whiteout_locked(bt, t, lnew_parent,
					       &new_dentry->d_name, "rename");
	revert_creds(cred);
out_unlock:
	unlock_rename(lold_parent, lnew_parent);
	if (!err) {
		unionfs_dentry_narrow(old_dentry, t, lold, isdir);
		if (isdir) {
			unionfs_inode_set_vec(d_inode(old_dentry),
					      UNIONFS_D(old_dentry));
			shrink_dcache_parent(old_dentry);
		}
		unionfs_dir_changed(old_dir);
		if (new_dir != old_dir)
			unionfs_dir_changed(new_dir);
	}
out_drop:
	unionfs_drop_write(bt, t);
out_dput:
	dput(cur_old);
	dput(lnew);
	dput(lold);
	dput(lold_parent);
	dput(lnew_parent);
	return err;
}
