#!/usr/bin/env drgn
# gdb-scripts/unionfs_drgn.py: drgn helpers for unionfs, on the live guest (/proc/kcore) or on a
# vmcore, without stopping the kernel. What it answers: which unions exist and what their
# branches are; where a name of the union lives in each branch (its fan-out); which cached
# objects disagree with their branch (stale); which copy-ups are in flight right now and how far
# they are (also the nameless O_TMPFILE temporaries that no path lookup can find).
#
# Usage (KO: the unionfs.ko that is loaded; VMLINUX: build/vmlinux, `make vmlinux`):
#   drgn -q -s VMLINUX -s KO gdb-scripts/unionfs_drgn.py mounts
#   drgn -q -s VMLINUX -s KO gdb-scripts/unionfs_drgn.py fanout /mnt/u/dir/file [--dot F.dot]
#   drgn -q -s VMLINUX -s KO gdb-scripts/unionfs_drgn.py stale [--limit N]
#   drgn -q -s VMLINUX -s KO gdb-scripts/unionfs_drgn.py copyups
#   drgn -q -c VMCORE -s VMLINUX -s KO gdb-scripts/unionfs_drgn.py mounts    # a crash dump
# Interactive: drgn -s VMLINUX -s KO, then exec(open("gdb-scripts/unionfs_drgn.py").read())
# and call mounts(), fanout("/mnt/u/f"), stale(), copyups().
#
# Sample output (a vmcore of tests/host/20-kdump.sh: a crash injected inside a copy-up):
#   $ drgn -q -c build/vmcore/20261206-033835/vmcore -s build/vmlinux \
#         -s build/vmcore/20261206-033835/unionfs.ko gdb-scripts/unionfs_drgn.py mounts
#   union /tmp/k/m  sb 0xffff88800617e000  generation 1  coherency reval  markers unionfs
#     [0] rw  /tmp/k/b0  id 0  fsidx 0  open 0  tmpfs
#     [1] ro  /tmp/k/b1  id 1  fsidx 0  open 0  tmpfs
#   $ drgn ... unionfs_drgn.py copyups
#   pid 141 sh: copy-up of "lower" branch 1 -> 0, temporary named .wh..wh.unionfs.4473281465346567902, 0 of 100000 bytes
#   1 copy-up(s) in flight
#   $ drgn ... unionfs_drgn.py fanout /tmp/k/m/lower
#   dentry "lower" /tmp/k/m/lower  regular  generation 1 (current)  bstart 1 bend 1 bopaque -1 bwh -1
#     ├─ [0] rw /tmp/k/b0         -
#     └─ [1] ro /tmp/k/b1         ino 8 regular  /lower  <top>
#     inode ino 8  key: branch ino 8
#
# Every layout comes from the debug info (drgn reads the module's DWARF), nothing knows an
# offset. The gdb counterpart is gdb-scripts/unionfs.py (same commands, gdbstub).
import sys

from drgn import Object, cast, container_of, FaultError
from drgn.helpers.linux.fs import d_path, dentry_path, for_each_mount, path_lookup
from drgn.helpers.linux.list import list_for_each_entry
from drgn.helpers.linux.pid import for_each_task

S_IFMT = 0o170000
FTYPES = {0o140000: "socket", 0o120000: "symlink", 0o100000: "regular", 0o060000: "block",
          0o040000: "dir", 0o020000: "char", 0o010000: "fifo"}
COHERENCY = {0: "none", 1: "reval", 2: "notify"}
MARKERS = {0: "unionfs", 1: "oci"}


def _prog():
    return globals()["prog"]


def esc(b):
    """A name as the module prints it (%*pE-like): non-printables escaped."""
    if isinstance(b, str):
        b = b.encode()
    return "".join(chr(c) if 32 < c < 127 and c != 0x5c else "\\%03o" % c for c in b)


# the link-group index of a writable branch (docs/concepts.md "Hard links")
INDEX_DIR = b".wh..wh.unionfs.index"


def dname(d):
    return d.d_name.name.string_()


def ftype(inode):
    if not inode:
        return "negative"
    return FTYPES.get(int(inode.i_mode) & S_IFMT, "?")


def union_mounts():
    """(mount, superblock) of every unionfs mount, sorted by mount point."""
    out = []
    for m in for_each_mount(_prog()):
        sb = m.mnt.mnt_sb
        if sb.s_type.name.string_() == b"unionfs":
            out.append((m, sb))
    return out


def union_sbs():
    seen, out = set(), []
    for m, sb in union_mounts():
        if sb.value_() not in seen:
            seen.add(sb.value_())
            out.append(sb)
    return out


def SBI(sb):
    return cast("struct unionfs_sb_info *", sb.s_fs_info)


def UD(d):
    return cast("struct unionfs_dentry_info *", d.d_fsdata)


def UI(inode):
    return container_of(inode, "struct unionfs_inode_info", "vfs_inode")


def sb_bt(sb):
    return SBI(sb).bt


def sb_gen(sb):
    return int(SBI(sb).generation.counter)


def bt_branches(bt):
    return [bt.br[i] for i in range(int(bt.nbr))]


def mountpoints(sb):
    return [esc(d_path(m.mnt.address_of_(), m.mnt.mnt_root)) for m, s in union_mounts()
            if s.value_() == sb.value_()]


def br_mode(br):
    return "rw" if int(br.mode) == 1 else "ro"


def br_name(br):
    return esc(br.name.string_()) if br.name else "?"


def branch_path(ld, br=None):
    """The path of a branch dentry below its branch's root (or in its file system)."""
    try:
        p = dentry_path(ld)
        root = dentry_path(br.path.dentry) if br is not None else b""
    except FaultError:
        return "<unreadable>"
    if root and (p == root or p.startswith(root + b"/")):
        p = p[len(root):]
    return esc(b"/" + p.lstrip(b"/"))


def mounts(out=print):
    sbs = union_sbs()
    for sb in sbs:
        sbi = SBI(sb)
        out("union %s  sb 0x%x  generation %d  coherency %s  markers %s" % (
            ", ".join(mountpoints(sb)), sb.value_(), sb_gen(sb),
            COHERENCY.get(int(sbi.coherency), sbi.coherency.value_()),
            MARKERS.get(int(sbi.markers), sbi.markers.value_())))
        for i, br in enumerate(bt_branches(sb_bt(sb))):
            lsb = br.path.mnt.mnt_sb
            out("  [%d] %s  %s  id %d  fsidx %d  open %d  %s" % (
                i, br_mode(br), br_name(br), int(br.id), int(br.fsidx),
                int(br.open_files.counter), lsb.s_type.name.string_().decode()))
        hz = [int(sbi.hazards[k].counter) for k in range(len(sbi.hazards))]
        if any(hz):
            out("  hazards (direct modifications seen): %s" % " ".join(map(str, hz)))
    if not sbs:
        out("no union mounted")


def union_path(d, mp):
    rel = dentry_path(d)
    base = mp[0].rstrip("/") if mp else ""
    return (base + "/" + esc(rel)) if rel else (base or "/")


def _resolve(what):
    if isinstance(what, Object):
        return what
    if isinstance(what, int) or what.startswith("0x"):
        return Object(_prog(), "struct dentry *", value=int(what, 0) if isinstance(what, str)
                      else what)
    return path_lookup(_prog(), what).dentry


def fanout(what, dot=None, out=print):
    """Where the union name WHAT (a path, a dentry or its address) lives, branch by branch."""
    d = _resolve(what)
    if d.d_sb.s_type.name.string_() != b"unionfs":
        raise SystemExit("%s is not on a union" % what)
    sb = d.d_sb
    sbgen = sb_gen(sb)
    mp = mountpoints(sb)
    inode = d.d_inode
    if not d.d_fsdata:
        out('dentry "%s": no dentry info' % esc(dname(d)))
        return
    ud = UD(d)
    gen = int(ud.generation)
    out('dentry "%s" %s  %s  generation %d (%s)  bstart %d bend %d bopaque %d bwh %d' % (
        esc(dname(d)), union_path(d, mp), ftype(inode), gen,
        "current" if gen == sbgen else "STALE: sb has %d" % sbgen, int(ud.bstart), int(ud.bend),
        int(ud.bopaque), int(ud.bwh)))
    brs = bt_branches(ud.bt)
    pud = UD(d.d_parent) if d.d_parent.value_() != d.value_() and d.d_parent.d_fsdata else None
    rows = []
    for i in range(int(ud.nbr)):
        br = brs[i]
        ld = ud.lower[i]
        marks = []
        if i == int(ud.bstart):
            marks.append("top")
        elif ld and int(ud.bstart) >= 0 and not (inode and int(inode.i_mode) & S_IFMT == 0o040000):
            marks.append("shadowed by branch %d" % int(ud.bstart))
        if i == int(ud.bopaque):
            marks.append("opaque")
        if ld and dname(ld.d_parent) == INDEX_DIR and dname(ld) != dname(d):
            marks.append("link group: the index entry")
        elif (ld and i != int(ud.bstart) and pud is not None and i < int(pud.nbr)
              and pud.lower[i].value_() != ld.d_parent.value_()):
            # docs/concepts.md "Directory rename": trusted.unionfs.redirect
            marks.append("redirect: not under the parent's branch dir")
        # outside the range the lookup kept: what the branch's dcache has under the name
        lpar = pud.lower[i] if pud is not None and i < int(pud.nbr) else None
        wh = lookup_child(lpar, b".wh." + dname(d)) if lpar and not ld else None
        lc = lookup_child(lpar, dname(d)) if lpar and not ld else None
        if ld:
            li = ld.d_inode
            desc = ("ino %d %s  %s" % (int(li.i_ino), ftype(li), branch_path(ld, br)) if li
                    else "NEGATIVE  %s" % branch_path(ld, br))
        elif i == int(ud.bwh) or (wh is not None and wh.d_inode):
            desc = "WHITEOUT .wh.%s" % esc(dname(d))
        elif int(ud.bopaque) >= 0 and i > int(ud.bopaque):
            desc = "hidden (below the opaque branch %d)" % int(ud.bopaque)
        elif lc is not None and lc.d_inode and 0 <= int(ud.bstart) < i:
            desc = "ino %d %s  %s" % (int(lc.d_inode.i_ino), ftype(lc.d_inode), branch_path(lc, br))
            marks.append("shadowed by branch %d" % int(ud.bstart))
        else:
            desc = "-"
        rows.append(("[%d] %s %s" % (i, br_mode(br), br_name(br)), desc, marks))
    for k, (head, desc, marks) in enumerate(rows):
        out("  %s %-24s %s%s" % ("└─" if k == len(rows) - 1 else "├─", head, desc,
                                 ("  <%s>" % ", ".join(marks)) if marks else ""))
    if inode:
        ui = UI(inode)
        key = ui.key
        out("  inode ino %d  key: branch ino %s" % (int(inode.i_ino),
                                                   int(key.i_ino) if key else "-"))
    if dot:
        with open(dot, "w") as fp:
            fp.write("digraph unionfs_fanout {\n  rankdir=LR; node [shape=box, fontname=monospace];\n")
            fp.write('  u [label="union \\"%s\\"\\ngeneration %d", style=bold];\n'
                     % (esc(dname(d)).replace('"', '\\"'), gen))
            for k, (head, desc, marks) in enumerate(rows):
                color = ("red" if desc.startswith("WHITEOUT") else "blue" if "top" in marks
                         else "gray" if desc.startswith(("-", "hidden")) or marks else "black")
                label = "\\n".join([head, desc] + marks).replace('"', '\\"')
                fp.write('  b%d [label="%s", color=%s];\n  u -> b%d [color=%s];\n'
                         % (k, label, color, k, color))
            fp.write("}\n")
        out("  dot: %s" % dot)


def lookup_child(parent, name):
    """The cached child NAME (bytes) of the dentry PARENT, or None (the dcache only)."""
    for c in _children(parent):
        if c.d_name.name.string_() == name:
            return c
    return None


def _children(d):
    return list_for_each_entry("struct dentry", d.d_subdirs.address_of_(), "d_child")


def stale_reasons(d, sbgen, cur_bt):
    why = []
    if not d.d_fsdata:
        return why
    ud = UD(d)
    if int(ud.generation) < sbgen:
        why.append("generation %d < sb %d" % (int(ud.generation), sbgen))
    if ud.bt.value_() != cur_bt.value_():
        why.append("built against an old branch table")
    top = None
    for i in range(int(ud.nbr)):
        ld = ud.lower[i]
        if not ld:
            continue
        if top is None:
            top = ld
        if not ld.d_inode:
            why.append("branch %d: the branch name went negative (removed directly)" % i)
        elif not ld.d_hash.pprev and ld.d_parent.value_() != ld.value_():
            why.append("branch %d: the branch dentry is unhashed (renamed or removed directly)" % i)
    inode = d.d_inode
    if inode and top is not None and top.d_inode:
        li = top.d_inode
        if UI(inode).key.value_() != li.value_() and int(inode.i_mode) & S_IFMT != 0o040000:
            why.append("the branch object was replaced (inode key differs)")
        if int(inode.i_mode) & S_IFMT == 0o100000 and int(inode.i_size) != int(li.i_size):
            why.append("cached size %d != branch size %d" % (int(inode.i_size), int(li.i_size)))
    elif not inode and top is not None and top.d_inode:
        why.append("negative union name over a positive branch name")
    return why


def stale(limit=100000, out=print):
    """Cached union dentries whose view disagrees with the branches."""
    for sb in union_sbs():
        sbgen, cur_bt = sb_gen(sb), sb_bt(sb)
        seen = bad = 0
        out("union %s  generation %d" % (", ".join(mountpoints(sb)), sbgen))
        stack = [sb.s_root]
        while stack and seen < limit:
            d = stack.pop()
            seen += 1
            why = stale_reasons(d, sbgen, cur_bt)
            if why:
                bad += 1
                out("  %s: %s" % (union_path(d, mountpoints(sb)), "; ".join(why)))
            stack.extend(_children(d))
        out("  %d cached dentries, %d stale" % (seen, bad))


def copyups(out=print):
    """Copy-ups in flight: the task, the name, from/to branch, the temporary, bytes copied.
    Found on the tasks' stacks (the unionfs_copyup_one frame's context), so a nameless
    O_TMPFILE temporary shows as well as a named one."""
    n = 0
    for task in for_each_task(_prog()):
        try:
            trace = _prog().stack_trace(task)
        except (ValueError, FaultError):
            continue
        for frame in trace:
            if frame.name != "unionfs_copyup_one":
                continue
            try:
                c = frame["c"]
                name = esc(c.name.name.string_())
                b, t = int(c.b), int(c.t)
                tmp = c.tmp
                if c.tmpfile:
                    kind = "O_TMPFILE (nameless) branch ino %d" % int(c.tmpfile.f_inode.i_ino)
                elif tmp:
                    kind = "named %s" % esc(dname(tmp))
                else:
                    kind = "not made yet"
                size = int(c.st.size)
                out("pid %d %s: copy-up of \"%s\" branch %d -> %d, temporary %s, %d of %d bytes"
                    % (int(task.pid), task.comm.string_().decode(), name, b, t, kind,
                       int(c.copied), size))
            except (LookupError, FaultError) as e:
                out("pid %d %s: copy-up in flight (context not readable: %s)"
                    % (int(task.pid), task.comm.string_().decode(), e))
            n += 1
            break
    out("%d copy-up(s) in flight" % n)


def main(argv):
    usage = "usage: unionfs_drgn.py mounts | fanout PATH|ADDR [--dot FILE] | stale [--limit N] | copyups"
    if not argv:
        raise SystemExit(usage)
    cmd, args = argv[0], argv[1:]
    if cmd == "mounts":
        mounts()
    elif cmd == "fanout" and args:
        dot = None
        if "--dot" in args:
            k = args.index("--dot")
            dot = args[k + 1]
            del args[k:k + 2]
        fanout(args[0], dot)
    elif cmd == "stale":
        stale(int(args[args.index("--limit") + 1]) if "--limit" in args else 100000)
    elif cmd == "copyups":
        copyups()
    else:
        raise SystemExit(usage)


# run as `drgn ... unionfs_drgn.py CMD` (not when exec'd as a library by another script)
if __name__ == "__main__" and "prog" in globals() and \
        sys.argv and sys.argv[0].endswith("unionfs_drgn.py"):
    main(sys.argv[1:])
