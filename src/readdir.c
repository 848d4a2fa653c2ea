// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: directory files and merged readdir.
 *
 * A directory that lives in one branch is listed straight from that
 * branch (hiding ".wh.*" names). A directory merged from several branches
 * is read branch by branch in priority order into a cache attached to the
 * open file: each name once (duplicate elimination), names whited out by a
 * higher branch hidden, whiteouts and opaque markers never shown. The file
 * position is the index in that cache, so telldir/seekdir and small
 * getdents buffers never skip or repeat an entry within one open.
 *
 * The merged listing is also kept on the union inode and shared by later
 * opens (and rewinds) while it is current: no change through the union
 * (dir_version), the same branch table, and (coherency=reval|notify) the
 * same lower directory ctimes. Tracepoint unionfs_readdir says which
 * listings were served from that cache.
 */
#include "union.h"
#include "lower.h"

#include <linux/file.h>
#include <linux/rbtree.h>
#include <linux/mm.h>

#include "unionfs_trace.h"

struct unionfs_rdent {
	struct rb_node node;
	u64 ino;
	unsigned int type;
	int wh_branch;		/* >= 0: only a whiteout seen, in this branch */
	int len;
	char name[];
};

struct unionfs_rdcache {
	struct rb_root root;
	struct unionfs_rdent **ents;	/* visible entries, in order */
	unsigned long n;
	unsigned long cap;
	unsigned long dups;
	unsigned long whiteouts;
	u64 version;		/* ui->dir_version it was built at */
	u64 snap;		/* lower dirs' ctimes it was built at */
	int gen;		/* branch table generation */
	u64 ixseq;		/* sbi->ixseq it was built at */
	bool ixdep;		/* has names a group's index may renumber */
	refcount_t ref;		/* open files + the inode's cache slot */
};

struct unionfs_rdctx {
	struct dir_context ctx;
	struct unionfs_rdcache *rdc;
	int bindex;
	struct unionfs_branch *br;	/* of @bindex: for d_ino */
	int err;
	bool whseen;		/* a ".wh." entry in this branch */
	bool leftover;		/* a temporary of no live mount (copyup.c) */
};

void unionfs_rdcache_put(struct unionfs_rdcache *rdc)
{
	struct unionfs_rdent *e, *tmp;

	if (!rdc || !refcount_dec_and_test(&rdc->ref))
		return;
	rbtree_postorder_for_each_entry_safe(e, tmp, &rdc->root, node)
		kfree(e);
	kvfree(rdc->ents);
	kfree(rdc);
}

static int unionfs_rd_cmp(const char *name, int len,
			  const struct unionfs_rdent *e)
{
	if (len != e->len)
		return len < e->len ? -1 : 1;
	return memcmp(name, e->name, len);
}

static struct unionfs_rdent *unionfs_rd_find(struct unionfs_rdcache *rdc,
					     const char *name, int len,
					     struct rb_node ***linkp,
					     struct rb_node **parentp)
{
	struct rb_node **link = &rdc->root.rb_node, *parent = NULL;

	while (*link) {
		struct unionfs_rdent *e = rb_entry(*link, struct unionfs_rdent,
						   node);
		int c = unionfs_rd_cmp(name, len, e);

		parent = *link;
		if (c < 0)
			link = &(*link)->rb_left;
		else if (c > 0)
			link = &(*link)->rb_right;
		else
			return e;
	}
	*linkp = link;
	*parentp = parent;
	return NULL;
}

static int unionfs_rd_append(struct unionfs_rdcache *rdc,
			     struct unionfs_rdent *e)
{
	if (rdc->n == rdc->cap) {
		unsigned long cap = rdc->cap ? rdc->cap * 2 : 64;
		struct unionfs_rdent **ents;

		ents = kvmalloc_array(cap, sizeof(*ents), GFP_KERNEL);
		if (!ents)
			return -ENOMEM;
		if (rdc->n)
			memcpy(ents, rdc->ents, rdc->n * sizeof(*ents));
		kvfree(rdc->ents);
		rdc->ents = ents;
		rdc->cap = cap;
	}
	rdc->ents[rdc->n++] = e;
	return 0;
}

static bool unionfs_rd_actor(struct dir_context *ctx, const char *name,
			     int len, loff_t pos, u64 ino, unsigned int type)
{
	struct unionfs_rdctx *rd = container_of(ctx, struct unionfs_rdctx,
						ctx);
	struct unionfs_rdcache *rdc = rd->rdc;
	struct rb_node **link, *parent;
	struct unionfs_rdent *e;
	bool wh = false;

	if (is_dot_dotdot(name, len))
		return true;
	if (unionfs_is_whname(name, len)) {
		rd->whseen = true;
		if (!rd->leftover && unionfs_tmp_leftover(name, len))
			rd->leftover = true;
		name += UNIONFS_WHLEN;
		len -= UNIONFS_WHLEN;
		/* the opaque marker and our temporaries hide nothing */
		if (!len || unionfs_is_whname(name, len) ||
		    (len == UNIONFS_DIR_OPAQUE_LEN - UNIONFS_WHLEN &&
		     !memcmp(name, UNIONFS_DIR_OPAQUE + UNIONFS_WHLEN, len)))
			return true;
		wh = true;
	}

	e = unionfs_rd_find(rdc, name, len, &link, &parent);
	if (e) {
		if (wh)
			return true;
		if (e->wh_branch < 0) {
			rdc->dups++;
			return true;
		}
		if (e->wh_branch < rd->bindex) {
			rdc->whiteouts++;	/* hidden by a higher branch */
			return true;
		}
		/* same-branch whiteout and name: the name is visible */
		e->wh_branch = -1;
		e->ino = ino;
		e->type = type;
		goto append;
	}
	e = kmalloc(struct_size(e, name, len), GFP_KERNEL);
	if (!e) {
		rd->err = -ENOMEM;
		return false;
	}
	e->len = len;
	memcpy(e->name, name, len);
	e->wh_branch = wh ? rd->bindex : -1;
	e->ino = ino;
	e->type = type;
	rb_link_node(&e->node, parent, link);
	rb_insert_color(&e->node, &rdc->root);
	if (wh)
		return true;
append:
	/* the entry's st_ino (unionfs_getattr), or the branch's own number */
	e->ino = unionfs_ino(rd->br, ino) ?: ino;
	rd->err = unionfs_rd_append(rdc, e);
	return !rd->err;
}

/*
 * Can a group copy-up renumber one of the entries [@n0, n) that branch @b
 * gave (d_ino of a link group is its index entry's, index.c)? Regular files
 * of a read-only branch with a writable one above: such a listing is not
 * reused once an index entry was made or removed (sbi->ixseq), wherever
 * the group's other names are (their directory does not change).
 */
static bool unionfs_rd_ixdep(struct unionfs_btable *bt, int b,
			     struct unionfs_rdcache *rdc, unsigned long n0)
{
	unsigned long i;

	if (unionfs_index_rw_over(bt, b) < 0)
		return false;
	for (i = n0; i < rdc->n; i++)
		if (rdc->ents[i]->type == DT_REG ||
		    rdc->ents[i]->type == DT_UNKNOWN)
			return true;
	return false;
}

/*
 * Build the merged listing of the union directory @dentry. With @clean,
 * the leftover temporaries seen in writable branches are removed.
 */
static struct unionfs_rdcache *unionfs_rd_build(struct dentry *dentry,
						bool clean)
{
	struct super_block *sb = dentry->d_sb;
	struct unionfs_rdctx rd = { .ctx.actor = unionfs_rd_actor };
	struct unionfs_dentry_info *ud;
	struct unionfs_rdcache *rdc;
	struct unionfs_btable *bt;
	const struct cred *old;
	int bstart, bend, b, nread = 0, err = 0;
	unsigned long i, n0;
	int ixt;

	rdc = kzalloc(sizeof(*rdc), GFP_KERNEL);
	if (!rdc)
		return ERR_PTR(-ENOMEM);
	/* one info throughout: the root's may be replaced meanwhile */
	ud = unionfs_dinfo_get(dentry);
	if (!ud) {
		kfree(rdc);
		return ERR_PTR(-ESTALE);
	}
	bt = ud->bt;
	rdc->root = RB_ROOT;
	refcount_set(&rdc->ref, 1);
	rdc->version = UNIONFS_I(d_inode(dentry))->dir_version;
	rdc->snap = unionfs_dir_snap_trusted(d_inode(dentry));
	rdc->gen = bt->gen;
	rdc->ixseq = atomic64_read_acquire(&UNIONFS_SB(sb)->ixseq);
	rd.rdc = rdc;

	unionfs_ud_range(ud, &bstart, &bend);
	old = unionfs_override_creds(sb);
	for (b = bstart; b >= 0 && b <= bend; b++) {
		struct dentry *ld = unionfs_ud_lower_get(ud, b);
		struct inode *ldir;
		struct file *f;
		u64 stamp;

		if (!ld)
			continue;
		if (!d_is_dir(ld)) {
			dput(ld);
			continue;
		}
		ldir = d_inode(ld);
		/* whiteout knowledge (lookup.c): only from an old enough ctime */
		stamp = unionfs_ctime_recent(ldir) ? 0 :
			unionfs_nowh_stamp(ldir, true);
		f = unionfs_do_open(bt, b, ld, O_RDONLY | O_DIRECTORY,
				    current_cred());
		if (IS_ERR(f)) {
			dput(ld);
			err = PTR_ERR(f);
			break;
		}
		rd.bindex = b;
		rd.br = unionfs_br(bt, b);
		rd.ctx.pos = 0;
		rd.whseen = false;
		rd.leftover = false;
		n0 = rdc->n;
		err = unionfs_do_iterate(sb, b, f, &rd.ctx);
		nread++;
		if (!err)
			err = rd.err;
		if (!err && stamp)
			unionfs_nowh_record(d_inode(dentry), bt, b, ldir,
					    stamp & ~(u64)rd.whseen);
		fput(f);
		if (!err && !rdc->ixdep)
			rdc->ixdep = unionfs_rd_ixdep(bt, b, rdc, n0);
		/* names of link groups: their index entry's number (index.c) */
		ixt = err ? -1 : unionfs_index_over(bt, b);
		for (i = n0; ixt >= 0 && i < rdc->n; i++) {
			struct unionfs_rdent *e = rdc->ents[i];
			u64 ino;

			if (fatal_signal_pending(current)) {
				err = -EINTR;
				break;
			}
			if (e->type != DT_REG && e->type != DT_UNKNOWN)
				continue;
			ino = unionfs_index_dino(bt, b, ixt, ld, e->name,
						 e->len);
			if (ino)
				e->ino = ino;
			cond_resched();
		}
		if (!err && clean && rd.leftover)
			unionfs_clean_leftovers(bt, b, ld);
		dput(ld);
		if (err)
			break;
	}
	revert_creds(old);
	unionfs_dinfo_put(ud);
	unionfs_trace_dname(unionfs_readdir, sb, dentry, bstart, bend, nread,
			    rdc->n, rdc->dups, rdc->whiteouts, false, err);
	if (err) {
		unionfs_rdcache_put(rdc);
		return ERR_PTR(err);
	}
	return rdc;
}

/* -ENOTEMPTY unless the union directory shows no entry at all. */
int unionfs_check_empty(struct dentry *dentry, int *has_whiteouts)
{
	struct unionfs_rdcache *rdc = unionfs_rd_build(dentry, false);
	int err = 0;

	if (IS_ERR(rdc))
		return PTR_ERR(rdc);
	if (rdc->n)
		err = -ENOTEMPTY;
	*has_whiteouts = !RB_EMPTY_ROOT(&rdc->root) && !rdc->n;
	unionfs_rdcache_put(rdc);
	return err;
}

/*
 * The inode's merged listing if it is still current, referenced. A listing
 * read against another branch table is not: a different question from
 * what a generation change means for the dentry (unionfs_reval_decide()),
 * which keeps a directory in use and refreshes it in place.
 */
static struct unionfs_rdcache *unionfs_rd_cached(struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct unionfs_inode_info *ui = UNIONFS_I(inode);
	struct unionfs_rdcache *rdc;
	int bstart, bend;

	spin_lock(&inode->i_lock);
	rdc = ui->rdcache;
	if (rdc)
		refcount_inc(&rdc->ref);
	spin_unlock(&inode->i_lock);
	if (!rdc)
		return NULL;
	if (rdc->version != ui->dir_version ||
	    rdc->gen != unionfs_dentry_gen(dentry) ||
	    (rdc->ixdep &&
	     rdc->ixseq != atomic64_read(&UNIONFS_SB(inode->i_sb)->ixseq)) ||
	    (UNIONFS_SB(inode->i_sb)->coherency != UNIONFS_COH_NONE &&
	     rdc->snap != unionfs_dir_snap(inode))) {
		unionfs_rdcache_put(rdc);
		return NULL;
	}
	unionfs_get_range(dentry, &bstart, &bend);
	unionfs_trace_dname(unionfs_readdir, inode->i_sb, dentry, bstart, bend,
			    0, rdc->n, rdc->dups, rdc->whiteouts, true, 0);
	return rdc;
}

/* Keep @rdc on the inode for the next open (replacing an older one). */
static void unionfs_rd_publish(struct dentry *dentry,
			       struct unionfs_rdcache *rdc)
{
	struct inode *inode = d_inode(dentry);
	struct unionfs_rdcache *old;

	refcount_inc(&rdc->ref);
	spin_lock(&inode->i_lock);
	old = UNIONFS_I(inode)->rdcache;
	UNIONFS_I(inode)->rdcache = rdc;
	spin_unlock(&inode->i_lock);
	unionfs_rdcache_put(old);
}

struct unionfs_passthru {
	struct dir_context ctx;
	struct dir_context *caller;
	struct unionfs_branch *br;
	u64 dot, dotdot;	/* the union's numbers for "." and ".." */
	unsigned long emitted;
	unsigned long whiteouts;
	bool leftover;		/* a temporary of no live mount (copyup.c) */
};

static bool unionfs_passthru_actor(struct dir_context *ctx, const char *name,
				   int len, loff_t pos, u64 ino,
				   unsigned int type)
{
	struct unionfs_passthru *pt = container_of(ctx, struct unionfs_passthru,
						   ctx);

	if (unionfs_is_whname(name, len)) {
		pt->whiteouts++;
		if (!pt->leftover && unionfs_tmp_leftover(name, len))
			pt->leftover = true;
		return true;
	}
	if (is_dot_dotdot(name, len))	/* ".." may win in another branch */
		ino = len == 1 ? pt->dot : pt->dotdot;
	else
		ino = unionfs_ino(pt->br, ino) ?: ino;	/* as unionfs_getattr */
	/* d_off of the previous entry: where to resume, i.e. this entry */
	pt->caller->pos = pos;
	if (!dir_emit(pt->caller, name, len, ino, type))
		return false;
	if (!is_dot_dotdot(name, len))
		pt->emitted++;
	return true;
}

/* Leftover temporaries seen in a directory listed straight from a branch. */
static void unionfs_rd_clean(struct dentry *dentry,
			     struct unionfs_file_info *fi)
{
	struct unionfs_btable *bt = unionfs_dbt_get(dentry);
	int b = unionfs_bt_index(bt, fi->br);
	const struct cred *old;

	if (b >= 0) {	/* else the branch left the union meanwhile */
		old = unionfs_override_creds(dentry->d_sb);
		unionfs_clean_leftovers(bt, b, fi->lower->f_path.dentry);
		revert_creds(old);
	}
	unionfs_bt_put(bt);
}

static int unionfs_iterate(struct file *file, struct dir_context *ctx)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_rdcache *rdc;
	loff_t i;

	if (fi->lower) {
		struct unionfs_passthru pt = {
			.ctx.actor = unionfs_passthru_actor,
			.caller = ctx,
			.br = fi->br,
			.dot = file_inode(file)->i_ino,
			.dotdot = parent_ino(dentry),
		};
		int err;

		fi->lower->f_pos = ctx->pos;
		err = unionfs_do_iterate(dentry->d_sb, -1, fi->lower, &pt.ctx);
		ctx->pos = fi->lower->f_pos;
		if (!err && pt.leftover)
			unionfs_rd_clean(dentry, fi);
		/* one branch, read straight through: one event per getdents */
		if (trace_unionfs_readdir_enabled()) {
			struct unionfs_btable *bt = unionfs_dbt_get(dentry);
			int b = unionfs_bt_index(bt, fi->br);

			unionfs_bt_put(bt);

			unionfs_trace_dname(unionfs_readdir,
					    file_inode(file)->i_sb, dentry,
					    b, b, 1, pt.emitted, 0,
					    pt.whiteouts, false, err);
		}
		return err;
	}

	rdc = fi->rdcache;
	if (!rdc || ctx->pos == 0) {
		rdc = unionfs_rd_cached(dentry);
		if (!rdc) {
			rdc = unionfs_rd_build(dentry, true);
			if (IS_ERR(rdc))
				return PTR_ERR(rdc);
			unionfs_rd_publish(dentry, rdc);
		}
		unionfs_rdcache_put(fi->rdcache);
		fi->rdcache = rdc;
	}
	if (!dir_emit_dots(file, ctx))
		return 0;
	for (i = ctx->pos - 2; i < rdc->n; i++) {
		struct unionfs_rdent *e = rdc->ents[i];

		if (!dir_emit(ctx, e->name, e->len, e->ino, e->type))
			break;
		ctx->pos++;
	}
	return 0;
}

static loff_t unionfs_dir_llseek(struct file *file, loff_t offset,
				 int whence)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	loff_t ret;

	if (fi->lower) {
		ret = unionfs_do_llseek(file_inode(file)->i_sb, fi->lower,
					offset, whence);
		if (ret >= 0)
			file->f_pos = ret;
		return ret;
	}
	switch (whence) {
	case SEEK_CUR:
		offset += file->f_pos;
		fallthrough;
	case SEEK_SET:
		if (offset < 0)
			return -EINVAL;
		file->f_pos = offset;
		return offset;
	default:
		return -EINVAL;
	}
}

static int unionfs_dir_open(struct inode *inode, struct file *file)
{
	struct dentry *dentry = file->f_path.dentry;
	struct super_block *sb = inode->i_sb;
	struct unionfs_dentry_info *ud;
	struct unionfs_file_info *fi;
	int bstart, bend, err = 0;

	/* a cwd or dirfd built on an older table: listed on the current one */
	if (!IS_ROOT(dentry)) {
		err = unionfs_refresh_stale(dentry);
		if (err < 0)
			return err;
		err = 0;
	}
	fi = kzalloc(sizeof(*fi), GFP_KERNEL);
	if (!fi)
		return -ENOMEM;
	fi->generation = unionfs_sb_gen(sb);
	/* one info throughout: the root's may be replaced meanwhile */
	ud = unionfs_dinfo_get(dentry);
	unionfs_ud_range(ud, &bstart, &bend);
	if (bstart < 0) {
		err = -ESTALE;
		goto out;
	}
	/* a read-only branch under an index: merged (d_ino, index.c) */
	if (bstart == bend && unionfs_index_over(ud->bt, bstart) < 0) {
		struct dentry *ld = unionfs_ud_lower_get(ud, bstart);
		struct file *f;

		if (!ld) {
			err = -ESTALE;
			goto out;
		}
		f = unionfs_do_open(ud->bt, bstart, ld, file->f_flags,
				    current_cred());
		dput(ld);
		if (IS_ERR(f)) {
			err = PTR_ERR(f);
			goto out;
		}
		fi->br = unionfs_br_open(ud->bt, bstart);
		if (IS_ERR(fi->br)) {
			err = PTR_ERR(fi->br);
			fput(f);
			goto out;
		}
		fi->lower = f;
	}
	file->private_data = fi;
	fi = NULL;
out:
	unionfs_dinfo_put(ud);
	kfree(fi);
	return err;
}

static int unionfs_dir_release(struct inode *inode, struct file *file)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);

	if (fi->lower) {
		atomic_dec(&fi->br->open_files);
		unionfs_branch_put(fi->br);
		fput(fi->lower);
	}
	unionfs_rdcache_put(fi->rdcache);
	kfree(fi);
	return 0;
}

static int unionfs_dir_fsync(struct file *file, loff_t start, loff_t end,
			     int datasync)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_dentry_info *ud;
	struct unionfs_btable *bt;
	int b, bstart, bend, err, ret = 0;

	if (fi->lower) {
		if (unionfs_br_syncable(fi->br))
			return unionfs_do_fsync(dentry->d_sb, -1, fi->lower,
						start, end, datasync);
		return 0;
	}
	/*
	 * A merged directory has no branch file open: sync the directory in
	 * every branch that holds it where the union may have written
	 * (names created, renamed or whited out through it live there).
	 */
	ud = unionfs_dinfo_get(dentry);	/* the root's may be replaced */
	if (!ud)
		return -ESTALE;
	bt = ud->bt;
	unionfs_ud_range(ud, &bstart, &bend);
	for (b = max(bstart, 0); bstart >= 0 && b <= bend; b++) {
		struct dentry *ld;
		struct file *lf;

		if (!unionfs_br_syncable(bt->br[b]))
			continue;
		ld = unionfs_ud_lower_get(ud, b);
		if (!ld)
			continue;
		lf = unionfs_do_open(bt, b, ld, O_RDONLY | O_DIRECTORY,
				     current_cred());
		dput(ld);
		err = PTR_ERR_OR_ZERO(lf);
		if (!err) {
			err = unionfs_do_fsync(dentry->d_sb, b, lf, start, end,
					       datasync);
			fput(lf);
		}
		if (err && !ret)
			ret = err;
	}
	unionfs_dinfo_put(ud);
	return ret;
}

const struct file_operations unionfs_dir_fops = {
	.open		= unionfs_dir_open,
	.release	= unionfs_dir_release,
	.read		= generic_read_dir,
	.iterate_shared	= unionfs_iterate,
	.llseek		= unionfs_dir_llseek,
	.fsync		= unionfs_dir_fsync,
	.unlocked_ioctl	= unionfs_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= unionfs_compat_ioctl,
#endif
};
