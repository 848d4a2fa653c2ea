// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: module init, mount options (fs_context), superblock operations.
 */
#include "union.h"
#include "lower.h"

#include <linux/random.h>

#include <linux/module.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/seq_file.h>
#include <linux/statfs.h>
#include <linux/xattr.h>

#define CREATE_TRACE_POINTS
#include "unionfs_trace.h"

static struct kmem_cache *unionfs_inode_cachep;

/* --- inode cache ------------------------------------------------------ */

static struct inode *unionfs_alloc_inode(struct super_block *sb)
{
	struct unionfs_inode_info *ui;

	ui = alloc_inode_sb(sb, unionfs_inode_cachep, GFP_KERNEL);
	if (!ui)
		return NULL;
	RCU_INIT_POINTER(ui->vec, NULL);
	ui->key = NULL;
	ui->dir_version = 1;
	ui->rdcache = NULL;
	ui->ix_lower = -1;
	ui->ix_publish = false;
	ui->prot = 0;
	return &ui->vfs_inode;
}

static void unionfs_free_inode(struct inode *inode)
{
	kmem_cache_free(unionfs_inode_cachep, UNIONFS_I(inode));
}

static void unionfs_evict_inode(struct inode *inode)
{
	struct unionfs_inode_info *ui = UNIONFS_I(inode);

	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	unionfs_rdcache_put(ui->rdcache);
	ui->rdcache = NULL;
	/* permission() may still read it in RCU walk: freed after a GP */
	unionfs_ivec_free(rcu_replace_pointer(ui->vec, NULL, true));
}

/*
 * Called by iput_final() with i_lock held. An unused union inode stays cached
 * (like any other), but not one whose branch copy was unlinked in the branch
 * behind our back: its reference would keep the removed file, and its
 * blocks, allocated until memory reclaim (seen: a 256 MiB tmpfs branch full
 * of files deleted directly while the union cached them).
 */
static int unionfs_drop_inode(struct inode *inode)
{
	struct unionfs_ivec *vec;
	int b;

	if (generic_drop_inode(inode))
		return 1;
	vec = rcu_dereference_protected(UNIONFS_I(inode)->vec,
					lockdep_is_held(&inode->i_lock));
	if (!vec)
		return 1;
	/* built on a replaced branch table: its references may pin a branch */
	if (vec->bt != rcu_access_pointer(UNIONFS_SB(inode->i_sb)->bt))
		return 1;
	for (b = max(vec->bstart, 0); b <= vec->bend && b < vec->nbr; b++)
		if (vec->lower[b] && !vec->lower[b]->i_nlink)
			return 1;
	return 0;
}

/*
 * After a del=: evict the unused cached inodes built on an older table
 * (unionfs_drop_inode drops them at their last iput), so that they release
 * what they hold of the deleted branch now rather than at memory reclaim.
 * Same walk as drop_pagecache_sb(); called with s_umount held.
 */
void unionfs_prune_inodes(struct super_block *sb)
{
	struct inode *inode, *toput = NULL;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		spin_lock(&inode->i_lock);
		if ((inode->i_state & (I_FREEING | I_WILL_FREE | I_NEW)) ||
		    atomic_read(&inode->i_count)) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		iput(toput);
		toput = inode;
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(toput);
}

static void unionfs_inode_once(void *p)
{
	struct unionfs_inode_info *ui = p;

	inode_init_once(&ui->vfs_inode);
	mutex_init(&ui->cu_lock);
}

/* --- superblock -------------------------------------------------------- */

static void unionfs_free_sbi(struct unionfs_sb_info *sbi)
{
	if (!sbi)
		return;
	unionfs_tmp_unregister(sbi);
	WARN_ON_ONCE(atomic_long_read(&sbi->ndinfo));
	unionfs_bt_put(rcu_dereference_protected(sbi->bt, 1));
	if (sbi->creator_cred)
		put_cred(sbi->creator_cred);
	kfree(sbi);
}

const struct cred *unionfs_override_creds(struct super_block *sb)
{
	return override_creds(UNIONFS_SB(sb)->creator_cred);
}

static int unionfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct unionfs_btable *bt = unionfs_bt_get(dentry->d_sb);
	int err;

	err = unionfs_do_statfs(bt, 0, buf);
	unionfs_bt_put(bt);
	if (err)
		return err;
	buf->f_type = UNIONFS_SUPER_MAGIC;
	if (buf->f_namelen > UNIONFS_WHLEN)
		buf->f_namelen -= UNIONFS_WHLEN;
	return 0;
}

/*
 * A branch path in dirs= as unionfs_opt_unescape() reads it back: ':', '='
 * and '\' after a '\'; ',', whitespace and control characters as octal
 * \ooo (as seq_show_option() does: mount(2)'s option string splits at ',',
 * mountinfo's fields at whitespace).
 */
static void unionfs_show_path(struct seq_file *m, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == ':' || c == '=' || c == '\\') {
			seq_putc(m, '\\');
			seq_putc(m, c);
		} else if (c <= ' ' || c == ',' || c == 0x7f) {
			seq_printf(m, "\\%03o", c);
		} else {
			seq_putc(m, c);
		}
	}
}

static int unionfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct unionfs_btable *bt = unionfs_bt_get(root->d_sb);
	int i;

	seq_puts(m, ",dirs=");
	for (i = 0; i < bt->nbr; i++) {
		struct unionfs_branch *br = bt->br[i];

		if (i)
			seq_putc(m, ':');
		unionfs_show_path(m, br->name);
		seq_printf(m, "=%s", READ_ONCE(br->mode) == UNIONFS_BR_RW ?
			   "rw" : "ro");
	}
	unionfs_bt_put(bt);
	if (UNIONFS_SB(root->d_sb)->coherency != UNIONFS_COH_REVAL)
		seq_printf(m, ",coherency=%s",
			   unionfs_coherency_names[UNIONFS_SB(root->d_sb)->coherency]);
	if (UNIONFS_SB(root->d_sb)->markers != UNIONFS_MARKERS_UNIONFS)
		seq_printf(m, ",markers=%s",
			   unionfs_markers_names[UNIONFS_SB(root->d_sb)->markers]);
	return 0;
}

/*
 * syncfs(2) on the union: sync once the file system of every branch the
 * union may have written (unionfs_br_syncable: also one made read-only by
 * mode= since; branches often share one). Only with @wait: sync_filesystem() of a branch
 * does its own nowait pass then its waiting pass, so doing it for the
 * union's nowait call too would only write twice. sync(2) and emergency
 * sync skip us (SB_I_SKIP_SYNC): they walk every superblock, the branches'
 * included. The branch's s_umount is taken shared, as overlayfs does for its
 * upper layer: a frozen branch makes sync_filesystem() return at once (its
 * data is already on disk), and a branch being frozen waits for us, never
 * the other way round, since we hold nothing it needs.
 */
static int unionfs_sync_fs(struct super_block *sb, int wait)
{
	struct unionfs_btable *bt;
	int i, j, err, ret = 0;

	if (!wait)
		return 0;
	bt = unionfs_bt_get(sb);
	for (i = 0; i < bt->nbr; i++) {
		struct super_block *lsb = bt->br[i]->path.mnt->mnt_sb;

		if (!unionfs_br_syncable(bt->br[i]))
			continue;
		for (j = 0; j < i; j++)
			if (bt->br[j]->path.mnt->mnt_sb == lsb &&
			    unionfs_br_syncable(bt->br[j]))
				break;
		if (j < i)
			continue;	/* this file system is done */
		err = unionfs_do_sync_fs(bt, i);
		if (err && !ret)
			ret = err;
	}
	unionfs_bt_put(bt);
	/* syncfs(2) reports errors through the union's writeback errseq */
	if (ret)
		errseq_set(&sb->s_wb_err, ret);
	return ret;
}

static const struct super_operations unionfs_sops = {
	.alloc_inode	= unionfs_alloc_inode,
	.free_inode	= unionfs_free_inode,
	.evict_inode	= unionfs_evict_inode,
	.drop_inode	= unionfs_drop_inode,
	.statfs		= unionfs_statfs,
	.sync_fs	= unionfs_sync_fs,
	.show_options	= unionfs_show_options,
};

/* --- mount options ----------------------------------------------------- */

struct unionfs_branch_spec {
	char *path;
	int mode;
};

struct unionfs_fs_context {
	char *dirs;			/* raw dirs= value */
	int nspecs;
	struct unionfs_branch_spec *specs;
	char *cmds;			/* remount commands, NUL-terminated,
					 * the list ended by an empty one
					 */
	size_t cmdlen;
	int coherency;			/* UNIONFS_COH_*, -1: not given */
	int markers;			/* UNIONFS_MARKERS_*, -1: not given */
};

enum {
	OPT_DIRS, OPT_ADD, OPT_DEL, OPT_MODE, OPT_INCGEN, OPT_COHERENCY,
	OPT_MARKERS,
};

static const struct constant_table unionfs_coherency_tbl[] = {
	{ "none",	UNIONFS_COH_NONE },
	{ "reval",	UNIONFS_COH_REVAL },
	{ "notify",	UNIONFS_COH_NOTIFY },
	{}
};

static const struct constant_table unionfs_markers_tbl[] = {
	{ "unionfs",	UNIONFS_MARKERS_UNIONFS },
	{ "oci",	UNIONFS_MARKERS_OCI },
	{}
};

const char *const unionfs_markers_names[] = {
	[UNIONFS_MARKERS_UNIONFS]	= "unionfs",
	[UNIONFS_MARKERS_OCI]		= "oci",
};

static const struct fs_parameter_spec unionfs_param_specs[] = {
	__fsparam(fs_param_is_string, "dirs", OPT_DIRS, fs_param_can_be_empty,
		  NULL),
	fsparam_string("add", OPT_ADD),
	fsparam_string("del", OPT_DEL),
	fsparam_string("mode", OPT_MODE),
	fsparam_flag("incgen", OPT_INCGEN),
	fsparam_string("coherency", OPT_COHERENCY),
	fsparam_string("markers", OPT_MARKERS),
	{}
};

/*
 * Queue a remount command; they run in order in ->reconfigure. Each is
 * NUL-terminated (a path may hold any other byte, newline included: a
 * separator that can be in a path could split one command into two).
 */
static int unionfs_add_cmd(struct unionfs_fs_context *ctx, const char *key,
			   const char *val)
{
	size_t len = strlen(key) + (val ? strlen(val) + 1 : 0) + 1;
	char *p = krealloc(ctx->cmds, ctx->cmdlen + len + 1, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	ctx->cmds = p;
	ctx->cmdlen += sprintf(p + ctx->cmdlen, val ? "%s=%s" : "%s",
			       key, val) + 1;
	p[ctx->cmdlen] = '\0';		/* the end of the list */
	return 0;
}

static void unionfs_free_specs(struct unionfs_fs_context *ctx)
{
	kfree(ctx->specs);
	ctx->specs = NULL;
	ctx->nspecs = 0;
}

/*
 * Branch paths in option values (dirs=, add=, del=, mode=) may hold any
 * byte: "\:" "\=" "\\" "\," and octal "\ooo" (\040 a space, \054 a comma:
 * mount(2)'s option string is split at every ',') stand for the byte, as
 * unionfs_show_path() prints them. An unescaped ':' or '=' separates.
 */

/*
 * A refused mount or remount request: one kernel log line, and the same
 * message in the fs_context log of an fsconfig(2) caller (read(2) of its fs
 * fd gives "e unionfs: ..."); mount(2) callers have no log (fc->log.log).
 * @fc may be NULL (the INCGEN ioctl).
 */
void unionfs_refuse(struct fs_context *fc, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_warn("%pV\n", &vaf);
	if (fc && fc->log.log)
		logfc(fc->log.log, fc->log.prefix, 'e', "%pV", &vaf);
	va_end(args);
}

/* The first (or, @last, the last) unescaped @c in @s, or NULL. */
char *unionfs_opt_find(char *s, char c, bool last)
{
	char *found = NULL;

	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (*s == c) {
			found = s;
			if (!last)
				break;
		}
	}
	return found;
}

static bool unionfs_isodigit(char c)
{
	return c >= '0' && c <= '7';
}

/* The length of the escape at @p (a '\\'), or 0 if it is not one. */
static int unionfs_escape_len(const char *p)
{
	if (p[1] == ':' || p[1] == '=' || p[1] == '\\' || p[1] == ',')
		return 2;
	if (p[1] >= '0' && p[1] <= '3' && unionfs_isodigit(p[2]) &&
	    unionfs_isodigit(p[3]) && (p[1] != '0' || p[2] != '0' || p[3] != '0'))
		return 4;
	return 0;
}

/*
 * Decode the escapes of @s in place; on a bad one, one message "CTX: bad
 * escape ..." and -EINVAL, @s unchanged.
 */
int unionfs_opt_unescape(struct fs_context *fc, char *s, const char *ctx)
{
	char *p, *d = s;
	int len;

	for (p = s; *p; p++) {
		if (*p != '\\')
			continue;
		len = unionfs_escape_len(p);
		if (!len) {
			unionfs_refuse(fc,
				       "%s: bad escape in '%*pE' (use \\: \\= \\\\ \\, or \\ooo)",
				       ctx, (int)strlen(s), s);
			return -EINVAL;
		}
		p += len - 1;
	}
	for (p = s; *p; ) {
		if (*p != '\\') {
			*d++ = *p++;
			continue;
		}
		len = unionfs_escape_len(p);
		if (len == 2)
			*d++ = p[1];
		else
			*d++ = ((p[1] - '0') << 6) | ((p[2] - '0') << 3) |
			       (p[3] - '0');
		p += len;
	}
	*d = '\0';
	return 0;
}

/*
 * Split "dirs=/a[=rw]:/b[=ro]:..." into branch specs. The specs point into
 * ctx->dirs, which is modified in place (separators cut, escapes decoded).
 */
static int unionfs_parse_dirs(struct fs_context *fc,
			      struct unionfs_fs_context *ctx)
{
	char *elem, *next;
	int n = 0, i = 0, err;

	if (!*ctx->dirs) {
		unionfs_refuse(fc, "mount: empty branch list in dirs=");
		return -EINVAL;
	}
	for (elem = ctx->dirs; elem; n++) {
		next = unionfs_opt_find(elem, ':', false);
		elem = next ? next + 1 : NULL;
	}
	if (n > UNIONFS_MAX_BRANCHES) {
		unionfs_refuse(fc, "mount: %d branches given, at most %d supported",
			       n, UNIONFS_MAX_BRANCHES);
		return -E2BIG;
	}
	ctx->specs = kcalloc(n, sizeof(*ctx->specs), GFP_KERNEL);
	if (!ctx->specs)
		return -ENOMEM;
	for (elem = ctx->dirs; elem; elem = next) {
		int mode = UNIONFS_BR_RW;
		char what[24], *eq;

		next = unionfs_opt_find(elem, ':', false);
		if (next)
			*next++ = '\0';
		snprintf(what, sizeof(what), "mount: branch %d", i);
		eq = unionfs_opt_find(elem, '=', true);
		if (eq) {
			mode = unionfs_parse_mode(fc, eq + 1, what);
			if (mode < 0) {
				err = mode;
				goto fail;
			}
			*eq = '\0';
		}
		if (!*elem) {
			unionfs_refuse(fc, "%s has an empty path", what);
			err = -EINVAL;
			goto fail;
		}
		err = unionfs_opt_unescape(fc, elem, what);
		if (err)
			goto fail;
		ctx->specs[i].path = elem;
		ctx->specs[i].mode = mode;
		i++;
	}
	ctx->nspecs = i;
	return 0;
fail:
	unionfs_free_specs(ctx);
	return err;
}

static int unionfs_parse_param(struct fs_context *fc,
			       struct fs_parameter *param)
{
	struct unionfs_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	if (!strcmp(param->key, "source"))
		return -ENOPARAM;	/* the VFS takes the device name */

	opt = fs_parse(fc, unionfs_param_specs, param, &result);
	if (opt == -ENOPARAM) {
		unionfs_refuse(fc, "mount: unknown option '%*pE'",
			       (int)strlen(param->key), param->key);
		return -EINVAL;
	}
	if (opt < 0)
		return opt;

	if (opt == OPT_COHERENCY) {
		int c = lookup_constant(unionfs_coherency_tbl, param->string,
					-1);

		if (c < 0) {
			unionfs_refuse(fc,
				       "mount: unknown coherency '%*pE' (use none, reval or notify)",
				       (int)strlen(param->string), param->string);
			return -EINVAL;
		}
		ctx->coherency = c;
		return 0;
	}
	if (opt == OPT_MARKERS) {
		int m = lookup_constant(unionfs_markers_tbl, param->string, -1);

		if (m < 0) {
			unionfs_refuse(fc, "mount: unknown markers '%*pE' (use unionfs or oci)",
				       (int)strlen(param->string), param->string);
			return -EINVAL;
		}
		ctx->markers = m;
		return 0;
	}
	if (opt != OPT_DIRS &&
	    fc->purpose != FS_CONTEXT_FOR_RECONFIGURE) {
		unionfs_refuse(fc, "mount: '%*pE' is a remount command (mount -o remount,%s=...)",
			       (int)strlen(param->key), param->key, param->key);
		return -EINVAL;
	}
	switch (opt) {
	case OPT_DIRS:
		kfree(ctx->dirs);
		unionfs_free_specs(ctx);
		ctx->dirs = param->string;
		param->string = NULL;
		break;
	case OPT_INCGEN:
		return unionfs_add_cmd(ctx, param->key, NULL);
	default:
		return unionfs_add_cmd(ctx, param->key, param->string);
	}
	return 0;
}

/* Build the branches of @ctx into the table @bt (unionfs_branch_new). */
static int unionfs_setup_branches(struct fs_context *fc,
				  struct unionfs_sb_info *sbi,
				  struct unionfs_btable *bt,
				  struct unionfs_fs_context *ctx,
				  int *stack_depth)
{
	int i;

	*stack_depth = 0;
	for (i = 0; i < ctx->nspecs; i++) {
		struct unionfs_branch *br;
		char what[24];

		snprintf(what, sizeof(what), "mount: branch %d", i);
		br = unionfs_branch_new(fc, NULL, ctx->specs[i].path,
					ctx->specs[i].mode, bt->br, i, what);
		if (IS_ERR(br))
			return PTR_ERR(br);	/* kill_sb puts bt->br[0..i-1] */
		br->id = sbi->next_branch_id++;
		bt->br[i] = br;
		bt->nbr = i + 1;
		*stack_depth = max(*stack_depth,
				   br->path.mnt->mnt_sb->s_stack_depth);
	}
	return 0;
}

/* A crash's leftover temporaries in the writable branch roots (copyup.c). */
static void unionfs_clean_roots(struct super_block *sb,
				struct unionfs_btable *bt)
{
	const struct cred *old;
	int i;

	if (sb_rdonly(sb))
		return;
	old = unionfs_override_creds(sb);
	for (i = 0; i < bt->nbr; i++)
		unionfs_clean_leftovers(bt, i, bt->br[i]->path.dentry);
	revert_creds(old);
}

static int unionfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct unionfs_fs_context *ctx = fc->fs_private;
	struct unionfs_sb_info *sbi;
	struct unionfs_dentry_info *ud;
	struct unionfs_btable *bt;
	struct inode *inode;
	int err, depth, i;
	loff_t maxbytes = 0;

	if (!ctx->dirs) {
		unionfs_refuse(fc,
			       "mount: missing dirs= option (dirs=/branch0[=rw]:/branch1[=ro]:...)");
		return -EINVAL;
	}
	if (!ctx->specs) {
		err = unionfs_parse_dirs(fc, ctx);
		if (err)
			return err;
	}

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sbi->sb = sb;
	atomic_set(&sbi->generation, 1);
	/*
	 * Temporary names continue from a random point: a leftover of an
	 * earlier mount (a crash mid copy-up) never takes a name this mount
	 * needs (the counter used to restart at 1: EEXIST on copy-up).
	 */
	atomic64_set(&sbi->tmp_seq, get_random_u64() >> 2);
	unionfs_tmp_register(sbi);	/* leftovers: copyup.c */
	mutex_init(&sbi->bt_lock);
	mutex_init(&sbi->ix_lock);
	mutex_init(&sbi->nmutex);
	spin_lock_init(&sbi->actor_lock);
	INIT_LIST_HEAD(&sbi->actors);
	sbi->coherency = ctx->coherency < 0 ? UNIONFS_COH_REVAL : ctx->coherency;
	sbi->markers = ctx->markers < 0 ? UNIONFS_MARKERS_UNIONFS : ctx->markers;
	sb->s_fs_info = sbi;
	err = unionfs_notify_init(sb);
	if (err)
		return err;

	bt = unionfs_bt_alloc(sb, ctx->nspecs);
	if (!bt)
		return -ENOMEM;
	bt->gen = 1;
	RCU_INIT_POINTER(sbi->bt, bt);
	err = unionfs_setup_branches(fc, sbi, bt, ctx, &depth);
	if (err)
		return err;	/* kill_sb frees sbi and the table */

	if (!(fc->sb_flags & SB_RDONLY) &&
	    bt->br[0]->mode != UNIONFS_BR_RW) {
		unionfs_refuse(fc,
			       "mount: leftmost branch '%*pE' must be rw unless the union is mounted ro",
			       (int)strlen(bt->br[0]->name), bt->br[0]->name);
		return -EINVAL;
	}

	sbi->creator_cred = prepare_creds();
	if (!sbi->creator_cred)
		return -ENOMEM;

	for (i = 0; i < bt->nbr; i++)
		maxbytes = max(maxbytes,
			       bt->br[i]->path.mnt->mnt_sb->s_maxbytes);

	sb->s_stack_depth = depth + 1;
	sb->s_magic = UNIONFS_SUPER_MAGIC;
	sb->s_op = &unionfs_sops;
	sb->s_d_op = &unionfs_dops;
	sb->s_xattr = unionfs_xattr_handlers;
	sb->s_maxbytes = maxbytes;
	sb->s_time_gran = 1;
	sb->s_flags |= SB_POSIXACL;
	sb->s_iflags |= SB_I_SKIP_SYNC;	/* sync(2) syncs the branches itself */

	ud = unionfs_root_dinfo(bt);
	if (!ud)
		return -ENOMEM;

	inode = unionfs_iget(sb, ud, false);
	if (IS_ERR(inode)) {
		unionfs_free_dinfo(ud);
		return PTR_ERR(inode);
	}
	sb->s_root = d_make_root(inode);
	if (!sb->s_root) {
		unionfs_free_dinfo(ud);
		return -ENOMEM;
	}
	sb->s_root->d_fsdata = ud;
	unionfs_debugfs_mount(sb);
	unionfs_clean_roots(sb, bt);
	return unionfs_sysfs_mount(sb);
}

static int unionfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, unionfs_fill_super);
}

static int unionfs_reconfigure(struct fs_context *fc)
{
	struct unionfs_fs_context *ctx = fc->fs_private;
	struct super_block *sb = fc->root->d_sb;
	struct unionfs_btable *bt;
	bool ro = fc->sb_flags & SB_RDONLY;
	int i, err = 0;

	if (ctx->coherency >= 0 &&
	    ctx->coherency != UNIONFS_SB(sb)->coherency) {
		unionfs_refuse(fc,
			       "remount: coherency=%s: the coherency mode is chosen at mount time (now %s)",
			       unionfs_coherency_names[ctx->coherency],
			       unionfs_coherency_names[UNIONFS_SB(sb)->coherency]);
		return -EINVAL;
	}
	if (ctx->markers >= 0 && ctx->markers != UNIONFS_SB(sb)->markers) {
		unionfs_refuse(fc,
			       "remount: markers=%s: the markers are chosen at mount time (now %s)",
			       unionfs_markers_names[ctx->markers],
			       unionfs_markers_names[UNIONFS_SB(sb)->markers]);
		return -EINVAL;
	}
	sync_filesystem(sb);
	bt = unionfs_bt_get(sb);
	if (ctx->dirs) {
		/* mount(8) passes dirs= back on remount: accept it unchanged */
		if (!ctx->specs) {
			err = unionfs_parse_dirs(fc, ctx);
			if (err)
				goto out;
		}
		if (ctx->nspecs != bt->nbr)
			goto changed;
		for (i = 0; i < ctx->nspecs; i++) {
			struct path path;
			bool same;

			if (kern_path(ctx->specs[i].path, LOOKUP_FOLLOW, &path))
				goto changed;
			same = unionfs_branch_is(bt->br[i], &path) &&
			       ctx->specs[i].mode == READ_ONCE(bt->br[i]->mode);
			path_put(&path);
			if (!same)
				goto changed;
		}
	}
	if (ctx->cmds) {
		err = unionfs_remount_branches(fc, sb, ctx->cmds, ro);
		goto out;
	}
	if (!ro && !unionfs_branch_rw_mode(bt, 0)) {
		unionfs_refuse(fc, "remount: leftmost branch '%*pE' is ro; the union must stay ro",
			       (int)strlen(bt->br[0]->name), bt->br[0]->name);
		err = -EINVAL;
	}
	goto out;
changed:
	unionfs_refuse(fc, "remount: dirs= cannot change the branch list; use add=, del= or mode=");
	err = -EINVAL;
out:
	unionfs_bt_put(bt);
	return err;
}

static void unionfs_free_fc(struct fs_context *fc)
{
	struct unionfs_fs_context *ctx = fc->fs_private;

	if (!ctx)
		return;
	unionfs_free_specs(ctx);
	kfree(ctx->dirs);
	kfree(ctx->cmds);
	kfree(ctx);
}

static const struct fs_context_operations unionfs_context_ops = {
	.parse_param	= unionfs_parse_param,
	.get_tree	= unionfs_get_tree,
	.reconfigure	= unionfs_reconfigure,
	.free		= unionfs_free_fc,
};

static int unionfs_init_fs_context(struct fs_context *fc)
{
	struct unionfs_fs_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->coherency = -1;
	ctx->markers = -1;
	fc->fs_private = ctx;
	fc->ops = &unionfs_context_ops;
	return 0;
}

static void unionfs_kill_sb(struct super_block *sb)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(sb);

	if (sbi) {
		unionfs_sysfs_umount(sb);
		unionfs_debugfs_umount(sb);
	}
	kill_anon_super(sb);
	/* evicted inodes release their branch references asynchronously */
	unionfs_inode_wq_flush();
	if (sbi)
		unionfs_notify_exit(sb);
	unionfs_free_sbi(sbi);
}

struct file_system_type unionfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "unionfs",
	.init_fs_context	= unionfs_init_fs_context,
	.parameters		= unionfs_param_specs,
	.kill_sb		= unionfs_kill_sb,
};
MODULE_ALIAS_FS("unionfs");

static int __init unionfs_init(void)
{
	int err;

	unionfs_inode_cachep =
		kmem_cache_create("unionfs_inode_cache",
				  sizeof(struct unionfs_inode_info), 0,
				  SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
				  unionfs_inode_once);
	if (!unionfs_inode_cachep)
		return -ENOMEM;
	err = unionfs_inode_wq_init();
	if (err)
		goto out_cache;
	err = unionfs_debugfs_init();
	if (err)
		goto out_wq;
	err = unionfs_sysfs_init();
	if (err)
		goto out_debugfs;
	err = register_filesystem(&unionfs_fs_type);
	if (err)
		goto out_sysfs;
	pr_info("loaded (max %d branches)\n", UNIONFS_MAX_BRANCHES);
	return 0;
out_sysfs:
	unionfs_sysfs_exit();
out_debugfs:
	unionfs_debugfs_exit();
out_wq:
	unionfs_inode_wq_exit();
out_cache:
	kmem_cache_destroy(unionfs_inode_cachep);
	return err;
}

static void __exit unionfs_exit(void)
{
	unregister_filesystem(&unionfs_fs_type);
	unionfs_sysfs_exit();
	unionfs_debugfs_exit();
	unionfs_inode_wq_exit();
	rcu_barrier();
	kmem_cache_destroy(unionfs_inode_cachep);
	pr_info("unloaded\n");
}

module_init(unionfs_init);
module_exit(unionfs_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Namespace-unification filesystem (unionfs)");
MODULE_AUTHOR("unionfs for modern Linux developers");
#ifndef UNIONFS_VERSION
#define UNIONFS_VERSION "unknown"
#endif
MODULE_VERSION(UNIONFS_VERSION);
