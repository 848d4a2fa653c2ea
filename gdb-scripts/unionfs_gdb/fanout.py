# gdb-scripts/unionfs_gdb/fanout.py: "what does the union see at this name, and why?" The branch
# fan-out of one union dentry, inode or file: bstart/bend/bopaque/bwh, its generation against
# the sb's, and per branch the lower dentry (inode number, type, path in the branch), the
# whiteout hiding it, names shadowed by a higher branch or hidden below an opaque directory
# (found in the branch's own dcache), negative/unhashed lower dentries, a hard link's
# link-group index entry, and the union inode's lower inodes. --dot FILE also writes the
# fan-out as a Graphviz graph.
#
#   (gdb) unionfs-fanout PATH|EXPR [--dot FILE]
#
# PATH is a path inside the guest below a union mount point (looked up in the dcache from the
# union's root dentry through d_subdirs/d_child, so it must have been looked up in the guest);
# EXPR is any gdb expression for a struct dentry/inode/file pointer (or a bare address, whose
# kind is then guessed; an inode is shown through its first alias, dentry.d_u.d_alias).
#
# Sample output (tests/host/30-gdb.sh: "both" in branches b0 (rw) and b1 (ro)):
#
#   dentry 0xffff8880058eb0c0 "both"  /tmp/g/m/both  [regular]
#     unionfs_dentry_info 0xffff888006381ea0: bstart 0  bend 0  bopaque -1  bwh -1  generation 1 (sb 1: current)  btable 0xffff8880061430c0
#     ├─ [0] rw /tmp/g/b0 (id 0)      dentry 0xffff8880058e6000 "both" ino 6 regular  /tmp/g/b0/both  <top>
#     └─ [1] ro /tmp/g/b1 (id 1)      shadowed by branch 0: branch dcache has dentry 0xffff8880058e63c0 "both" ino 7 regular  /tmp/g/b1/both
#     unionfs_inode_info 0xffff888004c71b30: ino 6  bstart 0  bend 0  generation 1 (sb 1: current)  key ino 6
#       lower inodes: [0] ino 6 regular
#     dot: both.dot (render: dot -Tpng both.dot -o both.png)
import os

import gdb

from . import core
from .symbols import ensure_symbols


def resolve_path(path):
    """Union dentry for an absolute guest path below a union mount point."""
    best = None
    for sb in core.union_sbs():
        for m in core.sb_mounts(sb):
            mp = core.path_of(m["mnt"]["mnt_root"], m)
            pre = mp.rstrip("/") + "/"
            if path == mp or path.startswith(pre):
                if best is None or len(mp) > len(best[0]):
                    best = (mp, m)
    if best is None:
        raise gdb.GdbError("%s is not below a union mount point (see unionfs-mounts)" % path)
    mp, m = best
    d = m["mnt"]["mnt_root"]
    walked = mp
    for comp in [c for c in path[len(mp):].split("/") if c and c != "."]:
        if comp == "..":
            d = d["d_parent"]
            continue
        c = core.lookup_child(d, comp)
        if c is None:
            raise gdb.GdbError("%s/%s is not in the dcache (look it up in the guest first, e.g. stat)"
                               % (walked.rstrip("/"), comp))
        d = c
        walked = walked.rstrip("/") + "/" + comp
    return d


def classify(v):
    """('dentry'|'inode'|'file', pointer) for a gdb value."""
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        tag = t.target().strip_typedefs().tag
        if tag in ("dentry", "inode", "file"):
            return tag, v
        if tag == "unionfs_inode_info":
            return "inode", v["vfs_inode"].address
        addr = int(v)
    else:
        addr = int(v)
    for kind, sbpath in (("dentry", ("d_sb",)), ("inode", ("i_sb",)), ("file", ("f_inode", "i_sb"))):
        p = gdb.Value(addr).cast(core.T("struct " + kind).pointer())
        try:
            x = p
            for f in sbpath:
                x = x[f]
            if int(x) and core.cstr(x["s_type"]["name"]) == core.MODNAME:
                return kind, p
        except gdb.MemoryError:
            continue
    raise gdb.GdbError("0x%x is not a unionfs dentry, inode or file" % addr)


def whiteout_cached(lparent, name):
    """A positive '.wh.NAME' child cached under the lower parent dentry?"""
    if lparent is None or int(lparent) == 0:
        return None
    c = core.lookup_child(lparent, ".wh." + name)
    if c is not None and int(c["d_inode"]):
        return c
    return None


def fanout_dentry(d, dot=None, title=None):
    sb = d["d_sb"]
    sbgen = core.sb_gen(sb)
    mp = core.sb_mounts(sb)
    where = core.path_of(d, mp[0]) if mp else "?"
    inode = d["d_inode"]
    print("%sdentry 0x%x \"%s\"  %s  [%s]" % (title or "", int(d), core.dname(d), where, core.ftype(inode)))
    if not int(d["d_fsdata"]):
        print("  (no unionfs_dentry_info: d_fsdata is NULL)")
        return
    ud = core.UD(d)
    brs = core.d_branches(ud, sb)
    gen = int(ud["generation"])
    btinfo = ""
    if core.has_field(ud, "bt"):
        cur = core.sb_bt(sb)
        btinfo = "  btable 0x%x%s" % (int(ud["bt"]), "" if cur is None or int(cur) == int(ud["bt"])
                                      else " (OLD table; sb has 0x%x)" % int(cur))
    print("  unionfs_dentry_info 0x%x: bstart %d  bend %d  bopaque %d  bwh %d  generation %d (sb %d: %s)%s"
          % (int(ud), int(ud["bstart"]), int(ud["bend"]), int(ud["bopaque"]), int(ud["bwh"]), gen,
             sbgen, "current" if gen == sbgen else "STALE, lags by %d" % (sbgen - gen), btinfo))
    pud = core.UD(d["d_parent"]) if not core.is_root(d) and int(d["d_parent"]["d_fsdata"]) else None
    nbr = int(ud["nbr"])
    iv = core.inode_vec(inode) if int(inode) else None
    rows = []
    for i in range(nbr):
        br = brs[i] if i < len(brs) else None
        ld = ud["lower"][i]
        head = "[%d] %s %s (id %d)" % (i, core.br_mode(br) if br else "?", core.cstr(br["name"]) if br else "?",
                                       int(br["id"]) if br else -1)
        marks = []
        if i == int(ud["bstart"]):
            marks.append("top")
        if i == int(ud["bopaque"]):
            marks.append("opaque")
        if int(ld):
            li = ld["d_inode"]
            if int(li):
                desc = "dentry 0x%x \"%s\" ino %d %s" % (int(ld), core.dname(ld), int(li["i_ino"]), core.ftype(li))
            else:
                desc = "dentry 0x%x \"%s\" NEGATIVE" % (int(ld), core.dname(ld))
            if core.d_unhashed(ld) and not core.is_root(ld):
                marks.append("UNHASHED in branch")
            if core.dname(ld["d_parent"]) == core.INDEX_DIR and core.dname(ld) != core.dname(d):
                marks.append("link group: the index entry")
            elif (i != int(ud["bstart"]) and pud is not None and i < int(pud["nbr"])
                  and int(pud["lower"][i]) != int(ld["d_parent"])):
                # docs/concepts.md "Directory rename": trusted.unionfs.redirect
                marks.append("redirect: not under the parent's branch dir")
            if br is not None:
                desc += "  %s" % core.lower_path_of(ld, br)
        else:
            lpar = pud["lower"][i] if pud is not None and i < int(pud["nbr"]) else None
            wh = whiteout_cached(lpar, core.dname(d)) if not core.is_root(d) else None
            if i == int(ud["bwh"]) or wh is not None:
                desc = "WHITEOUT .wh.%s" % core.dname(d)
                if wh is not None:
                    desc += " (dentry 0x%x ino %d)" % (int(wh), int(wh["d_inode"]["i_ino"]))
            else:
                # not part of the union's view: is the name cached in that branch anyway?
                lc = core.lookup_child(lpar, core.dname(d)) if lpar is not None and int(lpar) else None
                if int(ud["bopaque"]) >= 0 and i > int(ud["bopaque"]):
                    desc = "hidden (below opaque branch %d)" % int(ud["bopaque"])
                elif lc is not None and int(lc["d_inode"]) and 0 <= int(ud["bstart"]) < i:
                    desc = "shadowed by branch %d" % int(ud["bstart"])
                else:
                    desc = "-"
                if lc is not None:
                    li = lc["d_inode"]
                    desc += ": branch dcache has dentry 0x%x \"%s\" %s" % (
                        int(lc), core.dname(lc), "ino %d %s" % (int(li["i_ino"]), core.ftype(li)) if int(li)
                        else "NEGATIVE")
                    if br is not None:
                        desc += "  %s" % core.lower_path_of(lc, br)
        if iv is not None and i < iv["nbr"]:
            linode = iv["lower"][i]
            if int(ld) and int(ld["d_inode"]) and int(linode) != int(ld["d_inode"]):
                marks.append("inode's lower ino %d differs" % (int(linode["i_ino"]) if int(linode) else 0))
        rows.append((head, desc, marks, ld))
    for k, (head, desc, marks, _) in enumerate(rows):
        branch = "└─" if k == len(rows) - 1 else "├─"
        print("  %s %-28s %s%s" % (branch, head, desc, ("  <" + ", ".join(marks) + ">") if marks else ""))
    if iv is not None:
        fanout_inode(inode, sbgen, indent="  ")
    if dot is not None:
        write_dot(dot, d, ud, rows, brs, sbgen)


def fanout_inode(inode, sbgen=None, indent=""):
    iv = core.inode_vec(inode)
    if sbgen is None:
        sbgen = core.sb_gen(inode["i_sb"])
    gen = iv["gen"]
    lows = []
    for i, li in enumerate(iv["lower"]):
        if int(li):
            lows.append("[%d] ino %d %s" % (i, int(li["i_ino"]), core.ftype(li)))
    key = iv["ui"]["key"]
    print("%sunionfs_inode_info 0x%x: ino %d  bstart %d  bend %d  generation %s (sb %d: %s)  key ino %s"
          % (indent, iv["addr"], int(inode["i_ino"]), iv["bstart"], iv["bend"], gen, sbgen,
             "current" if gen == sbgen else "STALE", int(key["i_ino"]) if int(key) else "-"))
    print("%s  lower inodes: %s" % (indent, "  ".join(lows) or "none"))


def fanout_file(f):
    uf = core.UF(f)
    d = f["f_path"]["dentry"]
    sbgen = core.sb_gen(d["d_sb"])
    lf = uf["lower"]
    low = "none (merged directory)"
    if int(lf):
        ld = lf["f_path"]["dentry"]
        low = "file 0x%x -> \"%s\" ino %d" % (int(lf), core.dname(ld), int(lf["f_inode"]["i_ino"]))
    if core.has_field(uf, "br"):
        br = uf["br"]
        where = "branch %s (id %d)" % (core.cstr(br["name"]), int(br["id"])) if int(br) else "no branch"
    else:
        where = "bindex %d  branch id %d" % (int(uf["bindex"]), int(uf["branch_id"]))
    gen = int(uf["generation"])
    print("file 0x%x: unionfs_file_info 0x%x  %s  generation %d (sb %d: %s)  lower %s"
          % (int(f), int(uf), where, gen, sbgen, "current" if gen == sbgen else "STALE", low))
    fanout_dentry(d, title="  ")


def dot_q(s):
    return '"%s"' % str(s).replace("\\", "\\\\").replace('"', '\\"')


def write_dot(path, d, ud, rows, brs, sbgen):
    out = ["digraph unionfs_fanout {", "  rankdir=LR; node [shape=box, fontname=monospace];"]
    out.append("  u [label=%s, style=bold];" % dot_q(
        "union dentry \"%s\"\\n0x%x\\nbstart %d bend %d bopaque %d bwh %d\\ngen %d / sb %d" % (
            core.dname(d), int(d), int(ud["bstart"]), int(ud["bend"]), int(ud["bopaque"]), int(ud["bwh"]),
            int(ud["generation"]), sbgen)))
    for i, (head, desc, marks, ld) in enumerate(rows):
        color = "black"
        if "WHITEOUT" in desc:
            color = "red"
        elif desc.startswith(("-", "hidden", "shadowed")):
            color = "gray"
        elif "top" in marks:
            color = "blue"
        out.append("  b%d [label=%s, color=%s];" % (i, dot_q(head + "\\n" + desc.replace("  ", "\\n")
                                                            + ("\\n" + ", ".join(marks) if marks else "")),
                                                   color))
        out.append("  u -> b%d [label=%s, color=%s];" % (i, dot_q("branch %d" % i), color))
    out.append("}")
    with open(path, "w") as fp:
        fp.write("\n".join(out) + "\n")
    print("  dot: %s (render: dot -Tpng %s -o %s.png)" % (path, path, os.path.splitext(path)[0]))


class UnionfsFanout(gdb.Command):
    """Branch fan-out of a union dentry, inode or file.
Usage: unionfs-fanout PATH|EXPR [--dot FILE]
  PATH  absolute guest path below a union mount point (walked in the dcache by name)
  EXPR  gdb expression: struct dentry *, struct inode *, struct file *, or an address"""

    def __init__(self):
        super().__init__("unionfs-fanout", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        ensure_symbols()
        argv = gdb.string_to_argv(arg)
        dot = None
        if "--dot" in argv:
            k = argv.index("--dot")
            if k + 1 >= len(argv):
                raise gdb.GdbError("--dot needs a FILE")
            dot = argv[k + 1]
            del argv[k:k + 2]
        if not argv:
            raise gdb.GdbError("usage: unionfs-fanout PATH|EXPR [--dot FILE]")
        what = " ".join(argv)
        if what.startswith("/"):
            fanout_dentry(resolve_path(what), dot)
            return
        kind, p = classify(gdb.parse_and_eval(what))
        if kind == "dentry":
            fanout_dentry(p, dot)
        elif kind == "inode":
            # the first of the inode's aliases (hlist i_dentry of dentry.d_u.d_alias)
            al = next(core.hlist_for_each(p["i_dentry"], "struct dentry", "d_u.d_alias"), None)
            if al is not None:
                fanout_dentry(al, dot, title="(alias of inode 0x%x) " % int(p))
            else:
                fanout_inode(p)
        else:
            fanout_file(p)
