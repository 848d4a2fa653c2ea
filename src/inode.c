// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: inode operations: attributes, permission, and the namespace
 * operations create/mkdir/mknod/symlink/link/unlink/rmdir.
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

static const struct address_space_operations unionfs_aops = {
	/* O_DIRECT is done by the branch file; this lets the open pass. */
	.direct_IO	= noop_direct_IO,
};

void unionfs_copy_attr(struct inode *inode, const struct inode *lower)
{
	unsigned int flags = S_SYNC | S_NOATIME | S_APPEND | S_IMMUTABLE;

	inode->i_mode = (inode->i_mode & S_IFMT) | (lower->i_mode & ~S_IFMT);
	inode->i_uid = lower->i_uid;
	inode->i_gid = lower->i_gid;
	inode->i_atime = lower->i_atime;
	inode->i_mtime = lower->i_mtime;
	inode->i_ctime = lower->i_ctime;
	inode->i_blkbits = lower->i_blkbits;
	inode->i_flags = (inode->i_flags & ~flags) | (lower->i_flags & flags);
	if (!S_ISDIR(inode->i_mode))
		set_nlink(inode, unionfs_index_nlink(inode, lower->i_nlink));
	fsstack_copy_inode_size(inode, (struct inode *)lower);
}

static struct workqueue_struct *unionfs_wq;

int unionfs_inode_wq_init(void)
{
	unionfs_wq = alloc_workqueue("unionfs", WQ_UNBOUND, 0);
	return unionfs_wq ? 0 : -ENOMEM;
}

void unionfs_inode_wq_flush(void)
{
	rcu_barrier();		/* queue_rcu_work() goes through call_rcu() */
	flush_workqueue(unionfs_wq);
}

void unionfs_inode_wq_exit(void)
{
	rcu_barrier();
	destroy_workqueue(unionfs_wq);
}

static void unionfs_ivec_work(struct work_struct *work)
{
	struct unionfs_ivec *vec = container_of(to_rcu_work(work),
						struct unionfs_ivec, rwork);

	unionfs_notify_release(vec);
	unionfs_bt_put(vec->bt);
	kfree(vec->nowh);
	kfree(vec);
}

/*
 * Release @vec. The lower inodes go at once, so that a file unlinked
 * through the union frees its space in the branch right away; RCU walkers
 * (permission(), dir_snap) may still read them, which is safe as inodes
 * are freed after a grace period. The rest (the notify marks, which take
 * a mutex that must not be taken from inode reclaim, and the branch
 * table that RCU walkers dereference) goes after a grace period.
 */
void unionfs_ivec_free(struct unionfs_ivec *vec)
{
	int i;

	if (!vec)
		return;
	for (i = 0; i < vec->nbr; i++)
		iput(vec->lower[i]);
	INIT_RCU_WORK(&vec->rwork, unionfs_ivec_work);
	queue_rcu_work(unionfs_wq, &vec->rwork);
}

/* Does @inode's vector already hold exactly the lower inodes of @ud? */
bool unionfs_vec_same(struct inode *inode, struct unionfs_dentry_info *ud)
{
	struct unionfs_ivec *vec;
	bool same = false;
	int b;

	rcu_read_lock();
	vec = rcu_dereference(UNIONFS_I(inode)->vec);
	spin_lock(&ud->lock);
	if (vec && vec->bt == ud->bt && vec->bstart == ud->bstart &&
	    vec->bend == ud->bend) {
		same = true;
		for (b = max(ud->bstart, 0); b <= ud->bend; b++) {
			struct dentry *ld = ud->lower[b];
			struct inode *li = ld ? d_inode(ld) : NULL;

			if (vec->lower[b] != li) {
				same = false;
				break;
			}
		}
	}
	spin_unlock(&ud->lock);
	rcu_read_unlock();
	return same;
}

/* Point @inode at the lower inodes recorded in @ud. */
int unionfs_inode_set_vec(struct inode *inode, struct unionfs_dentry_info *ud)
{
	struct unionfs_inode_info *ui = UNIONFS_I(inode);
	struct unionfs_ivec *vec, *old;
	int b;

	vec = kzalloc(struct_size(vec, lower, ud->nbr), GFP_KERNEL);
	if (!vec)
		return -ENOMEM;
	vec->nbr = ud->nbr;
	refcount_inc(&ud->bt->ref);
	vec->bt = ud->bt;
	spin_lock(&ud->lock);
	vec->bstart = ud->bstart;
	vec->bend = ud->bend;
	for (b = max(ud->bstart, 0); b <= ud->bend; b++)
		if (ud->lower[b] && d_really_is_positive(ud->lower[b]))
			vec->lower[b] = igrab(d_inode(ud->lower[b]));
	spin_unlock(&ud->lock);
	unionfs_notify_adopt(vec, inode->i_sb);

	spin_lock(&inode->i_lock);
	old = rcu_replace_pointer(ui->vec, vec, lockdep_is_held(&inode->i_lock));
	spin_unlock(&inode->i_lock);
	unionfs_ivec_free(old);
	return 0;
}

/*
 * The union's number for inode number @lino of branch @br (docs/concepts.md
 * "Inode numbers"): @lino with the index of @br's file system in the top
 * bits. Two names get the same number exactly when their winning objects
 * are the same inode of the same branch file system; the number depends
 * only on the branch fs's index and its own number, so it survives cache
 * eviction and remount. 0 when @lino does not fit (the caller falls back).
 * The one place that makes the number: iget/rekey (i_ino), getattr
 * (st_ino) and readdir (d_ino) all come here.
 */
u64 unionfs_ino(const struct unionfs_branch *br, u64 lino)
{
	if (!lino || lino >> UNIONFS_INO_SHIFT ||
	    WARN_ON_ONCE(br->fsidx > UNIONFS_FSIDX_MAX))
		return 0;
	return lino | ((u64)br->fsidx << UNIONFS_INO_SHIFT);
}

/* i_ino of @inode whose winning object is @lower in branch @br */
static void unionfs_set_ino(struct inode *inode, struct inode *lower,
			    const struct unionfs_branch *br)
{
	u64 ino = unionfs_ino(br, lower->i_ino);

	if (!ino) {
		/* unique while cached; kept by a rekey (see UNIONFS_INO_VOLATILE) */
		if (inode->i_ino >> UNIONFS_INO_SHIFT == UNIONFS_INO_VOLATILE)
			return;
		ino = ((u64)UNIONFS_INO_VOLATILE << UNIONFS_INO_SHIFT) |
		      get_next_ino();
	}
	WRITE_ONCE(inode->i_ino, ino);
}

/*
 * @inode's winning object is now @key in branch @br (a copy-up, or a
 * directory replaced in its branch): hash it by @key and give it @key's
 * number. Another name of a non-directory (a hard link in the old branch)
 * is another file from now on: its dentries other than @keep are unhashed,
 * so that its next lookup finds its own union inode.
 */
void unionfs_inode_rekey(struct inode *inode, struct inode *key,
			 const struct unionfs_branch *br, struct dentry *keep)
{
	struct dentry *alias;

	remove_inode_hash(inode);
	WRITE_ONCE(UNIONFS_I(inode)->key, key);
	unionfs_set_ino(inode, key, br);
	__insert_inode_hash(inode, (unsigned long)key);
	if (!keep || S_ISDIR(inode->i_mode))
		return;
	spin_lock(&inode->i_lock);
	hlist_for_each_entry(alias, &inode->i_dentry, d_u.d_alias)
		if (alias != keep)
			d_drop(alias);
	spin_unlock(&inode->i_lock);
}

int unionfs_inode_init(struct inode *inode, struct unionfs_dentry_info *ud)
{
	struct inode *top = d_inode(ud->lower[ud->bstart]);
	int err;

	err = unionfs_inode_set_vec(inode, ud);
	if (err)
		return err;
	unionfs_set_ino(inode, top, unionfs_br(ud->bt, ud->bstart));
#ifdef CONFIG_FS_POSIX_ACL
	/* ACLs are the winning branch's, never cached here (get_acl) */
	inode->i_acl = ACL_DONT_CACHE;
	inode->i_default_acl = ACL_DONT_CACHE;
#endif
	inode->i_mode = top->i_mode & S_IFMT;
	inode->i_generation = top->i_generation;
	unionfs_index_inode_init(inode, ud);
	switch (inode->i_mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &unionfs_main_iops;
		inode->i_fop = &unionfs_main_fops;
		inode->i_mapping->a_ops = &unionfs_aops;
		break;
	case S_IFDIR:
		inode->i_op = &unionfs_dir_iops;
		inode->i_fop = &unionfs_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &unionfs_symlink_iops;
		break;
	default:
		inode->i_op = &unionfs_special_iops;
		init_special_inode(inode, top->i_mode, top->i_rdev);
		break;
	}
	unionfs_copy_attr(inode, top);
	return 0;
}

/* The lower ctimes of @vec folded into one number (caller holds RCU). */
static u64 unionfs_vec_snap(struct unionfs_ivec *vec)
{
	u64 snap = 0;
	int b;

	if (!vec || vec->bstart < 0)
		return 0;
	for (b = vec->bstart; b <= vec->bend && b < vec->nbr; b++) {
		struct inode *l = READ_ONCE(vec->lower[b]);

		if (l)
			snap += (u64)(b + 1) * unionfs_ctime_ns(l);
	}
	return snap;
}

/*
 * A cheap fingerprint of the lower directories of @dir: their ctimes (any
 * entry created, removed or renamed in them changes it). Safe in RCU walk.
 */
u64 unionfs_dir_snap(struct inode *dir)
{
	u64 snap;

	rcu_read_lock();
	snap = unionfs_vec_snap(rcu_dereference(UNIONFS_I(dir)->vec));
	rcu_read_unlock();
	return snap;
}

void unionfs_dir_changed(struct inode *dir)
{
	struct unionfs_inode_info *ui = UNIONFS_I(dir);
	struct unionfs_ivec *vec;
	struct inode *top = NULL;

	ui->dir_version++;
	rcu_read_lock();
	vec = rcu_dereference(ui->vec);
	if (vec && vec->bstart >= 0)
		top = igrab(vec->lower[vec->bstart]);
	rcu_read_unlock();
	if (top) {
		unionfs_copy_attr(dir, top);
		iput(top);
	}
	WRITE_ONCE(ui->snap, unionfs_dir_snap(dir));
}

/* --- attributes -------------------------------------------------------- */

/* The lower inode of branch @b and whether that branch is writable. */
static struct inode *unionfs_vec_lower(struct inode *inode, int b,
				       bool *writable, int *bstart, int *bend)
{
	struct unionfs_ivec *vec = rcu_dereference(UNIONFS_I(inode)->vec);

	if (!vec || vec->bstart < 0)
		return ERR_PTR(-ESTALE);
	*bstart = vec->bstart;
	*bend = S_ISDIR(inode->i_mode) ? vec->bend : vec->bstart;
	if (b < 0)
		b = vec->bstart;
	if (b >= vec->nbr)
		return NULL;
	*writable = unionfs_branch_writable(vec->bt, b);
	return vec->lower[b];
}

/*
 * Permission on a merged directory is checked on every contributing
 * branch (a directory closed in one branch must not expose its entries
 * through the union). With N branches that is N inode_permission() calls
 * per path component. When every lower directory has the type, mode and
 * owner of the top one and none has an ACL or its own ->permission, the
 * check on the top one decides for all of them: the vector remembers that
 * ("uniform"), stamped with what would change it: the union inode's
 * attr_gen (our own setattr/setxattr), and either the per-mount change
 * counter (coherency=notify with every lower directory watched) or the
 * lower ctimes. A ctime within the last clock ticks is not trusted (two
 * changes in one tick would look like one) and nothing is cached.
 * Security modules' per-inode checks run on the top directory only then,
 * as overlayfs runs them on the real inode only.
 */
static bool unionfs_perm_noacl(struct inode *l, bool *need_acl)
{
	struct posix_acl *acl;

	if (!IS_POSIXACL(l))
		return true;
	acl = get_cached_acl_rcu(l, ACL_TYPE_ACCESS);
	if (acl == ACL_NOT_CACHED)
		*need_acl = true;	/* read into the cache outside RCU */
	return !acl;
}

/* Bring @l's access ACL into its cache (ref-walk, @l referenced). */
static void unionfs_perm_read_acl(struct inode *l)
{
	struct posix_acl *acl;

	if (!IS_POSIXACL(l))
		return;
	acl = get_acl(l, ACL_TYPE_ACCESS);
	if (!IS_ERR(acl))
		posix_acl_release(acl);
}

/*
 * State of @vec's permission cache, relearned when stale (RCU held, never
 * sleeps). *@need_acl: an ACL not read yet kept it from learning.
 */
static int unionfs_perm_state(struct inode *inode, struct unionfs_ivec *vec,
			      bool *need_acl)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(inode->i_sb);
	int coh = READ_ONCE(sbi->coherency);
	unsigned int gen = READ_ONCE(UNIONFS_I(inode)->attr_gen);
	long nseq = atomic_long_read(&sbi->nseq);
	int state = READ_ONCE(vec->perm_state), b;
	struct inode *top;
	u64 snap;

	smp_rmb();	/* attr_gen before the lower attributes */
	if (state != UNIONFS_PERM_UNKNOWN &&
	    READ_ONCE(vec->perm_gen) == gen) {
		if (coh == UNIONFS_COH_NONE)
			return state;
		if (coh == UNIONFS_COH_NOTIFY && vec->watched &&
		    READ_ONCE(vec->perm_nseq) == nseq)
			return state;
		if (READ_ONCE(vec->perm_snap) == unionfs_vec_snap(vec)) {
			WRITE_ONCE(vec->perm_nseq, nseq);
			return state;
		}
	}
	top = READ_ONCE(vec->lower[vec->bstart]);
	if (!top)
		return UNIONFS_PERM_UNKNOWN;
	state = UNIONFS_PERM_UNIFORM;
	if (top->i_op->permission || !unionfs_perm_noacl(top, need_acl))
		state = UNIONFS_PERM_MIXED;
	for (b = vec->bstart; b <= vec->bend && b < vec->nbr; b++) {
		struct inode *l = READ_ONCE(vec->lower[b]);

		if (!l)
			continue;
		if (unionfs_ctime_recent(l))
			return UNIONFS_PERM_UNKNOWN;
		if (b == vec->bstart || state != UNIONFS_PERM_UNIFORM)
			continue;
		if (l->i_mode != top->i_mode || !uid_eq(l->i_uid, top->i_uid) ||
		    !gid_eq(l->i_gid, top->i_gid) ||
		    l->i_op->permission || !unionfs_perm_noacl(l, need_acl))
			state = UNIONFS_PERM_MIXED;
	}
	if (*need_acl)
		return UNIONFS_PERM_UNKNOWN;
	snap = unionfs_vec_snap(vec);
	WRITE_ONCE(vec->perm_gen, gen);
	WRITE_ONCE(vec->perm_nseq, nseq);
	WRITE_ONCE(vec->perm_snap, snap);
	WRITE_ONCE(vec->perm_state, state);
	return state;
}

/* Our own change of @inode's mode, owner or xattrs: forget the cache. */
void unionfs_perm_forget(struct inode *inode)
{
	smp_wmb();	/* the lower change before the new attr_gen */
	WRITE_ONCE(UNIONFS_I(inode)->attr_gen,
		   READ_ONCE(UNIONFS_I(inode)->attr_gen) + 1);
}

/*
 * The POSIX ACL of @inode: the winning branch's (as overlayfs, 6.1). The
 * union inode caches none (ACL_DONT_CACHE): the branch's cache is the one
 * kept up to date by every change, through us or directly in the branch.
 */
static struct posix_acl *unionfs_get_acl(struct inode *inode, int type,
					 bool rcu)
{
	struct posix_acl *acl = NULL;
	const struct cred *old;
	struct inode *real;
	bool writable;
	int bstart, bend;

	if (!IS_ENABLED(CONFIG_FS_POSIX_ACL))
		return NULL;
	if (rcu) {
		/* the VFS holds rcu_read_lock() in RCU walk */
		real = unionfs_vec_lower(inode, -1, &writable, &bstart, &bend);
		if (IS_ERR_OR_NULL(real))
			return ERR_PTR(-ECHILD);
		if (!IS_POSIXACL(real))
			return NULL;
		return get_cached_acl_rcu(real, type);
	}
	rcu_read_lock();
	real = unionfs_vec_lower(inode, -1, &writable, &bstart, &bend);
	real = IS_ERR_OR_NULL(real) ? NULL : igrab(real);
	rcu_read_unlock();
	if (!real)
		return ERR_PTR(-ESTALE);
	if (IS_POSIXACL(real)) {
		old = unionfs_override_creds(inode->i_sb);
		acl = get_acl(real, type);
		revert_creds(old);
	}
	iput(real);
	return acl;
}

/* The mask to check on branch @b's inode @l (see unionfs_permission). */
static int unionfs_perm_mask(struct inode *l, bool top, bool writable,
			     int mask)
{
	if (!top)
		return mask & ~(MAY_WRITE | MAY_APPEND);
	if (!writable && !special_file(l->i_mode) &&
	    (mask & (MAY_WRITE | MAY_APPEND))) {
		mask &= ~(MAY_WRITE | MAY_APPEND);
		mask |= MAY_READ;	/* the copy-up reads it */
	}
	return mask;
}

/* inode_permission() on branch @l: the top one with the mounter's creds. */
static int unionfs_perm_check(struct inode *inode, struct inode *l, bool top,
			      int mask)
{
	const struct cred *old;
	int err;

	if (!top)
		return inode_permission(&init_user_ns, l, mask);
	old = unionfs_override_creds(inode->i_sb);
	err = inode_permission(&init_user_ns, l, mask);
	revert_creds(old);
	return err;
}

/* Check branch @b's inode of @inode (0 when it has none). */
static int unionfs_perm_lower(struct inode *inode, int b, bool top, int mask,
			      bool need_acl)
{
	struct inode *l;
	bool writable;
	int s, e, err;

	rcu_read_lock();
	l = unionfs_vec_lower(inode, b, &writable, &s, &e);
	if (IS_ERR_OR_NULL(l)) {
		rcu_read_unlock();
		return 0;
	}
	mask = unionfs_perm_mask(l, top, writable, mask);
	if (mask & MAY_NOT_BLOCK) {
		err = unionfs_perm_check(inode, l, top, mask);
		rcu_read_unlock();
		return err;
	}
	l = igrab(l);
	rcu_read_unlock();
	if (!l)
		return 0;
	err = unionfs_perm_check(inode, l, top, mask);
	if (need_acl)
		unionfs_perm_read_acl(l);
	iput(l);
	return err;
}

/*
 * Permission through the union is the winning branch's answer, as in
 * overlayfs (6.1's ovl_permission):
 *  1. the caller's credentials against the union inode: it mirrors the
 *     winning branch's owner and mode, and its ACLs are that branch's
 *     (unionfs_get_acl), so generic_permission() answers what the branch
 *     would; MAY_WRITE stays in the mask even when the write will go to a
 *     copy-up (the object in its read-only branch decides who may write
 *     it);
 *  2. the mounter's credentials against the winning branch inode itself
 *     (its own ->permission, security modules): the union makes copy-ups
 *     and its own objects with them. An object that will be copied up
 *     for the write is checked for MAY_READ instead of MAY_WRITE (the
 *     copy-up reads it); a device node is written where it is;
 *  3. a merged directory is also searched/read in every lower branch
 *     that contributes to it, with the caller's credentials and without
 *     MAY_WRITE (a directory closed in one branch does not expose its
 *     entries through the union); the permission cache skips that when
 *     every branch's copy has the winning one's type, owner and mode and
 *     none has an ACL.
 * A read-only branch never gives EROFS here (the write goes to the copy);
 * the union's own read-only mount does (the VFS, sb_permission()).
 */
static int unionfs_permission(struct user_namespace *mnt_userns,
			      struct inode *inode, int mask)
{
	bool rcu = mask & MAY_NOT_BLOCK, writable, need_acl = false;
	struct unionfs_ivec *vec;
	struct inode *lower;
	int b, bstart, bend, err;

	err = generic_permission(&init_user_ns, inode, mask);
	if (err)
		return err;

	rcu_read_lock();
	lower = unionfs_vec_lower(inode, -1, &writable, &bstart, &bend);
	if (!IS_ERR(lower) && bend > bstart) {
		vec = rcu_dereference(UNIONFS_I(inode)->vec);
		if (unionfs_perm_state(inode, vec, &need_acl) ==
		    UNIONFS_PERM_UNIFORM)
			bend = bstart;
	}
	rcu_read_unlock();
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	if (need_acl && rcu)
		return -ECHILD;	/* ref-walk reads the ACLs, then we learn */
	for (b = bstart; b <= bend; b++) {
		err = unionfs_perm_lower(inode, b, b == bstart, mask, need_acl);
		if (err)
			return err;
	}
	return 0;
}

static int unionfs_getattr(struct user_namespace *mnt_userns,
			   const struct path *path, struct kstat *stat,
			   u32 request_mask, unsigned int flags)
{
	struct dentry *dentry = path->dentry;
	struct inode *inode = d_inode(dentry);
	struct path lpath;
	int b, bstart, bend, err;
	u64 ino;

	lpath.dentry = unionfs_lower_top_get(dentry, &b);
	if (!lpath.dentry)
		return -ESTALE;
	lpath.mnt = unionfs_mnt(unionfs_dbt(dentry), b);
	err = vfs_getattr(&lpath, stat, request_mask, flags);
	if (!err && d_really_is_positive(lpath.dentry))
		unionfs_copy_attr(inode, d_inode(lpath.dentry));
	/*
	 * The number of the object this name shows (not the union inode's:
	 * a hard link of a copied-up name may still share it until its next
	 * lookup). A branch number that does not fit, or one of another
	 * st_dev than its branch fs's (a btrfs subvolume), is the branch's
	 * own (st_dev, st_ino) for a non-directory, as overlayfs does; a
	 * directory keeps the union's st_dev with a number valid while cached.
	 */
	ino = err ? 0 : unionfs_ino(unionfs_br(unionfs_dbt(dentry), b),
				    stat->ino);
	if (!err && stat->dev != d_inode(lpath.dentry)->i_sb->s_dev)
		ino = 0;
	dput(lpath.dentry);
	if (err)
		return err;
	if (ino) {
		stat->dev = dentry->d_sb->s_dev;
		stat->ino = ino;
	} else if (S_ISDIR(inode->i_mode)) {
		stat->dev = dentry->d_sb->s_dev;
		stat->ino = READ_ONCE(inode->i_ino);
	}
	unionfs_get_range(dentry, &bstart, &bend);
	if (S_ISDIR(inode->i_mode) && bend > bstart)
		stat->nlink = 1;	/* merged: unknown, as overlayfs does */
	else if (!S_ISDIR(inode->i_mode))
		stat->nlink = unionfs_index_nlink(inode, stat->nlink);
	return 0;
}

static int unionfs_setattr(struct user_namespace *mnt_userns,
			   struct dentry *dentry, struct iattr *attr)
{
	struct unionfs_btable *bt = unionfs_dbt(dentry);
	struct inode *inode = d_inode(dentry);
	struct iattr lattr = *attr;
	struct dentry *ld;
	int b, err;

	err = setattr_prepare(&init_user_ns, dentry, attr);
	if (err)
		return err;

	if ((attr->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode))
		err = unionfs_copyup_for_write(dentry, "truncate",
					       attr->ia_size);
	else
		err = unionfs_copyup_for_write(dentry, "setattr", -1);
	if (err)
		return err;

	/* never pass union-level state down; notify_change BUGs on both */
	lattr.ia_valid &= ~(ATTR_FILE | ATTR_OPEN);
	if (lattr.ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		lattr.ia_valid &= ~ATTR_MODE;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	err = unionfs_want_write(bt, b);
	if (!err) {
		inode_lock(d_inode(ld));
		err = unionfs_do_setattr(bt, b, ld, &lattr);
		inode_unlock(d_inode(ld));
		unionfs_drop_write(bt, b);
	}
	if (!err || d_really_is_positive(ld))
		unionfs_copy_attr(inode, d_inode(ld));
	unionfs_perm_forget(inode);
	dput(ld);
	return err;
}

static const char *unionfs_get_link(struct dentry *dentry, struct inode *inode,
				    struct delayed_call *done)
{
	struct dentry *ld;
	const char *p;
	int b;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return ERR_PTR(-ESTALE);
	p = vfs_get_link(ld, done);
	dput(ld);
	return p;
}

/* --- namespace operations ---------------------------------------------- */

struct unionfs_new {
	umode_t mode;
	dev_t rdev;
	const char *symname;
	struct dentry *link;	/* lower dentry to hard-link, or NULL */
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
	err = unionfs_make_opaque(bt, t, tmp, ld,
				  "mkdir-over-whiteout");
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

/* Target branch for a new name below @parent; copies up parents. */
static int unionfs_new_target(struct dentry *dentry, int limit)
{
	struct dentry *parent = dentry->d_parent;
	int pstart, pend, t, err;

	unionfs_get_range(parent, &pstart, &pend);
	if (pstart < 0)
		return -ESTALE;
	if (unionfs_dbt(parent) != unionfs_dbt(dentry))
		return -ESTALE;	/* built against another branch table */
	t = unionfs_nearest_writable(unionfs_dbt(dentry), min(pstart, limit));
	if (t < 0)
		return t;
	if (t < pstart) {
		err = unionfs_copyup_parents(dentry, t);
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
	t = unionfs_new_target(dentry, limit);
	if (t < 0)
		return t;
	lparent = unionfs_lower_dentry_get(dentry->d_parent, t);
	if (!lparent)
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
					       "mkdir-over-whiteout" :
					       "create-over-whiteout");
		revert_creds(old);
	}

	spin_lock(&ud->lock);
	ud->lower[t] = dget(ld);
	ud->bstart = t;
	ud->bend = t;
	ud->bopaque = opaque ? t : -1;
	ud->bwh = -1;
	spin_unlock(&ud->lock);
	inode = unionfs_iget(sb, ud);
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
	bt = unionfs_dbt(dentry->d_parent);
	ud = unionfs_alloc_dinfo(bt);
	if (!ud)
		return -ENOMEM;
	dentry->d_fsdata = ud;	/* freed with @dentry (unionfs_d_release) */
	t = unionfs_new_target(dentry, INT_MAX);
	if (t < 0)
		return t;
	lparent = unionfs_lower_dentry_get(dentry->d_parent, t);
	if (!lparent)
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
	inode = unionfs_iget(dir->i_sb, ud);
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

static int unionfs_link(struct dentry *old, struct inode *dir,
			struct dentry *new)
{
	struct unionfs_inode_info *ui = UNIONFS_I(d_inode(old));
	struct unionfs_new n = { .mode = d_inode(old)->i_mode };
	int b, ob, err;

	/*
	 * The source must be on the branch the link is made in. Its range is
	 * read, copied up and its branch dentry taken under its cu_lock, so
	 * that a copy-up in flight cannot change the plan in between.
	 */
	mutex_lock(&ui->cu_lock);
	unionfs_get_range(old, &ob, &b);
	err = ob < 0 ? -ESTALE : 0;
	if (!err) {
		b = unionfs_nearest_writable(unionfs_dbt(old), ob);
		err = b < 0 ? b : 0;
	}
	/*
	 * An O_TMPFILE file (nlink 0, and I_LINKABLE, or the VFS would have
	 * refused) exists in its branch only, without a name to copy up (nor
	 * one to look up again after a branch change): it is linked there,
	 * where its branch inode is I_LINKABLE, or not at all.
	 */
	if (!err && !d_inode(old)->i_nlink &&
	    (b != ob || !UNIONFS_D(new) ||
	     unionfs_dbt(old) != unionfs_dbt(new)))
		err = -EXDEV;
	if (!err)
		err = unionfs_copyup_dentry_held(old, b, "link", -1);
	if (!err) {
		n.link = unionfs_lower_dentry_get(old, b);
		if (!n.link)
			err = -ESTALE;
	}
	if (!err) {
		err = unionfs_create_object(dir, new, &n, b);
		dput(n.link);
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
	const struct cred *old;
	bool need_wh, made_wh = false, checked = false, has_wh = false;
	bool stashed = false;
	int b, bend, t, err;
	const char *why = isdir ? "rmdir" : "unlink";

	/* a name of a link group: its own name first (index.c) */
	err = isdir ? 0 : unionfs_index_prepare_remove(dentry);
	if (err)
		return err;
	unionfs_get_range(dentry, &b, &bend);
	if (b < 0 || unionfs_dbt(parent) != bt)
		return -ESTALE;
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
		err = unionfs_create_whiteout(parent, &dentry->d_name, t, why);
		goto out_attr;
	}

	ld = unionfs_lower_dentry_get(dentry, b);
	lparent = unionfs_lower_dentry_get(parent, b);
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
			goto out_revert;
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
					       "revert");
out_revert:
	revert_creds(old);
out_unlock:
	inode_unlock(d_inode(lparent));
	dput(cur);
	if (stashed) {
		old = unionfs_override_creds(sb);
		unionfs_dispose(bt, b, lparent, ld);
		revert_creds(old);
	}
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

static int unionfs_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	struct dentry *ld;
	int b, err;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	err = vfs_fileattr_get(ld, fa);
	dput(ld);
	return err;
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

const struct inode_operations unionfs_main_iops = {
	.permission	= unionfs_permission,
	.get_acl	= unionfs_get_acl,
	.set_acl	= unionfs_set_acl,
	.getattr	= unionfs_getattr,
	.setattr	= unionfs_setattr,
	.listxattr	= unionfs_listxattr,
	.fileattr_get	= unionfs_fileattr_get,
};

const struct inode_operations unionfs_symlink_iops = {
	.get_link	= unionfs_get_link,
	.getattr	= unionfs_getattr,
	.setattr	= unionfs_setattr,
	.listxattr	= unionfs_listxattr,
};

const struct inode_operations unionfs_special_iops = {
	.permission	= unionfs_permission,
	.get_acl	= unionfs_get_acl,
	.set_acl	= unionfs_set_acl,
	.getattr	= unionfs_getattr,
	.setattr	= unionfs_setattr,
	.listxattr	= unionfs_listxattr,
};

static int unionfs_inode_test(struct inode *inode, void *data)
{
	return UNIONFS_I(inode)->key == data;
}

static int unionfs_inode_set(struct inode *inode, void *data)
{
	UNIONFS_I(inode)->key = data;
	return 0;
}

struct inode *unionfs_iget(struct super_block *sb,
			   struct unionfs_dentry_info *ud)
{
	struct inode *key, *inode;
	int err;

	if (WARN_ON_ONCE(ud->bstart < 0 || !ud->lower[ud->bstart]))
		return ERR_PTR(-EIO);
	key = d_inode(ud->lower[ud->bstart]);
	inode = iget5_locked(sb, (unsigned long)key, unionfs_inode_test,
			     unionfs_inode_set, key);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW)) {
		/*
		 * A known object: follow the branches of this lookup. Usually
		 * they are the ones it has: keep its vector then (with the
		 * notify marks and the permission cache).
		 */
		err = unionfs_vec_same(inode, ud) ? 0 :
		      unionfs_inode_set_vec(inode, ud);
		if (err) {
			iput(inode);
			return ERR_PTR(err);
		}
		return inode;
	}
	err = unionfs_inode_init(inode, ud);
	if (err) {
		iget_failed(inode);
		return ERR_PTR(err);
	}
	unlock_new_inode(inode);
	return inode;
}
