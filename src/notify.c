// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: coherency with branches modified directly (coherency= option).
 *
 *   none    branches are static: revalidation only checks generations.
 *   reval   (default) lazy: d_revalidate compares the cached view with the
 *           branch (the parent's lower directories' ctimes, the identity
 *           of the winning lower dentry and inode), see dentry.c.
 *   notify  eager: an fsnotify mark on every lower directory of every
 *           cached union directory. A change that did not come through
 *           this union bumps sbi->nseq at once (and is counted and traced
 *           with the process that made it); d_revalidate of a dentry that
 *           has seen the current nseq is a single comparison, and only
 *           after a direct change does it fall back to the reval checks.
 *
 * Changes the union makes itself are told apart by task: every modifying
 * call into a branch (lower.c) runs between unionfs_actor_begin/end, which
 * list the task on the superblock; the fsnotify handler runs in the
 * context of the task that made the change.
 *
 * Marks are shared by all union inodes that hold the same lower directory
 * (users count, under sbi->nmutex) and removed with the last of them.
 *
 * Every direct change seen, by either mode, is a hazard: counted per kind,
 * traced, and reported once per mount (unionfs_hazard()).
 */
#include "union.h"

#include <linux/fsnotify_backend.h>

#include "unionfs_trace.h"

static const char *const unionfs_hazard_names[UNIONFS_HZ_MAX] = {
	[UNIONFS_HZ_VANISHED]		= "vanished",
	[UNIONFS_HZ_REPLACED]		= "replaced",
	[UNIONFS_HZ_DIR_CHANGED]	= "dir_changed",
	[UNIONFS_HZ_CREATED]		= "created",
	[UNIONFS_HZ_REMOVED]		= "removed",
	[UNIONFS_HZ_RENAMED]		= "renamed",
	[UNIONFS_HZ_ATTRIB]		= "attrib",
	[UNIONFS_HZ_COPYUP_RACE]	= "copyup_raced",
	[UNIONFS_HZ_REDIRECT]		= "redirect",
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
	char comm[TASK_COMM_LEN];

	atomic_long_inc(&sbi->hazards[kind]);
	if (test_and_set_bit(UNIONFS_SB_NOTICED, &sbi->flags))
		return;
	/* the name and the command are the user's: escaped, one log line */
	if (by_current) {
		get_task_comm(comm, current);
		pr_notice("%u:%u: a branch was modified directly (%s: '%*pE' in branch %d, %s by %*pE[%d]); the union follows the branch. Counts: /sys/fs/unionfs/%u:%u/hazards\n",
			  MAJOR(sb->s_dev), MINOR(sb->s_dev),
			  unionfs_hazard_names[kind], len, name, bindex, what,
			  (int)strnlen(comm, sizeof(comm)), comm,
			  task_pid_nr(current),
			  MAJOR(sb->s_dev), MINOR(sb->s_dev));
	} else {
		pr_notice("%u:%u: a branch was modified directly (%s: '%*pE' in branch %d, %s); the union follows the branch. Counts: /sys/fs/unionfs/%u:%u/hazards\n",
			  MAJOR(sb->s_dev), MINOR(sb->s_dev),
			  unionfs_hazard_names[kind], len, name, bindex, what,
			  MAJOR(sb->s_dev), MINOR(sb->s_dev));
	}
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

const char *const unionfs_coherency_names[] = {
	[UNIONFS_COH_NONE]	= "none",
	[UNIONFS_COH_REVAL]	= "reval",
	[UNIONFS_COH_NOTIFY]	= "notify",
};

/*
 * Only events sent while the change is made, in the task making it: that
 * is what tells the union's own changes (actors) from direct ones.
 * FS_DELETE_SELF is not one: it comes when the last reference to the
 * removed directory's dentry goes, and the union holds one (a cached
 * union directory, an open file), so the union's own rmdir (or rename
 * over a directory) delivered it after the branch call, outside the
 * actor window, in whatever task dropped the reference: a false
 * "removed". A directory removed directly is seen as the FS_DELETE of its
 * parent's lower directory, watched as long as a union directory below
 * it is cached.
 */
#define UNIONFS_NMASK	(FS_CREATE | FS_DELETE | FS_MOVED_FROM | FS_MOVED_TO | \
			 FS_ATTRIB | FS_MOVE_SELF)

struct unionfs_nmark {
	struct fsnotify_mark fsn;
	struct unionfs_sb_info *sbi;
	int brid;		/* the watched directory's branch (its id) */
	int users;		/* union inode vectors holding it (nmutex) */
};

void unionfs_actor_begin(struct unionfs_btable *bt, struct unionfs_actor *a)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(bt->sb);

	a->task = NULL;
	if (READ_ONCE(sbi->coherency) != UNIONFS_COH_NOTIFY)
		return;
	a->task = current;
	spin_lock(&sbi->actor_lock);
	list_add(&a->list, &sbi->actors);
	spin_unlock(&sbi->actor_lock);
}

void unionfs_actor_end(struct unionfs_btable *bt, struct unionfs_actor *a)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(bt->sb);

	if (!a->task)
		return;
	spin_lock(&sbi->actor_lock);
	list_del(&a->list);
	spin_unlock(&sbi->actor_lock);
}

static bool unionfs_is_actor(struct unionfs_sb_info *sbi)
{
	struct unionfs_actor *a;
	bool found = false;

	spin_lock(&sbi->actor_lock);
	list_for_each_entry(a, &sbi->actors, list) {
		if (a->task == current) {
			found = true;
			break;
		}
	}
	spin_unlock(&sbi->actor_lock);
	return found;
}

/* "dir/name" inside the branch filesystem, for the hazard tracepoint */
static void unionfs_notify_trace(struct unionfs_sb_info *sbi, int kind,
				 int bindex, struct inode *di,
				 const struct qstr *name, const char *what)
{
	struct dentry *alias = NULL;
	char *buf, *p = NULL;

	if (!trace_unionfs_hazard_enabled())
		return;
	buf = kmalloc(PATH_MAX, GFP_NOFS);
	if (!buf)
		return;
	if (di)
		alias = d_find_any_alias(di);
	if (alias) {
		p = dentry_path_raw(alias, buf, PATH_MAX - NAME_MAX - 2);
		dput(alias);
		if (IS_ERR(p))
			p = NULL;
	}
	if (p && name) {
		size_t len = strlen(p);

		memmove(buf, p, len);
		if (len > 1)
			buf[len++] = '/';
		snprintf(buf + len, PATH_MAX - len, "%.*s", name->len,
			 name->name);
		p = buf;
	} else if (!p) {
		snprintf(buf, PATH_MAX, "%.*s", name ? name->len : 0,
			 name ? (const char *)name->name : "");
		p = buf;
	}
	trace_unionfs_hazard(sbi->sb, unionfs_hazard_name(kind), bindex, p,
			     what);
	kfree(buf);
}

/*
 * The branch's index in the current table, or -1 once it left the union.
 * A mark keeps the branch's id, not an index: indexes change with every
 * add= or del= above the branch, and one mark serves the union inodes of
 * every table that has the directory.
 */
static int unionfs_nmark_bindex(struct unionfs_sb_info *sbi, int brid)
{
	struct unionfs_btable *bt;
	int b, bindex = -1;

	rcu_read_lock();
	bt = rcu_dereference(sbi->bt);
	for (b = 0; b < bt->nbr; b++) {
		if (bt->br[b]->id == brid) {
			bindex = b;
			break;
		}
	}
	rcu_read_unlock();
	return bindex;
}

static int unionfs_notify_event(struct fsnotify_mark *fsn, u32 mask,
				struct inode *inode, struct inode *dir,
				const struct qstr *name, u32 cookie)
{
	struct unionfs_nmark *m = container_of(fsn, struct unionfs_nmark, fsn);
	struct unionfs_sb_info *sbi = m->sbi;
	const char *what;
	int kind, bindex;

	if (unionfs_is_actor(sbi))
		return 0;
	atomic_long_inc(&sbi->nseq);
	/* a branch del= removed: no longer the union's (its marks go with its dentries) */
	bindex = unionfs_nmark_bindex(sbi, READ_ONCE(m->brid));
	if (bindex < 0)
		return 0;
	if (mask & FS_CREATE) {
		kind = UNIONFS_HZ_CREATED;
		what = "created in the branch";
	} else if (mask & FS_DELETE) {
		kind = UNIONFS_HZ_REMOVED;
		what = "removed from the branch";
	} else if (mask & (FS_MOVED_FROM | FS_MOVED_TO | FS_MOVE_SELF)) {
		kind = UNIONFS_HZ_RENAMED;
		what = mask & FS_MOVED_TO ? "renamed into a branch dir" :
		       "renamed away in the branch";
	} else {
		kind = UNIONFS_HZ_ATTRIB;
		what = "branch directory attributes changed";
	}
	/* name events: @dir is the watched directory; self events: @inode */
	unionfs_notify_trace(sbi, kind, bindex, dir ?: inode, name, what);
	unionfs_hazard_note(sbi->sb, kind, bindex,
			    name ? (const char *)name->name : "",
			    name ? name->len : 0, what, true);
	return 0;
}

static void unionfs_notify_free_mark(struct fsnotify_mark *fsn)
{
	kfree(container_of(fsn, struct unionfs_nmark, fsn));
}

static const struct fsnotify_ops unionfs_notify_ops = {
	.handle_inode_event	= unionfs_notify_event,
	.free_mark		= unionfs_notify_free_mark,
};

int unionfs_notify_init(struct super_block *sb)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct fsnotify_group *g;

	if (sbi->coherency != UNIONFS_COH_NOTIFY)
		return 0;
	g = fsnotify_alloc_group(&unionfs_notify_ops, 0);
	if (IS_ERR(g)) {
		pr_warn("mount: coherency=notify: cannot create an fsnotify group (%ld)\n",
			PTR_ERR(g));
		return PTR_ERR(g);
	}
	sbi->ngroup = g;
	return 0;
}

/* After every union inode is gone (kill_sb, vectors released). */
void unionfs_notify_exit(struct super_block *sb)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);

	if (!sbi->ngroup)
		return;
	WARN_ON_ONCE(atomic_long_read(&sbi->nmarks));
	fsnotify_wait_marks_destroyed();
	fsnotify_put_group(sbi->ngroup);
	sbi->ngroup = NULL;
}

static struct unionfs_nmark *unionfs_nmark_get(struct unionfs_sb_info *sbi,
					       struct inode *inode, int bindex,
					       int brid)
{
	struct fsnotify_group *g = sbi->ngroup;
	struct fsnotify_mark *fsn;
	struct unionfs_nmark *m;
	int err;

	lockdep_assert_held(&sbi->nmutex);
	fsn = fsnotify_find_mark(&inode->i_fsnotify_marks, g);
	if (fsn) {
		m = container_of(fsn, struct unionfs_nmark, fsn);
		/*
		 * Placed for a table in which the directory's branch had
		 * another id (del= then add= of the same directory, the
		 * inode kept): branches never overlap, so an id no longer
		 * in the table is the stale one. Only looked for when the
		 * ids differ (one scan of the table, not one per branch of
		 * every directory inode).
		 */
		if (READ_ONCE(m->brid) != brid &&
		    unionfs_nmark_bindex(sbi, READ_ONCE(m->brid)) < 0)
			WRITE_ONCE(m->brid, brid);
		m->users++;
		fsnotify_put_mark(fsn);	/* find's reference */
		return m;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return NULL;
	fsnotify_init_mark(&m->fsn, g);
	m->fsn.mask = UNIONFS_NMASK;
	m->sbi = sbi;
	m->brid = brid;
	m->users = 1;
	err = fsnotify_add_inode_mark(&m->fsn, inode, 0);
	if (err) {
		fsnotify_put_mark(&m->fsn);	/* frees it */
		pr_warn_ratelimited("coherency=notify: cannot watch a directory of branch %d (%d); falling back to revalidation for it\n",
				    bindex, err);
		return NULL;
	}
	atomic_long_inc(&sbi->nmarks);
	return m;
}

static void unionfs_nmark_put(struct unionfs_sb_info *sbi,
			      struct unionfs_nmark *m)
{
	lockdep_assert_held(&sbi->nmutex);
	if (--m->users)
		return;
	fsnotify_destroy_mark(&m->fsn, sbi->ngroup);
	fsnotify_put_mark(&m->fsn);	/* the reference from init_mark */
	atomic_long_dec(&sbi->nmarks);
}

/* Watch the lower directories of a directory's new vector. */
void unionfs_notify_adopt(struct unionfs_ivec *vec, struct super_block *sb)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	int b;

	if (!sbi->ngroup || vec->bstart < 0 || !vec->lower[vec->bstart] ||
	    !S_ISDIR(vec->lower[vec->bstart]->i_mode))
		return;
	vec->marks = kcalloc(vec->nbr, sizeof(*vec->marks), GFP_KERNEL);
	if (!vec->marks) {
		/* nothing watched: make every revalidation do full checks */
		atomic_long_inc(&sbi->nseq);
		return;
	}
	vec->watched = true;
	mutex_lock(&sbi->nmutex);
	for (b = vec->bstart; b <= vec->bend && b < vec->nbr; b++) {
		if (!vec->lower[b] || !S_ISDIR(vec->lower[b]->i_mode))
			continue;
		vec->marks[b] = unionfs_nmark_get(sbi, vec->lower[b], b,
						  vec->bt->br[b]->id);
		if (!vec->marks[b]) {
			vec->watched = false;
			atomic_long_inc(&sbi->nseq);
		}
	}
	mutex_unlock(&sbi->nmutex);
}

void unionfs_notify_release(struct unionfs_ivec *vec)
{
	struct unionfs_sb_info *sbi;
	int b;

	if (!vec->marks)
		return;
	sbi = UNIONFS_SB(vec->bt->sb);
	mutex_lock(&sbi->nmutex);
	for (b = 0; b < vec->nbr; b++)
		if (vec->marks[b])
			unionfs_nmark_put(sbi, vec->marks[b]);
	mutex_unlock(&sbi->nmutex);
	kfree(vec->marks);
	vec->marks = NULL;
}
