# gdb-scripts/unionfs.py: gdb helpers for the unionfs module, for `gdb build/vmlinux` attached
# to the debug guest's gdbstub (qemu-debug/gdb does all of this for you):
#
#   (gdb) source gdb-scripts/unionfs.py
#   (gdb) unionfs-load-symbols [KO]     module symbols for every section (incl. .init.text),
#                                       read from the kernel's `modules` list: no guest help
#   (gdb) unionfs-mounts                every union: mount point(s), sb, generation, branches
#   (gdb) unionfs-fanout PATH|EXPR [--dot FILE]
#                                       branch fan-out of a union dentry/inode/file
#   (gdb) unionfs-stale [--all]         objects whose generation lags the sb's, or whose cached
#                                       view disagrees with the branch (direct modification)
#
# PATH is a path inside the guest below a union mount point (looked up in the dcache from the
# union's root dentry through d_subdirs/d_child, so it must have been looked up in the guest);
# EXPR is any gdb expression for a struct dentry/inode/file pointer (or a bare address, whose
# kind is then guessed). Every structure layout comes from the debug info (gdb.lookup_type);
# nothing here knows an offset, so the helpers follow the module's structs as they change.
import os
import subprocess

import gdb

PROJ = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_KO = os.path.join(PROJ, "src", "unionfs.ko")
MODNAME = "unionfs"

S_IFMT = 0o170000
FTYPES = {0o140000: "socket", 0o120000: "symlink", 0o100000: "regular", 0o060000: "block",
          0o040000: "dir", 0o020000: "char", 0o010000: "fifo"}


# --- generic helpers ---------------------------------------------------------------------------
def T(name):
    return gdb.lookup_type(name)


def offset_of(typename, member):
    """Byte offset of MEMBER (dotted path allowed) in TYPENAME, from the debug info."""
    t = T(typename).strip_typedefs()
    off = 0
    for part in member.split("."):
        for f in t.fields():
            if f.name == part:
                off += f.bitpos // 8
                t = f.type.strip_typedefs()
                break
        else:
            raise gdb.GdbError("%s has no member %s" % (typename, member))
    return off


def container_of(ptr, typename, member):
    addr = int(ptr) - offset_of(typename, member)
    return gdb.Value(addr).cast(T(typename).pointer())


def list_for_each(head, typename, member):
    """Entries of a list_head (a gdb.Value of struct list_head, not a pointer)."""
    head_addr = int(head.address)
    node = head["next"]
    seen = 0
    while int(node) != head_addr:
        if int(node) == 0 or seen > 1000000:
            raise gdb.GdbError("corrupt list at 0x%x" % head_addr)
        yield container_of(node, typename, member)
        node = node["next"]
        seen += 1


def cstr(v, maxlen=256):
    try:
        return v.string()[:maxlen] if int(v) else ""
    except gdb.MemoryError:
        return "<unreadable 0x%x>" % int(v)


# the link-group index of a writable branch (docs/concepts.md "Hard links")
INDEX_DIR = ".wh..wh.unionfs.index"


def dname(d):
    return cstr(d["d_name"]["name"])


def is_root(d):
    return int(d) == int(d["d_parent"])


def d_unhashed(d):
    return int(d["d_hash"]["pprev"]) == 0


def atomic(v):
    return int(v["counter"])


def ftype(inode):
    if int(inode) == 0:
        return "negative"
    return FTYPES.get(int(inode["i_mode"]) & S_IFMT, "?")


def real_mount(vfsmnt):
    return container_of(vfsmnt, "struct mount", "mnt")


def path_of(dentry, mnt):
    """Absolute path of DENTRY seen through MNT (struct mount *), like d_path()."""
    parts = []
    guard = 0
    while guard < 4096:
        guard += 1
        if int(dentry) == int(mnt["mnt"]["mnt_root"]) or is_root(dentry):
            parent = mnt["mnt_parent"]
            if int(parent) == int(mnt) or int(parent) == 0:
                break
            dentry = mnt["mnt_mountpoint"]
            mnt = parent
            continue
        parts.append(dname(dentry))
        dentry = dentry["d_parent"]
    return "/" + "/".join(reversed(parts))


def lower_path_of(d, br):
    """Path of lower dentry D of branch BR (struct unionfs_branch): the branch's name plus D's
    path below the branch root. The union holds each branch through a private clone of its
    mount (rooted at the branch, in no namespace), so a walk up that mount ends at the branch
    root; a dentry outside it (a bug) is shown as the walk would."""
    root = int(br["path"]["dentry"])
    parts = []
    cur = d
    for _ in range(4096):
        if int(cur) == root:
            base = br["name"].string().rstrip("/")
            return base + "/" + "/".join(reversed(parts)) if parts else (base or "/")
        if is_root(cur):
            break
        parts.append(dname(cur))
        cur = cur["d_parent"]
    return path_of(d, real_mount(br["path"]["mnt"]))


# --- module symbols -----------------------------------------------------------------------------
def find_module(name=MODNAME):
    for mod in list_for_each(gdb.parse_and_eval("modules"), "struct module", "list"):
        if mod["name"].string() == name:
            return mod
    return None


def module_sections(mod):
    secs = {}
    sa = mod["sect_attrs"]
    if int(sa):
        attrs = sa["attrs"]
        for i in range(int(sa["nsections"])):
            secs[attrs[i]["battr"]["attr"]["name"].string()] = int(attrs[i]["address"])
    if ".text" not in secs:		# no sysfs section attributes: fall back to the layouts
        secs[".text"] = int(mod["core_layout"]["base"])
        if int(mod["init_layout"]["base"]):
            secs[".init.text"] = int(mod["init_layout"]["base"])
    return secs


def symbols_loaded():
    try:
        T("struct unionfs_sb_info")
        return True
    except gdb.error:
        return False


def load_symbols(ko=None, quiet=False):
    ko = os.path.realpath(ko or DEFAULT_KO)
    mod = find_module()
    if mod is None:
        raise gdb.GdbError("unionfs is not in the kernel's modules list (not loaded yet?)")
    if not os.path.exists(ko):
        raise gdb.GdbError("%s not found (make)" % ko)
    for objf in gdb.objfiles():
        if objf.filename and os.path.realpath(objf.filename) == ko:
            gdb.execute("remove-symbol-file %s" % objf.filename, to_string=True)
    secs = module_sections(mod)
    args = " ".join("-s %s 0x%x" % (s, a) for s, a in sorted(secs.items())
                    if s != ".text" and not s.startswith((".note", "__ksymtab_strings")))
    gdb.execute("add-symbol-file %s 0x%x %s" % (ko, secs[".text"], args), to_string=True)
    srcv = cstr(mod["srcversion"]) if "srcversion" in [f.name for f in mod.type.target().fields()] else ""
    warn = ""
    try:
        kov = subprocess.run(["/sbin/modinfo", "-F", "srcversion", ko], capture_output=True,
                             text=True).stdout.strip()
        if srcv and kov and srcv != kov:
            warn = " WARNING: srcversion differs (guest %s, file %s): rebuilt since load?" % (srcv, kov)
    except OSError:
        pass
    if not quiet:
        print("unionfs: module struct 0x%x, %d sections from %s (.text 0x%x%s)%s" % (
            int(mod), len(secs), ko, secs[".text"],
            ", .init.text 0x%x" % secs[".init.text"] if ".init.text" in secs else "", warn))
    return secs


def ensure_symbols():
    if not symbols_loaded():
        load_symbols(quiet=False)


# --- unionfs objects ----------------------------------------------------------------------------
def union_sbs():
    for sb in list_for_each(gdb.parse_and_eval("super_blocks"), "struct super_block", "s_list"):
        fst = sb["s_type"]
        if int(fst) and cstr(fst["name"]) == MODNAME:
            yield sb


def SBI(sb):
    return sb["s_fs_info"].cast(T("struct unionfs_sb_info").pointer())


def UD(d):
    return d["d_fsdata"].cast(T("struct unionfs_dentry_info").pointer())


def UI(inode):
    return container_of(inode, "struct unionfs_inode_info", "vfs_inode")


def UF(f):
    return f["private_data"].cast(T("struct unionfs_file_info").pointer())


def has_field(v, name):
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        t = t.target().strip_typedefs()
    return any(f.name == name for f in t.fields())


# The module's structs have changed shape over time (branches[] in the sb, or a refcounted
# branch table `bt` shared by sb/dentries/inodes; inode fields inline or in an RCU `vec`).
# These accessors look at which members the debug info has and read either layout.
def bt_branches(bt):
    """struct unionfs_branch values of a branch table."""
    return [bt["br"][i].dereference() for i in range(int(bt["nbr"]))]


def sb_bt(sb):
    sbi = SBI(sb)
    return sbi["bt"] if has_field(sbi, "bt") else None


def sb_gen(sb):
    return atomic(SBI(sb)["generation"])


def branches(sb):
    sbi = SBI(sb)
    if has_field(sbi, "bt"):
        return bt_branches(sbi["bt"])
    return [sbi["branches"][i] for i in range(int(sbi["nbranches"]))]


def d_branches(ud, sb):
    """The branches the dentry's indexes refer to (its own table, when it has one)."""
    if has_field(ud, "bt") and int(ud["bt"]):
        return bt_branches(ud["bt"])
    return branches(sb)


def inode_vec(inode):
    """dict: addr, bstart, bend, nbr, lower (list of struct inode *), gen, bt."""
    ui = UI(inode)
    if has_field(ui, "vec"):
        v = ui["vec"]
        if not int(v):
            return dict(addr=int(ui), bstart=-1, bend=-1, nbr=0, lower=[], gen=None, bt=None, ui=ui)
        bt = v["bt"]
        return dict(addr=int(ui), bstart=int(v["bstart"]), bend=int(v["bend"]), nbr=int(v["nbr"]),
                    lower=[v["lower"][i] for i in range(int(v["nbr"]))],
                    gen=int(bt["gen"]) if int(bt) else None, bt=bt, ui=ui)
    return dict(addr=int(ui), bstart=int(ui["bstart"]), bend=int(ui["bend"]), nbr=int(ui["nbr"]),
                lower=[ui["lower"][i] for i in range(int(ui["nbr"]))], gen=int(ui["generation"]),
                bt=None, ui=ui)


def sb_mounts(sb):
    return list(list_for_each(sb["s_mounts"], "struct mount", "mnt_instance"))


def sb_mountpoints(sb):
    return [path_of(m["mnt"]["mnt_root"], m) for m in sb_mounts(sb)]


def br_mode(br):
    mode = "rw" if int(br["mode"]) == 1 else "ro"
    lsb = br["path"]["mnt"]["mnt_sb"]
    if mode == "rw" and int(lsb["s_flags"]) & 1:	# SB_RDONLY
        mode += "(fs ro)"
    return mode


def dentry_gen(d):
    return int(UD(d)["generation"]) if int(d["d_fsdata"]) else None


class UnionfsMounts(gdb.Command):
    """List every mounted union: mount point, superblock, generation, branches.
Usage: unionfs-mounts"""

    def __init__(self):
        super().__init__("unionfs-mounts", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        ensure_symbols()
        n = 0
        for sb in union_sbs():
            n += 1
            sbi = SBI(sb)
            brs = branches(sb)
            bt = sb_bt(sb)
            print("union %s  sb 0x%x  sbi 0x%x  generation %d  branches %d  root dentry 0x%x%s" % (
                ", ".join(sb_mountpoints(sb)) or "(not mounted)", int(sb), int(sbi),
                sb_gen(sb), len(brs), int(sb["s_root"]),
                "  btable 0x%x (gen %d)" % (int(bt), int(bt["gen"])) if bt is not None else ""))
            print("  %-3s %-24s %-4s %-3s %-5s %s" % ("idx", "path", "mode", "id", "open", "lower sb (fs)"))
            for i, br in enumerate(brs):
                lsb = br["path"]["mnt"]["mnt_sb"]
                print("  %-3d %-24s %-4s %-3d %-5d 0x%x (%s, dev %s)  [%s]" % (
                    i, cstr(br["name"]), br_mode(br), int(br["id"]), atomic(br["open_files"]),
                    int(lsb), cstr(lsb["s_type"]["name"]), lsb["s_id"].string(),
                    lower_path_of(br["path"]["dentry"], br)))
        if not n:
            print("no unionfs superblock in super_blocks")


# --- fan-out ------------------------------------------------------------------------------------
def lookup_child(parent, name):
    for c in list_for_each(parent["d_subdirs"], "struct dentry", "d_child"):
        if dname(c) == name:
            return c
    return None


def resolve_path(path):
    """Union dentry for an absolute guest path below a union mount point."""
    best = None
    for sb in union_sbs():
        for m in sb_mounts(sb):
            mp = path_of(m["mnt"]["mnt_root"], m)
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
        c = lookup_child(d, comp)
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
        p = gdb.Value(addr).cast(T("struct " + kind).pointer())
        try:
            x = p
            for f in sbpath:
                x = x[f]
            if int(x) and cstr(x["s_type"]["name"]) == MODNAME:
                return kind, p
        except gdb.MemoryError:
            continue
    raise gdb.GdbError("0x%x is not a unionfs dentry, inode or file" % addr)


def whiteout_cached(lparent, name):
    """A positive '.wh.NAME' child cached under the lower parent dentry?"""
    if lparent is None or int(lparent) == 0:
        return None
    c = lookup_child(lparent, ".wh." + name)
    if c is not None and int(c["d_inode"]):
        return c
    return None


def fanout_dentry(d, dot=None, title=None):
    sb = d["d_sb"]
    sbgen = sb_gen(sb)
    mp = sb_mounts(sb)
    where = path_of(d, mp[0]) if mp else "?"
    inode = d["d_inode"]
    print("%sdentry 0x%x \"%s\"  %s  [%s]" % (title or "", int(d), dname(d), where, ftype(inode)))
    if not int(d["d_fsdata"]):
        print("  (no unionfs_dentry_info: d_fsdata is NULL)")
        return
    ud = UD(d)
    brs = d_branches(ud, sb)
    gen = int(ud["generation"])
    btinfo = ""
    if has_field(ud, "bt"):
        cur = sb_bt(sb)
        btinfo = "  btable 0x%x%s" % (int(ud["bt"]), "" if cur is None or int(cur) == int(ud["bt"])
                                      else " (OLD table; sb has 0x%x)" % int(cur))
    print("  unionfs_dentry_info 0x%x: bstart %d  bend %d  bopaque %d  bwh %d  generation %d (sb %d: %s)%s"
          % (int(ud), int(ud["bstart"]), int(ud["bend"]), int(ud["bopaque"]), int(ud["bwh"]), gen,
             sbgen, "current" if gen == sbgen else "STALE, lags by %d" % (sbgen - gen), btinfo))
    pud = UD(d["d_parent"]) if not is_root(d) and int(d["d_parent"]["d_fsdata"]) else None
    nbr = int(ud["nbr"])
    iv = inode_vec(inode) if int(inode) else None
    rows = []
    for i in range(nbr):
        br = brs[i] if i < len(brs) else None
        ld = ud["lower"][i]
        head = "[%d] %s %s (id %d)" % (i, br_mode(br) if br else "?", cstr(br["name"]) if br else "?",
                                       int(br["id"]) if br else -1)
        marks = []
        if i == int(ud["bstart"]):
            marks.append("top")
        if i == int(ud["bopaque"]):
            marks.append("opaque")
        if int(ld):
            li = ld["d_inode"]
            if int(li):
                desc = "dentry 0x%x \"%s\" ino %d %s" % (int(ld), dname(ld), int(li["i_ino"]), ftype(li))
            else:
                desc = "dentry 0x%x \"%s\" NEGATIVE" % (int(ld), dname(ld))
            if d_unhashed(ld) and not is_root(ld):
                marks.append("UNHASHED in branch")
            if dname(ld["d_parent"]) == INDEX_DIR and dname(ld) != dname(d):
                marks.append("link group: the index entry")
            elif (i != int(ud["bstart"]) and pud is not None and i < int(pud["nbr"])
                  and int(pud["lower"][i]) != int(ld["d_parent"])):
                # docs/concepts.md "Directory rename": trusted.unionfs.redirect
                marks.append("redirect: not under the parent's branch dir")
            if br is not None:
                desc += "  %s" % lower_path_of(ld, br)
        else:
            lpar = pud["lower"][i] if pud is not None and i < int(pud["nbr"]) else None
            wh = whiteout_cached(lpar, dname(d)) if not is_root(d) else None
            if i == int(ud["bwh"]) or wh is not None:
                desc = "WHITEOUT .wh.%s" % dname(d)
                if wh is not None:
                    desc += " (dentry 0x%x ino %d)" % (int(wh), int(wh["d_inode"]["i_ino"]))
            else:
                # not part of the union's view: is the name cached in that branch anyway?
                lc = lookup_child(lpar, dname(d)) if lpar is not None and int(lpar) else None
                if int(ud["bopaque"]) >= 0 and i > int(ud["bopaque"]):
                    desc = "hidden (below opaque branch %d)" % int(ud["bopaque"])
                elif lc is not None and int(lc["d_inode"]) and 0 <= int(ud["bstart"]) < i:
                    desc = "shadowed by branch %d" % int(ud["bstart"])
                else:
                    desc = "-"
                if lc is not None:
                    li = lc["d_inode"]
                    desc += ": branch dcache has dentry 0x%x \"%s\" %s" % (
                        int(lc), dname(lc), "ino %d %s" % (int(li["i_ino"]), ftype(li)) if int(li)
                        else "NEGATIVE")
                    if br is not None:
                        desc += "  %s" % lower_path_of(lc, br)
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
    iv = inode_vec(inode)
    if sbgen is None:
        sbgen = sb_gen(inode["i_sb"])
    gen = iv["gen"]
    lows = []
    for i, li in enumerate(iv["lower"]):
        if int(li):
            lows.append("[%d] ino %d %s" % (i, int(li["i_ino"]), ftype(li)))
    key = iv["ui"]["key"]
    print("%sunionfs_inode_info 0x%x: ino %d  bstart %d  bend %d  generation %s (sb %d: %s)  key ino %s"
          % (indent, iv["addr"], int(inode["i_ino"]), iv["bstart"], iv["bend"], gen, sbgen,
             "current" if gen == sbgen else "STALE", int(key["i_ino"]) if int(key) else "-"))
    print("%s  lower inodes: %s" % (indent, "  ".join(lows) or "none"))


def fanout_file(f):
    uf = UF(f)
    d = f["f_path"]["dentry"]
    sbgen = sb_gen(d["d_sb"])
    lf = uf["lower"]
    low = "none (merged directory)"
    if int(lf):
        ld = lf["f_path"]["dentry"]
        low = "file 0x%x -> \"%s\" ino %d" % (int(lf), dname(ld), int(lf["f_inode"]["i_ino"]))
    if has_field(uf, "br"):
        br = uf["br"]
        where = "branch %s (id %d)" % (cstr(br["name"]), int(br["id"])) if int(br) else "no branch"
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
            dname(d), int(d), int(ud["bstart"]), int(ud["bend"]), int(ud["bopaque"]), int(ud["bwh"]),
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
            first = p["i_dentry"]["first"]	# hlist of aliases (dentry.d_u.d_alias)
            if int(first):
                al = container_of(first, "struct dentry", "d_u.d_alias")
                fanout_dentry(al, dot, title="(alias of inode 0x%x) " % int(p))
            else:
                fanout_inode(p)
        else:
            fanout_file(p)


# --- stale objects ------------------------------------------------------------------------------
def walk_dentries(root, limit):
    stack = [root]
    n = 0
    while stack and n < limit:
        d = stack.pop()
        n += 1
        yield d
        kids = list(list_for_each(d["d_subdirs"], "struct dentry", "d_child"))
        stack.extend(reversed(kids))


def stale_reasons(d, sbgen):
    why = []
    if not int(d["d_fsdata"]):
        return why
    ud = UD(d)
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
        elif d_unhashed(ld) and not is_root(ld):
            why.append("branch %d: lower dentry unhashed (renamed/removed in the branch)" % i)
    if has_field(ud, "bt") and int(ud["bt"]) and sb_bt(d["d_sb"]) is not None \
            and int(ud["bt"]) != int(sb_bt(d["d_sb"])):
        why.append("built against an old branch table 0x%x" % int(ud["bt"]))
    if int(inode):
        iv = inode_vec(inode)
        if iv["gen"] is not None and iv["gen"] < sbgen:
            why.append("inode generation %d < sb %d" % (iv["gen"], sbgen))
        for i in range(min(iv["nbr"], int(ud["nbr"]))):
            ld, li = ud["lower"][i], iv["lower"][i]
            if int(ld) and int(ld["d_inode"]) and int(li) and int(li) != int(ld["d_inode"]):
                why.append("branch %d: inode's lower ino %d != dentry's ino %d" % (
                    i, int(li["i_ino"]), int(ld["d_inode"]["i_ino"])))
        if top is not None and int(top["d_inode"]):
            li = top["d_inode"]
            mode = int(inode["i_mode"]) & S_IFMT
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
        for sb in union_sbs():
            sbgen = sb_gen(sb)
            mp = sb_mounts(sb)
            seen = bad = 0
            print("union %s  sb 0x%x  generation %d" % (", ".join(sb_mountpoints(sb)), int(sb), sbgen))
            for d in walk_dentries(sb["s_root"], limit):
                seen += 1
                why = stale_reasons(d, sbgen)
                if why:
                    bad += 1
                    print("  dentry 0x%x %s: %s" % (int(d), path_of(d, mp[0]) if mp else dname(d),
                                                    "; ".join(why)))
            print("  %d cached dentries, %d stale or inconsistent" % (seen, bad))


class UnionfsLoadSymbols(gdb.Command):
    """Load unionfs.ko symbols at the addresses of the running module, every section
(.text, .data, .bss, .init.text, ...), read from the kernel's `modules` list.
Usage: unionfs-load-symbols [PATH/TO/unionfs.ko]   (default: src/unionfs.ko of this project)"""

    def __init__(self):
        super().__init__("unionfs-load-symbols", gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        load_symbols(argv[0] if argv else None)


UnionfsMounts()
UnionfsFanout()
UnionfsStale()
UnionfsLoadSymbols()
