// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: rename, after the seed's rename table (rename.txt):
 *
 *                  none    file    dir     child   wh
 *   file           o       o       E       E       E
 *   dir            r       E       r       E       r
 *   child          r       E       r       E       r
 *   wh             r       E       r       E       r
 *
 * (o success, E error from the VFS or ENOTEMPTY, r success; "dir" an empty
 * directory, "child" a non-empty one, "wh" one holding only whiteouts.)
 * Everything is copied up to the writable branch the rename happens in;
 * for a directory that is only the directory itself. A directory with
 * copies below that branch keeps its lower contents where they are: its
 * copy is marked with the redirect trusted.unionfs.redirect (the path of
 * its lower copies, docs/concepts.md "Directory rename") and is not
 * opaque. A directory wholly in that branch is made opaque. The source
 * name gets a whiteout when a lower branch still holds it.
 *
 * Ordering keeps the union consistent on failure (see
 * unionfs_rename_locked): every step that can fail and is not yet visible
 * comes first and is undone if the lower rename fails.
 */
#include "union.h"
#include "lower.h"

#include <linux/xattr.h>

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
	ud->bredir = -1;
	spin_unlock(&ud->lock);
	for (b = 0; b < n; b++)
		dput(old[b]);
	kfree(old);
}

/*
 * Where the lower contents of the union directory @dentry live for the
 * branches below @t (the branch the rename happens in), relative to every
 * branch's root: the redirect of its topmost copy, or else its parent's
 * path and its name (docs/concepts.md, "Directory rename"). A redirect on a
 * copy below @t is not taken: that copy still has the name it has in the
 * union, and a lookup reaches the redirect through it (it sends the
 * branches below it on, unionfs_redirect_follow); taken instead, the path
 * would name what a whiteout between hides (review 21: the renamed
 * directory showed nothing of its lower copies). Returns a kmalloc'ed
 * string or an ERR_PTR. Mounter's credentials.
 */
static char *unionfs_redirect_path(struct dentry *dentry, int t)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	char *buf, *rd = NULL;
	struct dentry *d;
	int pos = PATH_MAX - 1, err = 0;

	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	buf[pos] = '\0';
	d = dget(dentry);
	/* bounded: every round prepends at least two bytes */
	while (!IS_ROOT(d)) {
		struct name_snapshot nm;
		struct dentry *top, *parent;
		int b, len;

		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		/*
		 * The name first: a concurrent rename of @d in its directory
		 * sets the redirect before it moves the name, so a new name
		 * seen here comes with its redirect seen below.
		 */
		take_dentry_name_snapshot(&nm, d);
		/* @b indexes @bt: an ancestor on another table is ESTALE */
		top = unionfs_lower_top_at(d, bt, &b);
		if (IS_ERR(top)) {
			rd = ERR_CAST(top);
			top = NULL;
		} else if (top && d_is_dir(top) && b <= t) {
			rd = unionfs_redirect_get(bt, b, top);
		}
		dput(top);
		if (IS_ERR(rd)) {
			release_dentry_name_snapshot(&nm);
			err = PTR_ERR(rd);
			rd = NULL;
			break;
		}
		if (rd) {
			release_dentry_name_snapshot(&nm);
			break;
		}
		len = nm.name.len;
		if (pos < len + 2) {
			release_dentry_name_snapshot(&nm);
			err = -ENAMETOOLONG;
			break;
		}
		pos -= len;
		memcpy(buf + pos, nm.name.name, len);
		buf[--pos] = '/';
		release_dentry_name_snapshot(&nm);
		parent = dget_parent(d);
		dput(d);
		d = parent;
	}
	dput(d);
	if (!err && rd) {
		int len = strlen(rd);

		if (pos < len + 1) {
			err = -ENAMETOOLONG;
		} else {
			pos -= len;
			memcpy(buf + pos, rd, len);
		}
	} else if (!err) {
		pos++;	/* the leading '/' */
	}
	kfree(rd);
	if (!err && (pos >= PATH_MAX - 1))
		err = -EIO;	/* the root is never renamed */
	if (err) {
		kfree(buf);
		return ERR_PTR(err);
	}
	memmove(buf, buf + pos, PATH_MAX - pos);
	return buf;
}

/*
 * Mark the directory @ld (branch @t, write access held, mounter's
 * credentials) as renamed from @path, unless it already is. *@made: it
 * was not. A branch fs without trusted xattrs cannot hold the marker:
 * EXDEV (the caller, mv, copies).
 */
static int unionfs_redirect_set(struct dentry *dentry, int t,
				struct dentry *ld, const char *path,
				bool *made)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	char *cur = unionfs_redirect_get(bt, t, ld);
	int err;

	*made = false;
	if (IS_ERR(cur))
		return PTR_ERR(cur);
	if (cur) {
		err = strcmp(cur, path) ? -EIO : 0;
		kfree(cur);
		if (err)
			pr_warn_ratelimited("branch %d: redirect of %pd changed meanwhile\n",
					    t, ld);
		return err;
	}
	/* fault site "redirect": the marker step of a directory rename */
	err = UNIONFS_FAULT(UNIONFS_FSITE_REDIRECT);
	if (!err)
		err = unionfs_do_setxattr(bt, t, ld, UNIONFS_XATTR_REDIRECT,
					  path, strlen(path), XATTR_CREATE);
	unionfs_trace_dname(unionfs_redirect, bt->sb, dentry, t, path, "set",
			    err);
	if (err == -EOPNOTSUPP || err == -EPERM)
		err = -EXDEV;
	if (!err)
		*made = true;
	return err;
}

/*
 * Where a rename happens: at or above both names, in the nearest writable
 * branch at or above the source's top and the new name's top or whiteout
 * (@ostart: the source's top).
 */
static int unionfs_rename_limit(struct dentry *old, struct dentry *new,
				int ostart)
{
	struct unionfs_dentry_info *nud = UNIONFS_D(new);
	int limit = ostart;

	if (d_really_is_positive(new))
		limit = min(limit, READ_ONCE(nud->bstart));
	else if (READ_ONCE(nud->bwh) >= 0)
		limit = min(limit, READ_ONCE(nud->bwh));
	return limit;
}

/*
 * The branch the rename of @old to @new happens in (or -errno), before
 * the new name's directory is known to show there. *@group: for a file
 * with other names (a link group), the one branch that keeps them
 * (unionfs_group_branch; -EROFS while it is read-only); -1 for any other.
 * Moved anywhere else (its new name shown from higher: a name or whiteout
 * there) it would be a copy, another file, and its other names would stay
 * behind: the caller answers EXDEV, as link(2) does (unionfs_link_plan),
 * and mv copies (udiff seed 740821).
 */
static int unionfs_rename_target(struct dentry *old, struct dentry *new,
				 struct unionfs_btable *bt, int *group)
{
	int ostart, oend;

	*group = -1;
	unionfs_get_range(old, &ostart, &oend);
	if (ostart < 0)
		return -ESTALE;
	if (!d_is_dir(old) && d_inode(old)->i_nlink > 1) {
		*group = unionfs_group_branch(bt, ostart);
		if (*group < 0)
			return *group;
	}
	return unionfs_nearest_writable(bt, unionfs_rename_limit(old, new,
								 ostart));
}

/*
 * The rename itself, under the cu_lock of both inodes (see
 * unionfs_rename): the plan (branch ranges) is read only now.
 *
 * All or nothing: the steps that can fail and change nothing visible come
 * first (copy-up, the opaque marker of a moving directory, which is
 * logically empty or has no lower copies, the whiteout of the source
 * name, which its same-branch name hides); a replaced directory holding
 * whiteouts is moved to a temporary name (one step) rather than cleaned
 * in place; then the lower rename. A failure of that undoes the earlier
 * steps; the cleaning of the replaced directory comes after success and
 * can only leave an invisible leftover.
 */
static int unionfs_rename_locked(struct inode *old_dir,
				 struct dentry *old_dentry,
				 struct inode *new_dir,
				 struct dentry *new_dentry,
				 unsigned int flags)
{
	struct super_block *sb = old_dir->i_sb;
	struct dentry *old_parent = old_dentry->d_parent;
	struct dentry *new_parent = new_dentry->d_parent;
	struct unionfs_dentry_info *nud = UNIONFS_D(new_dentry);
	struct unionfs_btable *bt = unionfs_dbt(old_dentry);
	struct dentry *lold_parent = NULL, *lnew_parent = NULL;
	struct dentry *lold = NULL, *cur_old = NULL, *lnew = NULL, *trap;
	struct dentry *ltarget = NULL;
	bool isdir = d_is_dir(old_dentry), need_wh, made_wh = false;
	bool made_opaque = false, stash = false, stashed = false;
	bool redirect = false, made_rd = false;
	char *rpath = NULL;
	const struct cred *cred = NULL;
	int ostart, oend, limit, t, group, err, has_wh, tries;

	/* both infos are stable now; the parents' are read on @bt below */
	if (nud->bt != bt)
		return -ESTALE;
	if (d_really_is_positive(new_dentry) && d_is_dir(new_dentry)) {
		err = unionfs_check_empty(new_dentry, &has_wh);
		if (err)
			return err;
	}

	/* a link group that would leave its branch: before anything changes */
	t = unionfs_rename_target(old_dentry, new_dentry, bt, &group);
	if (t == -EROFS && group == -EROFS)
		return t;
	if (t >= 0 && group >= 0 && t != group)
		return -EXDEV;
	/* names of link groups: their own names first (index.c) */
	if (!isdir) {
		err = unionfs_index_prepare_remove(old_dentry);
		if (!err && d_really_is_positive(new_dentry))
			err = unionfs_index_prepare_remove(new_dentry);
		if (err)
			return err;
	}
	unionfs_get_range(old_dentry, &ostart, &oend);
	if (ostart < 0)
		return -ESTALE;
	limit = unionfs_rename_limit(old_dentry, new_dentry, ostart);
	t = unionfs_rename_target(old_dentry, new_dentry, bt, &group);
	if (t < 0)
		return t;
	if (group >= 0 && t != group)
		return -EXDEV;
	/*
	 * The new name's directory, copied to @t first: hidden there, the
	 * rename happens higher, at or above the branch it shows from (udiff
	 * seed 3183: EXDEV before).
	 */
	err = unionfs_copyup_dir(new_parent, bt, t);
	if (err == -EXDEV) {
		t = unionfs_dir_shown_writable(new_parent, bt, limit);
		if (t < 0)
			return t;
		if (group >= 0 && t != group)
			return -EXDEV;
		err = unionfs_copyup_dir(new_parent, bt, t);
	}
	if (err)
		return err;

	if (isdir && oend > t) {
		/*
		 * A directory with copies below @t: only the directory moves
		 * (copied up), its lower contents stay where they are, named
		 * by a redirect. Whether it is empty does not matter (not
		 * read: O(1) in its size).
		 */
		redirect = true;
	} else if (isdir) {
		/* wholly in @t: moved there, opaque */
		err = unionfs_check_empty(old_dentry, &has_wh);
		if (err && err != -ENOTEMPTY)
			return err;
	}
	if (redirect) {
		cred = unionfs_override_creds(sb);
		rpath = unionfs_redirect_path(old_dentry, t);
		revert_creds(cred);
		cred = NULL;
		if (IS_ERR(rpath))
			return PTR_ERR(rpath);
	}

	err = unionfs_copyup_dentry_held(old_dentry, t, UNIONFS_CUR_RENAME,
					 -1);
	if (err) {
		kfree(rpath);
		return err;
	}

	need_wh = unionfs_lower_has_name(old_parent, &old_dentry->d_name,
					 t + 1);
	lold = unionfs_lower_dentry_get(old_dentry, t);
	lold_parent = unionfs_lower_dentry_at(old_parent, bt, t);
	lnew_parent = unionfs_lower_dentry_at(new_parent, bt, t);
	if (IS_ERR(lold_parent))
		lold_parent = NULL;	/* rebuilt on another table */
	if (IS_ERR(lnew_parent))
		lnew_parent = NULL;
	err = -ESTALE;
	if (!lold || !lold_parent || !lnew_parent)
		goto out_dput;

	err = unionfs_want_write(bt, t);
	if (err)
		goto out_dput;

	cred = unionfs_override_creds(sb);
	if (redirect) {
		/* its lower contents merge below it: never opaque */
		err = unionfs_redirect_set(old_dentry, t, lold, rpath,
					   &made_rd);
	} else if (isdir) {
		/* logically empty (or wholly ours): mark opaque before moving */
		err = unionfs_make_opaque_new(bt, t, lold, NULL, UNIONFS_MKR_RENAME,
					      &made_opaque);
	}
	if (isdir && !err && d_really_is_positive(new_dentry)) {
		/* a replaced directory holding whiteouts is stashed */
		ltarget = unionfs_lower_dentry_get(new_dentry, t);
		if (ltarget && d_is_dir(ltarget)) {
			bool wh;

			err = unionfs_scan_whiteouts(bt, t, ltarget, false,
						     &wh);
			stash = wh;
		}
	}
	revert_creds(cred);
	cred = NULL;	/* the lookups below are the caller's */
	if (err)
		goto out_revert_opaque;

	trap = lock_rename(lold_parent, lnew_parent);
	err = -EINVAL;
	if (trap == lold)
		goto out_unlock;
	cur_old = unionfs_do_lookup_locked(bt, t, lold_parent,
					   old_dentry->d_name.name,
					   old_dentry->d_name.len);
	if (IS_ERR(cur_old)) {
		err = PTR_ERR(cur_old);
		cur_old = NULL;
		goto out_unlock;
	}
	err = -ESTALE;
	if (cur_old != lold)
		goto out_unlock;
	lnew = unionfs_do_lookup_locked(bt, t, lnew_parent,
					new_dentry->d_name.name,
					new_dentry->d_name.len);
	if (IS_ERR(lnew)) {
		err = PTR_ERR(lnew);
		lnew = NULL;
		goto out_unlock;
	}
	err = -ENOTEMPTY;
	if (trap == lnew)
		goto out_unlock;
	/*
	 * RENAME_NOREPLACE: the VFS checked the union's name; a name made in
	 * the branch behind our back (not seen with coherency=none) must not
	 * be replaced either, and the branch fs's ->rename leaves that check
	 * to the VFS's syscall path.
	 */
	err = -EEXIST;
	if ((flags & RENAME_NOREPLACE) && d_really_is_positive(lnew))
		goto out_unlock;
	err = -ESTALE;
	if (stash && lnew != ltarget)
		goto out_unlock;	/* changed in the branch */
	cred = unionfs_override_creds(sb);
	if (need_wh) {
		err = unionfs_whiteout_locked(bt, t, lold_parent,
					      &old_dentry->d_name, UNIONFS_MKR_RENAME);
		if (err)
			goto out_revert;
		made_wh = true;
	}
	if (stash) {
		err = unionfs_stash_locked(bt, t, lnew_parent, ltarget);
		if (err)
			goto out_revert;
		stashed = true;
		/* the name is negative now */
		dput(lnew);
		lnew = unionfs_do_lookup_locked(bt, t, lnew_parent,
						new_dentry->d_name.name,
						new_dentry->d_name.len);
		if (IS_ERR(lnew)) {
			err = PTR_ERR(lnew);
			lnew = NULL;
			goto out_revert;
		}
	}
	revert_creds(cred);
	/* the rename itself is the caller's (permission in the branch) */
	err = unionfs_do_rename(bt, t, d_inode(lold_parent), lold,
				d_inode(lnew_parent), lnew, flags);
	cred = unionfs_override_creds(sb);
	if (!err && nud->bwh == t)
		unionfs_remove_whiteout_locked(bt, t, lnew_parent,
					       &new_dentry->d_name, UNIONFS_MKR_RENAME);
out_revert:
	/* put the replaced directory back under its name (a few tries) */
	for (tries = 0; err && stashed && tries < 5; tries++) {
		struct dentry *back;

		back = unionfs_do_lookup_undo(bt, t, lnew_parent,
					      new_dentry->d_name.name,
					      new_dentry->d_name.len);

		if (IS_ERR(back))
			continue;
		if (d_really_is_negative(back) &&
		    !unionfs_do_rename(bt, t, d_inode(lnew_parent), ltarget,
				       d_inode(lnew_parent), back, 0))
			stashed = false;
		dput(back);
	}
	if (err && stashed) {
		pr_warn_ratelimited("rename: could not restore %pd after error %d\n",
				    new_dentry, err);
		stashed = false;
	}
	if (err && made_wh)
		unionfs_remove_whiteout_locked(bt, t, lold_parent,
					       &old_dentry->d_name, UNIONFS_MKR_REVERT);
out_unlock:
	unlock_rename(lold_parent, lnew_parent);
	/* the union's own clean-up: as the mounter, overriding at most once */
	if (!err && stashed) {
		if (!cred)
			cred = unionfs_override_creds(sb);
		unionfs_dispose(bt, t, lnew_parent, ltarget);
	}
out_revert_opaque:
	if (err && made_opaque) {
		if (!cred)
			cred = unionfs_override_creds(sb);
		unionfs_remove_opaque(bt, t, lold);
	}
	if (err && made_rd) {
		if (!cred)
			cred = unionfs_override_creds(sb);
		unionfs_do_removexattr(bt, t, lold, UNIONFS_XATTR_REDIRECT);
	}
	if (cred)
		revert_creds(cred);
	if (!err && redirect) {
		/* the same lower copies, the branch-@t one moved with it */
		struct unionfs_dentry_info *oud = UNIONFS_D(old_dentry);

		spin_lock(&oud->lock);
		oud->bwh = -1;
		/* the copies below @t stay under the old parent */
		WRITE_ONCE(oud->bredir, t + 1);
		spin_unlock(&oud->lock);
		unionfs_inode_set_vec(d_inode(old_dentry), oud);
		unionfs_dir_changed(old_dir);
		if (new_dir != old_dir)
			unionfs_dir_changed(new_dir);
	} else if (!err) {
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
	unionfs_drop_write(bt, t);
out_dput:
	kfree(rpath);
	dput(ltarget);
	dput(cur_old);
	dput(lnew);
	dput(lold);
	dput(lold_parent);
	dput(lnew_parent);
	return err;
}

/*
 * Namespace operations serialize against copy-up of the same objects on
 * their inodes' cu_lock, taken after the VFS's i_rwsem locks; a rename
 * takes both (the source and a replaced target) in address order.
 */
int unionfs_rename(struct user_namespace *mnt_userns, struct inode *old_dir,
		   struct dentry *old_dentry, struct inode *new_dir,
		   struct dentry *new_dentry, unsigned int flags)
{
	struct unionfs_dentry_info *nud = UNIONFS_D(new_dentry);
	struct unionfs_btable *bt = unionfs_dbt(old_dentry);
	struct inode *a = d_inode(old_dentry), *b = d_inode(new_dentry);
	int err;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;	/* RENAME_EXCHANGE, RENAME_WHITEOUT */
	/* (compared only: the infos are read again under the cu_locks) */
	if (!nud || unionfs_dbt(new_dentry) != bt ||
	    unionfs_dbt(old_dentry->d_parent) != bt ||
	    unionfs_dbt(new_dentry->d_parent) != bt)
		return -ESTALE;	/* built against another branch table */

	if (b == a)
		b = NULL;
	if (b && b < a)
		swap(a, b);
	mutex_lock(&UNIONFS_I(a)->cu_lock);
	if (b)
		mutex_lock_nested(&UNIONFS_I(b)->cu_lock, SINGLE_DEPTH_NESTING);
	err = unionfs_rename_locked(old_dir, old_dentry, new_dir, new_dentry,
				    flags);
	if (b)
		mutex_unlock(&UNIONFS_I(b)->cu_lock);
	mutex_unlock(&UNIONFS_I(a)->cu_lock);
	return err;
}
