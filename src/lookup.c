// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: lookup by branch priority, whiteouts, opaque directories and
 * duplicate elimination (the union inode: unionfs_iget() in inode.c).
 *
 * For each branch b from the parent's first to last contributing branch:
 *   - NAME positive in b: the first positive entry wins. A non-directory
 *     ends the search (it hides everything below it); a directory merges
 *     with directories found below until a branch where it is opaque
 *     (contains ".wh.__dir_opaque") or a branch holding a non-directory
 *     NAME: that non-directory stays hidden and ends the merge too.
 *   - NAME negative in b and a regular file ".wh.NAME" exists in b: the
 *     name is whited out in every branch below b; the search stops.
 */
#include "union.h"
#include "lower.h"
#include "redirect.h"

#include <linux/ktime.h>
#include <linux/xattr.h>

#include "unionfs_trace.h"

/* Is there a whiteout for @name (already ".wh."-prefixed) in @lparent? */
static int unionfs_has_whiteout(struct unionfs_btable *bt, int bindex,
				struct dentry *lparent, const char *whname,
				int len)
{
	struct dentry *wh;
	int ret = 0;

	wh = unionfs_do_lookup(bt, bindex, lparent, whname, len);
	if (IS_ERR_OR_NULL(wh))
		return PTR_ERR_OR_ZERO(wh);
	if (d_really_is_positive(wh)) {
		if (d_is_reg(wh)) {
			ret = 1;
		} else {
			pr_warn_ratelimited("branch %d: whiteout '%*pE' is not a regular file\n",
					    bindex, len, whname);
			ret = -EIO;
		}
	}
	dput(wh);
	return ret;
}

/*
 * Whiteout knowledge. A name absent from a lower directory costs a second
 * lookup there, of ".wh.NAME" (two negative lower dentries per branch where
 * overlayfs, whose whiteouts sit under the name itself, makes one). A lower
 * directory read in full and found to hold no ".wh." entry needs no such
 * probe while it is unchanged: the union directory's vector remembers, per
 * branch, the lower directory's ctime then (any entry created, removed or
 * renamed in it changes that, ours and direct ones alike; a ctime too recent
 * to tell two changes apart is not trusted) and whether it was clean. It is
 * learnt by a merged readdir (readdir.c) and, on read-only branches, by
 * reading the directory at the first miss there (at most
 * UNIONFS_NOWH_SCAN_MAX entries; a directory that holds whiteouts or more
 * entries is remembered as such and not read again while unchanged). The
 * last branch of a lookup's range is never probed: a whiteout there would
 * hide nothing.
 */
#define UNIONFS_NOWH_SCAN_MAX	4096

u64 unionfs_nowh_stamp(struct inode *ldir, bool clean)
{
	return ((u64)unionfs_ctime_ns(ldir) << 1) | clean;
}

/* @dir's vector if it is built on @bt and holds @ldir at @b (RCU held). */
static struct unionfs_ivec *unionfs_nowh_vec(struct inode *dir,
					     struct unionfs_btable *bt, int b,
					     struct inode *ldir)
{
	struct unionfs_ivec *vec = rcu_dereference(UNIONFS_I(dir)->vec);

	if (!vec || vec->bt != bt || vec->nbr != bt->nbr || b >= vec->nbr ||
	    READ_ONCE(vec->lower[b]) != ldir)
		return NULL;
	return vec;
}

/* What @dir's vector knows about @ldir (branch @b): a stamp, or 0. */
static u64 unionfs_nowh_get(struct inode *dir, struct unionfs_btable *bt,
			    int b, struct inode *ldir)
{
	struct unionfs_ivec *vec;
	u64 *nowh, v = 0;

	rcu_read_lock();
	vec = unionfs_nowh_vec(dir, bt, b, ldir);
	/* pairs with the cmpxchg() publishing the zeroed array */
	nowh = vec ? smp_load_acquire(&vec->nowh) : NULL;
	if (nowh)
		v = READ_ONCE(nowh[b]);
	rcu_read_unlock();
	return v;
}

/*
 * Remember @stamp for branch @b of the union directory @dir, if @ldir is
 * still that branch's directory: unionfs_nowh_stamp() of @ldir taken,
 * before @ldir was read in full, at a time its ctime was not recent
 * (unionfs_ctime_recent()), and still its stamp now. 0: nothing learnt.
 */
void unionfs_nowh_record(struct inode *dir, struct unionfs_btable *bt, int b,
			 struct inode *ldir, u64 stamp)
{
	struct unionfs_ivec *vec;
	u64 *nowh, *fresh = NULL;

	if (!stamp || unionfs_nowh_stamp(ldir, stamp & 1) != stamp)
		return;
again:
	rcu_read_lock();
	vec = unionfs_nowh_vec(dir, bt, b, ldir);
	if (!vec)
		goto out;
	/* pairs with the cmpxchg() below (another recorder's) */
	nowh = smp_load_acquire(&vec->nowh);
	if (!nowh) {
		if (!fresh) {
			rcu_read_unlock();
			fresh = kcalloc(bt->nbr, sizeof(*fresh), GFP_KERNEL);
			if (!fresh)
				return;
			goto again;
		}
		nowh = cmpxchg(&vec->nowh, NULL, fresh);
		if (!nowh) {
			nowh = fresh;
			fresh = NULL;
		}
	}
	WRITE_ONCE(nowh[b], stamp);
out:
	rcu_read_unlock();
	kfree(fresh);
}

struct unionfs_nowh_ctx {
	struct dir_context ctx;
	int n;
	bool wh;
};

static bool unionfs_nowh_actor(struct dir_context *ctx, const char *name,
			       int len, loff_t pos, u64 ino, unsigned int type)
{
	struct unionfs_nowh_ctx *s = container_of(ctx, struct unionfs_nowh_ctx,
						  ctx);

	if (unionfs_is_whname(name, len) || ++s->n > UNIONFS_NOWH_SCAN_MAX) {
		s->wh = true;
		return false;
	}
	return true;
}

/*
 * May the ".wh.NAME" probe in @lparent (branch @b of the union directory
 * @dir) be skipped? With @learn, an unknown directory of a read-only branch
 * is read now (->lookup only: no lower directory lock is held then).
 */
static bool unionfs_nowh_skip(struct inode *dir, struct unionfs_btable *bt,
			      int b, struct dentry *lparent, bool learn)
{
	struct unionfs_nowh_ctx s = { .ctx.actor = unionfs_nowh_actor };
	struct inode *ldir = d_inode(lparent);
	u64 stamp = unionfs_nowh_stamp(ldir, true);
	u64 v = unionfs_nowh_get(dir, bt, b, ldir);

	if (v == stamp)
		return true;
	if (!learn || v == (stamp & ~1ULL) || unionfs_branch_writable(bt, b) ||
	    unionfs_ctime_recent(ldir))
		return false;
	if (unionfs_do_scan(bt, b, lparent, &s.ctx))
		return false;
	unionfs_nowh_record(dir, bt, b, ldir, stamp & ~(u64)s.wh);
	return !s.wh && unionfs_nowh_stamp(ldir, true) == stamp;
}

/*
 * Directory redirects (docs/concepts.md, "Directory rename"). A directory
 * renamed while lower branches held its contents carries, on its copy in
 * the writable branch, the xattr trusted.unionfs.redirect: the path,
 * relative to each branch's root, where its lower contents live ("a/b",
 * no leading or trailing '/', no empty, "." or ".." component, no ".wh."
 * name). When the topmost copy of a directory has one, the branches below
 * it are looked up at that path, from their roots, instead of at the
 * parent's lower directories and the name. The value's rule:
 * unionfs_redirect_valid() in redirect.h, shared with unionctl --fsck.
 */

/*
 * The redirect of the branch directory @ld (branch @bindex): a kmalloc'ed
 * string, NULL if it has none (or the branch fs has no trusted xattrs),
 * ERR_PTR(-EBADMSG) if it is not a valid one (set by hand in the branch),
 * or another ERR_PTR. Runs with the mounter's credentials.
 */
static char *unionfs_redirect_read(struct unionfs_btable *bt, int bindex,
				   struct dentry *ld)
{
	ssize_t n, m;
	char *buf;

	n = unionfs_do_probe_xattr(bt->sb, bindex, ld, UNIONFS_XATTR_REDIRECT,
				   NULL, 0);
	/* none: ENODATA, or a branch fs without (trusted) xattrs */
	if (n == -EIO || n == -ENOMEM || n == -EINTR)
		return ERR_PTR(n);
	if (n < 0)
		return NULL;
	if (!n || n >= PATH_MAX)
		return ERR_PTR(-EBADMSG);
	buf = kmalloc(n + 1, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	m = unionfs_do_probe_xattr(bt->sb, bindex, ld, UNIONFS_XATTR_REDIRECT,
				   buf, n);
	if (m < 0) {
		kfree(buf);
		/* changed meanwhile (ERANGE): the caller looks up again */
		return ERR_PTR(m == -ERANGE ? -ESTALE : m);
	}
	buf[m] = '\0';
	if (m == n && unionfs_redirect_valid(buf, m))
		return buf;
	kfree(buf);
	return ERR_PTR(-EBADMSG);
}

/*
 * The same for a rename, which must not go on from an invalid redirect:
 * that is EIO.
 */
char *unionfs_redirect_get(struct unionfs_btable *bt, int bindex,
			   struct dentry *ld)
{
	char *rd = unionfs_redirect_read(bt, bindex, ld);

	if (rd != ERR_PTR(-EBADMSG))
		return rd;
	pr_warn_ratelimited("branch %d: invalid redirect on %pd\n", bindex, ld);
	return ERR_PTR(-EIO);
}

static noinline void unionfs_trace_redirect(struct super_block *sb,
					    const struct qstr *name,
					    int bindex, const char *path,
					    const char *what, int err)
{
	trace_unionfs_redirect(sb, name->name, bindex, path, what, err);
}

/*
 * A redirect that leads nowhere or is not valid can only come from a
 * change made in a branch directly (a target renamed away, removed or
 * replaced, an xattr set by hand): a hazard (docs/direct-modification.md),
 * counted, traced and reported; the directory shows what is left of it.
 */
static noinline void unionfs_redirect_hazard(struct super_block *sb,
					     const struct qstr *name,
					     int bindex, const char *what)
{
	trace_unionfs_hazard(sb, unionfs_hazard_name(UNIONFS_HZ_REDIRECT),
			     bindex, name->name, what);
	unionfs_hazard_note(sb, UNIONFS_HZ_REDIRECT, bindex, name->name,
			    name->len, what, false);
}

/*
 * The redirect of @name's copy @ld in branch @bindex, for a lookup: an
 * invalid one is reported and taken as "nothing below": the directory
 * shows its copies down to @ld (what was written through the union is in
 * the upper one), never whatever happens to have its name below.
 * ERR_PTR(-EBADMSG) for that.
 */
static char *unionfs_redirect_lookup(struct super_block *sb,
				     struct unionfs_btable *bt,
				     const struct qstr *name, int bindex,
				     struct dentry *ld)
{
	char *rd = unionfs_redirect_read(bt, bindex, ld);

	if (rd == ERR_PTR(-EBADMSG)) {
		pr_warn_ratelimited("branch %d: invalid redirect on %pd: ignored, no lower branch merged below it\n",
				    bindex, ld);
		unionfs_redirect_hazard(sb, name, bindex,
					"invalid redirect, nothing merged below it");
	}
	return rd;
}

/*
 * One step of a redirect's walk in branch @c: the component @comp under
 * @cur. What the merge of the branches below the redirect shows there
 * decides, as in a lookup: a directory goes on (*@hide: an opaque one
 * that is not the last component hides the branches below @c), a
 * non-directory or a whiteout hides the path in every branch below (*@hide,
 * NULL), a missing name leaves this branch out (NULL). Returns the
 * directory, NULL or an ERR_PTR.
 */
static struct dentry *unionfs_redirect_step(struct super_block *sb,
					    struct unionfs_btable *bt, int c,
					    struct dentry *cur, const char *comp,
					    int len, bool last, bool *hide)
{
	struct qstr q = QSTR_INIT(comp, len);
	struct dentry *next;
	char *whname;
	int ret;

	next = unionfs_do_lookup(bt, c, cur, comp, len);
	if (IS_ERR(next))
		return next;
	if (next && d_really_is_positive(next)) {
		if (!d_can_lookup(next)) {
			dput(next);
			*hide = true;
			return NULL;
		}
		if (!last && c < bt->nbr - 1) {
			ret = unionfs_is_opaque_dir(sb, next);
			if (ret < 0) {
				dput(next);
				return ERR_PTR(ret);
			}
			if (ret)
				*hide = true;
		}
		return next;
	}
	dput(next);
	if (c == bt->nbr - 1)
		return NULL;	/* nothing below to hide */
	whname = unionfs_whname(&q);
	if (!whname)
		return ERR_PTR(-ENOMEM);
	ret = unionfs_has_whiteout(bt, c, cur, whname, len + UNIONFS_WHLEN);
	kfree(whname);
	if (ret < 0)
		return ERR_PTR(ret);
	if (ret)
		*hide = true;
	return NULL;
}

/*
 * The directory @dir, a component of a redirect's walk in branch @c (not
 * the last; @rest: the components after it), carries a redirect of its
 * own: the branches below @c walk "REDIRECT/@rest" instead (*@next,
 * kmalloc'ed, replacing one found higher on the way). An invalid one, or
 * a path too long, merges nothing below @c (*@hide), as for the last
 * component. 0 or -errno.
 */
static int unionfs_redirect_onward(struct super_block *sb,
				   struct unionfs_btable *bt,
				   const struct qstr *name, int c,
				   struct dentry *dir, const char *rest,
				   char **next, bool *hide)
{
	char *rd = unionfs_redirect_lookup(sb, bt, name, c, dir);
	char *p;

	if (rd == ERR_PTR(-EBADMSG)) {
		*hide = true;
		return 0;
	}
	if (IS_ERR_OR_NULL(rd))
		return PTR_ERR_OR_ZERO(rd);
	p = kasprintf(GFP_KERNEL, "%s/%s", rd, rest);
	kfree(rd);
	if (!p)
		return -ENOMEM;
	if (strlen(p) >= PATH_MAX) {
		kfree(p);
		*hide = true;
		return 0;
	}
	kfree(*next);
	*next = p;
	return 0;
}

/*
 * The directory @name, whose copy in branch @b carries the redirect @path:
 * fill @ud's branches below @b with the directories at @path, from each
 * branch's root, down to the first opaque one, as a lookup of @path in
 * the branches below @b would merge them: a branch without a directory
 * there contributes nothing; a non-directory or a whiteout on the way, or
 * an opaque directory above the last component, hides the branches below
 * it (udiff seed 740821: a file in a middle branch ended the merge of the
 * directory before its rename, but not after). A copy found there with a
 * redirect of its own (a directory renamed again in a lower writable
 * branch) sends the branches below it to that path, and so does one of a
 * directory on the way (the rest of the path under its redirect).
 */
static int unionfs_redirect_follow(struct super_block *sb,
				   const struct qstr *name,
				   struct unionfs_dentry_info *ud, int b,
				   const char *path)
{
	struct unionfs_btable *bt = ud->bt;
	char *own = NULL, *next_path = NULL;
	bool hide = false;
	int c, err = 0, found = 0;

	/*
	 * Bounded: each branch below @b is visited once, and a redirect
	 * found in branch c only sends the branches below c on, so a chain
	 * that comes back to a path it named (A -> B -> A) ends with the
	 * branches; each walk is shorter than PATH_MAX components.
	 */
	for (c = b + 1; c < bt->nbr && !err && !hide; c++) {
		struct dentry *cur = dget(bt->br[c]->path.dentry);
		const char *p = path;

		while (cur && *p) {
			const char *s = strchrnul(p, '/');
			struct dentry *next;

			if (fatal_signal_pending(current)) {
				err = -EINTR;
				break;
			}
			next = unionfs_redirect_step(sb, bt, c, cur, p, s - p,
						     !*s, &hide);
			dput(cur);
			cur = NULL;
			if (IS_ERR(next)) {
				err = PTR_ERR(next);
				break;
			}
			cur = next;
			p = *s ? s + 1 : s;
			/*
			 * A directory on the way renamed in this branch: the
			 * branches below find the rest under its redirect
			 * (as overlayfs' layer walk does, ovl_lookup_single).
			 */
			if (cur && *s && c < bt->nbr - 1) {
				err = unionfs_redirect_onward(sb, bt, name, c,
							      cur, p,
							      &next_path,
							      &hide);
				if (err)
					break;	/* not overwritten (review 22) */
			}
		}
		if (err) {
			dput(cur);
			break;
		}
		if (trace_unionfs_redirect_enabled())
			unionfs_trace_redirect(sb, name, c, path,
					       cur ? "followed" : "missing", 0);
		if (cur) {
			found++;
			ud->lower[c] = cur;
			ud->bend = c;
			if (ud->bredir < 0)
				ud->bredir = c;
		}
		if (cur && c < bt->nbr - 1) {
			int op = unionfs_is_opaque_dir(sb, cur);
			char *rd;

			if (op < 0)
				err = op;
			else if (op)
				ud->bopaque = c;
			if (op)
				break;
			rd = unionfs_redirect_lookup(sb, bt, name, c, cur);
			if (rd == ERR_PTR(-EBADMSG)) {
				break;
			} else if (IS_ERR(rd)) {
				err = PTR_ERR(rd);
			} else if (rd) {
				kfree(next_path);
				next_path = rd;
			}
		}
		/* the path the branches below @c walk */
		if (next_path) {
			kfree(own);
			own = next_path;
			path = own;
			next_path = NULL;
		}
	}
	if (!err && !found && b + 1 < bt->nbr) {
		/* @path is the xattr's, any bytes: escaped */
		pr_warn_ratelimited("branch %d: the redirect of '%*pE' leads nowhere ('%*pE' is in no branch below)\n",
				    b, name->len, name->name,
				    (int)strnlen(path, PATH_MAX), path);
		unionfs_redirect_hazard(sb, name, b,
					"redirect target missing in every branch below");
	}
	kfree(next_path);
	kfree(own);
	return err;
}

/* Out of line: the copy of the parent's name is kept off the lookup stack. */
static noinline void unionfs_trace_lookup(struct super_block *sb,
					  struct dentry *parent,
					  const struct qstr *name,
					  struct unionfs_dentry_info *ud,
					  int pstart, int pend, int probed,
					  int whskip, int err, u64 ns)
{
	unionfs_trace_dname(unionfs_lookup, sb, parent, name, pstart, pend,
			    probed, whskip, ud, err, ns);
}

/*
 * Fill @ud with the lower dentries of @name below @parent, starting at
 * branch @from. @ud must be built against the same branch table as the
 * parent's info. Runs with the mounter's credentials. @learn: may read
 * lower directories to learn their whiteout knowledge (no lower directory
 * lock held). Returns 0 or -errno.
 */
int unionfs_lookup_branches(struct dentry *parent, const struct qstr *name,
			    struct unionfs_dentry_info *ud, int from,
			    bool learn)
{
	/* the parent's info stays whole while we use it (a root rebuilt) */
	struct unionfs_dentry_info *pud = unionfs_dinfo_get(parent);
	struct super_block *sb = parent->d_sb;
	struct unionfs_btable *bt = ud->bt;
	u64 t0 = trace_unionfs_lookup_enabled() ? ktime_get_ns() : 0;
	int pstart, pend, b, err = 0, probed = 0, whskip = 0;
	char *whname = NULL;

	if (!pud || pud->bt != bt) {
		unionfs_dinfo_put(pud);
		return -ESTALE;		/* the parent was rebuilt meanwhile */
	}
	spin_lock(&pud->lock);
	pstart = pud->bstart;
	pend = pud->bend;
	spin_unlock(&pud->lock);
	if (pstart >= 0 && from > pstart)
		pstart = from;
	for (b = pstart; b >= 0 && b <= pend; b++) {
		struct dentry *lparent, *ld;
		int wh;

		spin_lock(&pud->lock);
		lparent = b >= pud->bstart && b <= pud->bend ?
			  dget(pud->lower[b]) : NULL;
		spin_unlock(&pud->lock);
		if (!lparent)
			continue;
		/*
		 * A lower directory removed behind our back (a redirect's
		 * target: no lower directory of the parent's parent changed)
		 * holds nothing: looking in it would fail (ENOENT).
		 */
		if (!d_can_lookup(lparent) || IS_DEADDIR(d_inode(lparent))) {
			dput(lparent);
			continue;
		}
		probed++;
		ld = unionfs_do_lookup(bt, b, lparent, name->name, name->len);
		if (IS_ERR(ld)) {
			err = PTR_ERR(ld);
			dput(lparent);
			break;
		}
		if (ld && d_really_is_positive(ld)) {
			bool stop = false;

			if (ud->bstart < 0) {
				ud->bstart = b;
				ud->lower[b] = ld;
				ud->bend = b;
				stop = !d_is_dir(ld);
			} else if (d_is_dir(ld)) {
				ud->lower[b] = ld;
				ud->bend = b;
			} else {
				/*
				 * A non-directory below a directory ends the
				 * merge: it hides itself and every branch below.
				 */
				dput(ld);
				ld = NULL;
				stop = true;
			}
			if (ld && d_is_dir(ld) && b < pend) {
				int op = unionfs_is_opaque_dir(sb, ld);

				if (op < 0) {
					err = op;
					dput(lparent);
					break;
				}
				if (op) {
					ud->bopaque = b;
					stop = true;
				}
			}
			/* a renamed directory: its lower copies elsewhere */
			if (!stop && ld && d_is_dir(ld) && b < bt->nbr - 1) {
				char *rd = unionfs_redirect_lookup(sb, bt,
								   name, b,
								   ld);

				if (rd == ERR_PTR(-EBADMSG)) {
					dput(lparent);
					break;
				}
				if (IS_ERR(rd)) {
					err = PTR_ERR(rd);
					dput(lparent);
					break;
				}
				if (rd) {
					err = unionfs_redirect_follow(sb, name,
								      ud, b,
								      rd);
					kfree(rd);
					dput(lparent);
					break;
				}
			}
			dput(lparent);
			if (stop)
				break;
			continue;
		}
		dput(ld);
		/*
		 * A whiteout in the last branch of the range hides nothing:
		 * the name is negative either way (a stale ".wh.NAME" there
		 * stays; the union ignores a whiteout next to its name).
		 */
		if (b == pend ||
		    unionfs_nowh_skip(d_inode(parent), bt, b, lparent, learn)) {
			whskip++;
			dput(lparent);
			continue;
		}
		if (!whname) {
			whname = unionfs_whname(name);
			if (!whname) {
				err = -ENOMEM;
				dput(lparent);
				break;
			}
		}
		wh = unionfs_has_whiteout(bt, b, lparent, whname,
					  name->len + UNIONFS_WHLEN);
		dput(lparent);
		if (wh < 0) {
			err = wh;
			break;
		}
		if (wh) {
			ud->bwh = b;
			break;
		}
	}
	kfree(whname);
	/* a lower member of a link group may show its index entry */
	if (!err && !from && ud->bstart > 0)
		err = unionfs_index_lookup(parent, name, ud);
	unionfs_dinfo_put(pud);
	if (trace_unionfs_lookup_enabled())
		unionfs_trace_lookup(sb, parent, name, ud, pstart, pend, probed,
				     whskip, err, t0 ? ktime_get_ns() - t0 : 0);
	return err;
}

/*
 * Does any branch at or after @from (below the parent's contributing
 * range) still hold @name? Used to decide whether a removal must leave a
 * whiteout. Errors count as "yes" so that we never expose lower data.
 */
bool unionfs_lower_has_name(struct dentry *parent, const struct qstr *name,
			    int from)
{
	struct unionfs_dentry_info *ud;
	const struct cred *old;
	int pstart, pend, err;
	bool ret;

	unionfs_get_range(parent, &pstart, &pend);
	if (from > pend)
		return false;
	ud = unionfs_alloc_dinfo_at(parent);
	if (!ud)
		return true;
	old = unionfs_override_creds(parent->d_sb);
	err = unionfs_lookup_branches(parent, name, ud, from, false);
	revert_creds(old);
	ret = err || ud->bstart >= 0;
	unionfs_free_dinfo(ud);
	return ret;
}

struct dentry *unionfs_lookup(struct inode *dir, struct dentry *dentry,
			      unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct unionfs_dentry_info *ud;
	struct inode *inode = NULL;
	struct dentry *alias;
	struct dentry *ixdrop = NULL;
	const struct cred *old;
	bool ixl;
	int err;

	if (unionfs_is_whname(dentry->d_name.name, dentry->d_name.len))
		return ERR_PTR(-EPERM);
	if (dentry->d_name.len > UNIONFS_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	/* in a cwd or dirfd built on an older table: onto the current one */
	if (!IS_ROOT(dentry->d_parent)) {
		err = unionfs_refresh_stale(dentry->d_parent);
		if (err < 0)
			return ERR_PTR(err);
	}

	ud = unionfs_alloc_dinfo_at(dentry->d_parent);
	if (!ud)
		return ERR_PTR(-ENOMEM);

	ud->nseq = atomic_long_read(&UNIONFS_SB(sb)->nseq);
	ud->ixseq = atomic64_read_acquire(&UNIONFS_SB(sb)->ixseq);
	ud->psnap = unionfs_dir_snap_trusted(dir);
	old = unionfs_override_creds(sb);
	err = unionfs_lookup_branches(dentry->d_parent, &dentry->d_name, ud,
				      0, true);
	revert_creds(old);
	if (err) {
		unionfs_free_dinfo(ud);
		return ERR_PTR(err);
	}
	/* a link group's name: one inode (unionfs_index_related) */
	ixl = ud->bstart >= 0 && unionfs_index_related(ud);
	if (ixl)
		mutex_lock(&UNIONFS_SB(sb)->ix_lock);
	if (ud->bstart >= 0) {
		inode = unionfs_iget(sb, ud, ixl);
		/* an index entry it did not take: put after ix_lock */
		ixdrop = unionfs_index_drop(ud);
		if (IS_ERR(inode)) {
			if (ixl)
				mutex_unlock(&UNIONFS_SB(sb)->ix_lock);
			dput(ixdrop);
			unionfs_free_dinfo(ud);
			return ERR_CAST(inode);
		}
	}
	dentry->d_fsdata = ud;
	alias = d_splice_alias(inode, dentry);
	if (ixl)
		mutex_unlock(&UNIONFS_SB(sb)->ix_lock);
	dput(ixdrop);
	/*
	 * A directory already has a dentry (in use: a cwd, an open file, a
	 * mount below it) that d_splice_alias() moved here: it must take
	 * what this lookup found, or it would keep the state that made it
	 * stale, and be looked up again at every walk.
	 */
	if (!IS_ERR_OR_NULL(alias))
		unionfs_dinfo_adopt(alias, ud);
	return alias;
}
