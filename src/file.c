// SPDX-License-Identifier: GPL-2.0
/*
 * unionfs: regular file operations.
 *
 * A union file wraps one open branch file. The union keeps no page cache
 * of its own: reads, writes and mmap go to the branch file, so page cache
 * and mmaps stay coherent with the branch. Opening for write (or with
 * O_TRUNC) a file whose winning branch is read-only copies it up first.
 * A descriptor opened before a copy-up (or before any other change of the
 * winning branch) moves to the new winner at its next operation
 * (unionfs_real_get()), as overlayfs' do since 4.19; mappings made before
 * stay on the original (docs/usage.md).
 */
#include "union.h"
#include "lower.h"

#include <linux/file.h>
#include <linux/fs_stack.h>
#include <linux/uio.h>
#include <linux/splice.h>
#include <linux/mman.h>
#include <linux/falloc.h>

/* The per-call flags of @ifl, for the branch file (RWF_APPEND: writes). */
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
	if (ifl & IOCB_APPEND)
		flags |= RWF_APPEND;
	return flags;
}

/*
 * Make the open branch file @lf (branch @b of @bt) the one the union file
 * @file wraps: its private data. Takes over the reference to @lf, also on
 * failure.
 */
static int unionfs_file_attach(struct file *file, struct file *lf,
			       struct unionfs_btable *bt, int b)
{
	struct unionfs_file_info *fi;

	fi = kzalloc(sizeof(*fi), GFP_KERNEL);
	if (!fi) {
		fput(lf);
		return -ENOMEM;
	}
	fi->br = unionfs_br_open(bt, b);
	if (IS_ERR(fi->br)) {
		int err = PTR_ERR(fi->br);

		kfree(fi);
		fput(lf);
		return err;
	}
	spin_lock_init(&fi->lock);
	fi->lower = lf;
	fi->generation = unionfs_sb_gen(bt->sb);
	/* RWF_NOWAIT where the branch file takes it */
	file->f_mode |= lf->f_mode & FMODE_NOWAIT;
	file->private_data = fi;
	return 0;
}

static int unionfs_open(struct inode *inode, struct file *file)
{
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_dentry_info *ud;
	struct dentry *ld;
	struct file *lf;
	int b, err;

	if ((file->f_mode & FMODE_WRITE) || (file->f_flags & O_TRUNC)) {
		bool trunc = (file->f_flags & O_TRUNC) &&
			     (file->f_mode & FMODE_WRITE);

		err = unionfs_copyup_for_write(dentry, UNIONFS_CUR_WRITE_OPEN,
					       trunc ? 0 : -1);
		if (err)
			return err;
	}
	/* the branch index and its table from one info, held */
	ud = unionfs_dinfo_get(dentry);
	ld = unionfs_ud_top_get(ud, &b);
	err = -ESTALE;
	if (!ld)
		goto out;
	lf = unionfs_do_open(ud->bt, b, ld, file->f_flags, current_cred());
	dput(ld);
	err = PTR_ERR_OR_ZERO(lf);
	if (!err)
		err = unionfs_file_attach(file, lf, ud->bt, b);
out:
	unionfs_dinfo_put(ud);
	return err;
}

/* Drop a union file's own reference to its branch file @lf on @br. */
static void unionfs_real_release(struct file *lf, struct unionfs_branch *br)
{
	atomic_dec(&br->open_files);
	unionfs_branch_put(br);
	fput(lf);
}

static int unionfs_release(struct inode *inode, struct file *file)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);

	unionfs_real_release(fi->lower, fi->br);
	kfree(fi);
	return 0;
}

/* ->open of a union file whose branch file is attached already */
static int unionfs_open_attached(struct inode *inode, struct file *file)
{
	return 0;
}

/*
 * Open the union file @file (->tmpfile's, not opened yet) on @dentry over
 * @lf, a branch file of branch @b the branch fs opened itself (O_TMPFILE,
 * inode.c): the same private data as unionfs_open() makes. Takes over the
 * reference to @lf, also on failure.
 */
int unionfs_open_over(struct file *file, struct dentry *dentry,
		      struct file *lf, struct unionfs_btable *bt, int b)
{
	int err = unionfs_file_attach(file, lf, bt, b);

	if (err)
		return err;
	err = finish_open(file, dentry, unionfs_open_attached);
	/* not opened: ->release will not be called, drop it here */
	if (err && !(file->f_mode & FMODE_OPENED)) {
		unionfs_release(d_inode(dentry), file);
		file->private_data = NULL;
	}
	return err;
}

/* Has @file's dentry another winning lower inode than @lf's? */
static bool unionfs_real_stale(struct file *file, struct file *lf)
{
	struct unionfs_dentry_info *ud;
	struct inode *li = NULL;

	/* RCU: a replaced info and its lower dentries outlive a grace period */
	rcu_read_lock();
	ud = READ_ONCE(file->f_path.dentry->d_fsdata);
	if (ud) {
		spin_lock(&ud->lock);
		if (ud->bstart >= 0 && ud->lower[ud->bstart])
			li = d_inode(ud->lower[ud->bstart]);
		spin_unlock(&ud->lock);
	}
	rcu_read_unlock();
	return li && li != file_inode(lf);
}

/*
 * The branch file to use now, referenced (fput() it when done). When the
 * winning lower inode of @file's dentry is no longer the one its branch
 * file was opened on (a copy-up through another descriptor, a setattr or
 * xattr change, a link), a branch file is opened on the current winner
 * with @file's flags and the mounter's credentials (the opener's
 * permission was checked at open, as for the original) and replaces the
 * old one; users of the old one keep their reference until they are done.
 * The union file's position is the one that counts: callers pass it down.
 */
static struct file *unionfs_real_get(struct file *file)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	struct dentry *dentry = file->f_path.dentry;
	struct unionfs_dentry_info *ud;
	struct unionfs_branch *br, *obr;
	struct file *lf, *nf, *ret;
	struct dentry *ld;
	int b;

	spin_lock(&fi->lock);
	lf = get_file(fi->lower);
	spin_unlock(&fi->lock);
	if (likely(!unionfs_real_stale(file, lf)))
		return lf;

	ud = unionfs_dinfo_get(dentry);	/* @b is a branch of its table */
	ld = unionfs_ud_top_get(ud, &b);
	/* not to a deleted branch (unionfs_br_use would refuse it) */
	if (ld && READ_ONCE(ud->bt->br[b]->state) == UNIONFS_BRS_GONE) {
		dput(ld);
		ld = NULL;
	}
	if (!ld || !d_is_reg(ld)) {
		dput(ld);
		unionfs_dinfo_put(ud);
		return lf;	/* not a file we could switch to */
	}
	nf = unionfs_do_open(ud->bt, b, ld, file->f_flags,
			     UNIONFS_SB(dentry->d_sb)->creator_cred);
	dput(ld);
	if (IS_ERR(nf)) {
		unionfs_dinfo_put(ud);
		fput(lf);
		return nf;
	}
	br = unionfs_br_open(ud->bt, b);
	unionfs_dinfo_put(ud);
	if (IS_ERR(br)) {	/* deleted meanwhile: stay on the old one */
		fput(nf);
		return lf;
	}
	spin_lock(&fi->lock);
	if (fi->lower == lf) {
		fi->lower = nf;
		obr = fi->br;
		fi->br = br;
		ret = get_file(nf);
		spin_unlock(&fi->lock);
		unionfs_real_release(lf, obr);	/* the union file's reference */
	} else {
		/* another caller switched meanwhile: use its file */
		ret = get_file(fi->lower);
		spin_unlock(&fi->lock);
		unionfs_real_release(nf, br);
	}
	fput(lf);
	return ret;
}

#define UNIONFS_SETFL_MASK (O_APPEND | O_NONBLOCK | O_NDELAY | O_DIRECT | \
			    O_NOATIME)

/*
 * fcntl(F_SETFL) only changes the union file: carry its flags down (and
 * the per-file iocb flags the branch file's I/O starts from). O_DIRECT
 * on a branch file that cannot do it: EINVAL, as open() would give.
 */
static int unionfs_sync_flags(struct file *file, struct file *lower)
{
	unsigned int fl = READ_ONCE(file->f_flags) & UNIONFS_SETFL_MASK;

	if (likely(!((fl ^ READ_ONCE(lower->f_flags)) & UNIONFS_SETFL_MASK)))
		return 0;
	if ((fl & O_DIRECT) && !(lower->f_mode & FMODE_CAN_ODIRECT))
		return -EINVAL;
	spin_lock(&lower->f_lock);
	lower->f_flags = (lower->f_flags & ~UNIONFS_SETFL_MASK) | fl;
	lower->f_iocb_flags = iocb_flags(lower);
	spin_unlock(&lower->f_lock);
	return 0;
}

static ssize_t unionfs_read_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct file *lower;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	lower = unionfs_real_get(file);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	ret = unionfs_sync_flags(file, lower);
	if (!ret) {
		ret = unionfs_do_read_iter(file_inode(file)->i_sb, lower, iter,
					   &iocb->ki_pos,
					   unionfs_iocb_to_rwf(iocb->ki_flags &
							       ~IOCB_APPEND));
		fsstack_copy_attr_atime(file_inode(file), file_inode(lower));
	}
	fput(lower);
	return ret;
}

static ssize_t unionfs_write_iter(struct kiocb *iocb, struct iov_iter *iter)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct file *lower;
	ssize_t ret;

	if (!iov_iter_count(iter))
		return 0;
	if (iocb->ki_flags & IOCB_NOWAIT) {
		if (!inode_trylock(inode))
			return -EAGAIN;
	} else {
		inode_lock(inode);
	}
	lower = unionfs_real_get(file);
	if (IS_ERR(lower)) {
		inode_unlock(inode);
		return PTR_ERR(lower);
	}
	ret = unionfs_sync_flags(file, lower);
	if (!ret)
		ret = file_remove_privs(file);
	if (!ret) {
		/* O_APPEND, RWF_APPEND: the branch file writes at its end */
		file_start_write(lower);
		ret = unionfs_do_write_iter(inode->i_sb, lower, iter,
					    &iocb->ki_pos,
					    unionfs_iocb_to_rwf(iocb->ki_flags));
		file_end_write(lower);
	}
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	fput(lower);
	return ret;
}

static ssize_t unionfs_splice_write(struct pipe_inode_info *pipe,
				    struct file *file, loff_t *ppos,
				    size_t len, unsigned int flags)
{
	struct inode *inode = file_inode(file);
	struct file *lower;
	ssize_t ret;

	inode_lock(inode);
	lower = unionfs_real_get(file);
	if (IS_ERR(lower)) {
		inode_unlock(inode);
		return PTR_ERR(lower);
	}
	ret = unionfs_sync_flags(file, lower);
	if (!ret) {
		file_start_write(lower);
		ret = iter_file_splice_write(pipe, lower, ppos, len, flags);
		file_end_write(lower);
	}
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	fput(lower);
	return ret;
}

static loff_t unionfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	struct file *lower;
	loff_t ret;

	if (whence == SEEK_CUR && offset == 0)
		return file->f_pos;
	lower = unionfs_real_get(file);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	inode_lock(inode);
	lower->f_pos = file->f_pos;
	ret = unionfs_do_llseek(inode->i_sb, lower, offset, whence);
	file->f_pos = lower->f_pos;
	inode_unlock(inode);
	fput(lower);
	return ret;
}

static int unionfs_fsync(struct file *file, loff_t start, loff_t end,
			 int datasync)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	struct file *lower;
	bool writable;
	int ret = 0;

	lower = unionfs_real_get(file);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	spin_lock(&fi->lock);
	/*
	 * A file open for writing is synced whatever its branch's mode now
	 * (the branch fs reports its own errors, EROFS of a fs shut down);
	 * another where the union may have written (unionfs_br_syncable).
	 */
	writable = fi->lower == lower &&
		   ((lower->f_mode & FMODE_WRITE) ||
		    unionfs_br_syncable(fi->br));
	spin_unlock(&fi->lock);
	if (writable)
		ret = unionfs_do_fsync(file_inode(file)->i_sb, -1, lower,
				       start, end, datasync);
	fput(lower);
	return ret;
}

static int unionfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct file *lower;

	if (WARN_ON_ONCE(file != vma->vm_file))
		return -EIO;
	lower = unionfs_real_get(file);
	if (IS_ERR(lower))
		return PTR_ERR(lower);
	if (!lower->f_op->mmap) {
		fput(lower);
		return -ENODEV;
	}
	vma_set_file(vma, lower);	/* the mapping holds its own reference */
	fput(lower);
	return call_mmap(vma->vm_file, vma);
}

static long unionfs_fallocate(struct file *file, int mode, loff_t offset,
			      loff_t len)
{
	struct inode *inode = file_inode(file);
	struct file *lower;
	long ret;

	inode_lock(inode);
	lower = unionfs_real_get(file);
	if (IS_ERR(lower)) {
		inode_unlock(inode);
		return PTR_ERR(lower);
	}
	ret = file_remove_privs(file);
	if (!ret)
		ret = unionfs_do_fallocate(inode->i_sb, lower, mode, offset,
					   len);
	unionfs_copy_attr(inode, file_inode(lower));
	inode_unlock(inode);
	fput(lower);
	return ret;
}

static int unionfs_fadvise(struct file *file, loff_t offset, loff_t len,
			   int advice)
{
	struct file *lower = unionfs_real_get(file);
	int ret;

	if (IS_ERR(lower))
		return PTR_ERR(lower);
	ret = unionfs_do_fadvise(file_inode(file)->i_sb, lower, offset, len,
				 advice);
	fput(lower);
	return ret;
}

/* Called on every close of a descriptor: no switch here, only a flush. */
static int unionfs_flush(struct file *file, fl_owner_t id)
{
	struct unionfs_file_info *fi = UNIONFS_F(file);
	struct file *lower;
	int ret = 0;

	spin_lock(&fi->lock);
	lower = get_file(fi->lower);
	spin_unlock(&fi->lock);
	if (lower->f_op->flush)
		ret = lower->f_op->flush(lower, id);
	fput(lower);
	return ret;
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
