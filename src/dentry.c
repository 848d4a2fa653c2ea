// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: dentry operations and revalidation by generation number.
 *
 * Every union dentry records the branch table (generation) it was built
 * against. One on an older table is looked up again at its next walk, and
 * unionfs_reval_decide() alone says what the result means: refreshed or
 * rekeyed in place, kept, or dropped for a fresh lookup. The root is
 * rebuilt in place by the branch change itself (branch.c).
 *
 * Dentry infos are reference counted (unionfs_dinfo_get()): a replaced
 * info lives on only while an operation that took it is still running.
 */
#include "union.h"

#include "unionfs_trace.h"

struct unionfs_dentry_info *unionfs_alloc_dinfo(struct unionfs_btable *bt)
{
	struct unionfs_dentry_info *ud;

	ud = kzalloc(struct_size(ud, lower, bt->nbr), GFP_KERNEL);
	if (!ud)
		return NULL;
	refcount_set(&ud->ref, 1);
	spin_lock_init(&ud->lock);
	ud->bstart = -1;
	ud->bend = -1;
	ud->bopaque = -1;
	ud->bwh = -1;
	ud->bredir = -1;
	ud->nbr = bt->nbr;
	ud->generation = bt->gen;
	refcount_inc(&bt->ref);
	ud->bt = bt;
	atomic_long_inc(&UNIONFS_SB(bt->sb)->ndinfo);
	return ud;
}

/* A new info for a child of @parent, on the parent's table; or NULL. */
struct unionfs_dentry_info *unionfs_alloc_dinfo_at(struct dentry *parent)
{
	struct unionfs_dentry_info *pud = unionfs_dinfo_get(parent), *ud;

	if (!pud)
		return NULL;
	ud = unionfs_alloc_dinfo(pud->bt);
	unionfs_dinfo_put(pud);
	return ud;
}

/*
 * The last reference to @ud is gone: release what it holds. RCU-walk
 * readers may still look at it, its lower dentries and its table: all
 * three are freed after a grace period.
 */
static void unionfs_dinfo_destroy(struct unionfs_dentry_info *ud)
{
	int i;

	for (i = 0; i < ud->nbr; i++)
		dput(ud->lower[i]);
	atomic_long_dec(&UNIONFS_SB(ud->bt->sb)->ndinfo);
	unionfs_bt_put(ud->bt);
	kfree_rcu(ud, rcu);
}

static void unionfs_dinfo_work(struct work_struct *work)
{
	unionfs_dinfo_destroy(container_of(work, struct unionfs_dentry_info,
					   work));
}

/*
 * Drop the owner's reference to @ud (a dentry's d_fsdata, or an info never
 * published): it is freed unless a user still holds it.
 */
void unionfs_free_dinfo(struct unionfs_dentry_info *ud)
{
	if (ud && refcount_dec_and_test(&ud->ref))
		unionfs_dinfo_destroy(ud);
}

/*
 * @dentry's current info, referenced: it stays (with its branch table,
 * its lower dentries and the branch mounts) until unionfs_dinfo_put(),
 * even if a branch change replaces it meanwhile. NULL if it has none.
 */
struct unionfs_dentry_info *unionfs_dinfo_get(struct dentry *dentry)
{
	struct unionfs_dentry_info *ud;

	rcu_read_lock();
	for (;;) {
		ud = READ_ONCE(dentry->d_fsdata);
		if (!ud || refcount_inc_not_zero(&ud->ref))
			break;
		/* released meanwhile: its successor is published first */
		if (READ_ONCE(dentry->d_fsdata) == ud) {
			ud = NULL;
			break;
		}
	}
	rcu_read_unlock();
	return ud;
}

/*
 * Drop a user's reference. The last one (the info was replaced while in
 * use) frees it from a work item: this may be any context, and releasing
 * a branch unmounts its private mount.
 */
void unionfs_dinfo_put(struct unionfs_dentry_info *ud)
{
	if (ud && refcount_dec_and_test(&ud->ref)) {
		INIT_WORK(&ud->work, unionfs_dinfo_work);
		unionfs_inode_wq_queue(&ud->work);
	}
}

/*
 * The branch table of @dentry's current info, referenced (unionfs_bt_put()):
 * for an operation that uses it across a sleep on a dentry whose info a
 * branch change may replace meanwhile (the root's).
 */
struct unionfs_btable *unionfs_dbt_get(struct dentry *dentry)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct unionfs_btable *bt;

	if (WARN_ON_ONCE(!ud))
		return unionfs_bt_get(dentry->d_sb);
	bt = ud->bt;
	refcount_inc(&bt->ref);
	unionfs_dinfo_put(ud);
	return bt;
}

struct dentry *unionfs_ud_lower_get(struct unionfs_dentry_info *ud, int bindex)
{
	struct dentry *ld = NULL;

	if (!ud || bindex < 0 || bindex >= ud->nbr)
		return NULL;
	spin_lock(&ud->lock);
	if (bindex >= ud->bstart && bindex <= ud->bend)
		ld = dget(ud->lower[bindex]);
	spin_unlock(&ud->lock);
	return ld;
}

struct dentry *unionfs_lower_dentry_get(struct dentry *dentry, int bindex)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct dentry *ld = unionfs_ud_lower_get(ud, bindex);

	unionfs_dinfo_put(ud);
	return ld;
}

/*
 * The lower dentry of branch @bindex of @bt, the table the caller decided
 * @bindex on: read from @dentry's current info only if that info is built
 * against @bt, all under one reference to it. A branch change (or the
 * refresh of @dentry on a new table) since the decision would make
 * @bindex name another branch: ERR_PTR(-ESTALE) then (the VFS looks the
 * path up again once, with LOOKUP_REVAL). NULL if it has none there.
 */
struct dentry *unionfs_lower_dentry_at(struct dentry *dentry,
				       struct unionfs_btable *bt, int bindex)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct dentry *ld = ERR_PTR(-ESTALE);

	if (ud && ud->bt == bt)
		ld = unionfs_ud_lower_get(ud, bindex);
	unionfs_dinfo_put(ud);
	return ld;
}

/* The winning lower dentry of @ud, referenced; *bindex gets its branch. */
struct dentry *unionfs_ud_top_get(struct unionfs_dentry_info *ud, int *bindex)
{
	struct dentry *ld = NULL;

	*bindex = -1;
	if (!ud)
		return NULL;
	spin_lock(&ud->lock);
	if (ud->bstart >= 0) {
		ld = dget(ud->lower[ud->bstart]);
		*bindex = ud->bstart;
	}
	spin_unlock(&ud->lock);
	return ld;
}

struct dentry *unionfs_lower_top_get(struct dentry *dentry, int *bindex)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct dentry *ld = unionfs_ud_top_get(ud, bindex);

	unionfs_dinfo_put(ud);
	return ld;
}

/*
 * The winning lower dentry of @dentry and its branch in @bt, the table the
 * caller holds and will use the index with: ERR_PTR(-ESTALE) if @dentry's
 * info is built against another one (unionfs_lower_dentry_at()), NULL if
 * it has none.
 */
struct dentry *unionfs_lower_top_at(struct dentry *dentry,
				    struct unionfs_btable *bt, int *bindex)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);
	struct dentry *ld = ERR_PTR(-ESTALE);

	*bindex = -1;
	if (ud && ud->bt == bt)
		ld = unionfs_ud_top_get(ud, bindex);
	unionfs_dinfo_put(ud);
	return ld;
}

void unionfs_ud_range(struct unionfs_dentry_info *ud, int *bstart, int *bend)
{
	if (!ud) {
		*bstart = -1;
		*bend = -1;
		return;
	}
	spin_lock(&ud->lock);
	*bstart = ud->bstart;
	*bend = ud->bend;
	spin_unlock(&ud->lock);
}

void unionfs_get_range(struct dentry *dentry, int *bstart, int *bend)
{
	struct unionfs_dentry_info *ud = unionfs_dinfo_get(dentry);

	unionfs_ud_range(ud, bstart, bend);
	unionfs_dinfo_put(ud);
}

/* Trace a revalidation result (out of line: the name copy's stack). */
static noinline void unionfs_trace_reval_slow(struct dentry *dentry,
					      struct unionfs_dentry_info *ud,
					      int sbgen,
					      enum unionfs_rv_result result,
					      enum unionfs_rv_why why)
{
	unionfs_trace_dname(unionfs_revalidate, dentry->d_sb, dentry,
			    ud->generation, sbgen, result, why);
}

static inline void unionfs_trace_reval(struct dentry *dentry,
				       struct unionfs_dentry_info *ud,
				       int sbgen,
				       enum unionfs_rv_result result,
				       enum unionfs_rv_why why)
{
	if (trace_unionfs_revalidate_enabled())
		unionfs_trace_reval_slow(dentry, ud, sbgen, result, why);
}

/*
 * Revalidation never throws away a dentry that still names its object:
 * d_invalidate() of a directory detaches every mount below it, and a
 * directory in use (a cwd, an open file) that is dropped comes back
 * through d_splice_alias() with its old state. A cached name whose
 * branches may have changed is looked up again in place instead and the
 * dentry keeps its inode (unionfs_reval_refresh()); what the result means
 * is decided in one place, unionfs_reval_decide().
 */
/*
 * The decisions are the tracepoint's results (enum unionfs_rv_result):
 * UNIONFS_RVR_REFRESHED	same object: take the new branch vector
 * UNIONFS_RVR_REKEYED		another lower object of the same type
 * UNIONFS_RVR_KEPT		keep it as it is (for now)
 * UNIONFS_RVR_DROPPED		invalid: the VFS looks the name up again
 */

/* What a refresh's lookup started from: to see that nothing raced it. */
struct unionfs_dstate {
	unsigned int dseq;	/* the dentry's d_seq: renames, drops */
	int bstart, bend, bopaque, bwh;
	struct dentry *top, *last;
};

static void unionfs_dstate_get(struct dentry *dentry,
			       struct unionfs_dentry_info *ud,
			       struct unionfs_dstate *s)
{
	s->dseq = read_seqcount_begin(&dentry->d_seq);
	spin_lock(&ud->lock);
	s->bstart = ud->bstart;
	s->bend = ud->bend;
	s->bopaque = ud->bopaque;
	s->bwh = ud->bwh;
	s->top = ud->bstart >= 0 ? ud->lower[ud->bstart] : NULL;
	s->last = ud->bend >= 0 ? ud->lower[ud->bend] : NULL;
	spin_unlock(&ud->lock);
}

/* Caller holds @ud->lock. */
static bool unionfs_dstate_same(struct dentry *dentry,
				struct unionfs_dentry_info *ud,
				const struct unionfs_dstate *s)
{
	return !read_seqcount_retry(&dentry->d_seq, s->dseq) &&
	       READ_ONCE(dentry->d_fsdata) == ud &&
	       ud->bstart == s->bstart && ud->bend == s->bend &&
	       ud->bopaque == s->bopaque && ud->bwh == s->bwh &&
	       (ud->bstart < 0 || ud->lower[ud->bstart] == s->top) &&
	       (ud->bend < 0 || ud->lower[ud->bend] == s->last);
}

/*
 * Make @fresh (a lookup of @dentry's name against its parent's table) the
 * state of @dentry, unless something changed @ud since @s (NULL: in any
 * case). On the same branch table the lower dentries are exchanged in
 * place; on another one @fresh replaces @ud, and the dentry's reference
 * to @ud is dropped: @ud (its table, its lower dentries, the branches)
 * goes with the last user that took it (unionfs_dinfo_get()), at once if
 * none did. Every user of a dentry's info pins it, or holds the object's
 * cu_lock, under which the info of a positive dentry is not replaced
 * (the root's is replaced by branch changes only, under no such lock).
 * Returns the info now in place (@fresh is consumed), or NULL if raced
 * (@fresh freed). The caller holds a reference to @ud.
 */
static struct unionfs_dentry_info *
unionfs_dinfo_install(struct dentry *dentry, struct unionfs_dentry_info *ud,
		      struct unionfs_dentry_info *fresh,
		      const struct unionfs_dstate *s)
{
	int b;

	spin_lock(&ud->lock);
	if (s && !unionfs_dstate_same(dentry, ud, s))
		goto raced;
	if (fresh->bt == ud->bt) {
		for (b = 0; b < ud->nbr; b++)
			swap(ud->lower[b], fresh->lower[b]);
		ud->bstart = fresh->bstart;
		ud->bend = fresh->bend;
		ud->bopaque = fresh->bopaque;
		ud->bwh = fresh->bwh;
		WRITE_ONCE(ud->bredir, fresh->bredir);
		WRITE_ONCE(ud->psnap, fresh->psnap);
		WRITE_ONCE(ud->nseq, fresh->nseq);
		spin_unlock(&ud->lock);
		unionfs_free_dinfo(fresh);	/* the old lower dentries */
		return ud;
	}
	if (cmpxchg(&dentry->d_fsdata, ud, fresh) != ud)
		goto raced;
	spin_unlock(&ud->lock);
	unionfs_dinfo_put(ud);	/* d_fsdata's: the caller's stays */
	return fresh;
raced:
	spin_unlock(&ud->lock);
	unionfs_free_dinfo(fresh);
	return NULL;
}

static int unionfs_key_test(struct inode *inode, void *data)
{
	return UNIONFS_I(inode)->key == data;
}

/*
 * The one place that decides what a change means for @dentry: a new
 * generation (branch table), a change in its parent's lower directories,
 * its winning lower entry gone or replaced. @fresh is the name looked up
 * again now; @locked: the parent's lock (shared) and the object's copy-up
 * lock are held, so no change of ours is half done.
 *
 * - no fresh lookup (@fresh NULL: the parent is itself on an older table,
 *   the object's copy-up lock is busy, the lookup failed with @err, or a
 *   change raced the refresh): a mountpoint and any other positive dentry
 *   are kept (in use, or looked up again at their next use), unless the
 *   lookup said ESTALE; a negative one is dropped;
 * - negative: stays negative in place (same table), else dropped;
 * - the same object: refreshed in place (its range may differ);
 * - another object of the same type: a directory (or a mountpoint) is
 *   rekeyed to it in place, other objects are dropped (open files keep
 *   theirs, new lookups find the new one);
 * - gone from every branch, or another type: dropped, except a
 *   mountpoint, and a directory unless @locked (it may only have been
 *   renamed by us meanwhile): kept until its name is looked up again.
 */
static enum unionfs_rv_result
unionfs_reval_decide(struct dentry *dentry, struct unionfs_dentry_info *ud,
		     struct unionfs_dentry_info *fresh, bool locked, int err)
{
	struct inode *inode = d_inode(dentry), *top, *other;
	bool keep = d_mountpoint(dentry) || (d_is_dir(dentry) && !locked);

	/*
	 * No answer: a directory is kept (dropping it would detach the
	 * mounts below it) and the walk fails with the error, which the
	 * VFS retries once with LOOKUP_REVAL; ESTALE drops other objects.
	 */
	if (!fresh)
		return d_mountpoint(dentry) ||
		       (inode && (err != -ESTALE || d_is_dir(dentry))) ?
		       UNIONFS_RVR_KEPT : UNIONFS_RVR_DROPPED;

	/*
	 * A new table: what nobody uses (a reference besides the walk's:
	 * a child, a cwd, an open file, a mount) is dropped, as cheap as
	 * refreshing it, and leaves no old info behind.
	 */
	if (fresh->bt != ud->bt && !d_mountpoint(dentry) &&
	    d_count(dentry) <= 1)
		return UNIONFS_RVR_DROPPED;
	if (!inode)
		return fresh->bstart < 0 && fresh->bt == ud->bt ?
		       UNIONFS_RVR_REFRESHED : UNIONFS_RVR_DROPPED;
	if (fresh->bstart < 0)
		return keep ? UNIONFS_RVR_KEPT : UNIONFS_RVR_DROPPED;
	top = d_inode(fresh->lower[fresh->bstart]);
	if (top == READ_ONCE(UNIONFS_I(inode)->key))
		return UNIONFS_RVR_REFRESHED;
	if ((top->i_mode ^ inode->i_mode) & S_IFMT)
		return keep ? UNIONFS_RVR_KEPT : UNIONFS_RVR_DROPPED;
	if (!S_ISDIR(inode->i_mode) && !d_mountpoint(dentry))
		return UNIONFS_RVR_DROPPED;
	if (!locked)
		return UNIONFS_RVR_KEPT;
	/* one union inode per lower object */
	other = ilookup5_nowait(dentry->d_sb, (unsigned long)top,
				unionfs_key_test, top);
	if (other) {
		iput(other);
		return keep ? UNIONFS_RVR_KEPT : UNIONFS_RVR_DROPPED;
	}
	return UNIONFS_RVR_REKEYED;
}

/*
 * Where did @fresh first differ from @ud (same table, @ud->lock held)?
 * The branch, or -1 if the name is unchanged; *@kind the hazard.
 */
static int unionfs_reval_diff(struct unionfs_dentry_info *ud,
			      struct unionfs_dentry_info *fresh, int *kind)
{
	int b;

	for (b = 0; b < ud->nbr; b++) {
		struct dentry *o = b >= ud->bstart && b <= ud->bend ?
				   ud->lower[b] : NULL;
		struct dentry *n = b >= fresh->bstart && b <= fresh->bend ?
				   fresh->lower[b] : NULL;

		/*
		 * Entries only: a whiteout or an opaque marker changes what
		 * shows only through the entries below it, and a lookup does
		 * not record one where nothing lies below (our own rename or
		 * copy-up does: no change).
		 */
		if (o && n && d_inode(o) == d_inode(n)) {
			/*
			 * A non-directory shows its winner only: what lies
			 * below it (the source a copy-up keeps) is no change.
			 */
			if (!d_is_dir(n))
				return -1;
			continue;
		}
		if (!o && !n)
			continue;
		if (o && !n && b == ud->bstart)
			*kind = UNIONFS_HZ_VANISHED;
		else if (o && n && d_inode(o) != d_inode(n))
			*kind = UNIONFS_HZ_REPLACED;
		else
			*kind = UNIONFS_HZ_DIR_CHANGED;
		return b;
	}
	return -1;
}

static const char *const unionfs_hazard_what[UNIONFS_HZ_MAX] = {
	[UNIONFS_HZ_VANISHED]	 = "removed or renamed in the branch",
	[UNIONFS_HZ_REPLACED]	 = "the branch entry is another object now",
	[UNIONFS_HZ_DIR_CHANGED] = "the name changed in a branch directory",
};

/* The branch changed @name behind our back: count and report it. */
static void unionfs_reval_hazard(struct dentry *dentry,
				 struct unionfs_dentry_info *ud,
				 struct unionfs_dentry_info *fresh,
				 const struct qstr *name)
{
	int b, kind = UNIONFS_HZ_DIR_CHANGED;

	spin_lock(&ud->lock);
	b = unionfs_reval_diff(ud, fresh, &kind);
	spin_unlock(&ud->lock);
	if (b < 0)
		return;
	trace_unionfs_hazard(dentry->d_sb, unionfs_hazard_name(kind), b,
			     name->name, unionfs_hazard_what[kind]);
	unionfs_hazard_note(dentry->d_sb, kind, b, name->name, name->len,
			    unionfs_hazard_what[kind], false);
}

/* The inode of a refreshed dentry follows its new branch vector. */
static int unionfs_reval_inode(struct inode *inode,
			       struct unionfs_dentry_info *ud, bool rekey)
{
	struct dentry *top;
	int b, err = 0;

	top = unionfs_ud_top_get(ud, &b);
	if (!top)
		return -ESTALE;
	if (rekey)
		unionfs_inode_rekey(inode, d_inode(top),
				    unionfs_br(ud->bt, b), NULL);
	if (!unionfs_vec_same(inode, ud))
		err = unionfs_inode_set_vec(inode, ud);
	if (!err)
		err = unionfs_prot_load(inode, b, top);
	unionfs_copy_attr(inode, d_inode(top));
	dput(top);
	return err;
}

/* The generation of @parent's table (0 if it has none). */
int unionfs_dentry_gen(struct dentry *parent)
{
	struct unionfs_dentry_info *pud;
	int gen = 0;

	/* no reference: the info and its table are freed after a GP */
	rcu_read_lock();
	pud = READ_ONCE(parent->d_fsdata);
	if (pud)
		gen = READ_ONCE(pud->bt->gen);
	rcu_read_unlock();
	return gen;
}

/*
 * Look @dentry's name up again and decide what it means
 * (unionfs_reval_decide()). Ref-walk only. @why: what made it necessary.
 */
static int unionfs_reval_refresh(struct dentry *dentry,
				 struct unionfs_dentry_info *ud,
				 enum unionfs_rv_why why, long nseq,
				 bool report)
{
	struct super_block *sb = dentry->d_sb;
	int sbgen = unionfs_sb_gen(sb);
	struct inode *inode = d_inode(dentry), *pinode;
	struct unionfs_dentry_info *fresh, *cur;
	struct name_snapshot name;
	struct unionfs_dstate s0;
	struct dentry *parent;
	const struct cred *old;
	bool plocked, culocked = false, locked;
	enum unionfs_rv_result rv;
	int ret, err, tries;

	parent = dget_parent(dentry);
	pinode = d_inode(parent);
	/*
	 * As a lookup would, under the parent's lock: a change of ours in
	 * this directory then is either done (and in the dentry) or not
	 * started. Only tried: our caller may hold it.
	 */
	plocked = inode_trylock_shared(pinode);
	if (plocked && dentry->d_parent != parent) {
		inode_unlock_shared(pinode);
		plocked = false;
	}
	if (inode)
		culocked = mutex_trylock(&UNIONFS_I(inode)->cu_lock);
	locked = plocked && (!inode || culocked);
	take_dentry_name_snapshot(&name, dentry);
	unionfs_dstate_get(dentry, ud, &s0);

	ret = 1;
	err = 0;
	fresh = NULL;
	if (unionfs_dentry_gen(parent) != sbgen) {
		why = UNIONFS_RVW_PARENT_STALE;	/* looked up again below it later */
	} else if (inode && !culocked) {
		/* a positive dentry changes only under its copy-up lock */
	} else {
		err = -ENOMEM;
		fresh = unionfs_alloc_dinfo_at(parent);
	}
	for (tries = 0; fresh; tries++) {
		fresh->psnap = unionfs_dir_snap_trusted(pinode);
		fresh->nseq = nseq;
		unionfs_race_window();	/* test builds: a branch change here */
		old = unionfs_override_creds(sb);
		err = unionfs_lookup_branches(parent, &name.name, fresh, 0,
					      true);
		revert_creds(old);
		if (!err)
			break;
		unionfs_free_dinfo(fresh);
		fresh = NULL;
		/* the parent got a new table meanwhile (a remount): on it */
		if (err != -ESTALE || tries >= 2)
			break;
		err = -ENOMEM;
		fresh = unionfs_alloc_dinfo_at(parent);
	}
	if (err)
		why = UNIONFS_RVW_LOOKUP_ERROR;
	rv = unionfs_reval_decide(dentry, ud, fresh, locked, err);
	/* as the lookup would: a kept name fails the walk with the error */
	if (err && rv == UNIONFS_RVR_KEPT && !d_mountpoint(dentry))
		ret = err;
	/*
	 * An unhashed dentry lost its name to one of our own changes (the
	 * target of a rename, or an unlink) that a walk raced: what the name
	 * shows now is ours, no direct change (a walk that found the dentry
	 * just before the rename revalidates it just after).
	 */
	if (fresh && report && locked && fresh->bt == ud->bt &&
	    !d_unhashed(dentry))
		unionfs_reval_hazard(dentry, ud, fresh, &name.name);
	if (rv == UNIONFS_RVR_REFRESHED || rv == UNIONFS_RVR_REKEYED) {
		cur = unionfs_dinfo_install(dentry, ud, fresh, &s0);
		fresh = NULL;
		if (!cur) {
			/* changed meanwhile: what is there now stands */
			why = UNIONFS_RVW_RACED;
			rv = unionfs_reval_decide(dentry, ud, NULL, locked, 0);
		} else if (inode) {
			err = unionfs_reval_inode(inode, cur,
						  rv == UNIONFS_RVR_REKEYED);
			if (err)
				ret = err;
		}
	}
	if (rv == UNIONFS_RVR_DROPPED)
		ret = 0;
	trace_unionfs_revalidate(sb, name.name.name, ud->generation, sbgen,
				 rv, why);
	release_dentry_name_snapshot(&name);
	unionfs_free_dinfo(fresh);
	if (culocked)
		mutex_unlock(&UNIONFS_I(inode)->cu_lock);
	if (plocked)
		inode_unlock_shared(pinode);
	dput(parent);
	return ret;
}

/*
 * Bring @dentry, in use (a cwd, a dirfd, an open directory, the parent of
 * a lookup, a file whose fd is changed), and its stale ancestors onto the
 * current branch table, top down, as a walk from the root would have: a
 * walk relative to a cwd or a dirfd revalidates neither, and an fd-based
 * change none, so they would go on using the branches of the table they
 * were built on, also a deleted one. One refresh per round, of the
 * topmost stale dentry (its parent is current). Not for a dentry that was
 * removed (unhashed, or a dead directory): it keeps what it had. Bounded
 * (a remount during a round counts: at most 4), and ended by a fatal
 * signal. Returns 0 when @dentry is current, -ENOENT when the union no
 * longer has it (gone from every branch left, or another object now),
 * 1 when it stays on its table for now (removed, a lookup error, or a
 * change of ours in progress there: unionfs_reval_refresh() only
 * trylocks), or -EINTR.
 */
int unionfs_refresh_stale(struct dentry *dentry)
{
	struct super_block *sb = dentry->d_sb;
	struct unionfs_dentry_info *ud;
	struct dentry *d, *p;
	int round, raced = 0, ret, sbgen;
	bool moved;

	for (round = 0; round < PATH_MAX / 2; round++) {
		sbgen = unionfs_sb_gen(sb);
		if (unionfs_dentry_gen(dentry) == sbgen)
			return 0;
		if (fatal_signal_pending(current))
			return -EINTR;
		d = dget(dentry);
		while (!IS_ROOT(d)) {
			p = dget_parent(d);
			if (unionfs_dentry_gen(p) == sbgen) {
				dput(p);
				break;
			}
			dput(d);
			d = p;
		}
		ret = 1;
		ud = NULL;
		if (!IS_ROOT(d) && !d_unhashed(d) &&
		    !(d_is_dir(d) && IS_DEADDIR(d_inode(d))))
			ud = unionfs_dinfo_get(d);
		if (ud) {
			ret = unionfs_reval_refresh(d, ud, UNIONFS_RVW_GENERATION,
						    atomic_long_read(&UNIONFS_SB(sb)->nseq),
						    false);
			unionfs_dinfo_put(ud);
		}
		moved = unionfs_dentry_gen(d) == sbgen;
		dput(d);
		if (!ret)
			return -ENOENT;	/* dropped: not in the union now */
		if (ret < 0)
			return ret;
		/* kept: no progress, unless a remount came between */
		if (!moved && (unionfs_sb_gen(sb) == sbgen || ++raced > 4))
			return 1;
	}
	return 1;
}

/*
 * d_splice_alias() moved @alias, a directory dentry in use, to the name
 * @src was just looked up for: it takes that state.
 */
void unionfs_dinfo_adopt(struct dentry *alias, struct unionfs_dentry_info *src)
{
	struct unionfs_dentry_info *ud, *fresh;
	struct inode *inode = d_inode(alias);
	int b;

	if (!inode || READ_ONCE(alias->d_fsdata) == src)
		return;
	fresh = unionfs_alloc_dinfo(src->bt);
	if (!fresh)
		return;		/* it is refreshed at its next use */
	spin_lock(&src->lock);
	fresh->bstart = src->bstart;
	fresh->bend = src->bend;
	fresh->bopaque = src->bopaque;
	fresh->bwh = src->bwh;
	fresh->bredir = src->bredir;
	fresh->psnap = src->psnap;
	fresh->nseq = src->nseq;
	for (b = max(src->bstart, 0); b <= src->bend; b++)
		fresh->lower[b] = dget(src->lower[b]);
	spin_unlock(&src->lock);
	mutex_lock(&UNIONFS_I(inode)->cu_lock);
	ud = unionfs_dinfo_get(alias);
	if (ud)
		unionfs_dinfo_install(alias, ud, fresh, NULL);
	else
		unionfs_free_dinfo(fresh);
	unionfs_dinfo_put(ud);
	mutex_unlock(&UNIONFS_I(inode)->cu_lock);
}

/*
 * Was a lower directory of @ud removed in its branch? A redirected
 * directory's lower copies (from @ud->bredir on) are not in its parent's
 * lower directories, so their removal changes none of those
 * (unionfs_dir_snap()). The others are covered by the parent's
 * fingerprint: not walked (O(branches) per directory of every warm walk:
 * a fifth of a warm stat's time at 128 branches, perf). Lower dentries
 * are freed after a grace period, as in RCU walk.
 */
static bool unionfs_lower_dir_dead(struct unionfs_dentry_info *ud)
{
	int b, start, end;
	bool dead = false;

	start = READ_ONCE(ud->bredir);
	if (start < 0)
		return false;	/* every copy is covered by the parent's snap */
	rcu_read_lock();
	start = max(start, READ_ONCE(ud->bstart));
	end = min(READ_ONCE(ud->bend), ud->nbr - 1);
	for (b = start; b <= end && !dead; b++) {
		struct dentry *ld = READ_ONCE(ud->lower[b]);
		struct inode *li = ld ? d_inode_rcu(ld) : NULL;

		dead = li && S_ISDIR(li->i_mode) && IS_DEADDIR(li);
	}
	rcu_read_unlock();
	return dead;
}

/*
 * A positive non-directory whose winner is an entry of its parent's first
 * branch, still under its name there: no change of the parent's branch
 * directories can hide or shadow it (a whiteout next to a name is
 * ignored); only its own entry can change, which is checked here (name,
 * parent) and by unionfs_reval_need (hashed, same inode). Then its
 * parent's fingerprint need not be trusted (UNIONFS_SNAP_RACY). Ref-walk.
 */
static bool unionfs_reval_top_file(struct dentry *dentry,
				   struct unionfs_dentry_info *ud,
				   struct dentry *parent)
{
	struct unionfs_dentry_info *pud;
	struct dentry *ld = NULL, *plower = NULL;
	struct name_snapshot n;
	bool top = false;
	int b;

	if (!d_really_is_positive(dentry) || d_is_dir(dentry))
		return false;
	rcu_read_lock();
	pud = READ_ONCE(parent->d_fsdata);
	spin_lock(&ud->lock);
	b = ud->bstart;
	if (pud && pud->bt == ud->bt && b >= 0 && b < ud->nbr &&
	    b <= READ_ONCE(pud->bstart)) {
		ld = dget(ud->lower[b]);
		plower = READ_ONCE(pud->lower[b]);	/* compared only */
	}
	spin_unlock(&ud->lock);
	rcu_read_unlock();
	if (!ld)
		return false;
	take_dentry_name_snapshot(&n, dentry);
	spin_lock(&ld->d_lock);
	top = ld->d_parent == plower && !d_unhashed(ld) &&
	      ld->d_name.len == n.name.len &&
	      !memcmp(ld->d_name.name, n.name.name, n.name.len);
	spin_unlock(&ld->d_lock);
	release_dentry_name_snapshot(&n);
	dput(ld);
	return top;
}

/* unionfs_reval_need()'s "look it up again": 1, and the reason in *@why */
static inline int unionfs_reval_why(enum unionfs_rv_why *why,
				    enum unionfs_rv_why reason)
{
	*why = reason;
	return 1;
}

/*
 * Does @dentry need a look at the branches? 0 if it is valid as it is, 1
 * if it does (*@why says why), -ECHILD in RCU walk when only ref-walk can
 * tell. *@report: a difference found then is a direct modification.
 * @caller: d_revalidate's return address (unionfs_dir_snap_walk).
 */
static int unionfs_reval_need(struct dentry *dentry,
			      struct unionfs_dentry_info *ud,
			      unsigned int flags, unsigned long caller,
			      long *nseq, bool *report,
			      enum unionfs_rv_why *why)
{
	struct super_block *sb = dentry->d_sb;
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	int sbgen = unionfs_sb_gen(sb);
	int coh = READ_ONCE(sbi->coherency);
	struct inode *pinode, *inode;
	struct dentry *parent, *ld;
	int b, ret;
	u64 snap, psnap, tsnap = UNIONFS_SNAP_RACY;

	*report = false;
	*nseq = atomic_long_read(&sbi->nseq);
	if (READ_ONCE(ud->bt->gen) != sbgen)
		return unionfs_reval_why(why, UNIONFS_RVW_GENERATION);
	/* A union dentry that went negative must be looked up afresh. */
	if (d_really_is_negative(dentry) && READ_ONCE(ud->bstart) >= 0)
		return unionfs_reval_why(why, UNIONFS_RVW_NEG_BRANCHES);
	if (coh == UNIONFS_COH_NONE) {
		unionfs_trace_reval(dentry, ud, sbgen, UNIONFS_RVR_VALID,
				    UNIONFS_RVW_COH_NONE);
		return 0;
	}
	/* (notify does not see it: the removal is not in a marked dir) */
	if (d_is_dir(dentry) && unionfs_lower_dir_dead(ud))
		return unionfs_reval_why(why, UNIONFS_RVW_LOWER_DIR_GONE);
	/* no direct change anywhere in the union since the last check */
	if (coh == UNIONFS_COH_NOTIFY && READ_ONCE(ud->nseq) == *nseq) {
		unionfs_trace_reval(dentry, ud, sbgen, UNIONFS_RVR_VALID,
				    UNIONFS_RVW_NOTIFY_QUIET);
		return 0;
	}
	/* notify counted the change as it happened */
	*report = coh == UNIONFS_COH_REVAL;
	/*
	 * Did an entry appear, vanish or get whited out in one of the
	 * parent's lower directories since this name was looked up?
	 */
	parent = READ_ONCE(dentry->d_parent);
	pinode = d_inode_rcu(parent);
	if (!pinode)
		return unionfs_reval_why(why, UNIONFS_RVW_NO_PARENT);
	psnap = READ_ONCE(ud->psnap);
	if (psnap == UNIONFS_SNAP_RACY) {
		if (flags & LOOKUP_RCU)
			return -ECHILD;
		/* taken first: what changes after the checks below shows */
		tsnap = unionfs_dir_snap_trusted(pinode);
		if (!unionfs_reval_top_file(dentry, ud, parent))
			return unionfs_reval_why(why, UNIONFS_RVW_SNAP_RACY);
	} else {
		snap = unionfs_dir_snap_walk(pinode, caller);
		if (snap != psnap)
			return unionfs_reval_why(why,
				snap == READ_ONCE(UNIONFS_I(pinode)->snap) ?
				UNIONFS_RVW_OWN_CHANGE : UNIONFS_RVW_DIR_CHANGED);
	}
	if (d_really_is_negative(dentry))
		goto valid;

	/* the winning lower dentry is still there and the same object */
	if (flags & LOOKUP_RCU) {
		b = READ_ONCE(ud->bstart);
		if (b < 0 || b >= ud->nbr)
			return -ECHILD;
		ld = READ_ONCE(ud->lower[b]);
		inode = d_inode_rcu(dentry);
		if (!ld || d_unhashed(ld) || d_is_negative(ld) || !inode ||
		    d_inode_rcu(ld) != READ_ONCE(UNIONFS_I(inode)->key))
			return unionfs_reval_why(why,
						 UNIONFS_RVW_LOWER_CHANGED);
		if (ld->d_flags & DCACHE_OP_REVALIDATE)
			return -ECHILD;
		goto valid;
	}
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return unionfs_reval_why(why, UNIONFS_RVW_LOWER_GONE);
	ret = 1;
	if (ld->d_flags & DCACHE_OP_REVALIDATE) {
		ret = ld->d_op->d_revalidate(ld, flags);
		if (ret == 0)
			d_invalidate(ld);
	}
	if (ret <= 0 || d_unhashed(ld) || d_really_is_negative(ld))
		ret = unionfs_reval_why(why, UNIONFS_RVW_LOWER_GONE);
	else if (d_inode(ld) != UNIONFS_I(d_inode(dentry))->key)
		ret = unionfs_reval_why(why, UNIONFS_RVW_LOWER_REPLACED);
	else
		ret = 0;
	dput(ld);
	if (ret)
		return ret;
valid:
	if (coh == UNIONFS_COH_NOTIFY)
		WRITE_ONCE(ud->nseq, *nseq);
	/* a top file checked exactly: its parent's state from before the check */
	if (psnap == UNIONFS_SNAP_RACY && tsnap != UNIONFS_SNAP_RACY)
		WRITE_ONCE(ud->psnap, tsnap);
	unionfs_trace_reval(dentry, ud, sbgen, UNIONFS_RVR_VALID,
			    d_really_is_negative(dentry) ?
			    UNIONFS_RVW_NEG_UNCHANGED : UNIONFS_RVW_UNCHANGED);
	return 0;
}

/* A stale parent (a cwd, a dirfd) onto the current table first. */
static void unionfs_refresh_parent(struct dentry *dentry)
{
	struct dentry *parent = dget_parent(dentry);

	if (!IS_ROOT(parent))
		unionfs_refresh_stale(parent);
	dput(parent);
}

static int unionfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	unsigned long caller = _RET_IP_;	/* the walk memo: the VFS's? */
	struct unionfs_dentry_info *ud;
	enum unionfs_rv_why why;
	bool report;
	long nseq;
	int ret;

	if (IS_ROOT(dentry))
		return READ_ONCE(dentry->d_fsdata) ? 1 : 0;
	/*
	 * RCU walk: the info, its table and its lower dentries are freed
	 * after a grace period (unionfs_dinfo_destroy()), and nothing here
	 * sleeps. Ref-walk may sleep (a lookup in the branches) while a
	 * concurrent refresh replaces the info: it holds a reference.
	 */
	if (flags & LOOKUP_RCU) {
		ud = READ_ONCE(dentry->d_fsdata);
		if (!ud)
			return 0;
		ret = unionfs_reval_need(dentry, ud, flags, caller, &nseq,
					 &report, &why);
		return ret ? -ECHILD : 1;
	}
	ud = unionfs_dinfo_get(dentry);
	if (!ud)
		return 0;
	ret = unionfs_reval_need(dentry, ud, flags, caller, &nseq, &report,
				 &why);
	if (ret < 0) {
		/* ret: the error */
	} else if (ret) {
		if (why == UNIONFS_RVW_GENERATION) {
			report = false;	/* the branches were changed on purpose */
			/* below a cwd or dirfd: its directory first */
			unionfs_refresh_parent(dentry);
		}
		ret = unionfs_reval_refresh(dentry, ud, why, nseq, report);
	} else {
		ret = 1;
	}
	unionfs_dinfo_put(ud);
	return ret;
}

/*
 * Weak revalidation (the end of a path walk on a name we did not look up,
 * e.g. fstat(fd) via AT_EMPTY_PATH, "." or a jump): the object is in use,
 * so only fail when its branch entry is gone. Stale generations are fine:
 * open files keep the branch table they were opened with.
 */
static int unionfs_d_weak_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct dentry *ld;
	int b, ret = 1;

	if (d_really_is_negative(dentry) || IS_ROOT(dentry))
		return 1;
	/* "." or a dirfd: a directory in use onto the current table */
	if (d_is_dir(dentry) && unionfs_refresh_stale(dentry) == -ENOENT)
		return 0;
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return 0;
	if (ld->d_flags & DCACHE_OP_WEAK_REVALIDATE)
		ret = ld->d_op->d_weak_revalidate(ld, flags);
	if (ret > 0 && d_really_is_negative(ld))
		ret = 0;
	dput(ld);
	return ret;
}

static void unionfs_d_release(struct dentry *dentry)
{
	unionfs_free_dinfo(dentry->d_fsdata);
	dentry->d_fsdata = NULL;
}

const struct dentry_operations unionfs_dops = {
	.d_revalidate		= unionfs_d_revalidate,
	.d_weak_revalidate	= unionfs_d_weak_revalidate,
	.d_release		= unionfs_d_release,
};
