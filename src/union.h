/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unionfs: a namespace-unification filesystem for Linux 6.1.
 *
 * Design after "Unionfs try #4" (2007): branches with priorities and
 * ro/rw modes, lookup by priority, whiteouts ".wh.NAME", opaque directories
 * ".wh.__dir_opaque", duplicate elimination, copy-up, generation numbers.
 */
#ifndef _UNIONFS_UNION_H
#define _UNIONFS_UNION_H

#define pr_fmt(fmt) "unionfs: " fmt

#include <linux/fs.h>
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/rcupdate.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/jump_label.h>

#define UNIONFS_SUPER_MAGIC	0xf15f083d
#define UNIONFS_MAX_BRANCHES	128

#define UNIONFS_WHPFX		".wh."
#define UNIONFS_WHLEN		4
#define UNIONFS_DIR_OPAQUE	".wh.__dir_opaque"
#define UNIONFS_DIR_OPAQUE_LEN	16
/* Temporary names: a whiteout of ".wh.*", which no union name can be. */
#define UNIONFS_TMPPFX		".wh..wh.unionfs."

/* branch modes */
#define UNIONFS_BR_RO		0
#define UNIONFS_BR_RW		1

struct unionfs_branch {
	struct path path;	/* branch root (holds the mount and dentry) */
	char *name;		/* path as given by the user */
	int mode;		/* UNIONFS_BR_RO or UNIONFS_BR_RW */
	int id;			/* stable id, never reused within a mount */
	unsigned int fsidx;	/* inode number space of the branch's sb */
	atomic_t open_files;	/* files of the union open on this branch */
};

struct unionfs_sb_info {
	struct super_block *sb;
	int nbranches;
	struct unionfs_branch *branches;
	atomic_t generation;
	const struct cred *creator_cred;
	int next_branch_id;
	atomic64_t tmp_seq;	/* for temporary names */
	struct dentry *debugfs_dir;
};

/*
 * Per-dentry state: the lower dentries, indexed by branch. The array only
 * holds positive lower dentries (and, for a negative union dentry, none).
 * Fields change under @lock; the struct is freed after an RCU grace period
 * because d_revalidate reads it in RCU walk.
 */
struct unionfs_dentry_info {
	spinlock_t lock;
	int bstart;		/* first branch holding the name, -1 if none */
	int bend;		/* last branch contributing */
	int bopaque;		/* branch whose dir is opaque, -1 if none */
	int bwh;		/* branch whose whiteout hid the name, or -1 */
	int generation;
	int nbr;		/* size of lower[] */
	struct rcu_head rcu;
	struct dentry *lower[];
};

struct unionfs_inode_info {
	struct inode vfs_inode;
	struct mutex cu_lock;	/* serializes copy-up of this object */
	int bstart;
	int bend;
	int generation;
	int nbr;
	struct inode **lower;	/* freed after RCU grace period */
	struct inode *key;	/* lower inode this inode is hashed by */
	u64 dir_version;	/* bumped by every change made through us */
};

struct unionfs_file_info {
	struct file *lower;	/* the open branch file (not for merged dirs) */
	int bindex;
	int branch_id;
	int generation;
	struct unionfs_rdcache *rdcache;	/* merged readdir state */
};

static inline struct unionfs_sb_info *UNIONFS_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct unionfs_dentry_info *UNIONFS_D(const struct dentry *d)
{
	return d->d_fsdata;
}

static inline struct unionfs_inode_info *UNIONFS_I(const struct inode *inode)
{
	return container_of(inode, struct unionfs_inode_info, vfs_inode);
}

static inline struct unionfs_file_info *UNIONFS_F(const struct file *file)
{
	return file->private_data;
}

static inline struct unionfs_branch *unionfs_branch(struct super_block *sb,
						    int bindex)
{
	return &UNIONFS_SB(sb)->branches[bindex];
}

static inline struct vfsmount *unionfs_lower_mnt(struct super_block *sb,
						 int bindex)
{
	return UNIONFS_SB(sb)->branches[bindex].path.mnt;
}

static inline int unionfs_sb_gen(struct super_block *sb)
{
	return atomic_read(&UNIONFS_SB(sb)->generation);
}

/* A branch we may modify: rw mode and a writable lower superblock. */
static inline bool unionfs_branch_writable(struct super_block *sb, int bindex)
{
	struct unionfs_branch *br = unionfs_branch(sb, bindex);

	return br->mode == UNIONFS_BR_RW && !sb_rdonly(br->path.mnt->mnt_sb) &&
	       !__mnt_is_readonly(br->path.mnt);
}

static inline bool unionfs_is_whname(const char *name, int len)
{
	return len >= UNIONFS_WHLEN && !strncmp(name, UNIONFS_WHPFX,
						 UNIONFS_WHLEN);
}

/* Read the lower dentry of @bindex and take a reference, or NULL. */
struct dentry *unionfs_lower_dentry_get(struct dentry *dentry, int bindex);
/* The winning lower dentry, referenced; *bindex gets its branch. */
struct dentry *unionfs_lower_top_get(struct dentry *dentry, int *bindex);
void unionfs_get_range(struct dentry *dentry, int *bstart, int *bend);

/* super.c */
extern struct file_system_type unionfs_fs_type;
const struct cred *unionfs_override_creds(struct super_block *sb);

/* lookup.c */
struct unionfs_dentry_info *unionfs_alloc_dinfo(int nbr);
void unionfs_free_dinfo(struct unionfs_dentry_info *ud);
struct dentry *unionfs_lookup(struct inode *dir, struct dentry *dentry,
			      unsigned int flags);
int unionfs_lookup_branches(struct dentry *parent, const struct qstr *name,
			    struct unionfs_dentry_info *ud, int from);
struct inode *unionfs_iget(struct super_block *sb,
			   struct unionfs_dentry_info *ud);
int unionfs_is_opaque_dir(struct dentry *lower_dir);
bool unionfs_lower_has_name(struct dentry *parent, const struct qstr *name,
			    int from);

/* dentry.c */
extern const struct dentry_operations unionfs_dops;

/* inode.c */
extern const struct inode_operations unionfs_main_iops;
extern const struct inode_operations unionfs_dir_iops;
extern const struct inode_operations unionfs_symlink_iops;
extern const struct inode_operations unionfs_special_iops;
void unionfs_copy_attr(struct inode *inode, const struct inode *lower);
void unionfs_inode_set_lower(struct inode *inode, int bindex,
			     struct inode *lower);
void unionfs_dir_changed(struct inode *dir);
int unionfs_inode_init(struct inode *inode, struct unionfs_dentry_info *ud);

/* file.c */
extern const struct file_operations unionfs_main_fops;

/* readdir.c */
extern const struct file_operations unionfs_dir_fops;
int unionfs_check_empty(struct dentry *dentry, int *has_whiteouts);
void unionfs_rdcache_free(struct unionfs_rdcache *rdc);

/* copyup.c */
int unionfs_nearest_writable(struct super_block *sb, int bindex);
int unionfs_copyup_dentry(struct dentry *dentry, int target,
			  const char *reason, loff_t len);
int unionfs_copyup_parents(struct dentry *dentry, int target);
int unionfs_copyup_dir(struct dentry *dir, int target);
int unionfs_copyup_for_write(struct dentry *dentry, const char *reason,
			     loff_t len);

/* whiteout.c (the _locked variants need the lower parent locked) */
int unionfs_whiteout_locked(struct super_block *sb, int bindex,
			    struct dentry *lparent, const struct qstr *name,
			    const char *reason);
int unionfs_remove_whiteout_locked(struct super_block *sb, int bindex,
				   struct dentry *lparent,
				   const struct qstr *name, const char *reason);
int unionfs_create_whiteout(struct dentry *parent, const struct qstr *name,
			    int bindex, const char *reason);
int unionfs_make_opaque(struct super_block *sb, int bindex,
			struct dentry *lower_dir, const char *reason);
int unionfs_clean_whiteouts(struct super_block *sb, int bindex,
			    struct dentry *lower_dir);
char *unionfs_whname(const struct qstr *name);

/* rename.c */
int unionfs_rename(struct user_namespace *mnt_userns, struct inode *old_dir,
		   struct dentry *old_dentry, struct inode *new_dir,
		   struct dentry *new_dentry, unsigned int flags);

/* xattr.c */
extern const struct xattr_handler *unionfs_xattr_handlers[];
ssize_t unionfs_listxattr(struct dentry *dentry, char *list, size_t size);

/* debugfs.c: fault injection */
int unionfs_debugfs_init(void);
void unionfs_debugfs_exit(void);
int unionfs_fault_slow(const char *site);
DECLARE_STATIC_KEY_FALSE(unionfs_fault_key);
/* 0, or the negative errno armed for @site in debugfs */
static inline int unionfs_fault(const char *site)
{
	if (static_branch_unlikely(&unionfs_fault_key))
		return unionfs_fault_slow(site);
	return 0;
}

#define UNIONFS_FAULT(site) unionfs_fault(site)

#endif /* _UNIONFS_UNION_H */
