/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * unionfs user API: ioctls on any file or directory of a union.
 *
 *   UNIONFS_IOCTL_INCGEN     bump the union's generation (CAP_SYS_ADMIN);
 *                            returns the new generation.
 *   UNIONFS_IOCTL_QUERYFILE  which branches hold the file: fills a
 *                            struct unionfs_query (argument: pointer to it)
 *                            and returns how many branches hold the name.
 *
 * The numbers are the seed's (union_fs.h, 2007); QUERYFILE's argument is a
 * struct unionfs_query, not an int, whatever the size encoded in the number.
 */
#ifndef _UAPI_LINUX_UNIONFS_H
#define _UAPI_LINUX_UNIONFS_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define UNIONFS_SUPER_MAGIC		0xf15f083d
#define UNIONFS_MAX_BRANCHES		128

#define UNIONFS_IOCTL_INCGEN		_IOR(0x15, 11, int)
#define UNIONFS_IOCTL_QUERYFILE		_IOR(0x15, 15, int)

struct unionfs_query {
	__u32 nbranches;	/* out: branches in the union */
	__u32 generation;	/* out: the union's generation */
	/* out: bit i of branches[i / 64] set: branch i has an entry of this
	 * name in the file's parent directory (visible or hidden below the
	 * winning branch; whiteouts are not entries) */
	__u64 branches[UNIONFS_MAX_BRANCHES / 64];
};

#endif /* _UAPI_LINUX_UNIONFS_H */
