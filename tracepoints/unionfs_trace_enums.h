/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unionfs: the values of the tracepoints' enum fields (src/union.h includes
 * this for the code, unionfs_trace.h for the names it prints). One list
 * each, so that the names in a trace and the values in the code cannot
 * drift: EM(value, name) per entry, EMe() for the last, as in the kernel's
 * own trace headers (include/trace/events/afs.h), whose style this follows
 * (checkpatch does not parse it, as it does not parse TRACE_EVENT()).
 */
#ifndef _UNIONFS_TRACE_ENUMS_H
#define _UNIONFS_TRACE_ENUMS_H

/* unionfs_branch_op: the call into a branch filesystem (lower.c) */
#define UNIONFS_BOPS							\
	EM(UNIONFS_BOP_LOOKUP,		"lookup")			\
	EM(UNIONFS_BOP_CREATE,		"create")			\
	EM(UNIONFS_BOP_MKDIR,		"mkdir")			\
	EM(UNIONFS_BOP_MKNOD,		"mknod")			\
	EM(UNIONFS_BOP_SYMLINK,		"symlink")			\
	EM(UNIONFS_BOP_LINK,		"link")				\
	EM(UNIONFS_BOP_UNLINK,		"unlink")			\
	EM(UNIONFS_BOP_RMDIR,		"rmdir")			\
	EM(UNIONFS_BOP_RENAME,		"rename")			\
	EM(UNIONFS_BOP_SETATTR,		"setattr")			\
	EM(UNIONFS_BOP_SETXATTR,	"setxattr")			\
	EM(UNIONFS_BOP_REMOVEXATTR,	"removexattr")			\
	EM(UNIONFS_BOP_GETXATTR,	"getxattr")			\
	EM(UNIONFS_BOP_LISTXATTR,	"listxattr")			\
	EM(UNIONFS_BOP_PROBE_XATTR,	"probe_xattr")			\
	EM(UNIONFS_BOP_OPEN,		"open")				\
	EM(UNIONFS_BOP_TMPFILE,		"tmpfile")			\
	EM(UNIONFS_BOP_SCAN,		"scan")				\
	EM(UNIONFS_BOP_ITERATE,		"iterate")			\
	EM(UNIONFS_BOP_READ,		"read")				\
	EM(UNIONFS_BOP_WRITE,		"write")			\
	EM(UNIONFS_BOP_LLSEEK,		"llseek")			\
	EM(UNIONFS_BOP_FSYNC,		"fsync")			\
	EM(UNIONFS_BOP_FALLOCATE,	"fallocate")			\
	EM(UNIONFS_BOP_FADVISE,		"fadvise")			\
	EM(UNIONFS_BOP_SPLICE,		"splice")			\
	EM(UNIONFS_BOP_CLONE,		"clone")			\
	EM(UNIONFS_BOP_GETATTR,		"getattr")			\
	EM(UNIONFS_BOP_GET_LINK,	"get_link")			\
	EM(UNIONFS_BOP_FILEATTR_GET,	"fileattr_get")			\
	EM(UNIONFS_BOP_STATFS,		"statfs")			\
	EMe(UNIONFS_BOP_SYNC_FS,	"sync_fs")

/* unionfs_revalidate: what became of the dentry */
#define UNIONFS_RV_RESULTS						\
	EM(UNIONFS_RVR_VALID,		"valid")			\
	EM(UNIONFS_RVR_REFRESHED,	"refreshed")			\
	EM(UNIONFS_RVR_REKEYED,		"rekeyed")			\
	EM(UNIONFS_RVR_KEPT,		"kept")				\
	EM(UNIONFS_RVR_DROPPED,		"dropped")			\
	EMe(UNIONFS_RVR_REBUILT,	"rebuilt")

/*
 * unionfs_revalidate: why; the last two are also unionfs_gen_bump's
 * cause (and the reason of the root's rebuild)
 */
#define UNIONFS_RV_WHYS							\
	EM(UNIONFS_RVW_UNCHANGED,	"unchanged")			\
	EM(UNIONFS_RVW_NEG_UNCHANGED,	"negative-unchanged")		\
	EM(UNIONFS_RVW_COH_NONE,	"coherency-none")		\
	EM(UNIONFS_RVW_NOTIFY_QUIET,	"notify-quiet")			\
	EM(UNIONFS_RVW_GENERATION,	"generation")			\
	EM(UNIONFS_RVW_NEG_BRANCHES,	"negative-with-branches")	\
	EM(UNIONFS_RVW_LOWER_DIR_GONE,	"lower-dir-gone")		\
	EM(UNIONFS_RVW_NO_PARENT,	"no-parent")			\
	EM(UNIONFS_RVW_SNAP_RACY,	"snap-racy")			\
	EM(UNIONFS_RVW_OWN_CHANGE,	"own-change")			\
	EM(UNIONFS_RVW_DIR_CHANGED,	"dir-changed")			\
	EM(UNIONFS_RVW_LOWER_CHANGED,	"lower-changed")		\
	EM(UNIONFS_RVW_LOWER_GONE,	"lower-gone")			\
	EM(UNIONFS_RVW_LOWER_REPLACED,	"lower-replaced")		\
	EM(UNIONFS_RVW_PARENT_STALE,	"parent-stale")			\
	EM(UNIONFS_RVW_LOOKUP_ERROR,	"lookup-error")			\
	EM(UNIONFS_RVW_RACED,		"raced")			\
	EM(UNIONFS_RVW_REMOUNT,		"remount")			\
	EMe(UNIONFS_RVW_INCGEN,		"incgen")

/* unionfs_copyup_start/_end: what needed the copy-up */
#define UNIONFS_CU_REASONS						\
	EM(UNIONFS_CUR_WRITE_OPEN,	"write-open")			\
	EM(UNIONFS_CUR_TRUNCATE,	"truncate")			\
	EM(UNIONFS_CUR_SETATTR,		"setattr")			\
	EM(UNIONFS_CUR_XATTR,		"xattr")			\
	EM(UNIONFS_CUR_LINK,		"link")				\
	EM(UNIONFS_CUR_LINK_GROUP,	"link-group")			\
	EM(UNIONFS_CUR_RENAME,		"rename")			\
	EMe(UNIONFS_CUR_PARENT,		"parent")

/* unionfs_whiteout_create/_remove, unionfs_opaque_mark: why */
#define UNIONFS_MK_REASONS						\
	EM(UNIONFS_MKR_UNLINK,		"unlink")			\
	EM(UNIONFS_MKR_RMDIR,		"rmdir")			\
	EM(UNIONFS_MKR_RENAME,		"rename")			\
	EM(UNIONFS_MKR_MKDIR_OVER_WH,	"mkdir-over-whiteout")		\
	EM(UNIONFS_MKR_CREATE_OVER_WH,	"create-over-whiteout")		\
	EM(UNIONFS_MKR_REVERT,		"revert")			\
	EM(UNIONFS_MKR_CLEAN,		"clean")			\
	EMe(UNIONFS_MKR_COPYUP,		"copyup")

#undef EM
#undef EMe
#define EM(a, b)	a,
#define EMe(a, b)	a
enum unionfs_bop { UNIONFS_BOPS };
enum unionfs_rv_result { UNIONFS_RV_RESULTS };
enum unionfs_rv_why { UNIONFS_RV_WHYS };
enum unionfs_cu_reason { UNIONFS_CU_REASONS };
enum unionfs_mk_reason { UNIONFS_MK_REASONS };
#undef EM
#undef EMe

#endif /* _UNIONFS_TRACE_ENUMS_H */
