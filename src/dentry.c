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

static int unionfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct unionfs_dentry_info *ud = READ_ONCE(dentry->d_fsdata);
	struct super_block *sb = dentry->d_sb;
	int sbgen = unionfs_sb_gen(sb);
	struct dentry *ld;
	int b, ret;

	if (!ud)
		return 0;
	if (IS_ROOT(dentry))
		return 1;
	if (READ_ONCE(ud->generation) != sbgen) {
		if (flags & LOOKUP_RCU)
			return -ECHILD;
		trace_unionfs_revalidate(sb, dentry->d_name.name,
					 ud->generation, sbgen, "dropped",
					 "generation");
		return 0;
	}
	/* A union dentry that went negative must be looked up afresh. */
	if (d_really_is_negative(dentry) && READ_ONCE(ud->bstart) >= 0) {
		if (flags & LOOKUP_RCU)
			return -ECHILD;
		trace_unionfs_revalidate(sb, dentry->d_name.name,
					 ud->generation, sbgen, "dropped",
					 "negative-with-branches");
		return 0;
	}
	if (d_really_is_negative(dentry))
		return 1;

	if (flags & LOOKUP_RCU) {
		/* cheap checks only: the winning lower dentry is still there */
		b = READ_ONCE(ud->bstart);
		if (b < 0 || b >= ud->nbr)
			return -ECHILD;
		ld = READ_ONCE(ud->lower[b]);
		if (!ld || d_unhashed(ld) || d_is_negative(ld))
			return -ECHILD;
		if (ld->d_flags & DCACHE_OP_REVALIDATE)
			return -ECHILD;
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
		trace_unionfs_revalidate(sb, dentry->d_name.name,
					 ud->generation, sbgen, "stale",
					 "lower-gone");
		ret = 0;
	}
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
	.d_weak_revalidate	= unionfs_d_revalidate,
	.d_release		= unionfs_d_release,
};
