# gdb-scripts/unionfs_gdb/stale.py: "which cached union objects no longer match the branches?"
# Walks each union's dcache from its root (d_subdirs/d_child, at most --limit dentries) and
# reports dentries/inodes whose generation lags the sb's, that still use an old branch table,
# whose lower dentry went negative or was unhashed (changed directly in the branch), whose
# inode's lower inode differs from the lower dentry's, or whose cached size/mode disagree with
# the branch.
#
#   (gdb) unionfs-stale [--limit N]
#
# Sample output (tests/host/30-gdb.sh, nothing changed behind the union's back):
#
#   union /tmp/g/m  sb 0xffff888006099800  generation 1
#     3 cached dentries, 0 stale or inconsistent
#
# and per stale dentry a line like
#   dentry 0xffff... /tmp/g/m/f: branch 0: lower dentry unhashed (renamed/removed in the branch)
import gdb

from . import core
from .symbols import ensure_symbols


def walk_dentries(root, limit):
    stack = [root]
    n = 0
    while stack and n < limit:
        d = stack.pop()
        n += 1
        yield d
        kids = list(core.list_for_each(d["d_subdirs"], "struct dentry", "d_child"))
        stack.extend(reversed(kids))


def stale_reasons(d, sbgen):
    why = []
    if not int(d["d_fsdata"]):
        return why
    ud = core.UD(d)
    if int(ud["generation"]) < sbgen:
        why.append("dentry generation %d < sb %d" % (int(ud["generation"]), sbgen))
    inode = d["d_inode"]
    top = None
    for i in range(int(ud["nbr"])):
        ld = ud["lower"][i]
        if not int(ld):
            continue
        if top is None:
            top = ld
        if not int(ld["d_inode"]):
            why.append("branch %d: lower dentry went negative (removed in the branch)" % i)
        elif core.d_unhashed(ld) and not core.is_root(ld):
            why.append("branch %d: lower dentry unhashed (renamed/removed in the branch)" % i)
    if core.has_field(ud, "bt") and int(ud["bt"]) and core.sb_bt(d["d_sb"]) is not None \
            and int(ud["bt"]) != int(core.sb_bt(d["d_sb"])):
        why.append("built against an old branch table 0x%x" % int(ud["bt"]))
    if int(inode):
        iv = core.inode_vec(inode)
        if iv["gen"] is not None and iv["gen"] < sbgen:
            why.append("inode generation %d < sb %d" % (iv["gen"], sbgen))
        for i in range(min(iv["nbr"], int(ud["nbr"]))):
            ld, li = ud["lower"][i], iv["lower"][i]
            if int(ld) and int(ld["d_inode"]) and int(li) and int(li) != int(ld["d_inode"]):
                why.append("branch %d: inode's lower ino %d != dentry's ino %d" % (
                    i, int(li["i_ino"]), int(ld["d_inode"]["i_ino"])))
        if top is not None and int(top["d_inode"]):
            li = top["d_inode"]
            mode = int(inode["i_mode"]) & core.S_IFMT
            if mode == 0o100000 and int(inode["i_size"]) != int(li["i_size"]):
                why.append("cached size %d != branch size %d" % (int(inode["i_size"]), int(li["i_size"])))
            if int(inode["i_mode"]) != int(li["i_mode"]):
                why.append("cached mode %o != branch mode %o" % (int(inode["i_mode"]), int(li["i_mode"])))
    elif top is not None:
        why.append("negative union dentry over a positive lower dentry")
    return why


class UnionfsStale(gdb.Command):
    """Union dentries/inodes whose generation lags the sb's or whose cached view disagrees
with the branch (lower dentry gone/unhashed, lower inode changed, size/mode differ).
Walks each union's dcache from its root. Usage: unionfs-stale [--limit N]"""

    def __init__(self):
        super().__init__("unionfs-stale", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        ensure_symbols()
        argv = gdb.string_to_argv(arg)
        limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else 100000
        for sb in core.union_sbs():
            sbgen = core.sb_gen(sb)
            mp = core.sb_mounts(sb)
            seen = bad = 0
            print("union %s  sb 0x%x  generation %d" % (", ".join(core.sb_mountpoints(sb)), int(sb), sbgen))
            for d in walk_dentries(sb["s_root"], limit):
                seen += 1
                why = stale_reasons(d, sbgen)
                if why:
                    bad += 1
                    print("  dentry 0x%x %s: %s" % (int(d), core.path_of(d, mp[0]) if mp else core.dname(d),
                                                    "; ".join(why)))
            print("  %d cached dentries, %d stale or inconsistent" % (seen, bad))
