// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: the namespace operations of a union directory: create, mkdir,
 * mknod, symlink, O_TMPFILE, link, unlink and rmdir (rename: rename.c), and
 * the directory inode operations.
 *
 * New objects go to the nearest writable branch at or above (left of) the
 * branch where their parent resolves; missing parent directories are
 * recreated there (copyup.c). Removing a name that a lower branch still
 * holds leaves a whiteout ".wh.NAME" (whiteout.c).
 */
#include "union.h"
#include "lower.h"

#include <linux/fs_stack.h>
#include <linux/file.h>
#include <linux/fileattr.h>
#include <linux/posix_acl.h>
#include <linux/xattr.h>

#include "unionfs_trace.h"

struct unionfs_new {
	umode_t mode;
	dev_t rdev;
	const char *symname;
	struct dentry *link;	/* lower dentry to hard-link, or NULL */
	struct unionfs_btable *link_bt;	/* the table its branch is of */
};

static int unionfs_create_lower(struct unionfs_btable *bt, int t,
				struct dentry *lparent, struct dentry *ld,
				struct unionfs_new *n)
{
	struct inode *ldir = d_inode(lparent);

	if (n->link)
		return unionfs_do_link(bt, t, n->link, ldir, ld);
	switch (n->mode & S_IFMT) {
	case S_IFREG:
		return unionfs_do_create(bt, t, ldir, ld, n->mode);
	case S_IFDIR:
		return unionfs_do_mkdir(bt, t, ldir, ld, n->mode);
	case S_IFLNK:
		return unionfs_do_symlink(bt, t, ldir, ld, n->symname);
	default:
		return unionfs_do_mknod(bt, t, ldir, ld, n->mode, n->rdev);
	}
}

/*
 * mkdir over a whiteout, all or nothing: the directory is made and marked
 * opaque under a temporary name (invisible in the union), then renamed
 * onto the negative @ld in one step; a failure before that removes the
 * temporary (or leaves it, invisible), never a non-opaque directory that
 * would show the lower entries again. @lparent is locked. Returns the new
 * lower dentry.
 */
static struct dentry *unionfs_mkdir_opaque(struct unionfs_btable *bt, int t,
					   struct dentry *lparent,
					   struct dentry *ld, umode_t mode)
{
	const struct cred *old;
	struct dentry *tmp;
	int err;

	tmp = unionfs_tmp_lookup(bt, lparent);
	if (IS_ERR(tmp))
		return tmp;
	err = unionfs_do_mkdir(bt, t, d_inode(lparent), tmp, mode);
	if (err) {
		dput(tmp);
		return ERR_PTR(err);
	}
	old = unionfs_override_creds(bt->sb);
	err = unionfs_make_opaque(bt, t, tmp, ld, UNIONFS_MKR_MKDIR_OVER_WH);
	revert_creds(old);
	if (!err)
		err = unionfs_do_rename(bt, t, d_inode(lparent), tmp,
					d_inode(lparent), ld, 0);
	if (err) {
		unionfs_remove_tmpdir_locked(bt, t, lparent, tmp);
		dput(tmp);
		return ERR_PTR(err);
	}
	/* the branch fs moved @tmp to the name */
	return tmp;
}

/*
 * Target branch (of @bt, the table of the new name's info) for a new name
 * below @parent; copies up parents. The parent's range and table are
 * read from one info: a parent rebuilt on another table (a branch change,
 * a refresh) is -ESTALE, here or where its lower directory is read.
 * @exact (link): @limit itself, the parent copied there, up or down.
 */
static int unionfs_new_target(struct dentry *dentry, struct unionfs_btable *bt,
			      int limit, bool exact)
{
	struct dentry *parent = dentry->d_parent;
	struct unionfs_dentry_info *pud = unionfs_dinfo_get(parent);
	int pstart, pend, t, err;

	if (!pud || pud->bt != bt) {
		unionfs_dinfo_put(pud);
		return -ESTALE;	/* built against another branch table */
	}
	unionfs_ud_range(pud, &pstart, &pend);
	unionfs_dinfo_put(pud);
	if (pstart < 0)
		return -ESTALE;
	if (exact)
		return unionfs_copyup_parents(dentry, bt, limit) ?: limit;
	t = unionfs_nearest_writable(bt, min(pstart, limit));
	if (t < 0)
		return t;
	if (t < pstart) {
		err = unionfs_copyup_parents(dentry, bt, t);
		if (err)
			return err;
	}
	return t;
}

static int unionfs_create_object(struct inode *dir, struct dentry *dentry,
				 struct unionfs_new *n, int limit)
{
	struct super_block *sb = dir->i_sb;
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct unionfs_btable *bt;
	struct dentry *lparent, *ld;
	struct inode *inode;
	int t, err, bwh;
	bool opaque = false;

	if (!ud)
		return -ESTALE;
	bt = ud->bt;
	bwh = ud->bwh;
	/* a hard link goes exactly where link chose: its source is there */
	if (n->link && bt != n->link_bt)
		return -ESTALE;
	t = unionfs_new_target(dentry, bt, limit, n->link);
	if (t < 0)
		return t;
	/* a whiteout above @t would hide it: the plan raced a change */
	if (n->link && bwh >= 0 && bwh < t)
		return 1;	/* unionfs_link plans again */
	unionfs_race_window();
	lparent = unionfs_lower_dentry_at(dentry->d_parent, bt, t);
	if (IS_ERR_OR_NULL(lparent))
		return -ESTALE;
	err = unionfs_want_write(bt, t);
	if (err)
		goto out_dput;
	ld = unionfs_lock_lookup(bt, t, lparent, dentry->d_name.name,
				 dentry->d_name.len);
	if (IS_ERR(ld)) {
		err = PTR_ERR(ld);
		goto out_drop;
	}
	if (d_really_is_positive(ld)) {
		err = -EEXIST;
		goto out_unlock;
	}
	/*
	 * The VFS leaves the umask to the union (SB_POSIXACL); a branch fs
	 * with ACLs applies it itself (or the parent's default ACL instead),
	 * one without must get the mode it would have got from the VFS.
	 */
	if (!n->link && !S_ISLNK(n->mode) && !IS_POSIXACL(d_inode(lparent)))
		n->mode &= ~current_umask();
	if (S_ISDIR(n->mode) && bwh >= 0) {
		/* lower directories of this name stay hidden */
		struct dentry *nd = unionfs_mkdir_opaque(bt, t, lparent, ld,
							 n->mode);

		if (IS_ERR(nd)) {
			err = PTR_ERR(nd);
			goto out_unlock;
		}
		dput(ld);
		ld = nd;
		opaque = true;
	} else {
		err = unionfs_create_lower(bt, t, lparent, ld, n);
		if (err)
			goto out_unlock;
	}
	if (bwh == t) {
		const struct cred *old = unionfs_override_creds(sb);

		/* failure leaves a harmless same-branch whiteout */
		unionfs_remove_whiteout_locked(bt, t, lparent, &dentry->d_name,
					       S_ISDIR(n->mode) ?
					       UNIONFS_MKR_MKDIR_OVER_WH :
					       UNIONFS_MKR_CREATE_OVER_WH);
		revert_creds(old);
	}

	spin_lock(&ud->lock);
	ud->lower[t] = dget(ld);
	ud->bstart = t;
	ud->bend = t;
	ud->bopaque = opaque ? t : -1;
	ud->bwh = -1;
	ud->bredir = -1;
	spin_unlock(&ud->lock);
	inode = unionfs_iget(sb, ud, false);
	if (IS_ERR(inode)) {
		err = PTR_ERR(inode);
		goto out_unlock;
	}
	d_instantiate(dentry, inode);
	unionfs_dir_changed(dir);
out_unlock:
	inode_unlock(d_inode(lparent));
	dput(ld);
out_drop:
	unionfs_drop_write(bt, t);
out_dput:
	dput(lparent);
	return err;
}

static int unionfs_create(struct user_namespace *mnt_userns, struct inode *dir,
			  struct dentry *dentry, umode_t mode, bool excl)
{
	struct unionfs_new n = { .mode = (mode & 07777) | S_IFREG };

	return unionfs_create_object(dir, dentry, &n, INT_MAX);
}

static int unionfs_mkdir(struct user_namespace *mnt_userns, struct inode *dir,
			 struct dentry *dentry, umode_t mode)
{
	struct unionfs_new n = { .mode = (mode & 07777) | S_IFDIR };

	return unionfs_create_object(dir, dentry, &n, INT_MAX);
}

static int unionfs_mknod(struct user_namespace *mnt_userns, struct inode *dir,
			 struct dentry *dentry, umode_t mode, dev_t rdev)
{
	struct unionfs_new n = { .mode = mode, .rdev = rdev };

	return unionfs_create_object(dir, dentry, &n, INT_MAX);
}

static int unionfs_symlink(struct user_namespace *mnt_userns,
			   struct inode *dir, struct dentry *dentry,
			   const char *symname)
{
	struct unionfs_new n = { .mode = S_IFLNK | 0777, .symname = symname };

	return unionfs_create_object(dir, dentry, &n, INT_MAX);
}

/*
 * O_TMPFILE (docs/usage.md): an unnamed file in the branch where a new
 * name in @dir would go, @dir's missing ancestors copied up there first,
 * as for create (the VFS checked MAY_WRITE | MAY_EXEC on @dir before).
 * The branch fs makes and opens it with its own ->tmpfile and the
 * caller's credentials (owner, umask or default ACL, security label: the
 * branch's rules, as for create); the union inode stands over that branch
 * inode like over any other (unionfs_iget, its number from unionfs_ino()),
 * with no name (d_tmpfile), and the union file wraps the branch file.
 * linkat() names it through unionfs_link (the VFS keeps O_EXCL ones
 * unlinkable, and so does the branch); closed without a name, it goes
 * with its last reference, in the branch as well.
 */
static int unionfs_tmpfile(struct user_namespace *mnt_userns,
			   struct inode *dir, struct file *file, umode_t mode)
{
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_dentry_info *ud;
	struct unionfs_btable *bt;
	struct dentry *lparent;
	struct inode *inode;
	struct file *lf;
	int t, err;

	if (WARN_ON_ONCE(dentry->d_fsdata || !UNIONFS_D(dentry->d_parent)))
		return -EIO;
	ud = unionfs_alloc_dinfo_at(dentry->d_parent);
	if (!ud)
		return -ENOMEM;
	bt = ud->bt;
	dentry->d_fsdata = ud;	/* freed with @dentry (unionfs_d_release) */
	t = unionfs_new_target(dentry, bt, INT_MAX, false);
	if (t < 0)
		return t;
	lparent = unionfs_lower_dentry_at(dentry->d_parent, bt, t);
	if (IS_ERR_OR_NULL(lparent))
		return -ESTALE;
	/* as unionfs_create_object: the umask where the branch has no ACLs */
	if (!IS_POSIXACL(d_inode(lparent)))
		mode &= ~current_umask();
	err = unionfs_want_write(bt, t);
	if (err)
		goto out_dput;
	lf = unionfs_do_tmpfile_open(bt, t, lparent, mode, file->f_flags,
				     current_cred());
	/* an open branch file for write holds its own write access */
	unionfs_drop_write(bt, t);
	if (IS_ERR(lf)) {
		err = PTR_ERR(lf);
		goto out_dput;
	}
	spin_lock(&ud->lock);
	ud->lower[t] = dget(lf->f_path.dentry);
	ud->bstart = t;
	ud->bend = t;
	spin_unlock(&ud->lock);
	inode = unionfs_iget(dir->i_sb, ud, false);
	if (IS_ERR(inode)) {
		fput(lf);
		err = PTR_ERR(inode);
		goto out_dput;
	}
	/*
	 * d_tmpfile() takes away the one link a filesystem's new inode has;
	 * the branch inode has lost it already (nlink 0, as copied).
	 */
	set_nlink(inode, 1);
	d_tmpfile(file, inode);
	err = unionfs_open_over(file, dentry, lf, bt, t);
out_dput:
	dput(lparent);
	return err;
}

/*
 * Where link(2) makes the new name (the source's copy must be in the same
 * branch): in the nearest writable branch at or above the source's winner
 * (where a read-only source, or its link group's index entry, goes), the
 * new name's parent copied there, up or down, as rename does. Where the
 * name would be hidden there (a whiteout or an opaque directory above),
 * higher: at or above its parent's top and its whiteout (as rename:
 * unionfs_dir_shown_writable), the source copied up, but only a source
 * with one name: copying one with others would leave them behind (another
 * file), and a group's index entry has one place. EXDEV then, as before.
 * Caller holds old's cu_lock.
 */
static int unionfs_link_plan(struct dentry *old, struct dentry *new,
			     struct unionfs_btable *bt, int *target)
{
	struct unionfs_dentry_info *nud = unionfs_dinfo_get(new);
	struct unionfs_dentry_info *pud = unionfs_dinfo_get(new->d_parent);
	int ob, oe, nbwh, b, err;

	err = !nud || !pud || nud->bt != bt || pud->bt != bt ? -ESTALE : 0;
	if (!err) {
		unionfs_get_range(old, &ob, &oe);
		nbwh = READ_ONCE(nud->bwh);
		err = ob < 0 ? -ESTALE : 0;
	}
	unionfs_dinfo_put(pud);
	unionfs_dinfo_put(nud);
	if (err)
		return err;
	/* a source with other names: where its group is, or EROFS */
	if (d_inode(old)->i_nlink > 1)
		b = unionfs_group_branch(bt, ob);
	else
		b = unionfs_nearest_writable(bt, ob);
	if (b < 0)
		return b;
	if (nbwh < 0 || nbwh >= b) {
		err = unionfs_copyup_parents(new, bt, b);
		if (err != -EXDEV) {
			*target = b;
			return err;
		}
	}
	/* hidden at @b: higher, with a copy of a one-name source */
	if (d_inode(old)->i_nlink != 1)
		return -EXDEV;
	b = unionfs_dir_shown_writable(new->d_parent, bt,
				       min(ob, nbwh < 0 ? INT_MAX : nbwh));
	*target = b;
	return b < 0 ? b : 0;
}

static int unionfs_link(struct dentry *old, struct inode *dir,
			struct dentry *new)
{
	struct unionfs_inode_info *ui = UNIONFS_I(d_inode(old));
	struct unionfs_new n = { .mode = d_inode(old)->i_mode };
	int b, ob, oe, tries, err;

	/*
	 * The source must be on the branch the link is made in. Its range is
	 * read, copied up and its branch dentry taken under its cu_lock, so
	 * that a copy-up in flight cannot change the plan in between. What
	 * the new name's side can still change (a whiteout made above it)
	 * makes create return 1: planned again, at most twice more.
	 */
	mutex_lock(&ui->cu_lock);
	n.link_bt = unionfs_dbt(old);
	for (tries = 0; ; tries++) {
		err = unionfs_link_plan(old, new, n.link_bt, &b);
		/*
		 * An O_TMPFILE file (nlink 0, and I_LINKABLE, or the VFS would
		 * have refused) exists in its branch only, without a name to
		 * copy up (nor one to look up again after a branch change):
		 * it is linked there, where its branch inode is I_LINKABLE,
		 * or not at all.
		 */
		if (!err && !d_inode(old)->i_nlink) {
			unionfs_get_range(old, &ob, &oe);
			if (b != ob)
				err = -EXDEV;
		}
		if (!err)
			err = unionfs_copyup_dentry_held(old, b, UNIONFS_CUR_LINK, -1);
		if (!err) {
			n.link = unionfs_lower_dentry_get(old, b);
			if (!n.link)
				err = -ESTALE;
		}
		if (!err) {
			err = unionfs_create_object(dir, new, &n, b);
			dput(n.link);
			n.link = NULL;
		}
		if (err != 1)
			break;
		if (tries == 2) {
			err = -ESTALE;
			break;
		}
	}
	if (!err) {
		struct dentry *ld = unionfs_lower_dentry_get(new, b);

		if (ld) {
			unionfs_copy_attr(d_inode(old), d_inode(ld));
			dput(ld);
		}
	}
	mutex_unlock(&ui->cu_lock);
	return err;
}

/*
 * Remove @dentry's name: delete it from its branch when that branch is
 * writable, and whiteout the name when a lower branch still holds it.
 *
 * All or nothing: every step that can fail comes before the one that
 * makes the name go away, and is undone if a later one fails. The
 * whiteout is created first (a same-branch name hides its own whiteout,
 * so it changes nothing visible yet). A directory that holds whiteouts
 * (which hide its lower entries) is not cleaned in place: it is renamed,
 * in one step, to a temporary name invisible in the union, and cleaned
 * and removed there; a failure then leaves an invisible leftover, never a
 * lower entry shown again.
 *
 * Caller holds d_inode(@dentry)'s cu_lock: a copy-up of the same object
 * either completes before (and is then removed) or starts after (and
 * finds the name gone).
 */
static int unionfs_remove_locked(struct inode *dir, struct dentry *dentry,
				 bool isdir)
{
	struct super_block *sb = dir->i_sb;
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	struct dentry *parent = dentry->d_parent;
	struct inode *inode = d_inode(dentry);
	struct dentry *ld, *lparent, *cur;
	const struct cred *old = NULL;
	bool need_wh, made_wh = false, checked = false, has_wh = false;
	bool stashed = false;
	int b, bend, t, err;
	enum unionfs_mk_reason why = isdir ? UNIONFS_MKR_RMDIR :
					     UNIONFS_MKR_UNLINK;

	/* a name of a link group: its own name first (index.c) */
	err = isdir ? 0 : unionfs_index_prepare_remove(dentry);
	if (err)
		return err;
	unionfs_get_range(dentry, &b, &bend);
	if (b < 0 || unionfs_dbt(parent) != bt)
		return -ESTALE;	/* the parent's lower dentry is read on @bt */
	unionfs_race_window();
	/*
	 * A directory must show no entry. One held by a single writable
	 * branch is checked by the read of its branch directory below; any
	 * other by a merged readdir first.
	 */
	if (isdir && (bend != b || !unionfs_branch_writable(bt, b))) {
		int wh;

		err = unionfs_check_empty(dentry, &wh);
		if (err)
			return err;
		checked = true;
	}
	need_wh = bend > b || unionfs_lower_has_name(parent, &dentry->d_name,
						      b + 1);

	if (!unionfs_branch_writable(bt, b)) {
		/* one step: the whiteout in the nearest writable branch */
		t = unionfs_nearest_writable(bt, b);
		if (t < 0)
			return t;
		err = unionfs_create_whiteout(parent, bt, &dentry->d_name, t,
					      why);
		/*
		 * The parent's copy in @t would not be seen (a renamed
		 * directory's branches below its redirect): the whiteout
		 * goes where the parent shows from (review 22).
		 */
		if (err == -EXDEV) {
			t = unionfs_dir_shown_above(parent, bt, t);
			err = t < 0 ? t : unionfs_create_whiteout(parent, bt,
								  &dentry->d_name,
								  t, why);
		}
		goto out_attr;
	}

	ld = unionfs_lower_dentry_get(dentry, b);
	lparent = unionfs_lower_dentry_at(parent, bt, b);
	if (IS_ERR(lparent))
		lparent = NULL;	/* rebuilt on another table meanwhile */
	err = -ESTALE;
	if (!ld || !lparent)
		goto out_dput;
	err = unionfs_want_write(bt, b);
	if (err)
		goto out_dput;
	if (isdir) {
		/* emptiness (one branch), and whether it holds whiteouts */
		old = unionfs_override_creds(sb);
		err = unionfs_scan_whiteouts(bt, b, ld, !checked, &has_wh);
		revert_creds(old);
		old = NULL;	/* the lookup below is the caller's */
		if (err)
			goto out_drop;
	}
	cur = unionfs_lock_lookup(bt, b, lparent, dentry->d_name.name,
				  dentry->d_name.len);
	if (IS_ERR(cur)) {
		err = PTR_ERR(cur);
		goto out_drop;
	}
	if (cur != ld) {
		err = -ESTALE;	/* changed in the branch behind our back */
		goto out_unlock;
	}
	old = unionfs_override_creds(sb);
	if (need_wh) {
		err = unionfs_whiteout_locked(bt, b, lparent, &dentry->d_name,
					      why);
		if (err)
			goto out_unlock;
		made_wh = true;
	}
	if (has_wh) {
		/* the point of no return: ld leaves the union in one step */
		err = unionfs_stash_locked(bt, b, lparent, ld);
		stashed = !err;
	} else if (isdir) {
		err = unionfs_do_rmdir(bt, b, d_inode(lparent), ld);
	} else {
		err = unionfs_do_unlink(bt, b, d_inode(lparent), ld);
	}
	if (err && made_wh)
		unionfs_remove_whiteout_locked(bt, b, lparent, &dentry->d_name,
					       UNIONFS_MKR_REVERT);
out_unlock:
	inode_unlock(d_inode(lparent));
	dput(cur);
	if (stashed)	/* still as the mounter (overridden above) */
		unionfs_dispose(bt, b, lparent, ld);
	if (old)
		revert_creds(old);
out_drop:
	unionfs_drop_write(bt, b);
out_dput:
	dput(ld);
	dput(lparent);
out_attr:
	if (!err) {
		unionfs_dir_changed(dir);
		if (isdir)
			clear_nlink(inode);
		else if (inode->i_nlink)
			drop_nlink(inode);
		inode->i_ctime = dir->i_ctime;
		/*
		 * Our dentry holds the removed branch dentry, which the branch
		 * fs only unhashed (we had a reference): it would keep the
		 * removed inode, and its blocks, until our dentry is
		 * reclaimed. Unhash ours too, so that the caller's dput()
		 * frees both (as overlayfs does); the next lookup starts over.
		 * Done under cu_lock: a copy-up waiting for it sees the name
		 * gone.
		 */
		d_drop(dentry);
	}
	return err;
}

/* Namespace operations take cu_lock after the VFS's i_rwsem locks. */
static int unionfs_remove(struct inode *dir, struct dentry *dentry, bool isdir)
{
	struct unionfs_inode_info *ui = UNIONFS_I(d_inode(dentry));
	int err;

	mutex_lock(&ui->cu_lock);
	err = unionfs_remove_locked(dir, dentry, isdir);
	mutex_unlock(&ui->cu_lock);
	return err;
}

static int unionfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return unionfs_remove(dir, dentry, false);
}

static int unionfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return unionfs_remove(dir, dentry, true);
}

const struct inode_operations unionfs_dir_iops = {
	.lookup		= unionfs_lookup,
	.create		= unionfs_create,
	.link		= unionfs_link,
	.tmpfile	= unionfs_tmpfile,
	.unlink		= unionfs_unlink,
	.symlink	= unionfs_symlink,
	.mkdir		= unionfs_mkdir,
	.rmdir		= unionfs_rmdir,
	.mknod		= unionfs_mknod,
	.rename		= unionfs_rename,
	.permission	= unionfs_permission,
	.get_acl	= unionfs_get_acl,
	.set_acl	= unionfs_set_acl,
	.getattr	= unionfs_getattr,
	.setattr	= unionfs_setattr,
	.listxattr	= unionfs_listxattr,
	.fileattr_get	= unionfs_fileattr_get,
};
