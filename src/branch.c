// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: branch management at run time.
 *
 *   mount -o remount,CMD[,CMD...] MNT     commands applied left to right:
 *     add=/new[=ro|rw]          insert /new as branch 0 (highest priority)
 *     add=/existing:/new[=m]    insert /new just before /existing
 *     add=:/new[=m]             append /new as the lowest branch
 *     del=/branch               remove a branch (EBUSY while files are open on
 *                               it or an operation writes to it)
 *     mode=/branch=ro|rw        change a branch's mode
 *     incgen                    bump the generation only
 *
 * All or nothing: the commands build a new branch table; any error leaves
 * the union exactly as it was. A new table bumps the superblock generation:
 * dentries built against an older table fail d_revalidate and are looked up
 * again; a directory in use (a cwd, a dirfd) is moved onto the new table at
 * its next use (unionfs_refresh_stale); open files keep the table they were
 * opened with, whose branches stay pinned until the last user goes. del=
 * waits for nothing: it is refused while the branch is in use
 * (unionfs_br_use).
 */
#include "union.h"

#include "unionfs_trace.h"

struct unionfs_btable *unionfs_bt_alloc(struct super_block *sb, int nbr)
{
	struct unionfs_btable *bt;

	bt = kzalloc(struct_size(bt, br, nbr), GFP_KERNEL);
	if (!bt)
		return NULL;
	refcount_set(&bt->ref, 1);
	bt->sb = sb;
	bt->nbr = nbr;
	return bt;
}

void unionfs_branch_put(struct unionfs_branch *br)
{
	if (!br || !refcount_dec_and_test(&br->ref))
		return;
	if (br->private_mnt) {
		dput(br->path.dentry);
		kern_unmount(br->path.mnt);
	} else {
		path_put(&br->path);
	}
	kfree(br->name);
	kfree_rcu(br, rcu);
}

/*
 * Hold a validated branch through a private clone of its mount (as
 * overlayfs holds its layers): the union never keeps the mount the user
 * named busy, so the branch file system can be unmounted as soon as the
 * union has let go of it (after del=, or while the union uses it: its
 * superblock then lives on until the union's last reference). The clone
 * is rooted at the branch directory and carries the mount's flags.
 */
int unionfs_branch_hold(struct unionfs_branch *br)
{
	struct vfsmount *mnt;

	if (br->private_mnt)
		return 0;
	mnt = clone_private_mount(&br->path);
	if (IS_ERR(mnt))
		return PTR_ERR(mnt);
	path_put(&br->path);
	br->path.mnt = mnt;
	br->path.dentry = dget(mnt->mnt_root);
	br->private_mnt = true;
	return 0;
}

/* Does @path name @br's directory (through any mount of its file system)? */
bool unionfs_branch_is(struct unionfs_branch *br, const struct path *path)
{
	return path->dentry == br->path.dentry;
}

/*
 * "ro" or "rw" (the =MODE of a dirs= element, add= or mode=) as
 * UNIONFS_BR_*; else one message "CTX: unknown branch mode ..." and -EINVAL.
 */
int unionfs_parse_mode(struct fs_context *fc, const char *s, const char *ctx)
{
	if (!strcmp(s, "ro"))
		return UNIONFS_BR_RO;
	if (!strcmp(s, "rw"))
		return UNIONFS_BR_RW;
	unionfs_refuse(fc, "%s: unknown branch mode '%*pE' (use ro or rw)", ctx,
		       (int)strlen(s), s);
	return -EINVAL;
}

static char *unionfs_canonical_name(const struct path *path)
{
	char *buf, *p, *name;

	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	p = d_path(path, buf, PATH_MAX);
	if (IS_ERR(p)) {
		kfree(buf);
		return p;
	}
	name = kstrdup(p, GFP_KERNEL);
	kfree(buf);
	return name ?: ERR_PTR(-ENOMEM);
}

/* Dentry operations the union's own (case-sensitive, no automount) lookups cannot follow. */
static bool unionfs_branch_weird(const struct dentry *dentry)
{
	if (dentry->d_flags & (DCACHE_OP_HASH | DCACHE_OP_COMPARE |
			       DCACHE_NEED_AUTOMOUNT | DCACHE_MANAGE_TRANSIT))
		return true;
#if IS_ENABLED(CONFIG_UNICODE)
	/* every dentry but the root of a case-folding fs has the ci ops */
	if (dentry->d_sb->s_encoding)
		return true;
#endif
	return false;
}

/*
 * The inode number space of a new branch on @bsb (unionfs_ino(), docs/
 * concepts.md "Inode numbers"), one rule for mount and add=: the index of
 * an @existing branch on the same file system, else the lowest index none
 * of them uses. At mount, branches on distinct file systems thus get their
 * position; an add= never changes the numbers of the other branches. With
 * n < UNIONFS_MAX_BRANCHES branches one index below that is free.
 */
static_assert(UNIONFS_MAX_BRANCHES <= UNIONFS_INO_VOLATILE);	/* index < it */
static unsigned int unionfs_new_fsidx(struct unionfs_branch *const *existing,
				      int n, const struct super_block *bsb)
{
	DECLARE_BITMAP(used, UNIONFS_MAX_BRANCHES);
	int i;

	bitmap_zero(used, UNIONFS_MAX_BRANCHES);
	for (i = 0; i < n; i++) {
		if (existing[i]->path.mnt->mnt_sb == bsb)
			return existing[i]->fsidx;
		if (existing[i]->fsidx < UNIONFS_MAX_BRANCHES)
			__set_bit(existing[i]->fsidx, used);
	}
	return find_first_zero_bit(used, UNIONFS_MAX_BRANCHES);
}

/*
 * The one constructor of a branch, for mount (@sb NULL: the union is not
 * live yet) and remount,add= (@sb the union): look @path up and check it
 * can be a branch in @mode next to the @n branches @existing. On a refusal
 * one message, "CTX 'PATH' REASON" (@ctx: "mount: branch N" or "remount:
 * add:"; also in @fc's log), and ERR_PTR:
 *   E2BIG    the union has UNIONFS_MAX_BRANCHES already
 *   (lookup) @path does not resolve
 *   ENOTDIR  not a directory
 *   EINVAL   a unionfs (this union or another: unions do not stack); on a
 *            case-folding or automount fs; an idmapped mount; too deep a
 *            stack (the union's depth is fixed at mount: at most
 *            FILESYSTEM_MAX_STACK_DEPTH, then what the mount made it);
 *            overlapping an existing branch (one fs, one inside the other)
 *   EROFS    rw on a file system mounted read-only
 * On success the branch has its canonical name (d_path), mode, fsidx
 * (unionfs_new_fsidx) and a private clone of its mount
 * (unionfs_branch_hold); its id is the caller's to give.
 */
struct unionfs_branch *unionfs_branch_new(struct fs_context *fc,
					  struct super_block *sb,
					  const char *path, int mode,
					  struct unionfs_branch *const *existing,
					  int n, const char *ctx)
{
	int plen = strlen(path), max_depth, depth, i, err;
	struct unionfs_branch *br;
	struct super_block *bsb;
	struct dentry *d;

	if (n >= UNIONFS_MAX_BRANCHES) {
		unionfs_refuse(fc, "%s '%*pE' would make more than %d branches",
			       ctx, plen, path, UNIONFS_MAX_BRANCHES);
		return ERR_PTR(-E2BIG);
	}
	br = kzalloc(sizeof(*br), GFP_KERNEL);
	if (!br)
		return ERR_PTR(-ENOMEM);
	refcount_set(&br->ref, 1);
	atomic_set(&br->open_files, 0);
	atomic_set(&br->writers, 0);
	br->state = UNIONFS_BRS_LIVE;
	br->mode = mode;
	br->ever_rw = mode == UNIONFS_BR_RW;
	err = kern_path(path, LOOKUP_FOLLOW, &br->path);
	if (err) {
		unionfs_refuse(fc, "%s '%*pE': lookup failed (%d)", ctx, plen, path, err);
		kfree(br);
		return ERR_PTR(err);
	}
	d = br->path.dentry;
	bsb = br->path.mnt->mnt_sb;
	max_depth = sb ? sb->s_stack_depth : FILESYSTEM_MAX_STACK_DEPTH;
	depth = bsb->s_stack_depth + 1;
	err = -ENOTDIR;
	if (!d_is_dir(d)) {
		unionfs_refuse(fc, "%s '%*pE' is not a directory", ctx, plen, path);
		goto out_put;
	}
	err = -EINVAL;
	if (d->d_sb == sb) {
		unionfs_refuse(fc, "%s '%*pE' is inside this union", ctx, plen, path);
		goto out_put;
	}
	if (d->d_sb->s_type == &unionfs_fs_type) {
		unionfs_refuse(fc,
			       "%s '%*pE' is itself a unionfs (stacking unions is not supported)",
			       ctx, plen, path);
		goto out_put;
	}
	if (unionfs_branch_weird(d)) {
		unionfs_refuse(fc, "%s '%*pE' is on a case-folding or automount filesystem",
			       ctx, plen, path);
		goto out_put;
	}
	if (is_idmapped_mnt(br->path.mnt)) {
		unionfs_refuse(fc, "%s '%*pE' is an idmapped mount", ctx, plen, path);
		goto out_put;
	}
	if (depth > max_depth) {
		unionfs_refuse(fc,
			       "%s '%*pE' is too deep a stack (the union would be %d deep, at most %d)",
			       ctx, plen, path, depth, max_depth);
		goto out_put;
	}
	err = -EROFS;
	if (mode == UNIONFS_BR_RW && unionfs_path_rdonly(&br->path)) {
		unionfs_refuse(fc,
			       "%s '%*pE' is read-write but its file system is mounted read-only (give =ro)",
			       ctx, plen, path);
		goto out_put;
	}
	err = -EINVAL;
	for (i = 0; i < n; i++) {
		struct unionfs_branch *o = existing[i];

		if (o->path.dentry->d_sb == d->d_sb &&
		    (is_subdir(o->path.dentry, d) ||
		     is_subdir(d, o->path.dentry))) {
			unionfs_refuse(fc, "%s '%*pE' overlaps branch %d '%*pE'", ctx,
				       plen, path, i, (int)strlen(o->name), o->name);
			goto out_put;
		}
	}
	br->name = unionfs_canonical_name(&br->path);
	if (IS_ERR(br->name)) {
		err = PTR_ERR(br->name);
		br->name = NULL;
		unionfs_refuse(fc, "%s '%*pE': cannot name it (%d)", ctx, plen, path, err);
		goto out_put;
	}
	err = unionfs_branch_hold(br);
	if (err) {
		unionfs_refuse(fc, "%s '%*pE': cannot hold a private mount of it (%d)",
			       ctx, plen, path, err);
		goto out_put;
	}
	br->fsidx = unionfs_new_fsidx(existing, n, bsb);
	return br;
out_put:
	unionfs_branch_put(br);
	return ERR_PTR(err);
}

void unionfs_bt_put(struct unionfs_btable *bt)
{
	int i;

	if (!bt || !refcount_dec_and_test(&bt->ref))
		return;
	for (i = 0; i < bt->nbr; i++)
		unionfs_branch_put(bt->br[i]);
	kfree_rcu(bt, rcu);
}

/* The current branch table, referenced. */
struct unionfs_btable *unionfs_bt_get(struct super_block *sb)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct unionfs_btable *bt;

	rcu_read_lock();
	do {
		bt = rcu_dereference(sbi->bt);
	} while (!refcount_inc_not_zero(&bt->ref));
	rcu_read_unlock();
	return bt;
}

/* The root's dentry info for @bt: every branch root, down to an opaque one. */
struct unionfs_dentry_info *unionfs_root_dinfo(struct unionfs_btable *bt)
{
	struct unionfs_dentry_info *ud = unionfs_alloc_dinfo(bt);
	int i;

	if (!ud)
		return NULL;
	ud->bstart = 0;
	ud->bend = bt->nbr - 1;
	for (i = 0; i < bt->nbr; i++) {
		ud->lower[i] = dget(bt->br[i]->path.dentry);
		if (i < ud->bend &&
		    unionfs_is_opaque_dir(bt->sb, bt->br[i]->path.dentry) > 0) {
			ud->bend = i;
			ud->bopaque = i;
			break;
		}
	}
	return ud;
}

int unionfs_bt_index(struct unionfs_btable *bt, struct unionfs_branch *br)
{
	int i;

	for (i = 0; i < bt->nbr; i++)
		if (bt->br[i] == br)
			return i;
	return -1;
}

/* --- remount commands ---------------------------------------------------- */

struct unionfs_work {
	int n;
	struct unionfs_branch *br[UNIONFS_MAX_BRANCHES];
	int mode[UNIONFS_MAX_BRANCHES];
	int oldmode[UNIONFS_MAX_BRANCHES];	/* to undo a failed publish */
	int added;			/* new branch objects in br[] */
};

static int unionfs_find_branch(struct fs_context *fc, struct unionfs_work *w,
			       const char *name, const char *cmd)
{
	struct path path;
	int i, err;

	err = kern_path(name, LOOKUP_FOLLOW, &path);
	if (!err) {
		for (i = 0; i < w->n; i++)
			if (unionfs_branch_is(w->br[i], &path))
				break;
		path_put(&path);
		if (i < w->n)
			return i;
	}
	for (i = 0; i < w->n; i++)
		if (!strcmp(w->br[i]->name, name))
			return i;
	unionfs_refuse(fc, "remount: %s: '%*pE' is not a branch of this union",
		       cmd, (int)strlen(name), name);
	return -ENOENT;
}

/* add=[EXISTING:]NEW[=MODE], the paths escaped as in dirs= */
static int unionfs_cmd_add(struct fs_context *fc, struct super_block *sb,
			   struct unionfs_work *w, char *arg)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct unionfs_branch *br;
	char *colon = unionfs_opt_find(arg, ':', false), *path = arg, *eq;
	int pos = 0, mode = UNIONFS_BR_RW, err;

	if (colon) {
		*colon = '\0';
		path = colon + 1;
		if (!*arg) {
			pos = w->n;		/* add=:/new appends */
		} else {
			err = unionfs_opt_unescape(fc, arg, "remount: add");
			if (err)
				return err;
			pos = unionfs_find_branch(fc, w, arg, "add");
			if (pos < 0)
				return pos;
		}
	}
	eq = unionfs_opt_find(path, '=', true);
	if (eq) {
		*eq = '\0';
		mode = unionfs_parse_mode(fc, eq + 1, "remount: add");
		if (mode < 0)
			return mode;
	}
	if (!*path) {
		unionfs_refuse(fc, "remount: add: empty branch path");
		return -EINVAL;
	}
	err = unionfs_opt_unescape(fc, path, "remount: add");
	if (err)
		return err;
	br = unionfs_branch_new(fc, sb, path, mode, w->br, w->n,
				"remount: add:");
	if (IS_ERR(br))
		return PTR_ERR(br);
	br->id = sbi->next_branch_id;	/* committed only on success */
	memmove(&w->br[pos + 1], &w->br[pos], (w->n - pos) * sizeof(w->br[0]));
	memmove(&w->mode[pos + 1], &w->mode[pos],
		(w->n - pos) * sizeof(w->mode[0]));
	w->br[pos] = br;
	w->mode[pos] = mode;
	w->n++;
	w->added++;
	sbi->next_branch_id++;
	return 0;
}

static int unionfs_cmd_del(struct fs_context *fc, struct unionfs_work *w,
			   char *arg)
{
	int i = unionfs_opt_unescape(fc, arg, "remount: del");

	if (!i)
		i = unionfs_find_branch(fc, w, arg, "del");
	if (i < 0)
		return i;
	/* in use or not: decided at the end (unionfs_br_leave) */
	unionfs_branch_put(w->br[i]);
	memmove(&w->br[i], &w->br[i + 1], (w->n - i - 1) * sizeof(w->br[0]));
	memmove(&w->mode[i], &w->mode[i + 1],
		(w->n - i - 1) * sizeof(w->mode[0]));
	w->n--;
	return 0;
}

static int unionfs_cmd_mode(struct fs_context *fc, struct unionfs_work *w,
			    char *arg)
{
	char *eq = unionfs_opt_find(arg, '=', true);
	int i, mode;

	if (!eq) {
		unionfs_refuse(fc, "remount: mode: expected mode=/branch=ro|rw, got '%*pE'",
			       (int)strlen(arg), arg);
		return -EINVAL;
	}
	*eq = '\0';
	mode = unionfs_parse_mode(fc, eq + 1, "remount: mode");
	if (mode < 0)
		return mode;
	i = unionfs_opt_unescape(fc, arg, "remount: mode");
	if (!i)
		i = unionfs_find_branch(fc, w, arg, "mode");
	if (i < 0)
		return i;
	if (mode == UNIONFS_BR_RW && unionfs_path_rdonly(&w->br[i]->path)) {
		unionfs_refuse(fc,
			       "remount: mode: branch '%*pE' is on a file system mounted read-only",
			       (int)strlen(w->br[i]->name), w->br[i]->name);
		return -EROFS;
	}
	w->mode[i] = mode;
	return 0;
}

/*
 * del= against the operations in flight, as in Dekker's algorithm. An
 * operation that will write to a branch (unionfs_want_write) or keep a
 * file open on it (unionfs_br_open) counts itself in @count, then reads
 * the branch's state; del= sets the state to LEAVING, then reads the
 * counts (a full barrier on each side). At least one sees the other:
 * del= refuses with EBUSY, or the operation waits for its decision
 * (killable; nothing del= does meanwhile waits for an operation) and
 * gets -ESTALE once the branch is GONE, or goes on if it stays. So no
 * file is opened on a branch, and nothing written to it through the
 * union, after its del= returned 0: also not by an operation that chose
 * it on an older table (a create in a directory not walked since, a
 * copy-up). Bounded: a branch that is taken out and put back in a loop
 * gives -EBUSY after a few rounds.
 */
int unionfs_br_use(struct unionfs_branch *br, atomic_t *count)
{
	int round, state;

	for (round = 0; round < 4; round++) {
		atomic_inc(count);
		smp_mb__after_atomic();	/* the count before the state (del=) */
		state = READ_ONCE(br->state);
		if (likely(state == UNIONFS_BRS_LIVE))
			return 0;
		atomic_dec(count);
		if (state == UNIONFS_BRS_GONE)
			return -ESTALE;
		if (wait_var_event_killable(&br->state, READ_ONCE(br->state) !=
					    UNIONFS_BRS_LEAVING))
			return -EINTR;
	}
	return -EBUSY;
}

static void unionfs_br_set_state(struct unionfs_branch *br, int state)
{
	WRITE_ONCE(br->state, state);
	smp_mb();	/* the state before the waiters' queue (wake_up_var) */
	wake_up_var(&br->state);
}

static bool unionfs_bt_has(struct unionfs_btable *bt,
			   const struct unionfs_branch *br)
{
	int i;

	for (i = 0; i < bt->nbr; i++)
		if (bt->br[i] == br)
			return true;
	return false;
}

/*
 * The branches of @cur that @bt no longer has are leaving: -EBUSY (and
 * all stay) when one has open files or operations writing to it.
 */
static int unionfs_br_leave(struct fs_context *fc, struct unionfs_btable *cur,
			    struct unionfs_btable *bt)
{
	struct unionfs_branch *br;
	int i, files, writers;

	for (i = 0; i < cur->nbr; i++)
		if (!unionfs_bt_has(bt, cur->br[i]))
			WRITE_ONCE(cur->br[i]->state, UNIONFS_BRS_LEAVING);
	smp_mb();	/* the states before the counts (unionfs_br_use) */
	for (i = 0; i < cur->nbr; i++) {
		br = cur->br[i];
		if (READ_ONCE(br->state) != UNIONFS_BRS_LEAVING)
			continue;
		files = atomic_read(&br->open_files);
		writers = atomic_read(&br->writers);
		if (!files && !writers)
			continue;
		unionfs_refuse(fc,
			       "remount: del: branch '%*pE' has %d open files and %d operations writing to it",
			       (int)strlen(br->name), br->name, files, writers);
		return -EBUSY;
	}
	return 0;
}

/* The leaving branches of @cur are @gone, or stay: wake who waits. */
static void unionfs_br_decide(struct unionfs_btable *cur, bool gone)
{
	int i;

	for (i = 0; i < cur->nbr; i++)
		if (READ_ONCE(cur->br[i]->state) == UNIONFS_BRS_LEAVING)
			unionfs_br_set_state(cur->br[i], gone ?
					     UNIONFS_BRS_GONE :
					     UNIONFS_BRS_LIVE);
}

void unionfs_bump_gen(struct super_block *sb, enum unionfs_rv_why cause)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	int old = atomic_read(&sbi->generation);

	atomic_inc(&sbi->generation);
	trace_unionfs_gen_bump(sb, old, old + 1, cause);
}

/* Publish @bt: rebuild the root against it and bump the generation. */
static int unionfs_publish(struct super_block *sb, struct unionfs_btable *bt,
			   enum unionfs_rv_why cause)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct dentry *root = sb->s_root;
	struct unionfs_dentry_info *ud, *old;
	struct unionfs_btable *oldbt;
	int err;

	bt->gen = atomic_read(&sbi->generation) + 1;
	ud = unionfs_root_dinfo(bt);
	if (!ud)
		return -ENOMEM;
	err = unionfs_inode_set_vec(d_inode(root), ud);
	if (err) {
		unionfs_free_dinfo(ud);
		return err;
	}
	old = root->d_fsdata;
	/* published whole: readers take the info with unionfs_dinfo_get() */
	smp_store_release(&root->d_fsdata, ud);

	oldbt = rcu_dereference_protected(sbi->bt,
					  lockdep_is_held(&sbi->bt_lock));
	rcu_assign_pointer(sbi->bt, bt);
	unionfs_bump_gen(sb, cause);
	/* the root is never dropped: its branch vector is rebuilt in place */
	trace_unionfs_revalidate(sb, "/", old->generation, bt->gen,
				 UNIONFS_RVR_REBUILT, cause);
	/*
	 * The old info goes now, or when the last operation that took it
	 * is done: with it the old branches (a deleted one's mount).
	 */
	unionfs_free_dinfo(old);
	unionfs_bt_put(oldbt);
	shrink_dcache_sb(sb);
	return 0;
}

/*
 * Apply the remount commands in @cmds ("add=..\0del=..\0...\0\0": each
 * NUL-terminated, the list ended by an empty one). Called with s_umount
 * held for writing. Refusals also go to @fc's log (NULL: the ioctl).
 */
int unionfs_remount_branches(struct fs_context *fc, struct super_block *sb,
			     char *cmds, bool sb_ro)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct unionfs_btable *cur, *bt = NULL;
	struct unionfs_work *w;
	enum unionfs_rv_why cause = UNIONFS_RVW_REMOUNT;
	char *cmd, *next;
	int i, err = 0, next_id;
	bool deleted = false;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	mutex_lock(&sbi->bt_lock);
	next_id = sbi->next_branch_id;
	cur = rcu_dereference_protected(sbi->bt,
					lockdep_is_held(&sbi->bt_lock));
	refcount_inc(&cur->ref);	/* its deleted branches: to the decision */
	w->n = cur->nbr;
	for (i = 0; i < cur->nbr; i++) {
		w->br[i] = cur->br[i];
		refcount_inc(&w->br[i]->ref);
		w->mode[i] = READ_ONCE(cur->br[i]->mode);
	}
	for (cmd = cmds; !err && *cmd; cmd = next) {
		next = cmd + strlen(cmd) + 1;	/* before the command edits it */
		if (!strncmp(cmd, "add=", 4)) {
			err = unionfs_cmd_add(fc, sb, w, cmd + 4);
		} else if (!strncmp(cmd, "del=", 4)) {
			err = unionfs_cmd_del(fc, w, cmd + 4);
			deleted = true;
		} else if (!strncmp(cmd, "mode=", 5)) {
			err = unionfs_cmd_mode(fc, w, cmd + 5);
		} else if (!strcmp(cmd, "incgen")) {
			cause = UNIONFS_RVW_INCGEN;
		} else {
			unionfs_refuse(fc, "remount: unknown command '%*pE'",
				       (int)strlen(cmd), cmd);
			err = -EINVAL;
		}
	}
	if (!err && !w->n) {
		unionfs_refuse(fc, "remount: the union would have no branches");
		err = -EINVAL;
	}
	if (!err && !sb_ro && w->mode[0] != UNIONFS_BR_RW) {
		unionfs_refuse(fc, "remount: leftmost branch '%*pE' would be ro on a rw union",
			       (int)strlen(w->br[0]->name), w->br[0]->name);
		err = -EINVAL;
	}
	if (!err) {
		bt = unionfs_bt_alloc(sb, w->n);
		if (!bt)
			err = -ENOMEM;
	}
	if (!err) {
		for (i = 0; i < w->n; i++) {
			bt->br[i] = w->br[i];	/* the work's refs move over */
			w->br[i] = NULL;
		}
		err = unionfs_br_leave(fc, cur, bt);
		if (!err) {
			/*
			 * The modes before the table is live: it never shows
			 * the old ones (a ro branch 0 of a rw union). A mode
			 * is the branch's, so older tables see it too.
			 */
			for (i = 0; i < w->n; i++) {
				w->oldmode[i] = READ_ONCE(bt->br[i]->mode);
				if (w->mode[i] == UNIONFS_BR_RW)
					WRITE_ONCE(bt->br[i]->ever_rw, true);
				WRITE_ONCE(bt->br[i]->mode, w->mode[i]);
			}
			err = unionfs_publish(sb, bt, cause);
			for (i = 0; err && i < w->n; i++)
				WRITE_ONCE(bt->br[i]->mode, w->oldmode[i]);
		}
		/* after the publish: who waited sees the new table */
		unionfs_br_decide(cur, !err);
		if (err) {
			for (i = 0; i < bt->nbr; i++) {
				w->br[i] = bt->br[i];
				bt->br[i] = NULL;
			}
			bt->nbr = 0;
			unionfs_bt_put(bt);
		} else {
			/* an added branch may hold bigger files (never lowered) */
			for (i = 0; i < bt->nbr; i++)
				sb->s_maxbytes = max(sb->s_maxbytes,
						     bt->br[i]->path.mnt->mnt_sb->s_maxbytes);
			/* what unused cached inodes hold of a deleted branch */
			if (deleted)
				unionfs_prune_inodes(sb);
			pr_info("%s: branches changed, generation %d\n",
				sb->s_id, atomic_read(&sbi->generation));
		}
	}
	if (err) {
		sbi->next_branch_id = next_id;
		for (i = 0; i < w->n; i++)
			unionfs_branch_put(w->br[i]);
	}
	mutex_unlock(&sbi->bt_lock);
	unionfs_bt_put(cur);
	kfree(w);
	return err;
}
