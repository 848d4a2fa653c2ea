// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: whiteouts ".wh.NAME", opaque directories ".wh.__dir_opaque"
 * (with markers=oci ".wh..wh..opq"), and the union's temporary names.
 *
 * Whiteouts and markers are empty regular files, created with the
 * mounter's credentials (callers override creds) in a writable branch.
 */
#include "union.h"
#include "lower.h"

#include <linux/file.h>
#include <linux/sched/signal.h>

#include "unionfs_trace.h"

char *unionfs_whname(const struct qstr *name)
{
	char *buf = kmalloc(name->len + UNIONFS_WHLEN + 1, GFP_KERNEL);

	if (!buf)
		return NULL;
	memcpy(buf, UNIONFS_WHPFX, UNIONFS_WHLEN);
	memcpy(buf + UNIONFS_WHLEN, name->name, name->len);
	buf[name->len + UNIONFS_WHLEN] = '\0';
	return buf;
}

/* The opaque marker @sb writes (markers=): its name and length. */
const char *unionfs_opaque_name(struct super_block *sb, int *len)
{
	if (UNIONFS_SB(sb)->markers == UNIONFS_MARKERS_OCI) {
		*len = UNIONFS_OCI_OPAQUE_LEN;
		return UNIONFS_OCI_OPAQUE;
	}
	*len = UNIONFS_DIR_OPAQUE_LEN;
	return UNIONFS_DIR_OPAQUE;
}

/*
 * 1 if @lower_dir holds an opaque marker @sb honours (".wh.__dir_opaque";
 * with markers=oci also ".wh..wh..opq"), 0 if not, or -errno.
 */
int unionfs_is_opaque_dir(struct super_block *sb, struct dentry *lower_dir)
{
	int ret = unionfs_do_lookup_marker(sb, lower_dir, UNIONFS_DIR_OPAQUE,
					   UNIONFS_DIR_OPAQUE_LEN);

	if (ret || UNIONFS_SB(sb)->markers != UNIONFS_MARKERS_OCI)
		return ret;
	return unionfs_do_lookup_marker(sb, lower_dir, UNIONFS_OCI_OPAQUE,
					UNIONFS_OCI_OPAQUE_LEN);
}

/* Trace a marker event with the lower directory's name. */
#define unionfs_trace_marker(event, bt, dir, marker, bindex, reason, err) \
	unionfs_trace_dname(event, (bt)->sb, dir, marker, bindex, reason, err)

int unionfs_whiteout_locked(struct unionfs_btable *bt, int bindex,
			    struct dentry *lparent, const struct qstr *name,
			    enum unionfs_mk_reason reason)
{
	struct dentry *wh;
	char *whname;
	int err;

	whname = unionfs_whname(name);
	if (!whname)
		return -ENOMEM;
	wh = unionfs_do_lookup_locked(bt, bindex, lparent, whname,
				      name->len + UNIONFS_WHLEN);
	err = PTR_ERR_OR_ZERO(wh);
	if (!err) {
		if (d_really_is_negative(wh)) {
			err = UNIONFS_FAULT(UNIONFS_FSITE_WHITEOUT);
			if (!err)
				err = unionfs_do_create(bt, bindex,
							d_inode(lparent), wh,
							S_IFREG | 0);
		} else if (!d_is_reg(wh)) {
			err = -EIO;
		}
		dput(wh);
	}
	unionfs_trace_marker(unionfs_whiteout_create, bt, lparent, whname,
			     bindex, reason, err);
	kfree(whname);
	return err;
}

int unionfs_remove_whiteout_locked(struct unionfs_btable *bt, int bindex,
				   struct dentry *lparent,
				   const struct qstr *name, enum unionfs_mk_reason reason)
{
	struct dentry *wh;
	char *whname;
	int err;

	whname = unionfs_whname(name);
	if (!whname)
		return -ENOMEM;
	wh = unionfs_do_lookup_undo(bt, bindex, lparent, whname,
				    name->len + UNIONFS_WHLEN);
	err = PTR_ERR_OR_ZERO(wh);
	if (!err) {
		if (d_really_is_positive(wh) && d_is_reg(wh))
			err = unionfs_do_unlink(bt, bindex, d_inode(lparent),
						wh);
		dput(wh);
	}
	unionfs_trace_marker(unionfs_whiteout_remove, bt, lparent, whname,
			     bindex, reason, err);
	kfree(whname);
	return err;
}

/*
 * Whiteout @name below the union directory @parent in branch @bindex of
 * @bt (the caller's table, which it holds): -ESTALE if @parent is on
 * another one by now.
 */
int unionfs_create_whiteout(struct dentry *parent, struct unionfs_btable *bt,
			    const struct qstr *name, int bindex,
			    enum unionfs_mk_reason reason)
{
	struct super_block *sb = parent->d_sb;
	struct dentry *lparent;
	const struct cred *old;
	int err;

	err = unionfs_copyup_dir(parent, bt, bindex);
	if (err)
		return err;
	lparent = unionfs_lower_dentry_at(parent, bt, bindex);
	if (IS_ERR_OR_NULL(lparent))
		return -ESTALE;
	err = unionfs_want_write(bt, bindex);
	if (!err) {
		old = unionfs_override_creds(sb);
		inode_lock_nested(d_inode(lparent), I_MUTEX_PARENT);
		err = unionfs_whiteout_locked(bt, bindex, lparent, name,
					      reason);
		inode_unlock(d_inode(lparent));
		revert_creds(old);
		unionfs_drop_write(bt, bindex);
	}
	dput(lparent);
	return err;
}

/*
 * Mark @ldir opaque; *@created tells whether the marker is new (so that a
 * failed operation can take it back). Caller has write access and
 * overrides creds. The event names @shown (the name the directory gets in
 * the union, when it is marked under a temporary name), or @ldir.
 */
int unionfs_make_opaque_new(struct unionfs_btable *bt, int bindex,
			    struct dentry *ldir, const struct dentry *shown,
			    enum unionfs_mk_reason reason, bool *created)
{
	int len;
	const char *name = unionfs_opaque_name(bt->sb, &len);
	struct dentry *d;
	int err;

	*created = false;
	inode_lock_nested(d_inode(ldir), I_MUTEX_CHILD);
	d = unionfs_do_lookup_locked(bt, bindex, ldir, name, len);
	err = PTR_ERR_OR_ZERO(d);
	if (!err) {
		if (d_really_is_negative(d)) {
			err = UNIONFS_FAULT(UNIONFS_FSITE_OPAQUE);
			if (!err)
				err = unionfs_do_create(bt, bindex,
							d_inode(ldir), d,
							S_IFREG | 0);
			*created = !err;
		}
		dput(d);
	}
	inode_unlock(d_inode(ldir));
	unionfs_trace_marker(unionfs_opaque_mark, bt, shown ?: ldir,
			     name, bindex, reason, err);
	return err;
}

int unionfs_make_opaque(struct unionfs_btable *bt, int bindex,
			struct dentry *ldir, const struct dentry *shown,
			enum unionfs_mk_reason reason)
{
	bool created;

	return unionfs_make_opaque_new(bt, bindex, ldir, shown, reason,
				       &created);
}

/* Take back an opaque marker made by a failed operation. */
int unionfs_remove_opaque(struct unionfs_btable *bt, int bindex,
			  struct dentry *ldir)
{
	int len;
	const char *name = unionfs_opaque_name(bt->sb, &len);
	struct dentry *d;
	int err;

	inode_lock_nested(d_inode(ldir), I_MUTEX_CHILD);
	d = unionfs_do_lookup_undo(bt, bindex, ldir, name, len);
	err = PTR_ERR_OR_ZERO(d);
	if (!err) {
		if (d_really_is_positive(d) && d_is_reg(d))
			err = unionfs_do_unlink(bt, bindex, d_inode(ldir), d);
		dput(d);
	}
	inode_unlock(d_inode(ldir));
	return err;
}

struct unionfs_whlist {
	struct dir_context ctx;
	struct list_head names;
	int err;
	bool must_be_empty;	/* any other entry: -ENOTEMPTY */
	bool nonempty;		/* ... and one was seen */
};

struct unionfs_whname_ent {
	struct list_head list;
	int len;
	char name[];
};

static bool unionfs_collect_wh(struct dir_context *ctx, const char *name,
			       int len, loff_t pos, u64 ino, unsigned int type)
{
	struct unionfs_whlist *wl = container_of(ctx, struct unionfs_whlist,
						 ctx);
	struct unionfs_whname_ent *e;

	if (!unionfs_is_whname(name, len)) {
		if (wl->must_be_empty && !is_dot_dotdot(name, len)) {
			wl->nonempty = true;
			return false;
		}
		return true;
	}
	e = kmalloc(struct_size(e, name, len + 1), GFP_KERNEL);
	if (!e) {
		wl->err = -ENOMEM;
		return false;
	}
	e->len = len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	list_add_tail(&e->list, &wl->names);
	return true;
}

/* Read @ldir, collecting its ".wh.*" names into @wl. */
static int unionfs_read_wh(struct unionfs_btable *bt, int bindex,
			   struct dentry *ldir, struct unionfs_whlist *wl)
{
	struct file *f;
	int err;

	f = unionfs_do_open(bt, bindex, ldir, O_RDONLY | O_DIRECTORY,
			    current_cred());
	if (IS_ERR(f))
		return PTR_ERR(f);
	err = unionfs_do_iterate_own(bt->sb, bindex, f, &wl->ctx);
	fput(f);
	if (!err)
		err = wl->err;
	if (!err && wl->nonempty)
		err = -ENOTEMPTY;
	return err;
}

static void unionfs_free_wh(struct unionfs_whlist *wl)
{
	struct unionfs_whname_ent *e, *tmp;

	list_for_each_entry_safe(e, tmp, &wl->names, list) {
		list_del(&e->list);
		kfree(e);
	}
}

/*
 * Does @ldir hold any ".wh.*" entry (*@has_wh)? With @must_be_empty, any
 * other entry fails it with -ENOTEMPTY (the emptiness check of a directory
 * that exists in this branch only). Changes nothing.
 */
int unionfs_scan_whiteouts(struct unionfs_btable *bt, int bindex,
			   struct dentry *ldir, bool must_be_empty,
			   bool *has_wh)
{
	struct unionfs_whlist wl = {
		.ctx.actor = unionfs_collect_wh,
		.names = LIST_HEAD_INIT(wl.names),
		.must_be_empty = must_be_empty,
	};
	int err;

	err = unionfs_read_wh(bt, bindex, ldir, &wl);
	*has_wh = !list_empty(&wl.names);
	unionfs_free_wh(&wl);
	return err;
}

/*
 * Remove every ".wh.*" entry (whiteouts, the opaque marker, stale
 * temporaries) from @ldir, which must be logically empty. With
 * @must_be_empty, any other entry fails it with -ENOTEMPTY and nothing is
 * removed (the emptiness check of a directory that exists in this branch
 * only, done in the same read). Caller has write access and overrides
 * creds.
 */
int unionfs_clean_whiteouts(struct unionfs_btable *bt, int bindex,
			    struct dentry *ldir, bool must_be_empty)
{
	struct unionfs_whlist wl = {
		.ctx.actor = unionfs_collect_wh,
		.names = LIST_HEAD_INIT(wl.names),
		.must_be_empty = must_be_empty,
	};
	struct unionfs_whname_ent *e;
	int err;

	err = unionfs_read_wh(bt, bindex, ldir, &wl);
	inode_lock_nested(d_inode(ldir), I_MUTEX_CHILD);
	list_for_each_entry(e, &wl.names, list) {
		struct dentry *d;

		if (err)
			break;
		d = unionfs_do_lookup_undo(bt, bindex, ldir, e->name, e->len);
		if (IS_ERR(d)) {
			err = PTR_ERR(d);
			break;
		}
		if (d_is_reg(d))
			err = unionfs_do_unlink(bt, bindex, d_inode(ldir), d);
		else if (d_is_dir(d))
			err = unionfs_do_rmdir(bt, bindex, d_inode(ldir), d);
		if (!err && d_is_reg(d))
			unionfs_trace_marker(unionfs_whiteout_remove, bt, ldir,
					     e->name, bindex, UNIONFS_MKR_CLEAN, 0);
		dput(d);
	}
	inode_unlock(d_inode(ldir));
	unionfs_free_wh(&wl);
	return err;
}

/*
 * A fresh temporary name in @buf (UNIONFS_TMPNAME_LEN bytes): invisible in
 * the union (a whiteout of a ".wh." name), unique within the mount, and
 * continuing from the random point the mount started at (fill_super), so
 * an earlier mount's leftover does not take it. Returns its length.
 */
int unionfs_tmp_name(struct super_block *sb, char *buf)
{
	return snprintf(buf, UNIONFS_TMPNAME_LEN, UNIONFS_TMPPFX "%llu",
			(unsigned long long)
			atomic64_inc_return(&UNIONFS_SB(sb)->tmp_seq));
}

/*
 * A negative branch dentry for a fresh temporary name in @lparent, which
 * the caller holds locked. -EEXIST if the name is taken (made in the
 * branch behind us).
 */
struct dentry *unionfs_tmp_lookup(struct unionfs_btable *bt,
				  struct dentry *lparent)
{
	char name[UNIONFS_TMPNAME_LEN];
	struct dentry *tmp;
	int len = unionfs_tmp_name(bt->sb, name);

	tmp = unionfs_do_lookup_locked(bt, -1, lparent, name, len);
	if (!IS_ERR(tmp) && d_really_is_positive(tmp)) {
		dput(tmp);
		tmp = ERR_PTR(-EEXIST);
	}
	return tmp;
}

/*
 * Move the directory @ld out of the union's way: rename it, in one atomic
 * step, to a fresh temporary name (invisible in the union) in @lparent,
 * which the caller holds locked with write access. On success @ld names
 * the temporary; unionfs_dispose() removes it. Everything a removal must
 * do that can fail is done before this step; everything after it (the
 * cleaning of the moved directory) can only leave an invisible leftover.
 */
int unionfs_stash_locked(struct unionfs_btable *bt, int bindex,
			 struct dentry *lparent, struct dentry *ld)
{
	struct dentry *tmp = unionfs_tmp_lookup(bt, lparent);
	int err;

	if (IS_ERR(tmp))
		return PTR_ERR(tmp);
	err = unionfs_do_rename(bt, bindex, d_inode(lparent), ld,
				d_inode(lparent), tmp, 0);
	dput(tmp);
	return err;
}

/* A cleanup step after the point of no return: tries on a transient error. */
#define UNIONFS_CLEANUP_TRIES	5

/*
 * Remove the stashed directory @ld (see unionfs_stash_locked) and the
 * ".wh.*" entries it holds. The union no longer shows it: a failure (after
 * a few tries) only leaves an invisible leftover (logged; removed with its
 * parent, or by hand). Caller has write access and overrides creds.
 */
void unionfs_dispose(struct unionfs_btable *bt, int bindex,
		     struct dentry *lparent, struct dentry *ld)
{
	int err = 0, tries;

	for (tries = 0; tries < UNIONFS_CLEANUP_TRIES; tries++) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		err = unionfs_clean_whiteouts(bt, bindex, ld, false);
		if (err)
			continue;
		inode_lock_nested(d_inode(lparent), I_MUTEX_PARENT);
		err = -ESTALE;
		if (ld->d_parent == lparent && !d_unhashed(ld) &&
		    d_really_is_positive(ld))
			err = unionfs_do_rmdir(bt, bindex, d_inode(lparent),
					       ld);
		inode_unlock(d_inode(lparent));
		if (!err || err == -ESTALE)
			break;
	}
	if (err)
		pr_warn_ratelimited("branch %d: could not remove the temporary %pd (error %d); it is not visible in the union\n",
				    bindex, ld, err);
}

/*
 * Remove the temporary directory @tmp (opaque marker and all) built by a
 * failed operation in the locked @lparent; a failure (after a few tries)
 * leaves an invisible leftover. Caller has write access.
 */
void unionfs_remove_tmpdir_locked(struct unionfs_btable *bt, int bindex,
				  struct dentry *lparent, struct dentry *tmp)
{
	const struct cred *old = unionfs_override_creds(bt->sb);
	int err = 0, tries;

	for (tries = 0; tries < UNIONFS_CLEANUP_TRIES; tries++) {
		if (tmp->d_parent != lparent || d_unhashed(tmp) ||
		    d_really_is_negative(tmp))
			break;
		err = unionfs_remove_opaque(bt, bindex, tmp);
		if (!err)
			err = unionfs_do_rmdir(bt, bindex, d_inode(lparent),
					       tmp);
		if (!err || fatal_signal_pending(current))
			break;
	}
	revert_creds(old);
	if (err)
		pr_warn_ratelimited("branch %d: could not remove the temporary %pd (error %d); it is not visible in the union\n",
				    bindex, tmp, err);
}
