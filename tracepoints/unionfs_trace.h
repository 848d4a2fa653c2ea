/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unionfs tracepoints (TRACE_SYSTEM unionfs).
 *
 * Every event carries the union's device (dev, as major:minor) so several
 * unions can be told apart, and copies names into the ring buffer.
 * Branch indexes are union priorities (0 = highest); -1 means "none".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM unionfs

#if !defined(_UNIONFS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _UNIONFS_TRACE_H

#include <linux/tracepoint.h>
#include <linux/fs.h>
#include <linux/dcache.h>

#include "../src/union.h"	/* struct unionfs_dentry_info, the enums */

/*
 * The enum fields (src/union.h's lists): their values exported for user
 * space (the format files show the numbers), then printed by name.
 */
#undef EM
#undef EMe
#define EM(a, b)	TRACE_DEFINE_ENUM(a);
#define EMe(a, b)	TRACE_DEFINE_ENUM(a);
UNIONFS_BOPS
UNIONFS_RV_RESULTS
UNIONFS_RV_WHYS
UNIONFS_CU_REASONS
UNIONFS_MK_REASONS
#undef EM
#undef EMe
#define EM(a, b)	{ a, b },
#define EMe(a, b)	{ a, b }

TRACE_EVENT(unionfs_lookup,
	TP_PROTO(struct super_block *sb, const char *parent,
		 const struct qstr *name, int first, int last, int probed,
		 int whskip, const struct unionfs_dentry_info *ud, int err,
		 u64 ns),
	TP_ARGS(sb, parent, name, first, last, probed, whskip, ud, err, ns),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(parent, parent)
		__string(name, name->name)
		__field(int, first)
		__field(int, last)
		__field(int, probed)
		__field(int, whskip)
		__field(int, bstart)
		__field(int, bend)
		__field(int, bopaque)
		__field(int, bwh)
		__field(int, err)
		__field(u8, result)
		__field(u64, ns)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__entry->result = err ? 2 : (ud->bstart >= 0 ? 0 : 1);
		__assign_str(parent, parent);
		__assign_str(name, name->name);
		__entry->first = first;
		__entry->last = last;
		__entry->probed = probed;
		__entry->whskip = whskip;
		__entry->bstart = ud->bstart;
		__entry->bend = ud->bend;
		__entry->bopaque = ud->bopaque;
		__entry->bwh = ud->bwh;
		__entry->err = err;
		__entry->ns = ns;
	),
	TP_printk("dev %d:%d %s/%s branches %d..%d probed %d whskip %d -> %s bstart %d bend %d opaque %d whiteout %d err %d ns %llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(parent),
		  __get_str(name), __entry->first, __entry->last,
		  __entry->probed, __entry->whskip,
		  __print_symbolic(__entry->result, { 0, "positive" },
				   { 1, "negative" }, { 2, "error" }),
		  __entry->bstart, __entry->bend, __entry->bopaque,
		  __entry->bwh, __entry->err, __entry->ns)
);

DECLARE_EVENT_CLASS(unionfs_copyup_class,
	TP_PROTO(struct super_block *sb, const char *name, unsigned long ino,
		 int from, int to, loff_t size, loff_t copied,
		 enum unionfs_cu_reason reason, int err, u64 ns),
	TP_ARGS(sb, name, ino, from, to, size, copied, reason, err, ns),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(name, name)
		__field(unsigned long, ino)
		__field(int, from)
		__field(int, to)
		__field(loff_t, size)
		__field(loff_t, copied)
		__field(u8, reason)
		__field(int, err)
		__field(u64, ns)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(name, name);
		__entry->ino = ino;
		__entry->from = from;
		__entry->to = to;
		__entry->size = size;
		__entry->copied = copied;
		__entry->reason = reason;
		__entry->err = err;
		__entry->ns = ns;
	),
	TP_printk("dev %d:%d name %s ino %lu branch %d -> %d size %lld copied %lld reason %s err %d ns %llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->ino, __entry->from, __entry->to, __entry->size,
		  __entry->copied,
		  __print_symbolic(__entry->reason, UNIONFS_CU_REASONS),
		  __entry->err, __entry->ns)
);

DEFINE_EVENT(unionfs_copyup_class, unionfs_copyup_start,
	TP_PROTO(struct super_block *sb, const char *name, unsigned long ino,
		 int from, int to, loff_t size, loff_t copied,
		 enum unionfs_cu_reason reason, int err, u64 ns),
	TP_ARGS(sb, name, ino, from, to, size, copied, reason, err, ns));

DEFINE_EVENT(unionfs_copyup_class, unionfs_copyup_end,
	TP_PROTO(struct super_block *sb, const char *name, unsigned long ino,
		 int from, int to, loff_t size, loff_t copied,
		 enum unionfs_cu_reason reason, int err, u64 ns),
	TP_ARGS(sb, name, ino, from, to, size, copied, reason, err, ns));

/*
 * One phase of a copy-up (src/copyup.c) ended: @phase is an enum
 * unionfs_cu_phase, @tmpfile says whether the temporary is an O_TMPFILE
 * (no name until the publish phase links it) or a hidden named one.
 * Emitted between unionfs_copyup_start and unionfs_copyup_end.
 */
TRACE_DEFINE_ENUM(UNIONFS_COPYUP_PREPARE);
TRACE_DEFINE_ENUM(UNIONFS_COPYUP_DATA);
TRACE_DEFINE_ENUM(UNIONFS_COPYUP_META);
TRACE_DEFINE_ENUM(UNIONFS_COPYUP_PUBLISH);

TRACE_EVENT(unionfs_copyup_phase,
	TP_PROTO(struct super_block *sb, const char *name, int to, int phase,
		 bool tmpfile, int err),
	TP_ARGS(sb, name, to, phase, tmpfile, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(name, name)
		__field(int, to)
		__field(int, phase)
		__field(bool, tmpfile)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(name, name);
		__entry->to = to;
		__entry->phase = phase;
		__entry->tmpfile = tmpfile;
		__entry->err = err;
	),
	TP_printk("dev %d:%d name %s branch %d phase %s temp %s err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->to,
		  __print_symbolic(__entry->phase,
				   { UNIONFS_COPYUP_PREPARE, "prepare" },
				   { UNIONFS_COPYUP_DATA, "data" },
				   { UNIONFS_COPYUP_META, "meta" },
				   { UNIONFS_COPYUP_PUBLISH, "publish" }),
		  __entry->tmpfile ? "tmpfile" : "named", __entry->err)
);

/* Whiteouts and opaque markers: @name (the marker) in directory @parent. */
DECLARE_EVENT_CLASS(unionfs_marker_class,
	TP_PROTO(struct super_block *sb, const char *parent, const char *name,
		 int bindex, enum unionfs_mk_reason reason, int err),
	TP_ARGS(sb, parent, name, bindex, reason, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(parent, parent)
		__string(name, name)
		__field(int, bindex)
		__field(u8, reason)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(parent, parent);
		__assign_str(name, name);
		__entry->bindex = bindex;
		__entry->reason = reason;
		__entry->err = err;
	),
	TP_printk("dev %d:%d parent %s name %s branch %d reason %s err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(parent),
		  __get_str(name), __entry->bindex,
		  __print_symbolic(__entry->reason, UNIONFS_MK_REASONS),
		  __entry->err)
);

DEFINE_EVENT(unionfs_marker_class, unionfs_whiteout_create,
	TP_PROTO(struct super_block *sb, const char *parent, const char *name,
		 int bindex, enum unionfs_mk_reason reason, int err),
	TP_ARGS(sb, parent, name, bindex, reason, err));

DEFINE_EVENT(unionfs_marker_class, unionfs_whiteout_remove,
	TP_PROTO(struct super_block *sb, const char *parent, const char *name,
		 int bindex, enum unionfs_mk_reason reason, int err),
	TP_ARGS(sb, parent, name, bindex, reason, err));

DEFINE_EVENT(unionfs_marker_class, unionfs_opaque_mark,
	TP_PROTO(struct super_block *sb, const char *parent, const char *name,
		 int bindex, enum unionfs_mk_reason reason, int err),
	TP_ARGS(sb, parent, name, bindex, reason, err));

/* @op: enum unionfs_bop (a number in filters: op == 26 is "clone") */
DECLARE_EVENT_CLASS(unionfs_branch_op_class,
	TP_PROTO(struct super_block *sb, enum unionfs_bop op, int bindex,
		 const char *name, int err),
	TP_ARGS(sb, op, bindex, name, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(u8, op)
		__field(int, bindex)
		__string(name, name)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__entry->op = op;
		__entry->bindex = bindex;
		__assign_str(name, name);
		__entry->err = err;
	),
	TP_printk("dev %d:%d %s branch %d name %s err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  __print_symbolic(__entry->op, UNIONFS_BOPS),
		  __entry->bindex, __get_str(name), __entry->err)
);

DEFINE_EVENT(unionfs_branch_op_class, unionfs_branch_op,
	TP_PROTO(struct super_block *sb, enum unionfs_bop op, int bindex,
		 const char *name, int err),
	TP_ARGS(sb, op, bindex, name, err));

/* @result: enum unionfs_rv_result, @why: enum unionfs_rv_why */
TRACE_EVENT(unionfs_revalidate,
	TP_PROTO(struct super_block *sb, const char *name, int dgen,
		 int sbgen, enum unionfs_rv_result result,
		 enum unionfs_rv_why why),
	TP_ARGS(sb, name, dgen, sbgen, result, why),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(name, name)
		__field(int, dgen)
		__field(int, sbgen)
		__field(u8, result)
		__field(u8, why)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(name, name);
		__entry->dgen = dgen;
		__entry->sbgen = sbgen;
		__entry->result = result;
		__entry->why = why;
	),
	TP_printk("dev %d:%d name %s gen %d sbgen %d result %s why %s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->dgen, __entry->sbgen,
		  __print_symbolic(__entry->result, UNIONFS_RV_RESULTS),
		  __print_symbolic(__entry->why, UNIONFS_RV_WHYS))
);

/* @cause: enum unionfs_rv_why (remount or incgen) */
TRACE_EVENT(unionfs_gen_bump,
	TP_PROTO(struct super_block *sb, int old_gen, int new_gen,
		 enum unionfs_rv_why cause),
	TP_ARGS(sb, old_gen, new_gen, cause),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(int, old_gen)
		__field(int, new_gen)
		__field(u8, cause)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__entry->old_gen = old_gen;
		__entry->new_gen = new_gen;
		__entry->cause = cause;
	),
	TP_printk("dev %d:%d generation %d -> %d cause %s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->old_gen,
		  __entry->new_gen,
		  __print_symbolic(__entry->cause, UNIONFS_RV_WHYS))
);

TRACE_EVENT(unionfs_readdir,
	TP_PROTO(struct super_block *sb, const char *name, int bstart,
		 int bend, int branches, unsigned long emitted,
		 unsigned long dups, unsigned long whiteouts, bool cached,
		 int err),
	TP_ARGS(sb, name, bstart, bend, branches, emitted, dups, whiteouts,
		cached, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(name, name)
		__field(int, bstart)
		__field(int, bend)
		__field(int, branches)
		__field(unsigned long, emitted)
		__field(unsigned long, dups)
		__field(unsigned long, whiteouts)
		__field(bool, cached)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(name, name);
		__entry->bstart = bstart;
		__entry->bend = bend;
		__entry->branches = branches;
		__entry->emitted = emitted;
		__entry->dups = dups;
		__entry->whiteouts = whiteouts;
		__entry->cached = cached;
		__entry->err = err;
	),
	TP_printk("dev %d:%d dir %s branches %d..%d read %d entries %lu duplicates %lu whiteouts %lu cached %d err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->bstart, __entry->bend, __entry->branches,
		  __entry->emitted, __entry->dups, __entry->whiteouts,
		  __entry->cached, __entry->err)
);

/* A change made to a branch directly, not through the union. */
TRACE_EVENT(unionfs_hazard,
	TP_PROTO(struct super_block *sb, const char *kind, int bindex,
		 const char *name, const char *what),
	TP_ARGS(sb, kind, bindex, name, what),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(kind, kind)
		__field(int, bindex)
		__string(name, name)
		__string(what, what)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(kind, kind);
		__entry->bindex = bindex;
		__assign_str(name, name);
		__assign_str(what, what);
	),
	TP_printk("dev %d:%d kind %s branch %d name %s what %s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(kind),
		  __entry->bindex, __get_str(name), __get_str(what))
);

/*
 * Hard-link index decisions (index.c, docs/concepts.md "Hard links"): for
 * the union name @name, the link group @key in the index of branch @bindex
 * was "found" (lookup), "found-late" (published by a copy-up while the
 * lookup looked: unionfs_iget), "created" (copy-up of a first name), "linked" (a
 * name of the group given its own link to the index), "stale" (an entry
 * whose origin does not match: ignored or replaced) or "adopted" (names of
 * the group cached in the dcache moved over to the index).
 */
DECLARE_EVENT_CLASS(unionfs_index_class,
	TP_PROTO(struct super_block *sb, const char *name, int bindex,
		 const char *key, const char *what, int err),
	TP_ARGS(sb, name, bindex, key, what, err),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__string(name, name)
		__field(int, bindex)
		__string(key, key)
		__string(what, what)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->dev = sb->s_dev;
		__assign_str(name, name);
		__entry->bindex = bindex;
		__assign_str(key, key);
		__assign_str(what, what);
		__entry->err = err;
	),
	TP_printk("dev %d:%d name %s branch %d group %s %s err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->bindex, __get_str(key), __get_str(what),
		  __entry->err)
);

DEFINE_EVENT(unionfs_index_class, unionfs_index,
	TP_PROTO(struct super_block *sb, const char *name, int bindex,
		 const char *key, const char *what, int err),
	TP_ARGS(sb, name, bindex, key, what, err));

/*
 * Directory redirects (docs/concepts.md, "Directory rename"): for the union
 * directory @name, the redirect @path (relative to each branch's root) was
 * "set" on its copy in branch @bindex (rename), "followed" to branch
 * @bindex (lookup: the lower copy found there), "missing" in branch
 * @bindex (no directory at @path there) or found "invalid". The index's
 * class, @path in its "key" field, printed as a redirect.
 */
DEFINE_EVENT_PRINT(unionfs_index_class, unionfs_redirect,
	TP_PROTO(struct super_block *sb, const char *name, int bindex,
		 const char *path, const char *what, int err),
	TP_ARGS(sb, name, bindex, path, what, err),
	TP_printk("dev %d:%d name %s branch %d redirect %s %s err %d",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __get_str(name),
		  __entry->bindex, __get_str(key), __get_str(what),
		  __entry->err));

#endif /* _UNIONFS_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE unionfs_trace
#include <trace/define_trace.h>
