// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: branch management at run time.
 *
 *   mount -o remount,CMD[,CMD...] MNT     commands applied left to right:
 *     add=/new[=ro|rw]          insert /new as branch 0 (highest priority)
 *     add=/existing:/new[=m]    insert /new just before /existing
 *     add=:/new[=m]             append /new as the lowest branch
 *     del=/branch               remove a branch (EBUSY while files are open on it)
 *     mode=/branch=ro|rw        change a branch's mode
 *     incgen                    bump the generation only
 *
 * All or nothing: the commands build a new branch table; any error leaves
 * the union exactly as it was. A new table bumps the superblock generation:
 * dentries built against an older table fail d_revalidate and are looked up
 * again; objects still in use (open files, cwd) keep the table they were
 * built with, whose branches stay pinned until the last user goes.
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
	kfree(br);
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
	int added;			/* new branch objects in br[] */
};

static int unionfs_find_branch(struct unionfs_work *w, const char *name,
			       const char *cmd)
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
	pr_warn("remount: %s: '%*pE' is not a branch of this union\n", cmd,
		(int)strlen(name), name);
	return -ENOENT;
}

static int unionfs_parse_mode(const char *s, const char *cmd, int *mode)
{
	if (!strcmp(s, "ro")) {
		*mode = UNIONFS_BR_RO;
	} else if (!strcmp(s, "rw")) {
		*mode = UNIONFS_BR_RW;
	} else {
		pr_warn("remount: %s: unknown branch mode '%*pE' (use ro or rw)\n",
			cmd, (int)strlen(s), s);
		return -EINVAL;
	}
	return 0;
}

/*
 * The inode number space of a branch being added (unionfs_ino()): its file
 * system's, if another branch is on it, else the lowest index no branch of
 * @w uses. The other branches keep theirs, so no number they give changes;
 * w->n < UNIONFS_MAX_BRANCHES <= UNIONFS_FSIDX_MAX, so one is free.
 */
static unsigned int unionfs_pick_fsidx(struct unionfs_work *w,
				       struct unionfs_branch *br)
{
	DECLARE_BITMAP(used, UNIONFS_FSIDX_MAX + 1);
	int i;

	bitmap_zero(used, UNIONFS_FSIDX_MAX + 1);
	for (i = 0; i < w->n; i++) {
		if (w->br[i]->path.mnt->mnt_sb == br->path.mnt->mnt_sb)
			return w->br[i]->fsidx;
		if (w->br[i]->fsidx <= UNIONFS_FSIDX_MAX)
			__set_bit(w->br[i]->fsidx, used);
	}
	return find_first_zero_bit(used, UNIONFS_FSIDX_MAX + 1);
}

static int unionfs_cmd_add(struct super_block *sb, struct unionfs_work *w,
			   char *arg)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct unionfs_branch *br;
	char *colon = strchr(arg, ':'), *path = arg, *eq;
	int pos = 0, mode = UNIONFS_BR_RW, i, err;

	if (colon) {
		*colon = '\0';
		path = colon + 1;
		if (!*arg) {
			pos = w->n;		/* add=:/new appends */
		} else {
			pos = unionfs_find_branch(w, arg, "add");
			if (pos < 0)
				return pos;
		}
	}
	eq = strrchr(path, '=');
	if (eq) {
		*eq = '\0';
		err = unionfs_parse_mode(eq + 1, "add", &mode);
		if (err)
			return err;
	}
	if (!*path) {
		pr_warn("remount: add: empty branch path\n");
		return -EINVAL;
	}
	if (w->n >= UNIONFS_MAX_BRANCHES) {
		pr_warn("remount: add: '%*pE' would make more than %d branches\n",
			(int)strlen(path), path, UNIONFS_MAX_BRANCHES);
		return -E2BIG;
	}
	br = kzalloc(sizeof(*br), GFP_KERNEL);
	if (!br)
		return -ENOMEM;
	refcount_set(&br->ref, 1);
	err = kern_path(path, LOOKUP_FOLLOW, &br->path);
	if (err) {
		pr_warn("remount: add: '%*pE': lookup failed (%d)\n", (int)strlen(path), path, err);
		kfree(br);
		return err;
	}
	br->name = NULL;
	err = -ENOTDIR;
	if (!d_is_dir(br->path.dentry)) {
		pr_warn("remount: add: '%*pE' is not a directory\n", (int)strlen(path), path);
		goto out_put;
	}
	err = -EROFS;
	if (mode == UNIONFS_BR_RW && unionfs_path_rdonly(&br->path)) {
		pr_warn("remount: add: '%*pE' is read-write but its file system is mounted read-only (give =ro)\n",
			(int)strlen(path), path);
		goto out_put;
	}
	err = -EINVAL;
	if (br->path.dentry->d_sb->s_type == &unionfs_fs_type ||
	    br->path.mnt->mnt_sb->s_stack_depth + 1 > sb->s_stack_depth) {
		pr_warn("remount: add: '%*pE' is a union or too deep a stack\n",
			(int)strlen(path), path);
		goto out_put;
	}
	for (i = 0; i < w->n; i++) {
		struct unionfs_branch *o = w->br[i];

		if (o->path.dentry->d_sb == br->path.dentry->d_sb &&
		    (is_subdir(o->path.dentry, br->path.dentry) ||
		     is_subdir(br->path.dentry, o->path.dentry))) {
			pr_warn("remount: add: '%*pE' overlaps branch '%*pE'\n",
				(int)strlen(path), path, (int)strlen(o->name), o->name);
			goto out_put;
		}
	}
	br->name = kstrdup(path, GFP_KERNEL);
	{
		char *buf = kmalloc(PATH_MAX, GFP_KERNEL), *p;

		if (buf) {
			p = d_path(&br->path, buf, PATH_MAX);
			if (!IS_ERR(p)) {
				kfree(br->name);
				br->name = kstrdup(p, GFP_KERNEL);
			}
			kfree(buf);
		}
	}
	err = -ENOMEM;
	if (!br->name)
		goto out_put;
	err = unionfs_branch_hold(br);
	if (err) {
		pr_warn("remount: add: '%*pE': cannot hold a private mount of it (%d)\n",
			(int)strlen(path), path, err);
		goto out_put;
	}
	br->id = sbi->next_branch_id;	/* committed only on success */
	br->fsidx = unionfs_pick_fsidx(w, br);
	atomic_set(&br->open_files, 0);
	memmove(&w->br[pos + 1], &w->br[pos], (w->n - pos) * sizeof(w->br[0]));
	memmove(&w->mode[pos + 1], &w->mode[pos],
		(w->n - pos) * sizeof(w->mode[0]));
	w->br[pos] = br;
	w->mode[pos] = mode;
	br->mode = mode;
	w->n++;
	w->added++;
	sbi->next_branch_id++;
	return 0;
out_put:
	unionfs_branch_put(br);
	return err;
}

static int unionfs_cmd_del(struct unionfs_work *w, char *arg)
{
	int i = unionfs_find_branch(w, arg, "del");

	if (i < 0)
		return i;
	if (atomic_read(&w->br[i]->open_files)) {
		pr_warn("remount: del: branch '%*pE' has %d open files\n",
			(int)strlen(w->br[i]->name), w->br[i]->name,
			atomic_read(&w->br[i]->open_files));
		return -EBUSY;
	}
	unionfs_branch_put(w->br[i]);
	memmove(&w->br[i], &w->br[i + 1], (w->n - i - 1) * sizeof(w->br[0]));
	memmove(&w->mode[i], &w->mode[i + 1],
		(w->n - i - 1) * sizeof(w->mode[0]));
	w->n--;
	return 0;
}

static int unionfs_cmd_mode(struct unionfs_work *w, char *arg)
{
	char *eq = strrchr(arg, '=');
	int i, mode, err;

	if (!eq) {
		pr_warn("remount: mode: expected mode=/branch=ro|rw, got '%*pE'\n",
			(int)strlen(arg), arg);
		return -EINVAL;
	}
	*eq = '\0';
	err = unionfs_parse_mode(eq + 1, "mode", &mode);
	if (err)
		return err;
	i = unionfs_find_branch(w, arg, "mode");
	if (i < 0)
		return i;
	if (mode == UNIONFS_BR_RW && unionfs_path_rdonly(&w->br[i]->path)) {
		pr_warn("remount: mode: branch '%*pE' is on a file system mounted read-only\n",
			(int)strlen(w->br[i]->name), w->br[i]->name);
		return -EROFS;
	}
	w->mode[i] = mode;
	return 0;
}

void unionfs_bump_gen(struct super_block *sb, const char *cause)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	int old = atomic_read(&sbi->generation);

	atomic_inc(&sbi->generation);
	trace_unionfs_gen_bump(sb, old, old + 1, cause);
}

/* Publish @bt: rebuild the root against it and bump the generation. */
static int unionfs_publish(struct super_block *sb, struct unionfs_btable *bt,
			   const char *cause)
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
	WRITE_ONCE(root->d_fsdata, ud);
	list_add(&old->retired, &sbi->retired);	/* in-flight users */

	oldbt = rcu_dereference_protected(sbi->bt,
					  lockdep_is_held(&sbi->bt_lock));
	rcu_assign_pointer(sbi->bt, bt);
	unionfs_bump_gen(sb, cause);
	/* the root is never dropped: its branch vector is rebuilt in place */
	trace_unionfs_revalidate(sb, "/", old->generation, bt->gen, "rebuilt",
				 cause);
	unionfs_bt_put(oldbt);
	shrink_dcache_sb(sb);
	return 0;
}

/*
 * Apply the remount commands in @cmds ("add=..\0del=..\0...\0\0": each
 * NUL-terminated, the list ended by an empty one). Called with s_umount
 * held for writing.
 */
int unionfs_remount_branches(struct super_block *sb, char *cmds, bool sb_ro)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);
	struct unionfs_btable *cur, *bt = NULL;
	struct unionfs_work *w;
	char *cmd, *next, *cause = "remount";
	int i, err = 0, next_id;
	bool deleted = false;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	mutex_lock(&sbi->bt_lock);
	next_id = sbi->next_branch_id;
	cur = rcu_dereference_protected(sbi->bt,
					lockdep_is_held(&sbi->bt_lock));
	w->n = cur->nbr;
	for (i = 0; i < cur->nbr; i++) {
		w->br[i] = cur->br[i];
		refcount_inc(&w->br[i]->ref);
		w->mode[i] = READ_ONCE(cur->br[i]->mode);
	}
	for (cmd = cmds; !err && *cmd; cmd = next) {
		next = cmd + strlen(cmd) + 1;	/* before the command edits it */
		if (!strncmp(cmd, "add=", 4)) {
			err = unionfs_cmd_add(sb, w, cmd + 4);
		} else if (!strncmp(cmd, "del=", 4)) {
			err = unionfs_cmd_del(w, cmd + 4);
			deleted = true;
		} else if (!strncmp(cmd, "mode=", 5)) {
			err = unionfs_cmd_mode(w, cmd + 5);
		} else if (!strcmp(cmd, "incgen")) {
			if (cause[0] == 'r')
				cause = "incgen";
		} else {
			pr_warn("remount: unknown command '%*pE'\n", (int)strlen(cmd), cmd);
			err = -EINVAL;
		}
	}
	if (!err && !w->n) {
		pr_warn("remount: the union would have no branches\n");
		err = -EINVAL;
	}
	if (!err && !sb_ro && w->mode[0] != UNIONFS_BR_RW) {
		pr_warn("remount: leftmost branch '%*pE' would be ro on a rw union\n",
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
		err = unionfs_publish(sb, bt, cause);
		if (err) {
			for (i = 0; i < bt->nbr; i++) {
				w->br[i] = bt->br[i];
				bt->br[i] = NULL;
			}
			bt->nbr = 0;
			unionfs_bt_put(bt);
		} else {
			for (i = 0; i < w->n; i++)
				WRITE_ONCE(bt->br[i]->mode, w->mode[i]);
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
	kfree(w);
	return err;
}
