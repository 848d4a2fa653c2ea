// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: dentry operations and revalidation by generation number.
 *
 * Every union dentry records the superblock generation it was built at.
 * A dentry whose generation is older than the superblock's is invalid: the
 * VFS drops it and looks the name up again, which rebuilds its branch
 * vector (the 2007 design re-interposed in place; the 6.1 VFS wants
 * d_invalidate + a fresh lookup instead).
 */
#include "union.h"

#include "unionfs_trace.h"

struct dentry *unionfs_lower_dentry_get(struct dentry *dentry, int bindex)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
	struct dentry *ld = NULL;

	if (!ud || bindex < 0 || bindex >= ud->nbr)
		return NULL;
	spin_lock(&ud->lock);
	if (bindex >= ud->bstart && bindex <= ud->bend)
		ld = dget(ud->lower[bindex]);
	spin_unlock(&ud->lock);
	return ld;
}

struct dentry *unionfs_lower_top_get(struct dentry *dentry, int *bindex)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);
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

void unionfs_get_range(struct dentry *dentry, int *bstart, int *bend)
{
	struct unionfs_dentry_info *ud = UNIONFS_D(dentry);

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

static const char *const unionfs_hazard_names[UNIONFS_HZ_MAX] = {
	[UNIONFS_HZ_VANISHED]		= "vanished",
	[UNIONFS_HZ_REPLACED]		= "replaced",
	[UNIONFS_HZ_DIR_CHANGED]	= "dir_changed",
	[UNIONFS_HZ_CREATED]		= "created",
	[UNIONFS_HZ_REMOVED]		= "removed",
	[UNIONFS_HZ_RENAMED]		= "renamed",
	[UNIONFS_HZ_ATTRIB]		= "attrib",
	[UNIONFS_HZ_COPYUP_RACE]	= "copyup_raced",
};

const char *unionfs_hazard_name(int kind)
{
	return unionfs_hazard_names[kind];
}

/*
 * Count a direct branch modification and report the first one of a mount.
 * @by_current: we run in the modifying process (fsnotify), so name it.
 */
void unionfs_hazard_note(struct super_block *sb, int kind, int bindex,
			 const char *name, int len, const char *what,
			 bool by_current)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);

	atomic_long_inc(&sbi->hazards[kind]);
	if (test_and_set_bit(UNIONFS_SB_NOTICED, &sbi->flags))
		return;
	if (by_current)
		pr_notice("%u:%u: a branch was modified directly (%s: '%.*s' in branch %d, %s by %s[%d]); the union follows the branch. Counts: /sys/kernel/debug/unionfs/mounts/%u:%u/hazards\n",
			  MAJOR(sb->s_dev), MINOR(sb->s_dev),
			  unionfs_hazard_names[kind], len, name, bindex, what,
			  current->comm, task_pid_nr(current),
			  MAJOR(sb->s_dev), MINOR(sb->s_dev));
	else
		pr_notice("%u:%u: a branch was modified directly (%s: '%.*s' in branch %d, %s); the union follows the branch. Counts: /sys/kernel/debug/unionfs/mounts/%u:%u/hazards\n",
			  MAJOR(sb->s_dev), MINOR(sb->s_dev),
			  unionfs_hazard_names[kind], len, name, bindex, what,
			  MAJOR(sb->s_dev), MINOR(sb->s_dev));
}

/* Count, trace and (once per mount) report a direct branch modification. */
void unionfs_hazard(struct super_block *sb, int kind, int bindex,
		    const char *name, const char *what)
{
	trace_unionfs_hazard(sb, unionfs_hazard_names[kind], bindex, name,
			     what);
	unionfs_hazard_note(sb, kind, bindex, name, (int)strlen(name), what,
			    false);
}

/* Trace a revalidation result (out of line: the name copy's stack). */
static noinline void unionfs_trace_reval_slow(struct dentry *dentry,
					      struct unionfs_dentry_info *ud,
					      int sbgen, const char *result,
					      const char *why)
{
	unionfs_trace_dname(unionfs_revalidate, dentry->d_sb, dentry,
			    ud->generation, sbgen, result, why);
}

static inline void unionfs_trace_reval(struct dentry *dentry,
				       struct unionfs_dentry_info *ud,
				       int sbgen, const char *result,
				       const char *why)
{
	if (trace_unionfs_revalidate_enabled())
		unionfs_trace_reval_slow(dentry, ud, sbgen, result, why);
}

static int unionfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct unionfs_dentry_info *ud = READ_ONCE(dentry->d_fsdata);
	struct super_block *sb = dentry->d_sb;
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	int sbgen = unionfs_sb_gen(sb);
	int coh = READ_ONCE(sbi->coherency);
	struct dentry *ld, *parent;
	struct inode *pinode, *inode;
	long nseq = 0;
	int b, ret;
	u64 snap;

	if (!ud)
		return 0;
	if (IS_ROOT(dentry))
		return 1;
	if (READ_ONCE(ud->bt->gen) != sbgen) {
		if (flags & LOOKUP_RCU)
			return -ECHILD;
		unionfs_trace_reval(dentry, ud, sbgen, "dropped", "generation");
		return 0;
	}
	/* A union dentry that went negative must be looked up afresh. */
	if (d_really_is_negative(dentry) && READ_ONCE(ud->bstart) >= 0) {
		if (flags & LOOKUP_RCU)
			return -ECHILD;
		unionfs_trace_reval(dentry, ud, sbgen,
				    "dropped", "negative-with-branches");
		return 0;
	}
	if (coh == UNIONFS_COH_NONE) {
		unionfs_trace_reval(dentry, ud, sbgen,
				    "valid", "coherency-none");
		return 1;
	}
	if (coh == UNIONFS_COH_NOTIFY) {
		/* no direct change anywhere in the union since the last check */
		nseq = atomic_long_read(&sbi->nseq);
		if (READ_ONCE(ud->nseq) == nseq) {
			unionfs_trace_reval(dentry, ud, sbgen,
					    "valid", "notify-quiet");
			return 1;
		}
	}
	/*
	 * Did an entry appear, vanish or get whited out in one of the
	 * parent's lower directories since this name was looked up?
	 */
	parent = READ_ONCE(dentry->d_parent);
	pinode = d_inode_rcu(parent);
	if (!pinode)
		return (flags & LOOKUP_RCU) ? -ECHILD : 0;
	snap = unionfs_dir_snap(pinode);
	if (snap != READ_ONCE(ud->psnap) && !d_mountpoint(dentry)) {
		bool own = snap == READ_ONCE(UNIONFS_I(pinode)->snap);

		if (flags & LOOKUP_RCU)
			return -ECHILD;
		if (!own)
			unionfs_hazard(sb, UNIONFS_HZ_DIR_CHANGED, -1,
				       dentry->d_name.name,
				       "parent directory changed in a branch");
		unionfs_trace_reval(dentry, ud, sbgen, "dropped",
				    own ? "own-change" : "dir-changed");
		return 0;
	}
	if (d_really_is_negative(dentry)) {
		if (coh == UNIONFS_COH_NOTIFY)
			WRITE_ONCE(ud->nseq, nseq);
		unionfs_trace_reval(dentry, ud, sbgen,
				    "valid", "negative-unchanged");
		return 1;
	}

	if (flags & LOOKUP_RCU) {
		/* cheap checks only: the winning lower dentry is still there */
		b = READ_ONCE(ud->bstart);
		if (b < 0 || b >= ud->nbr)
			return -ECHILD;
		ld = READ_ONCE(ud->lower[b]);
		inode = d_inode_rcu(dentry);
		if (!ld || d_unhashed(ld) || d_is_negative(ld) || !inode ||
		    d_inode_rcu(ld) != READ_ONCE(UNIONFS_I(inode)->key))
			return -ECHILD;
		if (ld->d_flags & DCACHE_OP_REVALIDATE)
			return -ECHILD;
		if (coh == UNIONFS_COH_NOTIFY)
			WRITE_ONCE(ud->nseq, nseq);
		unionfs_trace_reval(dentry, ud, sbgen, "valid", "unchanged");
		return 1;
	}

	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld)
		return 0;
	ret = 1;
	if (ld->d_flags & DCACHE_OP_REVALIDATE) {
		ret = ld->d_op->d_revalidate(ld, flags);
		if (ret == 0)
			d_invalidate(ld);
	}
	if (ret > 0 && (d_unhashed(ld) || d_really_is_negative(ld))) {
		unionfs_hazard(sb, UNIONFS_HZ_VANISHED, b, dentry->d_name.name,
			       "removed or renamed in the branch");
		unionfs_trace_reval(dentry, ud, sbgen, "stale", "lower-gone");
		ret = 0;
	} else if (ret > 0 && d_inode(ld) != UNIONFS_I(d_inode(dentry))->key) {
		unionfs_hazard(sb, UNIONFS_HZ_REPLACED, b, dentry->d_name.name,
			       "the branch entry is another object now");
		unionfs_trace_reval(dentry, ud, sbgen,
				    "stale", "lower-replaced");
		ret = 0;
	} else if (ret > 0) {
		if (coh == UNIONFS_COH_NOTIFY)
			WRITE_ONCE(ud->nseq, nseq);
		unionfs_trace_reval(dentry, ud, sbgen, "valid", "unchanged");
	}
	dput(ld);
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
