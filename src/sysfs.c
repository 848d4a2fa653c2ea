// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: the stable status interface, /sys/fs/unionfs/MAJ:MIN/, one
 * directory per mounted union, named like its st_dev (mountinfo's
 * major:minor). Read-only files, an ABI (docs/usage.md "Status in sysfs"):
 *
 *   branches    one line per branch, highest priority first:
 *               INDEX MODE PATH (MODE rw|ro; PATH escaped as in
 *               /proc/mounts: space, tab, newline and backslash as \ooo)
 *   generation  the union's generation number
 *   coherency   none | reval | notify
 *   markers     unionfs | oci
 *   hazards     one line per kind of direct branch change seen: NAME COUNT
 *
 * unionctl(8) reads it. debugfs (debugfs.c) keeps the internals (branch
 * ids, open files, notify marks) and fault injection.
 */
#include "union.h"

#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/string_helpers.h>
#include <linux/mm.h>

struct unionfs_sysfs {
	struct kobject kobj;
	struct super_block *sb;	/* valid until kobject_del() returns */
};

static struct kobject *unionfs_sysfs_root;

static struct super_block *unionfs_kobj_sb(struct kobject *kobj)
{
	return container_of(kobj, struct unionfs_sysfs, kobj)->sb;
}

static ssize_t generation_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", unionfs_sb_gen(unionfs_kobj_sb(kobj)));
}

static ssize_t coherency_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(unionfs_kobj_sb(kobj));

	return sysfs_emit(buf, "%s\n", unionfs_coherency_names[sbi->coherency]);
}

static ssize_t markers_show(struct kobject *kobj,
			    struct kobj_attribute *attr, char *buf)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(unionfs_kobj_sb(kobj));

	return sysfs_emit(buf, "%s\n", unionfs_markers_names[sbi->markers]);
}

static ssize_t hazards_show(struct kobject *kobj,
			    struct kobj_attribute *attr, char *buf)
{
	struct unionfs_sb_info *sbi = UNIONFS_SB(unionfs_kobj_sb(kobj));
	int i, len = 0;

	for (i = 0; i < UNIONFS_HZ_MAX; i++)
		len += sysfs_emit_at(buf, len, "%s %ld\n",
				     unionfs_hazard_name(i),
				     atomic_long_read(&sbi->hazards[i]));
	return len;
}

static struct kobj_attribute unionfs_attr_generation = __ATTR_RO(generation);
static struct kobj_attribute unionfs_attr_coherency = __ATTR_RO(coherency);
static struct kobj_attribute unionfs_attr_markers = __ATTR_RO(markers);
static struct kobj_attribute unionfs_attr_hazards = __ATTR_RO(hazards);

/*
 * "branches" can be longer than a page (128 branches with long paths): a
 * binary attribute, the text made whole at each read and the window asked
 * for copied out (a reader in several pieces across a branch change may see
 * two tables: read it at once, or check "generation" before and after).
 */
static ssize_t branches_read(struct file *file, struct kobject *kobj,
			     struct bin_attribute *attr, char *out,
			     loff_t off, size_t count)
{
	struct unionfs_btable *bt = unionfs_bt_get(unionfs_kobj_sb(kobj));
	size_t size = 0, len = 0;
	ssize_t ret;
	char *text;
	int i;

	for (i = 0; i < bt->nbr; i++)	/* "INDEX MODE " + 4 bytes a char */
		size += 16 + 4 * strlen(bt->br[i]->name) + 1;
	text = kvmalloc(size + 1, GFP_KERNEL);
	if (!text) {
		unionfs_bt_put(bt);
		return -ENOMEM;
	}
	for (i = 0; i < bt->nbr; i++) {
		struct unionfs_branch *br = bt->br[i];

		len += scnprintf(text + len, size + 1 - len, "%d %s ", i,
				 READ_ONCE(br->mode) == UNIONFS_BR_RW ?
				 "rw" : "ro");
		len += string_escape_str(br->name, text + len, size - len,
					 ESCAPE_OCTAL, " \t\n\\");
		text[len++] = '\n';
	}
	unionfs_bt_put(bt);
	ret = memory_read_from_buffer(out, count, &off, text, len);
	kvfree(text);
	return ret;
}

static struct bin_attribute unionfs_attr_branches = {
	.attr = { .name = "branches", .mode = 0444 },
	.read = branches_read,
};

static struct attribute *unionfs_sb_attrs[] = {
	&unionfs_attr_generation.attr,
	&unionfs_attr_coherency.attr,
	&unionfs_attr_markers.attr,
	&unionfs_attr_hazards.attr,
	NULL,
};

static struct bin_attribute *unionfs_sb_bin_attrs[] = {
	&unionfs_attr_branches,
	NULL,
};

static const struct attribute_group unionfs_sb_group = {
	.attrs = unionfs_sb_attrs,
	.bin_attrs = unionfs_sb_bin_attrs,
};
__ATTRIBUTE_GROUPS(unionfs_sb);

static void unionfs_sysfs_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct unionfs_sysfs, kobj));
}

static struct kobj_type unionfs_sb_ktype = {
	.release	= unionfs_sysfs_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= unionfs_sb_groups,
};

int unionfs_sysfs_mount(struct super_block *sb)
{
	struct unionfs_sysfs *s = kzalloc(sizeof(*s), GFP_KERNEL);
	int err;

	if (!s)
		return -ENOMEM;
	s->sb = sb;
	err = kobject_init_and_add(&s->kobj, &unionfs_sb_ktype,
				   unionfs_sysfs_root, "%u:%u",
				   MAJOR(sb->s_dev), MINOR(sb->s_dev));
	if (err) {
		pr_warn("mount: cannot add /sys/fs/unionfs/%u:%u (%d)\n",
			MAJOR(sb->s_dev), MINOR(sb->s_dev), err);
		kobject_put(&s->kobj);
		return err;
	}
	UNIONFS_SB(sb)->sysfs = &s->kobj;
	return 0;
}

/* After this returns no reader is inside a show function of @sb. */
void unionfs_sysfs_umount(struct super_block *sb)
{
	struct kobject *kobj = UNIONFS_SB(sb)->sysfs;

	if (!kobj)
		return;
	UNIONFS_SB(sb)->sysfs = NULL;
	kobject_del(kobj);
	kobject_put(kobj);
}

int unionfs_sysfs_init(void)
{
	unionfs_sysfs_root = kobject_create_and_add("unionfs", fs_kobj);
	return unionfs_sysfs_root ? 0 : -ENOMEM;
}

void unionfs_sysfs_exit(void)
{
	kobject_put(unionfs_sysfs_root);
}
