// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: regular file operations.
 *
 * A union file wraps one open branch file. The union keeps no page cache
 * of its own: reads, writes and mmap go to the branch file, so page cache
 * and mmaps stay coherent with the branch. Opening for write (or with
 * O_TRUNC) a file whose winning branch is read-only copies it up first;
 * descriptors opened before a copy-up keep reading the original, which a
 * copy-up never changes.
 */
#include "union.h"
#include "lower.h"

#include <linux/file.h>
#include <linux/fs_stack.h>
#include <linux/uio.h>
#include <linux/splice.h>
#include <linux/mman.h>
#include <linux/falloc.h>

static rwf_t unionfs_iocb_to_rwf(int ifl)
{
	rwf_t flags = 0;

	if (ifl & IOCB_NOWAIT)
		flags |= RWF_NOWAIT;
	if (ifl & IOCB_HIPRI)
		flags |= RWF_HIPRI;
	if (ifl & IOCB_DSYNC)
		flags |= RWF_DSYNC;
	if (ifl & IOCB_SYNC)
		flags |= RWF_SYNC;
	return flags;
}

static int unionfs_open(struct inode *inode, struct file *file)
{
	struct dentry *dentry = file->f_path.dentry;
	struct super_block *sb = inode->i_sb;
	struct unionfs_file_info *fi;
	struct dentry *ld;
	struct file *lf;
	int b, err;

	if ((file->f_mode & FMODE_WRITE) || (file->f_flags & O_TRUNC)) {
		bool trunc = (file->f_flags & O_TRUNC) &&
			     (file->f_mode & FMODE_WRITE);

		err = unionfs_copyup_for_write(dentry, "write-open",
					       trunc ? 0 : -1);
		if (err)
			return err;
	}
	fi = kzalloc(sizeof(*fi), GFP_KERNEL);
	if (!fi)
		return -ENOMEM;
	ld = unionfs_lower_top_get(dentry, &b);
	if (!ld) {
		kfree(fi);
		return -ESTALE;
	}
	lf = unionfs_do_open(unionfs_dbt(dentry), b, ld, file->f_flags,
			     current_cred());
	dput(ld);
	if (IS_ERR(lf)) {
		kfree(fi);
		return PTR_ERR(lf);
	}
	fi->lower = lf;
	fi->br = unionfs_br_open(unionfs_dbt(dentry), b);
	fi->generation = unionfs_sb_gen(sb);
	file->private_data = fi;
	return 0;
}

static int unionfs_release(struct inode *inode, struct file *file)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);

	atomic_dec(&fi->br->open_files);
	unionfs_branch_put(fi->br);
	fput(fi->lower);
	kfree(fi);
	return 0;
}

/* fcntl(F_SETFL) only changes the union file: carry O_APPEND down. */
static void unionfs_sync_flags(struct file *file, struct file *lower)
{
	if ((file->f_flags ^ lower->f_flags) & (O_APPEND | O_NONBLOCK)) {
		spin_lock(&lower->f_lock);
		lower->f_flags = (lower->f_flags & ~(O_APPEND | O_NONBLOCK)) |
				 (file->f_flags & (O_APPEND | O_NONBLOCK));
		spin_unlock(&lower->f_lock);
	}
}

static ssize_t unionfs_read_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct file *lower = UNIONFS_F(file)->lower;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	unionfs_sync_flags(file, lower);
	ret = vfs_iter_read(lower, iter, &iocb->ki_pos,
			    unionfs_iocb_to_rwf(iocb->ki_flags));
	fsstack_copy_attr_atime(file_inode(file), file_inode(lower));
	return ret;
}

static ssize_t unionfs_write_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct file *lower = UNIONFS_F(file)->lower;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	inode_lock(inode);
	unionfs_sync_flags(file, lower);
	ret = file_remove_privs(file);
	if (!ret) {
		/* the branch file positions O_APPEND at its real end */
		file_start_write(lower);
		ret = vfs_iter_write(lower, iter, &iocb->ki_pos,
				     unionfs_iocb_to_rwf(iocb->ki_flags));
		file_end_write(lower);
	}
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	return ret;
}

static ssize_t unionfs_splice_write(struct pipe_inode_info *pipe,
				    struct file *file, loff_t *ppos,
				    size_t len, unsigned int flags)
{
	struct inode *inode = file_inode(file);
	struct file *lower = UNIONFS_F(file)->lower;
	ssize_t ret;

	inode_lock(inode);
	unionfs_sync_flags(file, lower);
	file_start_write(lower);
	ret = iter_file_splice_write(pipe, lower, ppos, len, flags);
	file_end_write(lower);
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	return ret;
}

static loff_t unionfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	struct file *lower = UNIONFS_F(file)->lower;
	loff_t ret;

	if (whence == SEEK_CUR && offset == 0)
		return file->f_pos;
	inode_lock(inode);
	lower->f_pos = file->f_pos;
	ret = vfs_llseek(lower, offset, whence);
	file->f_pos = lower->f_pos;
	inode_unlock(inode);
	return ret;
}

static int unionfs_fsync(struct file *file, loff_t start, loff_t end,
			 int datasync)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);

	if (!unionfs_br_writable(fi->br))
		return 0;
	return vfs_fsync_range(fi->lower, start, end, datasync);
}

static int unionfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct file *lower = UNIONFS_F(file)->lower;

	if (WARN_ON_ONCE(file != vma->vm_file))
		return -EIO;
	if (!lower->f_op->mmap)
		return -ENODEV;
	vma_set_file(vma, lower);
	return call_mmap(vma->vm_file, vma);
}

static long unionfs_fallocate(struct file *file, int mode, loff_t offset,
			      loff_t len)
{
	struct inode *inode = file_inode(file);
	struct file *lower = UNIONFS_F(file)->lower;
	long ret;

	inode_lock(inode);
	ret = file_remove_privs(file);
	if (!ret)
		ret = vfs_fallocate(lower, mode, offset, len);
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	return ret;
}

static int unionfs_fadvise(struct file *file, loff_t offset, loff_t len,
			   int advice)
{
	return vfs_fadvise(UNIONFS_F(file)->lower, offset, len, advice);
}

static int unionfs_flush(struct file *file, fl_owner_t id)
{
	struct file *lower = UNIONFS_F(file)->lower;

	if (lower->f_op->flush)
		return lower->f_op->flush(lower, id);
	return 0;
}

const struct file_operations unionfs_main_fops = {
	.open		= unionfs_open,
	.release	= unionfs_release,
	.llseek		= unionfs_llseek,
	.read_iter	= unionfs_read_iter,
	.write_iter	= unionfs_write_iter,
	.fsync		= unionfs_fsync,
	.mmap		= unionfs_mmap,
	.fallocate	= unionfs_fallocate,
	.fadvise	= unionfs_fadvise,
	.flush		= unionfs_flush,
	.splice_read	= generic_file_splice_read,
	.splice_write	= unionfs_splice_write,
	.unlocked_ioctl	= unionfs_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= unionfs_compat_ioctl,
#endif
};
