// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: debugfs and fault injection (/sys/kernel/debug/unionfs/).
 *
 * mounts/MAJ:MIN/{branches,hazards,coherency}: per-mount views (always built).
 *
 * Fault injection is a test facility, built only with `make FAULT_INJECTION=1`
 * (-DUNIONFS_FAULT_INJECTION; the test targets of the Makefile always set it).
 * The target kernel has no FAULT_INJECTION, so the module brings its own:
 *
 *   inject    write "SITE errno=N [probability=P] [interval=I] [times=T]"
 *             to arm a site, "clear SITE" or "clear all" to disarm;
 *             read for the table of sites (hits and injected failures).
 *   crash_at  write a site name: the next hit of that site panics (for
 *             vmcores of the module in a known state); "none" disarms.
 *
 * Disarmed sites cost one static branch (patched out). Without it neither
 * file exists and UNIONFS_FAULT() is the constant 0. Which build this is shows
 * in /sys/module/unionfs/parameters/fault_injection (Y/N, read-only) and in
 * modinfo's fault_injection field (yes/no).
 */
#include "union.h"

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/random.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#ifdef UNIONFS_FAULT_INJECTION
static bool unionfs_fault_built = true;
MODULE_INFO(fault_injection, "yes");
#else
static bool unionfs_fault_built;
MODULE_INFO(fault_injection, "no");
#endif

/* fault_injection=: read-only; what the build has cannot be chosen at load */
static int unionfs_fault_param_set(const char *val,
				   const struct kernel_param *kp)
{
	pr_warn("fault_injection is fixed at build time (make FAULT_INJECTION=1), not a load parameter\n");
	return -EPERM;
}

static const struct kernel_param_ops unionfs_fault_param_ops = {
	.set	= unionfs_fault_param_set,
	.get	= param_get_bool,
};
module_param_cb(fault_injection, &unionfs_fault_param_ops,
		&unionfs_fault_built, 0444);
MODULE_PARM_DESC(fault_injection,
		 "Y if built with debugfs fault injection (inject, crash_at): make FAULT_INJECTION=1 (read-only)");

static struct dentry *unionfs_debugfs_root;

#ifdef UNIONFS_FAULT_INJECTION
DEFINE_STATIC_KEY_FALSE(unionfs_fault_key);

/* the debugfs names of the sites, indexed by enum unionfs_fault_site_id */
static const char *const unionfs_fault_names[] = {
	[UNIONFS_FSITE_LOOKUP]		= "lookup",
	[UNIONFS_FSITE_READDIR]		= "readdir",
	[UNIONFS_FSITE_OPEN]		= "open",
	[UNIONFS_FSITE_CREATE]		= "create",
	[UNIONFS_FSITE_MKDIR]		= "mkdir",
	[UNIONFS_FSITE_MKNOD]		= "mknod",
	[UNIONFS_FSITE_SYMLINK]		= "symlink",
	[UNIONFS_FSITE_LINK]		= "link",
	[UNIONFS_FSITE_UNLINK]		= "unlink",
	[UNIONFS_FSITE_RMDIR]		= "rmdir",
	[UNIONFS_FSITE_RENAME]		= "rename",
	[UNIONFS_FSITE_SETATTR]		= "setattr",
	[UNIONFS_FSITE_SETXATTR]	= "setxattr",
	[UNIONFS_FSITE_REMOVEXATTR]	= "removexattr",
	[UNIONFS_FSITE_COPYUP_CREATE]	= "copyup_create",
	[UNIONFS_FSITE_COPYUP_DATA]	= "copyup_data",
	[UNIONFS_FSITE_COPYUP_CLONE]	= "copyup_clone",
	[UNIONFS_FSITE_COPYUP_ATTR]	= "copyup_attr",
	[UNIONFS_FSITE_COPYUP_RENAME]	= "copyup_rename",
	[UNIONFS_FSITE_WHITEOUT]	= "whiteout",
	[UNIONFS_FSITE_OPAQUE]		= "opaque",
	[UNIONFS_FSITE_TMPFILE]		= "tmpfile",
	[UNIONFS_FSITE_LOOKUP_LOCKED]	= "lookup_locked",
	[UNIONFS_FSITE_GETATTR]		= "getattr",
	[UNIONFS_FSITE_GET_LINK]	= "get_link",
	[UNIONFS_FSITE_GETXATTR]	= "getxattr",
	[UNIONFS_FSITE_LISTXATTR]	= "listxattr",
	[UNIONFS_FSITE_READ]		= "read",
	[UNIONFS_FSITE_WRITE]		= "write",
	[UNIONFS_FSITE_FSYNC]		= "fsync",
	[UNIONFS_FSITE_FALLOCATE]	= "fallocate",
	[UNIONFS_FSITE_STATFS]		= "statfs",
	[UNIONFS_FSITE_REDIRECT]	= "redirect",
	[UNIONFS_FSITE_INDEX]		= "index",
};

/*
 * a site added last to the enum without a name here fails the build; a
 * hole in the middle warns at load (unionfs_fault_init)
 */
static_assert(ARRAY_SIZE(unionfs_fault_names) == UNIONFS_FSITE_NR);

struct unionfs_fault_site {
	int err;		/* negative errno to inject, 0 = disarmed */
	unsigned int probability;	/* percent */
	unsigned int interval;	/* fail every Nth hit */
	int times;		/* failures left, -1 = unlimited */
	unsigned long hits;
	unsigned long injected;
};

static struct unionfs_fault_site unionfs_sites[UNIONFS_FSITE_NR];

unsigned int unionfs_race_delay_us;

void unionfs_race_window_slow(void)
{
	unsigned int us = min(READ_ONCE(unionfs_race_delay_us), 100000U);

	if (us)
		usleep_range(us, us + us / 4);
}

static DEFINE_SPINLOCK(unionfs_fault_lock);
static DEFINE_MUTEX(unionfs_fault_mutex);
static int unionfs_crash_site = -1;
static int unionfs_armed;

static int unionfs_site_index(const char *name)
{
	int i;

	for (i = 0; i < UNIONFS_FSITE_NR; i++)
		if (unionfs_fault_names[i] &&
		    !strcmp(unionfs_fault_names[i], name))
			return i;
	return -1;
}

int unionfs_fault_slow(enum unionfs_fault_site_id site)
{
	struct unionfs_fault_site *s;
	int err = 0;

	if (WARN_ON_ONCE((unsigned int)site >= UNIONFS_FSITE_NR))
		return 0;
	if (READ_ONCE(unionfs_crash_site) == site)
		panic("unionfs: crash_at %s\n", unionfs_fault_names[site]);
	s = &unionfs_sites[site];
	spin_lock(&unionfs_fault_lock);
	if (!s->err || !s->times)
		goto out;
	s->hits++;
	if (s->interval > 1 && s->hits % s->interval)
		goto out;
	if (s->probability < 100 &&
	    get_random_u32_below(100) >= s->probability)
		goto out;
	if (s->times > 0)
		s->times--;
	s->injected++;
	err = s->err;
out:
	spin_unlock(&unionfs_fault_lock);
	return err;
}

static void unionfs_update_key(void)
{
	bool on = unionfs_armed || unionfs_crash_site >= 0;

	if (on && !static_key_enabled(&unionfs_fault_key))
		static_branch_enable(&unionfs_fault_key);
	else if (!on && static_key_enabled(&unionfs_fault_key))
		static_branch_disable(&unionfs_fault_key);
}

static void unionfs_recount(void)
{
	int i;

	unionfs_armed = 0;
	for (i = 0; i < ARRAY_SIZE(unionfs_sites); i++)
		if (unionfs_sites[i].err)
			unionfs_armed++;
	unionfs_update_key();
}

static int unionfs_inject_show(struct seq_file *m, void *v)
{
	int i;

	seq_puts(m, "# site errno probability interval times hits injected\n");
	spin_lock(&unionfs_fault_lock);
	for (i = 0; i < ARRAY_SIZE(unionfs_sites); i++) {
		struct unionfs_fault_site *s = &unionfs_sites[i];

		seq_printf(m, "%s %d %u %u %d %lu %lu\n",
			   unionfs_fault_names[i] ?: "?", -s->err,
			   s->probability, s->interval, s->times, s->hits,
			   s->injected);
	}
	spin_unlock(&unionfs_fault_lock);
	return 0;
}

static int unionfs_inject_open(struct inode *inode, struct file *file)
{
	return single_open(file, unionfs_inject_show, NULL);
}

static int unionfs_parse_uint(const char *key, const char *val,
			      unsigned int max, unsigned int *out)
{
	if (kstrtouint(val, 0, out) || *out > max) {
		pr_warn("debugfs inject: bad value '%*pE' for %s (0..%u)\n",
			(int)strlen(val), val, key, max);
		return -EINVAL;
	}
	return 0;
}

static int unionfs_inject_cmd(char *buf)
{
	struct unionfs_fault_site s = { .probability = 100, .interval = 1,
					.times = -1 };
	char *tok, *site;
	unsigned int v;
	int i, err;

	site = strsep(&buf, " \t");
	if (!site || !*site) {
		pr_warn("debugfs inject: empty command\n");
		return -EINVAL;
	}
	if (!strcmp(site, "clear")) {
		tok = strsep(&buf, " \t");
		if (tok && !strcmp(tok, "all")) {
			spin_lock(&unionfs_fault_lock);
			for (i = 0; i < ARRAY_SIZE(unionfs_sites); i++)
				unionfs_sites[i].err = 0;
			spin_unlock(&unionfs_fault_lock);
			return 0;
		}
		i = tok ? unionfs_site_index(tok) : -1;
		if (i < 0) {
			pr_warn("debugfs inject: clear: unknown site '%*pE'\n",
				(int)strlen(tok ?: ""), tok ?: "");
			return -EINVAL;
		}
		spin_lock(&unionfs_fault_lock);
		unionfs_sites[i].err = 0;
		spin_unlock(&unionfs_fault_lock);
		return 0;
	}
	i = unionfs_site_index(site);
	if (i < 0) {
		pr_warn("debugfs inject: unknown site '%*pE'\n", (int)strlen(site), site);
		return -EINVAL;
	}
	while ((tok = strsep(&buf, " \t")) != NULL) {
		char *val;

		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val) {
			pr_warn("debugfs inject: expected key=value, got '%*pE'\n",
				(int)strlen(tok), tok);
			return -EINVAL;
		}
		*val++ = '\0';
		if (!strcmp(tok, "errno")) {
			err = unionfs_parse_uint(tok, val, MAX_ERRNO, &v);
			if (err)
				return err;
			if (!v) {
				pr_warn("debugfs inject: errno must be 1..%d\n",
					MAX_ERRNO);
				return -EINVAL;
			}
			s.err = -(int)v;
		} else if (!strcmp(tok, "probability")) {
			err = unionfs_parse_uint(tok, val, 100,
						 &s.probability);
			if (err)
				return err;
		} else if (!strcmp(tok, "interval")) {
			err = unionfs_parse_uint(tok, val, INT_MAX,
						 &s.interval);
			if (err)
				return err;
		} else if (!strcmp(tok, "times")) {
			err = unionfs_parse_uint(tok, val, INT_MAX, &v);
			if (err)
				return err;
			s.times = v;
		} else {
			pr_warn("debugfs inject: unknown key '%*pE'\n", (int)strlen(tok), tok);
			return -EINVAL;
		}
	}
	if (!s.err) {
		pr_warn("debugfs inject: %s: errno=N is required\n", site);
		return -EINVAL;
	}
	spin_lock(&unionfs_fault_lock);
	unionfs_sites[i].err = s.err;
	unionfs_sites[i].probability = s.probability;
	unionfs_sites[i].interval = s.interval ?: 1;
	unionfs_sites[i].times = s.times;
	unionfs_sites[i].hits = 0;
	spin_unlock(&unionfs_fault_lock);
	return 0;
}

static char *unionfs_get_cmd(const char __user *ubuf, size_t count)
{
	char *buf;

	if (!count || count > 256) {
		pr_warn("debugfs: command of %zu bytes (1..256 accepted)\n",
			count);
		return ERR_PTR(-EINVAL);
	}
	buf = memdup_user_nul(ubuf, count);
	if (!IS_ERR(buf)) {
		char *s = strim(buf);

		memmove(buf, s, strlen(s) + 1);
	}
	return buf;
}

static ssize_t unionfs_inject_write(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	char *buf = unionfs_get_cmd(ubuf, count);
	int err;

	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mutex_lock(&unionfs_fault_mutex);
	err = unionfs_inject_cmd(buf);
	unionfs_recount();
	mutex_unlock(&unionfs_fault_mutex);
	kfree(buf);
	return err ?: count;
}

static const struct file_operations unionfs_inject_fops = {
	.owner		= THIS_MODULE,
	.open		= unionfs_inject_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
	.write		= unionfs_inject_write,
};

static int unionfs_crash_show(struct seq_file *m, void *v)
{
	int i = READ_ONCE(unionfs_crash_site);

	seq_printf(m, "%s\n", i >= 0 ? unionfs_fault_names[i] : "none");
	return 0;
}

static int unionfs_crash_open(struct inode *inode, struct file *file)
{
	return single_open(file, unionfs_crash_show, NULL);
}

static ssize_t unionfs_crash_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char *buf = unionfs_get_cmd(ubuf, count);
	int i, err = 0;

	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mutex_lock(&unionfs_fault_mutex);
	if (!strcmp(buf, "none")) {
		i = -1;
	} else {
		i = unionfs_site_index(buf);
		if (i < 0) {
			pr_warn("debugfs crash_at: unknown site '%*pE'\n", (int)strlen(buf), buf);
			err = -EINVAL;
		}
	}
	if (!err) {
		WRITE_ONCE(unionfs_crash_site, i);
		unionfs_update_key();
	}
	mutex_unlock(&unionfs_fault_mutex);
	kfree(buf);
	return err ?: count;
}

static const struct file_operations unionfs_crash_fops = {
	.owner		= THIS_MODULE,
	.open		= unionfs_crash_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
	.write		= unionfs_crash_write,
};

static void unionfs_fault_init(void)
{
	int i;

	/* a hole in the designated initialisers: a site with no name */
	for (i = 0; i < UNIONFS_FSITE_NR; i++)
		WARN_ONCE(!unionfs_fault_names[i], "fault site %d has no name\n",
			  i);
	debugfs_create_file("inject", 0600, unionfs_debugfs_root, NULL,
			    &unionfs_inject_fops);
	debugfs_create_file("crash_at", 0600, unionfs_debugfs_root, NULL,
			    &unionfs_crash_fops);
	debugfs_create_u32("race_delay_us", 0600, unionfs_debugfs_root,
			   &unionfs_race_delay_us);
}

static void unionfs_fault_exit(void)
{
	if (static_key_enabled(&unionfs_fault_key))
		static_branch_disable(&unionfs_fault_key);
}
#else
static void unionfs_fault_init(void)
{
}

static void unionfs_fault_exit(void)
{
}
#endif /* UNIONFS_FAULT_INJECTION */

/* --- per-mount view: /sys/kernel/debug/unionfs/mounts/MAJ:MIN/ ------------ */

static struct dentry *unionfs_debugfs_mounts;

static int unionfs_branches_show(struct seq_file *m, void *v)
{
	struct super_block *sb = m->private;
	struct unionfs_btable *bt = unionfs_bt_get(sb);
	int i;

	seq_printf(m, "generation %d\n", unionfs_sb_gen(sb));
	seq_puts(m, "# index id mode open_files path\n");
	for (i = 0; i < bt->nbr; i++) {
		struct unionfs_branch *br = bt->br[i];

		seq_printf(m, "%d %d %s %d ", i, br->id,
			   READ_ONCE(br->mode) == UNIONFS_BR_RW ? "rw" : "ro",
			   atomic_read(&br->open_files));
		/* as in /proc/mounts: one line per branch whatever the path */
		seq_escape(m, br->name, " \t\n\\");
		seq_putc(m, '\n');
	}
	unionfs_bt_put(bt);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(unionfs_branches);

static int unionfs_hazards_show(struct seq_file *m, void *v)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB((struct super_block *)m->private);
	int i;

	for (i = 0; i < UNIONFS_HZ_MAX; i++)
		seq_printf(m, "%s %ld\n", unionfs_hazard_name(i),
			   atomic_long_read(&sbi->hazards[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(unionfs_hazards);

static int unionfs_coherency_show(struct seq_file *m, void *v)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB((struct super_block *)m->private);

	seq_printf(m, "mode %s\n", unionfs_coherency_names[sbi->coherency]);
	seq_printf(m, "marks %ld\n", atomic_long_read(&sbi->nmarks));
	seq_printf(m, "direct_changes %ld\n", atomic_long_read(&sbi->nseq));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(unionfs_coherency);

/* live dentry infos: bounded by the cached dentries, whatever the remounts */
static int unionfs_dinfos_show(struct seq_file *m, void *v)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB((struct super_block *)m->private);

	seq_printf(m, "%ld\n", atomic_long_read(&sbi->ndinfo));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(unionfs_dinfos);

void unionfs_debugfs_mount(struct super_block *sb)
{
	struct dentry *dir;
	char name[32];

	snprintf(name, sizeof(name), "%u:%u", MAJOR(sb->s_dev),
		 MINOR(sb->s_dev));
	dir = debugfs_create_dir(name, unionfs_debugfs_mounts);
	UNIONFS_SB(sb)->debugfs_dir = dir;
	debugfs_create_file("branches", 0444, UNIONFS_SB(sb)->debugfs_dir, sb,
			    &unionfs_branches_fops);
	debugfs_create_file("hazards", 0444, UNIONFS_SB(sb)->debugfs_dir, sb,
			    &unionfs_hazards_fops);
	debugfs_create_file("coherency", 0444, UNIONFS_SB(sb)->debugfs_dir, sb,
			    &unionfs_coherency_fops);
	debugfs_create_file("dinfos", 0444, UNIONFS_SB(sb)->debugfs_dir, sb,
			    &unionfs_dinfos_fops);
}

void unionfs_debugfs_umount(struct super_block *sb)
{
	debugfs_remove(UNIONFS_SB(sb)->debugfs_dir);
	UNIONFS_SB(sb)->debugfs_dir = NULL;
}

int unionfs_debugfs_init(void)
{
	unionfs_debugfs_root = debugfs_create_dir("unionfs", NULL);
	unionfs_debugfs_mounts = debugfs_create_dir("mounts",
						    unionfs_debugfs_root);
	unionfs_fault_init();
	return 0;
}

void unionfs_debugfs_exit(void)
{
	debugfs_remove(unionfs_debugfs_root);
	unionfs_fault_exit();
}
