// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: inodes: attributes, permission (with the merged directories'
 * permission cache), the union inode's branch vector, iget, and the inode
 * operations of files, symlinks and special files. The namespace
 * operations of directories are in dir.c.
 */
#include "union.h"
#include "lower.h"

#include <linux/fs_stack.h>
#include <linux/mm.h>
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
	inode->i_flags = (inode->i_flags & ~flags) | (lower->i_flags & flags) |
			 READ_ONCE(UNIONFS_I(inode)->prot);
	if (!S_ISDIR(inode->i_mode))
		set_nlink(inode, unionfs_index_nlink(inode, lower->i_nlink));
	fsstack_copy_inode_size(inode, (struct inode *)lower);
}

/*
 * @inode's winner @ld (branch @bindex) is a copy-up's copy of an
 * append-only or immutable object if its UNIONFS_XATTR_PROTATTR says so:
 * the union inode keeps those flags (unionfs_copy_attr), so the VFS
 * refuses what they forbid. Fails closed on an unreadable value.
 */
int unionfs_prot_load(struct inode *inode, int bindex, struct dentry *ld)
{
	unsigned int prot = 0;
	char buf[4];
	ssize_t n = 0;
	int i;

	if (d_is_reg(ld) || d_is_dir(ld))
		n = unionfs_do_probe_xattr(inode->i_sb, bindex, ld,
					   UNIONFS_XATTR_PROTATTR, buf,
					   sizeof(buf));
	if (n == -ENODATA || n == -EOPNOTSUPP)
		n = 0;
	if (n == -ERANGE)	/* longer than "ai" */
		goto malformed;
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (buf[i] == 'a')
			prot |= S_APPEND;
		else if (buf[i] == 'i')
			prot |= S_IMMUTABLE;
		else
			goto malformed;
	}
	WRITE_ONCE(UNIONFS_I(inode)->prot, prot);
	return 0;
malformed:
	pr_warn_ratelimited("branch %d: %pd: malformed %s (EIO)\n",
			    bindex, ld, UNIONFS_XATTR_PROTATTR);
	return -EIO;
}

/* Keep @prot (S_APPEND/S_IMMUTABLE) of a copied object on its copy @ld. */
int unionfs_prot_store(struct unionfs_btable *bt, int bindex,
		       struct dentry *ld, unsigned int prot)
{
	char buf[2];
	int n = 0;

	if (prot & S_APPEND)
		buf[n++] = 'a';
	if (prot & S_IMMUTABLE)
		buf[n++] = 'i';
	return n ? unionfs_do_setxattr(bt, bindex, ld, UNIONFS_XATTR_PROTATTR,
				       buf, n, 0) : 0;
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

/* Deferred release work that must be done before a union's umount ends. */
void unionfs_inode_wq_queue(struct work_struct *work)
{
	queue_work(unionfs_wq, work);
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

/* Vector ids: the walk memo's key, never reused (64 bits). */
static atomic64_t unionfs_ivec_ids = ATOMIC64_INIT(0);

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
	vec->id = atomic64_inc_return(&unionfs_ivec_ids);
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
	err = unionfs_prot_load(inode, ud->bstart, ud->lower[ud->bstart]);
	if (err)
		return err;
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

/*
 * The lower ctimes of @vec folded into one number (caller holds RCU);
 * *@recent (if given): one of them is recent (unionfs_ctime_recent).
 */
static u64 unionfs_vec_snap(struct unionfs_ivec *vec, bool *recent)
{
	u64 snap = 0;
	int b;

	if (!vec || vec->bstart < 0)
		return 0;
	for (b = vec->bstart; b <= vec->bend && b < vec->nbr; b++) {
		struct inode *l = READ_ONCE(vec->lower[b]);

		if (!l)
			continue;
		snap += (u64)(b + 1) * unionfs_ctime_ns(l);
		if (recent && !*recent)
			*recent = unionfs_ctime_recent(l);
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
	snap = unionfs_vec_snap(rcu_dereference(UNIONFS_I(dir)->vec), NULL);
	rcu_read_unlock();
	return snap;
}

/*
 * The walk memo. In a path walk every component is looked up right after
 * MAY_EXEC was checked on its directory (link_path_walk: may_lookup, then
 * the lookup; lookup_one_len does the same): unionfs_permission() computes
 * the directory's fingerprint (the permission cache, coherency=reval) and
 * revalidation of the child needs the same number a moment later. Two walks
 * of an O(branches) vector per component were a quarter of a warm stat at
 * 128 branches (perf, docs/performance.md). The number is kept per CPU and
 * used only while it is certainly this walk's:
 *  - same task, same nameidata (the walk in progress: a lookup outside a
 *    walk, nameidata NULL, computes its own);
 *  - same context-switch count: the task ran without a switch, so without
 *    moving to another CPU, since it was stored;
 *  - every unionfs_permission() forgets this CPU's memo first, so the last
 *    check in this run decides: a later walk's check of the directory (the
 *    same nameidata address happens: the kernel stack offset is random in
 *    16-byte steps, and an io_uring chain runs on one worker's stack)
 *    always replaces an earlier walk's;
 *  - same vector, by its id, not its address: a vector replaced twice and
 *    the second freed after a grace period (which preemptible RCU ends
 *    without a context switch of this task) could come back at the same
 *    address for another directory between the check and the lookup
 *    (review 20's ABA);
 *  - a revalidation takes it or not, and forgets it either way (one use);
 *  - only the VFS's own revalidation takes it: a file system stacked on
 *    the union (overlayfs, ovl_revalidate_real) revalidates our dentries
 *    with no permission check of ours in its walk (it checks its upper
 *    inode), so a memo left by an earlier walk of this task would pass for
 *    its walk's (review 20). unionfs_d_revalidate tells them apart by its
 *    caller: the VFS's is in the kernel image, a stacked one's in a module.
 * A direct change of a branch between the check and the lookup of one walk
 * is concurrent with it either way; one before the walk is seen.
 */
struct unionfs_walk_memo {
	u64 vid;			/* the vector's id; 0: none */
	const struct task_struct *task;
	const void *nd;
	unsigned long nsw;
	u64 snap;
};

static DEFINE_PER_CPU(struct unionfs_walk_memo, unionfs_walk_memo);

static inline unsigned long unionfs_nsw(void)
{
	return current->nvcsw + current->nivcsw;
}

/* Forget this CPU's memo (unionfs_permission, on entry). */
static void unionfs_walk_memo_forget(void)
{
	this_cpu_write(unionfs_walk_memo.vid, 0);
}

/* Keep @snap, just computed for @vec by a permission check (RCU held). */
static void unionfs_walk_memo_keep(const struct unionfs_ivec *vec, u64 snap)
{
	struct unionfs_walk_memo *m;

	if (!current->nameidata)
		return;
	m = get_cpu_ptr(&unionfs_walk_memo);
	m->vid = vec->id;
	m->task = current;
	m->nd = current->nameidata;
	m->nsw = unionfs_nsw();
	m->snap = snap;
	put_cpu_ptr(&unionfs_walk_memo);
}

/*
 * Called by the VFS (fs/namei.c: lookup_fast, lookup_dcache, ...), not by
 * a file system stacked on the union? @ip: the caller's return address.
 */
static bool unionfs_walk_caller_vfs(unsigned long ip)
{
#ifdef MODULES_VADDR
	if (ip >= MODULES_VADDR && ip < MODULES_END)
		return false;
#endif
	return !is_vmalloc_addr((const void *)ip);
}

/*
 * unionfs_dir_snap() for revalidation of a child of @dir in a path walk:
 * the number this walk's permission check on @dir computed, if it did and
 * the revalidation is the VFS's (@caller: d_revalidate's return address,
 * unionfs_walk_caller_vfs()). Forgets it.
 */
u64 unionfs_dir_snap_walk(struct inode *dir, unsigned long caller)
{
	struct unionfs_walk_memo *m;
	struct unionfs_ivec *vec;
	bool hit = false;
	u64 snap = 0;

	rcu_read_lock();
	vec = rcu_dereference(UNIONFS_I(dir)->vec);
	if (current->nameidata) {
		m = get_cpu_ptr(&unionfs_walk_memo);
		hit = vec && m->vid == vec->id && m->task == current &&
		      m->nd == current->nameidata && m->nsw == unionfs_nsw() &&
		      unionfs_walk_caller_vfs(caller);
		if (hit)
			snap = m->snap;
		m->vid = 0;
		put_cpu_ptr(&unionfs_walk_memo);
	}
	if (!hit)
		snap = unionfs_vec_snap(vec, NULL);
	rcu_read_unlock();
	return snap;
}

/*
 * The fingerprint a cache keeps to stand for "@dir unchanged since" (a
 * merged listing, a looked-up name: readdir.c, lookup.c, dentry.c). Taken
 * while a lower directory's ctime is recent (unionfs_ctime_recent), a
 * second change within the same timestamp granule would leave the
 * fingerprint as it is: then UNIONFS_SNAP_RACY, which no later one equals,
 * and the next use looks again (tests/t/67 "same_tick": before, a file
 * made in a branch in the tick of a cached miss of its name stayed
 * missing, 281 times in 300; tests/t/50: leftovers made in the tick of a
 * cached listing were not seen, so not removed).
 */
u64 unionfs_dir_snap_trusted(struct inode *dir)
{
	bool recent = false;
	u64 snap;

	rcu_read_lock();
	snap = unionfs_vec_snap(rcu_dereference(UNIONFS_I(dir)->vec), &recent);
	rcu_read_unlock();
	return recent ? UNIONFS_SNAP_RACY : snap;
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
		snap = unionfs_vec_snap(vec, NULL);
		unionfs_walk_memo_keep(vec, snap);
		if (READ_ONCE(vec->perm_snap) == snap) {
			if (READ_ONCE(vec->perm_nseq) != nseq)
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
	snap = unionfs_vec_snap(vec, NULL);
	unionfs_walk_memo_keep(vec, snap);
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
struct posix_acl *unionfs_get_acl(struct inode *inode, int type, bool rcu)
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
 * generic_permission() with the winning branch inode's owner, group and
 * mode as they are now: a chmod or chown made directly in the branch
 * decides the next access at once, as a change of its ACLs does
 * (unionfs_get_acl), not only after the next stat. When they differ from
 * the union inode's, the branch inode itself is checked; the union inode
 * is not written here (its attributes change under its lock: setattr,
 * getattr's copy). Another type is revalidation's business.
 */
static int unionfs_generic_permission(struct inode *inode, int mask)
{
	struct inode *lower;
	int bstart, bend, err;
	bool writable, same;

	rcu_read_lock();
	lower = unionfs_vec_lower(inode, -1, &writable, &bstart, &bend);
	same = IS_ERR_OR_NULL(lower) ||
	       ((READ_ONCE(lower->i_mode) ^ inode->i_mode) & S_IFMT) ||
	       (READ_ONCE(lower->i_mode) == inode->i_mode &&
		uid_eq(lower->i_uid, inode->i_uid) &&
		gid_eq(lower->i_gid, inode->i_gid));
	if (same) {
		rcu_read_unlock();
		return generic_permission(&init_user_ns, inode, mask);
	}
	if (mask & MAY_NOT_BLOCK) {	/* RCU walk: the inode stays */
		err = generic_permission(&init_user_ns, lower, mask);
		rcu_read_unlock();
		return err;
	}
	lower = igrab(lower);
	rcu_read_unlock();
	if (!lower)
		return generic_permission(&init_user_ns, inode, mask);
	err = generic_permission(&init_user_ns, lower, mask);
	iput(lower);
	return err;
}

/*
 * Permission through the union is the winning branch's answer, as in
 * overlayfs (6.1's ovl_permission):
 *  1. the caller's credentials against the union inode: it mirrors the
 *     winning branch's owner and mode (the branch inode's are used when
 *     they differ: a direct chmod in the branch counts at once), and its
 *     ACLs are that branch's
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
int unionfs_permission(struct user_namespace *mnt_userns, struct inode *inode,
		       int mask)
{
	bool rcu = mask & MAY_NOT_BLOCK, writable, need_acl = false;
	struct unionfs_ivec *vec;
	struct inode *lower;
	int b, bstart, bend, err;

	unionfs_walk_memo_forget();
	err = unionfs_generic_permission(inode, mask);
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

int unionfs_getattr(struct user_namespace *mnt_userns, const struct path *path,
		    struct kstat *stat, u32 request_mask, unsigned int flags)
{
	struct dentry *dentry = path->dentry;
	struct inode *inode = d_inode(dentry);
	/* one info throughout: the root's may be replaced meanwhile */
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct path lpath;
	int b, bstart, bend, err;
	u64 ino;

	lpath.dentry = unionfs_ud_top_get(ud, &b);
	if (!lpath.dentry) {
		unionfs_dinfo_put(ud);
		return -ESTALE;
	}
	lpath.mnt = unionfs_mnt(ud->bt, b);
	err = unionfs_do_getattr(dentry->d_sb, b, &lpath, stat, request_mask,
				 flags);
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
	ino = err ? 0 : unionfs_ino(unionfs_br(ud->bt, b), stat->ino);
	if (!err && stat->dev != d_inode(lpath.dentry)->i_sb->s_dev)
		ino = 0;
	dput(lpath.dentry);
	unionfs_ud_range(ud, &bstart, &bend);
	unionfs_dinfo_put(ud);
	if (err)
		return err;
	if (ino) {
		stat->dev = dentry->d_sb->s_dev;
		stat->ino = ino;
	} else if (S_ISDIR(inode->i_mode)) {
		stat->dev = dentry->d_sb->s_dev;
		stat->ino = READ_ONCE(inode->i_ino);
	}
	if (S_ISDIR(inode->i_mode) && bend > bstart)
		stat->nlink = 1;	/* merged: unknown, as overlayfs does */
	else if (!S_ISDIR(inode->i_mode))
		stat->nlink = unionfs_index_nlink(inode, stat->nlink);
	return 0;
}

int unionfs_setattr(struct user_namespace *mnt_userns, struct dentry *dentry,
		    struct iattr *attr)
{
	struct unionfs_btable *bt;
	struct inode *inode = d_inode(dentry);
	struct iattr lattr = *attr;
	unsigned int killpriv = attr->ia_valid & ATTR_KILL_PRIV;
	struct dentry *ld;
	int b, err;

	/*
	 * File capabilities are killed by the branch's notify_change (in
	 * @lattr: unchecked, as on a plain fs); here the removal would go
	 * through our permission-checked removexattr and need CAP_SETFCAP
	 * (EPERM on a kernel whose LSMs leave that check to commoncap).
	 */
	attr->ia_valid &= ~ATTR_KILL_PRIV;
	err = setattr_prepare(&init_user_ns, dentry, attr);
	attr->ia_valid |= killpriv;
	if (err)
		return err;

	if ((attr->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode))
		err = unionfs_copyup_for_write(dentry, UNIONFS_CUR_TRUNCATE,
					       attr->ia_size);
	else
		err = unionfs_copyup_for_write(dentry, UNIONFS_CUR_SETATTR,
					       -1);
	if (err)
		return err;
	/* after the copy-up: it may have moved @dentry onto a new table */
	bt = unionfs_dbt_get(dentry);

	/* never pass union-level state down; notify_change BUGs on both */
	lattr.ia_valid &= ~(ATTR_FILE | ATTR_OPEN);
	if (lattr.ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		lattr.ia_valid &= ~ATTR_MODE;

	/* @b must be a branch of @bt: -ESTALE if refreshed meanwhile */
	ld = unionfs_lower_top_at(dentry, bt, &b);
	err = -ESTALE;
	if (IS_ERR_OR_NULL(ld))
		goto out;
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
out:
	unionfs_bt_put(bt);
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
	p = unionfs_do_get_link(dentry->d_sb, b, ld, done);
	dput(ld);
	return p;
}

int unionfs_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	/* what a copy-up kept of the object's flags (unionfs_prot_load) */
	unsigned int prot = READ_ONCE(UNIONFS_I(d_inode(dentry))->prot);
	struct dentry *ld;
	int b, err;

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return -ESTALE;
	err = unionfs_do_fileattr_get(dentry->d_sb, b, ld, fa);
	dput(ld);
	if (!prot)
		return err;
	if (err == -ENOTTY || err == -EINVAL || err == -EOPNOTSUPP) {
		fileattr_fill_flags(fa, 0);
		err = 0;
	}
	if (!err && (prot & S_APPEND)) {
		fa->flags |= FS_APPEND_FL;
		fa->fsx_xflags |= FS_XFLAG_APPEND;
	}
	if (!err && (prot & S_IMMUTABLE)) {
		fa->flags |= FS_IMMUTABLE_FL;
		fa->fsx_xflags |= FS_XFLAG_IMMUTABLE;
	}
	return err;
}

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

/* A known object: follow the branches of this lookup. */
static struct inode *unionfs_iget_follow(struct inode *inode,
					 struct unionfs_dentry_info *ud)
{
	/* usually the ones it has: keep its vector then (notify marks, perms) */
	int err = unionfs_vec_same(inode, ud) ? 0 :
		  unionfs_inode_set_vec(inode, ud);

	if (err) {
		iput(inode);
		return ERR_PTR(err);
	}
	return inode;
}

static struct inode *unionfs_iget_new(struct super_block *sb,
				      struct unionfs_dentry_info *ud)
{
	struct inode *key = d_inode(ud->lower[ud->bstart]), *inode;
	int err;

	inode = iget5_locked(sb, (unsigned long)key, unionfs_inode_test,
			     unionfs_inode_set, key);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return unionfs_iget_follow(inode, ud);
	err = unionfs_inode_init(inode, ud);
	if (err) {
		iget_failed(inode);
		return ERR_PTR(err);
	}
	unlock_new_inode(inode);
	return inode;
}

/* unionfs_iget_group: @inode, found by the lower member, onto entry @ix. */
static struct inode *unionfs_iget_rekey(struct inode *inode,
					struct unionfs_dentry_info *ud,
					struct inode *ix)
{
	struct unionfs_inode_info *ui = UNIONFS_I(inode);

	inode = unionfs_iget_follow(inode, ud);
	if (IS_ERR(inode) || !mutex_trylock(&ui->cu_lock))
		return inode;	/* a copy-up holds it: it rekeys it */
	unionfs_inode_rekey(inode, ix, unionfs_br(ud->bt, ud->bstart), NULL);
	unionfs_index_inode_init(inode, ud);
	unionfs_copy_attr(inode, ix);
	mutex_unlock(&ui->cu_lock);
	return inode;
}

/*
 * A name whose winner is its link group's index entry (unionfs_index_lookup).
 * The group's union inode is hashed by that entry, or, while another
 * name's copy-up has published the entry and has yet to rekey its union
 * inode (unionfs_copyup_locked), still by the lower member: under the
 * mount's ix_lock (the caller's), which that rekey holds too, it is looked
 * for by the entry, then by the lower member, so the group never gets a
 * second union inode (before, this name kept one until its dentry was
 * dropped: POSIX locks through the two names did not conflict). One found
 * by the lower member with no copy-up holding it (a lookup that raced the
 * copy-up and made its own) is moved onto the entry here, with the
 * group's count of names. An entry whose first copy-up is still in flight
 * (ix_publish) or that is gone (that copy-up failed and unlinked it) is
 * not the group's yet: the name shows its lower member (before, a name
 * that opened such an entry wrote into an unlinked file).
 */
static struct inode *unionfs_iget_group(struct super_block *sb,
					struct unionfs_dentry_info *ud)
{
	struct inode *ix = d_inode(ud->lower[ud->bstart]);
	struct inode *li = NULL, *inode;
	int b;

	lockdep_assert_held(&UNIONFS_SB(sb)->ix_lock);
	for (b = ud->bstart + 1; b <= ud->bend && !li; b++)
		if (ud->lower[b])
			li = d_inode(ud->lower[b]);
	inode = ilookup5(sb, (unsigned long)ix, unionfs_inode_test, ix);
	if (inode)
		return unionfs_iget_follow(inode, ud);
	inode = li ? ilookup5(sb, (unsigned long)li, unionfs_inode_test, li) :
		     NULL;
	if ((inode && READ_ONCE(UNIONFS_I(inode)->ix_publish)) ||
	    d_unhashed(ud->lower[ud->bstart]) || !ix->i_nlink) {
		/*
		 * Not the group's (yet): the lower member. A copy-up in
		 * flight sets the inode's vector under ix_lock, after this.
		 */
		int err = unionfs_index_detach(ud);

		if (err) {
			iput(inode);
			return ERR_PTR(err);
		}
		return inode ? unionfs_iget_follow(inode, ud) :
			       unionfs_iget_new(sb, ud);
	}
	if (inode)
		return unionfs_iget_rekey(inode, ud, ix);
	return unionfs_iget_new(sb, ud);
}

/*
 * The union inode of @ud. A name that may show a link group's index entry
 * (@group: unionfs_lookup found it unionfs_index_related and holds ix_lock;
 * decided once there, not again here, as that depends on the lower file's
 * link count) gets the group's one inode: through the entry it shows, or,
 * when it found none while a copy-up of another name published one since
 * (unionfs_index_moved), through that entry, looked for again
 * (unionfs_index_relook; before, such a late lookup made a second inode
 * over the lower file).
 */
struct inode *unionfs_iget(struct super_block *sb,
			   struct unionfs_dentry_info *ud, bool group)
{
	int found = 0;

	if (WARN_ON_ONCE(ud->bstart < 0 || !ud->lower[ud->bstart]))
		return ERR_PTR(-EIO);
	if (!group)
		return unionfs_iget_new(sb, ud);
	lockdep_assert_held(&UNIONFS_SB(sb)->ix_lock);
	if (!unionfs_index_shown(ud) && unionfs_index_moved(sb, ud))
		found = unionfs_index_relook(sb, ud);
	if (found < 0)
		return ERR_PTR(found);
	if (unionfs_index_shown(ud))	/* also after a relook that found */
		return unionfs_iget_group(sb, ud);
	return unionfs_iget_new(sb, ud);
}
