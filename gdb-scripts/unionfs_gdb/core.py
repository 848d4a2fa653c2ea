# gdb-scripts/unionfs_gdb/core.py: the layer every unionfs gdb command stands on. It answers
# "what is the type / containing struct / list of X" and "which path does this dentry have" from
# the debug info alone (no offset is known here), and reads the module's objects (sb, dentry,
# inode, file infos, branch tables) in every layout the module's structs have had.
#
# Not a command; imported by the other modules of the package:
#
#   from unionfs_gdb import core
#   core.T("struct unionfs_sb_info")              type, cached until an objfile comes or goes
#   core.container_of(ptr, "struct dentry", "d_u.d_alias")     dotted members allowed
#   for sb in core.union_sbs(): ...               every unionfs superblock in super_blocks
#   core.path_of(dentry, mnt)                     "/tmp/g/m/both", like d_path()
#
# With the kernel's gdb scripts (`source build/lx/vmlinux-gdb.py`; qemu-debug/gdb does it) the
# types come from linux.utils.CachedType, container_of/offset_of from linux.utils and list
# walks from linux.lists (list_for_each_entry, hlist_for_each); without them (plain gdb) the
# same functions use the fallbacks below. Either way every list walk is bounded (LIST_LIMIT
# entries, NULL link = corrupt): a corrupt list in a vmcore raises "corrupt list at 0x...",
# it never loops. `python print(unionfs_gdb.core.HAVE_LX)` shows which one is in use:
#
#   (gdb) python import unionfs_gdb.core as c; print(c.HAVE_LX, c.T("struct dentry").sizeof)
#   True 192
import gdb

try:
    from linux import lists as lx_lists
    from linux import utils as lx_utils
    HAVE_LX = True
except ImportError:		# plain gdb: build/lx/vmlinux-gdb.py not sourced
    lx_lists = lx_utils = None
    HAVE_LX = False

MODNAME = "unionfs"
LIST_LIMIT = 1000000		# entries of one list before it is called corrupt

S_IFMT = 0o170000
FTYPES = {0o140000: "socket", 0o120000: "symlink", 0o100000: "regular", 0o060000: "block",
          0o040000: "dir", 0o020000: "char", 0o010000: "fifo"}

# the link-group index of a writable branch (docs/concepts.md "Hard links")
INDEX_DIR = ".wh..wh.unionfs.index"


# --- types ---------------------------------------------------------------------------------------
class _OwnCachedType:
    """linux.utils.CachedType's interface, for plain gdb: a lookup each time (no cache)."""

    def __init__(self, name):
        self._name = name

    def get_type(self):
        return gdb.lookup_type(self._name)


_CachedType = lx_utils.CachedType if HAVE_LX else _OwnCachedType
_types = {}


def _forget_types(_event=None):
    # CachedType drops its type when a new objfile comes; drop ours too when one goes
    # (remove-symbol-file unionfs.ko), so no type of a freed objfile is used
    _types.clear()


if hasattr(gdb, "events") and hasattr(gdb.events, "free_objfile"):
    gdb.events.free_objfile.connect(_forget_types)


def T(name):
    ct = _types.get(name)
    if ct is None:
        ct = _types[name] = _CachedType(name)
    return ct.get_type()


# --- container_of, lists -------------------------------------------------------------------------
def _own_offset_of(typename, member):
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


def offset_of(typename, member):
    """Byte offset of MEMBER (dotted path allowed, e.g. "d_u.d_alias") in TYPENAME."""
    if HAVE_LX and "." not in member:	# linux.utils.offset_of takes one member name
        return lx_utils.offset_of(T(typename).pointer(), member)
    return _own_offset_of(typename, member)


def container_of(ptr, typename, member):
    """Pointer (TYPENAME *) to the struct whose MEMBER is at PTR (gdb.Value or int)."""
    if HAVE_LX and "." not in member and isinstance(ptr, gdb.Value):
        return lx_utils.container_of(ptr, T(typename).pointer(), member)
    addr = int(ptr) - offset_of(typename, member)
    return gdb.Value(addr).cast(T(typename).pointer())


def _own_list_nodes(head):
    head_addr = int(head.address)
    node = head["next"]
    while int(node) != head_addr:
        yield node
        node = node["next"]


def _own_hlist_nodes(head):
    node = head["first"]
    while int(node):
        yield node
        node = node["next"]


def _lx_or_own(lx_gen, own_gen):
    """LX_GEN's items, or OWN_GEN's when linux.lists rejects the head's type (TypeError:
    a list_head type from the module's debug info gdb does not call equal; never seen)."""
    try:
        first = next(lx_gen)
    except StopIteration:
        return
    except TypeError:
        yield from own_gen
        return
    yield first
    yield from lx_gen


def list_for_each(head, typename, member, limit=LIST_LIMIT):
    """Entries (TYPENAME *) of a list_head (a gdb.Value of struct list_head, not a pointer):
    linux.lists.list_for_each_entry when available. At most LIMIT entries: a NULL link or more
    entries raise gdb.GdbError("corrupt list at 0x...")."""
    head_addr = int(head.address)
    off = offset_of(typename, member)
    ptype = T(typename).pointer()
    own = (gdb.Value(int(n) - off).cast(ptype) for n in _own_list_nodes(head))
    if HAVE_LX and "." not in member:
        ents = _lx_or_own(lx_lists.list_for_each_entry(head, ptype, member), own)
    else:
        ents = own
    seen = 0
    for e in ents:
        if (int(e) + off) & 0xffffffffffffffff == 0 or seen >= limit:
            raise gdb.GdbError("corrupt list at 0x%x" % head_addr)
        seen += 1
        yield e


def hlist_for_each(head, typename, member, limit=LIST_LIMIT):
    """Entries of an hlist_head (gdb.Value, not a pointer); MEMBER may be dotted
    ("d_u.d_alias"): linux.lists.hlist_for_each walks the nodes when available. Bounded."""
    own = _own_hlist_nodes(head)
    nodes = _lx_or_own(lx_lists.hlist_for_each(head), own) if HAVE_LX else own
    seen = 0
    for n in nodes:
        if seen >= limit:
            raise gdb.GdbError("corrupt hlist at 0x%x" % int(head.address))
        seen += 1
        yield container_of(n, typename, member)


# --- values, names, paths ------------------------------------------------------------------------
def cstr(v, maxlen=256):
    try:
        return v.string()[:maxlen] if int(v) else ""
    except gdb.MemoryError:
        return "<unreadable 0x%x>" % int(v)


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


def has_field(v, name):
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        t = t.target().strip_typedefs()
    return any(f.name == name for f in t.fields())


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


def lookup_child(parent, name):
    """The cached child dentry NAME of PARENT (d_subdirs/d_child), or None."""
    for c in list_for_each(parent["d_subdirs"], "struct dentry", "d_child"):
        if dname(c) == name:
            return c
    return None


# --- unionfs objects -----------------------------------------------------------------------------
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
