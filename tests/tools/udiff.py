#!/usr/bin/env python3
"""tests/tools/udiff.py: differential tester, a unionfs union against a plain tmpfs tree.

  udiff.py --seed S --ops N [--branches K] [--workers W] [--time SECS] [--out DIR]
           [--every K] [--plain] [--perturb] [--no-shrink]

Runs in the guest as root (stdlib only). For each seed: builds 2-4 tmpfs branches (branch 0
rw, the others rw or ro) with random content (files, sparse files, dirs, symlinks, fifos,
hard links, trusted.* xattrs, whiteouts .wh.NAME, opaque markers .wh.__dir_opaque), mounts
the union, and builds a reference tmpfs tree from the branch contents by computing the merge
itself (docs/concepts.md: priority, whiteouts, opaque dirs). First comparison: the union's
initial view == the reference. Then N random operations, each applied to both (as root or as
uid/gid 1000 in a forked child), comparing return value/errno and data read; every --every
ops and at the end the whole trees are compared (names, types, modes, owners, sizes, content
hash, symlink targets, xattrs, link counts, the partition of names into same-file groups,
readdir d_ino == st_ino). Only the union writes to the branches, so a direct modification
that the union reports after an op (its /sys/fs/unionfs/<dev>/hazards counts) is a false
report: class hazard-KIND. Documented differences (ALLOWED below) are counted, never hidden.
The first unexpected difference is shrunk (delta debugging over the lower entries and the
ops, each trial on fresh branches) to a minimal standalone shell reproducer.
--time SECS: run consecutive seeds (S, S+1, ...) until SECS have passed.
--workers W: W processes on disjoint name prefixes (w0_, w1_, ...) run their ops at the same
  time on the union; the reference gets each worker's ops serially; final trees compared.
--plain: the "union" is a plain tmpfs built like the reference (oracle self-test: no
  difference expected); --perturb: and one extra file appears in it after the first ops
  (a difference MUST be reported).
Output: TAP-ish lines "ok|not ok - seed S: ..." and "# ..." details, last line
"udiff: N seeds, N ops, N unexpected, N allowed (...)". Exit 1 on any unexpected difference.
Internal subcommands used by reproducers: mkentry DIR JSON | merge REF BRANCH... |
op UID ROOT JSON | compare A B [BRANCH...] (with the union's branches: documented st_nlink
differences are reported as ALLOWED, not as differences).
"""
import ctypes
import errno
import hashlib
import json
import mmap
import os
import random
import shutil
import stat
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.syscall.restype = ctypes.c_long
SYS_renameat2 = 316
AT_FDCWD = -100
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
UID = 1000
NAMES = ["a", "b", "c", "d", "e"]
XATTRS = ["trusted.x", "trusted.y"]
WH = ".wh."
OPQ = ".wh.__dir_opaque"

# Documented differences of the union from a plain filesystem. Each is matched by a predicate
# on (op, union result, reference result, context) and counted under its name.
ALLOWED = {
    # docs/concepts.md "rename": a non-empty directory moves only when it lives entirely in
    # one writable branch (otherwise EXDEV, so mv falls back to copying). The reference is not
    # changed when this applies.
    "rename-dir-EXDEV": "docs/concepts.md rename: non-empty dir not in one writable branch",
    # docs/concepts.md "rename": RENAME_EXCHANGE / RENAME_WHITEOUT give EINVAL.
    "rename-exchange-EINVAL": "docs/concepts.md rename: RENAME_EXCHANGE gives EINVAL",
    # docs/concepts.md "Hard links": a file with other names moves only within the branch that
    # keeps its group (its own if writable, else the nearest writable above); a new name shown
    # from higher gives EXDEV (mv copies), as link(2) does. The reference is not changed.
    "rename-linked-EXDEV": "docs/concepts.md hard links: a link group leaves its branch: EXDEV",
    # docs/concepts.md "inode numbers": st_ino/st_dev are the union's own numbers; only the
    # partition of names into same-file groups is compared, never the values.
    "ino-values": "docs/concepts.md inode numbers (values never compared)",
    # docs/concepts.md "credentials": a directory is checked on every branch that contributes
    # to it, so a lower copy of a directory that the caller may not search (or write, for the
    # parent of a name being changed) gives EACCES where the plain tree allows the op. The
    # reference does not run the op when this applies.
    "EACCES-lower-dir-copy": "docs/concepts.md credentials: every contributing branch checked",
    # docs/concepts.md "hard links": st_nlink of a branch file is the branch's count, names the
    # union hides (shadowed, whited out) included, as in overlayfs. Allowed only between the
    # reference's count (never fewer) and the largest count a branch gives the name.
    "nlink-hidden-names": "docs/concepts.md hard links: st_nlink counts names hidden in the branch",
}


def allow(counts, name):
    """count one difference covered by the ALLOWED entry name"""
    counts[name] = counts.get(name, 0) + 1


def branch_paths(branches, rel):
    """where rel is looked up in each branch: a directory's trusted.unionfs.redirect
    (docs/concepts.md "Directory rename": a path from every branch's root) sends the
    branches below the copy that carries it to that path"""
    pre = [""] * len(branches)
    comps = [c for c in rel.split("/") if c]
    for k, c in enumerate(comps):
        new = [os.path.join(p, c) if p else c for p in pre]
        redir = None
        for i, b in enumerate(branches):
            if redir is not None:
                new[i] = redir
            full = os.path.join(b, new[i])
            if os.path.isdir(full) and not os.path.islink(full):
                try:
                    redir = os.getxattr(full, "trusted.unionfs.redirect",
                                        follow_symlinks=False).decode() or redir
                except OSError:
                    pass
        pre = new
    return pre


def nlink_hidden(branches, rel, nu, nr):
    """ALLOWED nlink-hidden-names for rel: reference count < union count <= a branch's count
    (at the path the union looks rel up in that branch)"""
    if not branches or not isinstance(nu, int) or not isinstance(nr, int) or not nr < nu:
        return False
    top = 0
    for i, (b, path) in enumerate(zip(branches, branch_paths(branches, rel))):
        try:
            x = os.lstat(os.path.join(b, path))
        except OSError:
            continue
        if not stat.S_ISDIR(x.st_mode):
            top = max(top, x.st_nlink, group_nlink(branches[i + 1:], b, path, x))
    return nu <= top


def group_nlink(lower, b, rel, x):
    """the count the union gives a name of a copied-up link group (docs/concepts.md "Hard
    links"): its lower inode's names (trusted.unionfs.origin of the index entry, which rel
    is a link of in branch b: inode number, little endian) plus the names made in b since,
    besides the index entry; 0 when rel is no such name"""
    if not stat.S_ISREG(x.st_mode) or x.st_nlink < 2:
        return 0
    try:
        o = os.getxattr(os.path.join(b, rel), "trusted.unionfs.origin", follow_symlinks=False)
    except OSError:
        return 0
    if len(o) < 8:
        return 0
    ino = int.from_bytes(o[:8], "little")
    best = 0
    for lb in lower:
        for d, dirs, files in os.walk(lb):
            for f in files:
                try:
                    y = os.lstat(os.path.join(d, f))
                except OSError:
                    continue
                if y.st_ino == ino and stat.S_ISREG(y.st_mode):
                    best = max(best, y.st_nlink)
    return best + x.st_nlink - 2 if best else 0


def stat_nlink_allowed(env, op, ru, rr):
    """a stat result that differs from the reference only by an allowed st_nlink"""
    if op[0] != "stat" or env.plain or len(ru) != 2 or len(rr) != 2 or ru[0] != "OK" or \
            rr[0] != "OK" or ru[1][:5] != rr[1][:5]:
        return False
    return nlink_hidden(env.br, op[1], ru[1][5], rr[1][5])


def gen_bytes(dseed, n):
    r = random.Random(dseed)
    return bytes(r.getrandbits(8) for _ in range(n)) if n < 64 else \
        (hashlib.sha256(str(dseed).encode()).digest() * (n // 32 + 1))[:n]


def ename(e):
    return errno.errorcode.get(e, str(e))


# ---------------------------------------------------------------- lower entries and merge
def mkentry(root, ent):
    """create one lower entry in branch root; entries whose parent is missing get it made"""
    kind, rel = ent[0], ent[1]
    p = os.path.join(root, rel)
    par = os.path.dirname(p)
    try:
        os.makedirs(par, exist_ok=True)
        if kind == "dir":
            os.mkdir(p)
        elif kind == "file":
            size, dseed, hole = ent[5], ent[6], ent[7]
            with open(p, "wb") as f:
                if hole:
                    f.truncate(hole + size)
                    f.seek(hole)
                f.write(gen_bytes(dseed, size))
        elif kind == "symlink":
            os.symlink(ent[5], p)
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind == "link":
            t = os.path.join(root, ent[5])
            if os.path.isfile(t) and not os.path.islink(t):
                os.link(t, p)
            return
        elif kind == "wh":
            open(os.path.join(par, WH + os.path.basename(p)), "wb").close()
            return
        elif kind == "opq":
            if os.path.isdir(p) and not os.path.islink(p):
                open(os.path.join(p, OPQ), "wb").close()
            return
        elif kind == "xattr":
            if os.path.lexists(p) and not os.path.islink(p):
                os.setxattr(p, ent[2], bytes.fromhex(ent[3]))
            return
        if kind in ("dir", "file", "fifo"):
            os.chmod(p, ent[2])
        os.lchown(p, ent[3], ent[4])
    except OSError:
        pass


def merge_listing(branches, rel, brs, out):
    """out: list of (rel, branch dir) in creation order for the merged view of directory rel
    that the branches brs (priority order, each holding rel as a directory) contribute to"""
    names = {}
    hidden = set()
    whs = {}        # name -> index in brs of the first branch whiting it out
    for i, b in enumerate(brs):
        ents = sorted(os.listdir(os.path.join(b, rel)))
        for e in ents:
            if e.startswith(WH) or e in hidden or e in names:
                continue
            names[e] = i
        for e in ents:
            if e.startswith(WH) and e != OPQ:
                hidden.add(e[4:])
                whs.setdefault(e[4:], i)
        if OPQ in ents:
            break
    for e in sorted(names):
        i = names[e]
        r = os.path.join(rel, e) if rel else e
        st = os.lstat(os.path.join(brs[i], r))
        out.append((r, brs[i]))
        if not stat.S_ISDIR(st.st_mode):
            continue
        sub = [brs[i]]
        if not os.path.lexists(os.path.join(brs[i], r, OPQ)) and whs.get(e, 99) > i:
            for j in range(i + 1, len(brs)):
                q = os.path.join(brs[j], r)
                if os.path.lexists(q):
                    if not stat.S_ISDIR(os.lstat(q).st_mode):
                        break
                    sub.append(brs[j])
                    if os.path.lexists(os.path.join(q, OPQ)):
                        break
                if whs.get(e, 99) <= j:
                    break
        merge_listing(branches, r, sub, out)


def copy_attrs(src, dst, st):
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(dst, stat.S_IMODE(st.st_mode))
    os.lchown(dst, st.st_uid, st.st_gid)
    if not stat.S_ISLNK(st.st_mode):
        for x in os.listxattr(src, follow_symlinks=False):
            os.setxattr(dst, x, os.getxattr(src, x, follow_symlinks=False), follow_symlinks=False)


def build_ref(ref, branches):
    """the reference tree: the merged view computed from the branch contents"""
    out = []
    merge_listing(branches, "", list(branches), out)
    seen = {}
    for r, b in out:
        s, d = os.path.join(b, r), os.path.join(ref, r)
        st = os.lstat(s)
        m = st.st_mode
        key = (b, st.st_ino)
        if stat.S_ISREG(m) and key in seen:
            os.link(seen[key], d)
            continue
        if stat.S_ISDIR(m):
            os.mkdir(d)
        elif stat.S_ISREG(m):
            shutil.copyfile(s, d)
            seen[key] = d
        elif stat.S_ISLNK(m):
            os.symlink(os.readlink(s), d)
        elif stat.S_ISFIFO(m):
            os.mkfifo(d)
        copy_attrs(s, d, st)
    st = os.stat(branches[0])
    copy_attrs(branches[0], ref, st)
    return len(out)


# ---------------------------------------------------------------- operations
def _write_data(path, op):
    """op: ["write", path, how, off, len, dseed]"""
    how, off, n, dseed = op[2], op[3], op[4], op[5]
    data = gen_bytes(dseed, n)
    if how == "pwrite":
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            return os.pwrite(fd, data, off)
        finally:
            os.close(fd)
    if how == "append":
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        try:
            return os.write(fd, data)
        finally:
            os.close(fd)
    if how == "rwf_append":
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            r = os.pwritev(fd, [data], off, os.RWF_APPEND)
            return [r, os.lseek(fd, 0, os.SEEK_CUR), os.fstat(fd).st_size]
        finally:
            os.close(fd)
    if how == "mmap":
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return "empty"
            off %= size
            n = min(n, size - off)
            with mmap.mmap(fd, size) as mm:
                mm[off:off + n] = data[:n]
                mm.flush()
            return n
        finally:
            os.close(fd)
    raise ValueError(how)


def stat_tuple(st):
    m = st.st_mode
    return [stat.S_IFMT(m), stat.S_IMODE(m), st.st_uid, st.st_gid,
            st.st_size if not stat.S_ISDIR(m) else 0,
            st.st_nlink if not stat.S_ISDIR(m) else 0]


def do_op(root, op):
    """apply op under root; returns a JSON-able result (the compared value)"""
    k = op[0]
    P = lambda i: os.path.join(root, op[i])     # noqa: E731
    try:
        if k == "open":         # ["open", path, flags, mode, len, dseed]
            fd = os.open(P(1), op[2] | os.O_NONBLOCK, op[3])
            try:
                r = os.write(fd, gen_bytes(op[5], op[4])) if op[4] else 0
                x = os.fstat(fd)
                return ["OK", r, x.st_size if stat.S_ISREG(x.st_mode) else -1]
            finally:
                os.close(fd)
        if k == "read":
            fd = os.open(P(1), os.O_RDONLY | os.O_NONBLOCK)
            try:
                h = hashlib.md5()
                while True:
                    b = os.read(fd, 1 << 16)
                    if not b:
                        return ["OK", h.hexdigest()]
                    h.update(b)
            finally:
                os.close(fd)
        if k == "mkdir":
            os.mkdir(P(1), op[2])
        elif k == "mkfifo":
            os.mkfifo(P(1), op[2])
        elif k == "symlink":
            os.symlink(op[2], P(1))
        elif k == "link":
            os.link(P(1), P(2))
        elif k == "unlink":
            os.unlink(P(1))
        elif k == "rmdir":
            os.rmdir(P(1))
        elif k == "rename":
            if op[3] == 0:
                os.rename(P(1), P(2))
            else:
                r = libc.syscall(SYS_renameat2, AT_FDCWD, P(1).encode(), AT_FDCWD,
                                 P(2).encode(), op[3])
                if r < 0:
                    raise OSError(ctypes.get_errno(), "renameat2")
        elif k == "write":
            return ["OK", _write_data(P(1), op)]
        elif k == "truncate":
            os.truncate(P(1), op[2])
        elif k == "fallocate":
            fd = os.open(P(1), os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.posix_fallocate(fd, op[2], op[3])
            finally:
                os.close(fd)
        elif k == "chmod":
            os.chmod(P(1), op[2])
        elif k == "chown":
            os.chown(P(1), op[2], op[3], follow_symlinks=op[4])
        elif k == "utime":
            os.utime(P(1), ns=(op[2], op[2]))
            return ["OK", os.stat(P(1)).st_mtime_ns]
        elif k == "setxattr":
            os.setxattr(P(1), op[2], bytes.fromhex(op[3]), op[4])
        elif k == "removexattr":
            os.removexattr(P(1), op[2])
        elif k == "getxattr":
            return ["OK", os.getxattr(P(1), op[2]).hex()]
        elif k == "fsync":
            fd = os.open(P(1), os.O_RDONLY | os.O_NONBLOCK)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        elif k == "stat":
            return ["OK", stat_tuple(os.lstat(P(1)))]
        elif k == "listdir":
            return ["OK", sorted(os.listdir(P(1)))]
        else:
            raise ValueError(k)
        return ["OK"]
    except OSError as e:
        return [ename(e.errno)]


class Server:
    """a persistent child with uid/gid UID serving ops (a fork per op costs ~50 ms)"""

    def __init__(self, uid):
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(w1)
            os.close(r2)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            fin = os.fdopen(r1, "r")
            fout = os.fdopen(w2, "w")
            for line in fin:
                root, op = json.loads(line)
                try:
                    res = do_op(root, op)
                except BaseException as e:     # noqa: B902
                    res = ["child-exception", repr(e)]
                fout.write(json.dumps(res) + "\n")
                fout.flush()
            os._exit(0)
        os.close(r1)
        os.close(w2)
        self.fin = os.fdopen(r2, "r")
        self.fout = os.fdopen(w1, "w")

    def call(self, root, op):
        self.fout.write(json.dumps([root, op]) + "\n")
        self.fout.flush()
        line = self.fin.readline()
        return json.loads(line) if line else ["server-died"]


SERVER = {}


def run_op(root, op, uid, persistent=True):
    if uid == 0:
        return do_op(root, op)
    if persistent:
        if uid not in SERVER:
            SERVER[uid] = Server(uid)
        return SERVER[uid].call(root, op)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            r = do_op(root, op)
        except BaseException as e:     # noqa: B902
            r = ["child-exception", repr(e)]
        os.write(wfd, json.dumps(r).encode())
        os._exit(0)
    os.close(wfd)
    data = b""
    while True:
        c = os.read(rfd, 65536)
        if not c:
            break
        data += c
    os.close(rfd)
    os.waitpid(pid, 0)
    return json.loads(data.decode()) if data else ["child-died"]


def op_shell(op, uid):
    """a shell-ish comment for a reproducer line"""
    k = op[0]
    who = "" if uid == 0 else "as uid %d: " % uid
    d = {"open": lambda: "open(%s, %s, %o) + write %d bytes" % (op[1], flagstr(op[2]), op[3], op[4]),
         "rename": lambda: "renameat2(%s, %s, %s)" % (op[1], op[2], ["0", "NOREPLACE", "EXCHANGE"][op[3]]),
         "write": lambda: "%s %s off %d len %d" % (op[2], op[1], op[3], op[4])}
    s = d[k]() if k in d else "%s %s" % (k, " ".join(str(x) for x in op[1:]))
    return who + s


def flagstr(fl):
    names = [n for n in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND")
             if fl & getattr(os, n)]
    return "|".join(names) or "O_RDONLY"


# ---------------------------------------------------------------- tree comparison
def snapshot(root):
    """{rel: attrs}, partition of same-file groups, list of invariant problems"""
    t = {}
    groups = {}
    bad = []

    def walk(rel):
        d = os.path.join(root, rel)
        try:
            ents = list(os.scandir(d))
        except OSError as e:
            bad.append("readdir /%s: %s" % (rel, ename(e.errno)))
            return
        nm = [e.name for e in ents]
        if len(nm) != len(set(nm)):
            bad.append("duplicate names in readdir of /%s" % rel)
        for e in sorted(ents, key=lambda x: x.name):
            r = os.path.join(rel, e.name) if rel else e.name
            try:
                st = os.lstat(e.path)
            except OSError as x:
                t[r] = ["lstat-" + ename(x.errno)]
                continue
            if e.inode() != st.st_ino:
                bad.append("/%s: readdir d_ino %d != st_ino %d" % (r, e.inode(), st.st_ino))
            m = st.st_mode
            a = {"type": stat.S_IFMT(m), "mode": oct(stat.S_IMODE(m)), "uid": st.st_uid,
                 "gid": st.st_gid}
            if not stat.S_ISDIR(m):
                a["nlink"] = st.st_nlink
                a["size"] = st.st_size
                groups.setdefault((st.st_dev, st.st_ino), []).append(r)
            if stat.S_ISREG(m):
                try:
                    with open(e.path, "rb") as f:
                        a["md5"] = hashlib.md5(f.read()).hexdigest()
                except OSError as x:
                    a["md5"] = ename(x.errno)
            elif stat.S_ISLNK(m):
                a["target"] = os.readlink(e.path)
            if not stat.S_ISLNK(m):
                try:
                    a["xattrs"] = {x: os.getxattr(e.path, x, follow_symlinks=False).hex()
                                   for x in sorted(os.listxattr(e.path, follow_symlinks=False))}
                except OSError as x:
                    a["xattrs"] = ename(x.errno)
            t[r] = a
            if stat.S_ISDIR(m):
                walk(r)
    walk("")
    st = os.stat(root)
    t["/"] = {"mode": oct(stat.S_IMODE(st.st_mode)), "uid": st.st_uid, "gid": st.st_gid}
    part = sorted(sorted(g) for g in groups.values() if len(g) > 1)
    return t, part, bad


def compare_trees(u, ref, branches=None, allowed=None):
    """list of (class, text) differences of the union tree u against the reference; with the
    union's branches, documented st_nlink differences are counted in allowed instead"""
    tu, pu, badu = snapshot(u)
    tr, pr, badr = snapshot(ref)
    diffs = [("invariant", "union: " + b) for b in badu] + [("oracle", "reference: " + b) for b in badr]
    for r in sorted(set(tu) | set(tr)):
        a, b = tu.get(r), tr.get(r)
        if a is None:
            diffs.append(("tree-missing", "/%s: missing in union (reference %s)" % (r, b)))
        elif b is None:
            diffs.append(("tree-extra", "/%s: extra in union (%s)" % (r, a)))
        elif a != b:
            if not isinstance(a, dict) or not isinstance(b, dict):
                diffs.append(("tree-lstat", "/%s: union %s, reference %s" % (r, a, b)))
                continue
            for key in sorted(set(a) | set(b)):
                if key == "nlink" and nlink_hidden(branches, r, a.get(key), b.get(key)):
                    if allowed is not None:
                        allow(allowed, "nlink-hidden-names")
                    continue
                if a.get(key) != b.get(key):
                    diffs.append(("tree-" + key, "/%s: %s union %s, reference %s" %
                                  (r, key, a.get(key), b.get(key))))
    if pu != pr:
        su = set(map(tuple, pu))
        sr = set(map(tuple, pr))
        diffs.append(("tree-links", "same-file groups: only in union %s, only in reference %s"
                      % (sorted(su - sr), sorted(sr - su))))
    return diffs


# ---------------------------------------------------------------- generator
# symlink targets are relative and never leave the tree (no "..", no absolute path): a target
# outside would be one file shared by the union and the reference


def gen_lower(rnd, nb):
    """lower entries per branch: list of [branch, entry]"""
    ents = []
    for b in range(nb):
        files = []

        def gdir(rel, depth):
            for n in rnd.sample(NAMES, rnd.randint(2, 5)):
                r = os.path.join(rel, n) if rel else n
                x = rnd.random()
                mode = rnd.choice([0o644, 0o600, 0o666, 0o755, 0o777, 0o640])
                own = rnd.choice([0, 0, UID])
                if x < 0.35 and depth < 2:
                    dm = rnd.choice([0o755, 0o777, 0o700, 0o1777, 0o755])
                    ents.append([b, ["dir", r, dm, own, own]])
                    if rnd.random() < 0.12:
                        ents.append([b, ["opq", r]])
                    gdir(r, depth + 1)
                elif x < 0.62:
                    hole = rnd.choice([0, 0, 0, 65536, 1 << 20])
                    ents.append([b, ["file", r, mode, own, own, rnd.randint(0, 3000),
                                     rnd.getrandbits(30), hole]])
                    files.append(r)
                elif x < 0.70:
                    ents.append([b, ["symlink", r, 0o777, own, own,
                                     rnd.choice(["a", "b", "e", "c/d", r])]])
                elif x < 0.75:
                    ents.append([b, ["fifo", r, mode, own, own]])
                elif x < 0.83 and files:
                    ents.append([b, ["link", r, 0, own, own, rnd.choice(files)]])
                elif x < 0.95 and b > 0 or x < 0.90:
                    ents.append([b, ["wh", r]])
                if rnd.random() < 0.2:
                    ents.append([b, ["xattr", r, rnd.choice(XATTRS), "%06x" % rnd.getrandbits(20)]])
        gdir("", 0)
    return ents


class Gen:
    """random operations chosen from the reference tree's current state"""

    def __init__(self, rnd, prefix=""):
        self.r = rnd
        self.prefix = prefix

    def paths(self, ref):
        out = []
        for root, ds, fs in os.walk(ref):
            rel = os.path.relpath(root, ref)
            rel = "" if rel == "." else rel
            for n in ds + fs:
                out.append(os.path.join(rel, n) if rel else n)
        return out

    def newname(self, ref, existing):
        r = self.r
        dirs = [""] + [p for p in existing if os.path.isdir(os.path.join(ref, p))
                       and not os.path.islink(os.path.join(ref, p))]
        d = r.choice(dirs)
        n = self.prefix + r.choice(NAMES + ["n%d" % r.randrange(6)])
        return os.path.join(d, n) if d else n

    def pick(self, ref, existing):
        r = self.r
        mine = [p for p in existing if os.path.basename(p).startswith(self.prefix)] \
            if self.prefix else existing
        if mine and r.random() < 0.75:
            return r.choice(mine)
        return self.newname(ref, existing)

    def op(self, ref):
        r = self.r
        ex = self.paths(ref)
        p = self.pick(ref, ex)
        q = self.pick(ref, ex)
        k = r.choice(["open", "open", "read", "mkdir", "mkfifo", "symlink", "link", "unlink",
                      "unlink", "rmdir", "rename", "rename", "rename", "write", "write",
                      "write", "truncate", "fallocate", "chmod", "chown", "utime", "setxattr",
                      "removexattr", "getxattr", "fsync", "stat", "listdir", "listdir"])
        uid = UID if r.random() < 0.3 else 0
        if k == "open":
            fl = r.choice([os.O_WRONLY | os.O_CREAT, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                           os.O_WRONLY | os.O_TRUNC, os.O_RDWR | os.O_APPEND,
                           os.O_WRONLY | os.O_CREAT | os.O_TRUNC, os.O_RDONLY,
                           os.O_RDWR | os.O_CREAT | os.O_APPEND])
            return [k, p, fl, r.choice([0o644, 0o600, 0o666]),
                    0 if fl & 3 == 0 else r.choice([0, 10, 1000, 5000]), r.getrandbits(30)], uid
        if k in ("read", "unlink", "rmdir", "fsync", "stat", "listdir"):
            return [k, p], uid
        if k in ("mkdir", "mkfifo"):
            return [k, p, r.choice([0o755, 0o777, 0o700, 0o1777])], uid
        if k == "symlink":
            return [k, p, r.choice(["a", "b", "x/y", q])], uid
        if k == "link":
            return [k, p, q], uid
        if k == "rename":
            return [k, p, q, r.choice([0, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE])], uid
        if k == "write":
            return [k, p, r.choice(["pwrite", "append", "rwf_append", "mmap"]),
                    r.choice([0, 100, 4096, 70000]), r.choice([1, 100, 5000]), r.getrandbits(30)], uid
        if k == "truncate":
            return [k, p, r.choice([0, 10, 5000, 100000])], uid
        if k == "fallocate":
            return [k, p, r.choice([0, 4096, 200000]), r.choice([1, 8192])], uid
        if k == "chmod":
            return [k, p, r.choice([0o644, 0o600, 0o755, 0o777, 0o1777, 0o4755, 0o000])], uid
        if k == "chown":
            return [k, p, r.choice([0, UID, 2000]), r.choice([0, UID, -1]), r.random() < 0.8], uid
        if k == "utime":
            return [k, p, r.randrange(10**18)], uid
        if k == "setxattr":
            return [k, p, r.choice(XATTRS), "%04x" % r.getrandbits(16), r.choice([0, 0, 1, 2])], uid
        return [k, p, r.choice(XATTRS)], uid


# ---------------------------------------------------------------- one trial
def mnt(src, tgt, fs, opts):
    if libc.mount(src.encode(), tgt.encode(), fs.encode(), 0, opts.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s %s -o %s: %s" % (fs, tgt, opts, os.strerror(e)))


class Env:
    def __init__(self, base, nb, modes, ents, plain=False):
        self.base = base
        self.plain = plain
        self.hz0 = {}
        os.makedirs(base)
        self.br = [os.path.join(base, "b%d" % i) for i in range(nb)]
        self.ref = os.path.join(base, "ref")
        self.modes = list(modes)
        self.u = os.path.join(base, "u")
        self.cbr = None if plain else self.br     # branches for compare_trees' allowances
        self.mounts = []
        for d in self.br + [self.ref, self.u]:
            os.mkdir(d)
        for d in self.br + [self.ref]:
            mnt("udiff", d, "tmpfs", "size=64m,mode=755")
            self.mounts.append(d)
        for b, e in ents:
            mkentry(self.br[b], e)
        build_ref(self.ref, self.br)
        if plain:
            mnt("udiff", self.u, "tmpfs", "size=64m,mode=755")
            self.mounts.append(self.u)
            build_ref(self.u, self.br)
        else:
            self.dirs = ":".join("%s=%s" % (b, m) for b, m in zip(self.br, modes))
            mnt("none", self.u, "unionfs", "dirs=" + self.dirs)
            self.mounts.append(self.u)
            dev = os.stat(self.u).st_dev
            self.hzfile = "/sys/fs/unionfs/%d:%d/hazards" % (os.major(dev), os.minor(dev))
            self.hz0 = self.hazards()

    def hazards(self):
        """{kind: count} of the direct branch changes the union reported ({} if no union)"""
        if self.plain:
            return {}
        with open(self.hzfile) as f:
            return {k: int(v) for k, v in (ln.split() for ln in f if ln.strip())}

    def new_hazards(self):
        """kinds reported since the last call: only the union wrote to the branches, so any
        report is false (a class of its own, shrunk like a difference)"""
        h = self.hazards()
        d = {k: v - self.hz0.get(k, 0) for k, v in h.items() if v != self.hz0.get(k, 0)}
        self.hz0 = h
        return [("hazard-" + k, "the union reported %d direct modification(s) of kind %s; only "
                 "the union wrote to the branches" % (v, k)) for k, v in sorted(d.items())]

    def close(self):
        for m in reversed(self.mounts):
            if libc.umount2(m.encode(), 0) != 0:
                libc.umount2(m.encode(), 2)     # MNT_DETACH
        shutil.rmtree(self.base, ignore_errors=True)


def in_lower_only_top(env, rel):
    """True if rel exists in branch 0 and in no lower branch (dir entirely in one branch)"""
    if not os.path.lexists(os.path.join(env.br[0], rel)):
        return False
    return not any(os.path.lexists(os.path.join(b, rel)) for b in env.br[1:])


def linked_rename_hidden(env, op):
    """rename op moves a non-directory with other names (the union's nlink > 1, names hidden in
    its branch included: nlink-hidden-names) to a name that a
    branch above its group's branch shows or hides (an entry or whiteout of the new name, a
    whiteout or non-directory of one of its ancestors, an opaque ancestor): EXDEV there. The
    paths in each branch follow directory redirects (branch_paths)."""
    src = os.path.join(env.u, op[1])      # unchanged: EXDEV
    if not os.path.lexists(src) or stat.S_ISDIR(os.lstat(src).st_mode) or \
            os.lstat(src).st_nlink < 2:
        return False
    top = next((i for i, (b, p) in enumerate(zip(env.br, branch_paths(env.br, op[1])))
                if os.path.lexists(os.path.join(b, p))), None)
    if top is None:
        return False
    g = next((i for i in range(top, -1, -1) if env.modes[i] == "rw"), None)
    if g is None:
        return False
    # the new name as the union resolves it: its parent's real path (a symlink on the way is
    # followed, never counted as a non-directory that hides: review 21)
    par = os.path.realpath(os.path.dirname(os.path.join(env.ref, op[2])))
    rpar = os.path.relpath(par, os.path.realpath(env.ref))
    if rpar.startswith(".."):
        return False
    dst = os.path.normpath(os.path.join(rpar, os.path.basename(op[2])))
    comps = dst.split("/")
    for i in range(1, len(comps) + 1):
        for b, rel in list(zip(env.br, branch_paths(env.br, "/".join(comps[:i]))))[:g]:
            par, name = os.path.split(os.path.join(b, rel))
            p = os.path.join(par, name)
            if os.path.lexists(os.path.join(par, WH + name)):
                return True
            if i == len(comps) and os.path.lexists(p):
                return True
            if i < len(comps) and os.path.lexists(p) and \
                    (not os.path.isdir(p) or os.path.islink(p) or
                     os.path.lexists(os.path.join(p, OPQ))):
                return True
    return False


def denies(st, uid, bit):
    """True if uid (gid uid, no groups) lacks permission bit (4, 2, 1) on stat st"""
    m = st.st_mode
    if st.st_uid == uid:
        return not (m >> 6) & bit
    if st.st_gid == uid:
        return not (m >> 3) & bit
    return not m & bit


def opens_for_read(op):
    """op opens its path for reading (a directory so opened is read from every branch copy)"""
    return op[0] in ("fsync", "listdir", "read") or \
        (op[0] == "open" and op[2] & os.O_ACCMODE == os.O_RDONLY)


def lower_dir_denies(env, op, uid, roots=None, write=True, which=None):
    """some branch copy of an ancestor directory of op's paths denies uid search, or (write)
    the parent of the name denies write, or a branch copy of a directory (a directory in the
    merged view) that op opens for reading denies read (udiff seed 222046: fsync of a directory
    made 0777 through the union, whose lower copy is 0700). In the branches, the paths follow
    directory redirects (seed 810053: a lower copy of a renamed directory)"""
    def where(rel):     # (root, path) of rel in each root; in the branches, redirects followed
        if roots:
            return [(r, rel) for r in roots]
        return list(zip(env.br, branch_paths(env.br, rel)))
    ref = os.path.join(env.ref, op[1])
    if which in (None, 0) and opens_for_read(op) and os.path.isdir(ref) and \
            not os.path.islink(ref):
        for b, rel in where(op[1]):
            d = os.path.join(b, rel)
            if os.path.isdir(d) and not os.path.islink(d) and denies(os.lstat(d), uid, 4):
                return True
    paths = [op[1]] + ([op[2]] if op[0] in ("link", "rename") else [])
    if which is not None:
        paths = paths[which:which + 1]
    for p in paths:
        comps = p.split("/")
        for i in range(len(comps)):
            for b, rel in where("/".join(comps[:i])):
                d = os.path.join(b, rel)
                if os.path.isdir(d) and not os.path.islink(d):
                    st = os.lstat(d)
                    if denies(st, uid, 1) or (write and i == len(comps) - 1 and denies(st, uid, 2)):
                        return True
    return False


def allowed_candidate(env, op, ru, uid=0):
    """name of the ALLOWED entry that may cover union result ru, or None"""
    # the reference's own search permission only: its write check on the parent comes after
    # checks such as rename's EINVAL for a directory moved below itself (seed 11)
    # path by path, in the order the call resolves them: the reference failing on the first
    # (ENOTDIR, say) is no reason to refuse a denial the union met on it (seed 820024)
    if uid and ru == ["EACCES"]:
        for k in range(2 if op[0] in ("link", "rename") else 1):
            # link(2) resolves its first path before it walks the second; rename(2) both
            # parents, then looks both names up (the union's lookup of the new one can meet the
            # denial) before it says ENOENT for the first (seed 820096)
            first = os.path.join(env.ref, op[1])
            if k and not (os.path.isdir(os.path.dirname(first)) if op[0] == "rename"
                          else os.path.lexists(first)):
                break
            if lower_dir_denies(env, op, uid, [env.ref], write=False, which=k):
                break
            if lower_dir_denies(env, op, uid, which=k):
                return "EACCES-lower-dir-copy"
    if op[0] == "rename":
        if op[3] == RENAME_EXCHANGE and ru == ["EINVAL"]:
            return "rename-exchange-EINVAL"
        src = os.path.join(env.ref, op[1])
        if ru == ["EXDEV"] and os.path.isdir(src) and not os.path.islink(src) \
                and os.listdir(src) and not in_lower_only_top(env, op[1]):
            return "rename-dir-EXDEV"
        if ru == ["EXDEV"] and linked_rename_hidden(env, op):
            return "rename-linked-EXDEV"
    return None


def apply_ref(env, op, uid, ru, st):
    """run op on the reference; returns its result, or None when a documented difference
    covered the union's result (the reference is then put back as it was)"""
    a = allowed_candidate(env, op, ru, uid)
    if not a:
        return run_op(env.ref, op, uid)
    if a in ("EACCES-lower-dir-copy", "rename-linked-EXDEV"):
        allow(st.allowed, a)
        return None
    # the names as they are now: the op may swap a symlink on one path with a directory on
    # the other path's way (seed 810118: exchange of b, a symlink to a, and b/a)
    def real(rel):
        p = os.path.join(env.ref, rel)
        return os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
    dst, src = real(op[2]), real(op[1])
    saved = None
    if os.path.isdir(dst) and not os.path.islink(dst):
        x = os.lstat(dst)
        saved = (x, {n: os.getxattr(dst, n) for n in os.listxattr(dst)})
    rr = run_op(env.ref, op, uid)
    if rr == ru:
        return rr
    if rr == ["OK"]:
        if op[3] == RENAME_EXCHANGE:
            libc.syscall(SYS_renameat2, AT_FDCWD, dst.encode(), AT_FDCWD, src.encode(),
                         RENAME_EXCHANGE)
        else:
            os.rename(dst, src)
            if saved:
                os.mkdir(dst)
                copy_attrs_from(dst, saved[0], saved[1])
    allow(st.allowed, a)
    return None


def copy_attrs_from(dst, x, xattrs):
    os.chmod(dst, stat.S_IMODE(x.st_mode))
    os.lchown(dst, x.st_uid, x.st_gid)
    for n, v in xattrs.items():
        os.setxattr(dst, n, v)


class Stats:
    def __init__(self):
        self.ops = 0
        self.allowed = {}
        self.cmp = 0
        self.known = {}


KNOWN = set()


def unknown(st, diffs):
    """diffs minus the --known classes (counted in st.known, exploration only)"""
    out = []
    for c, t in diffs:
        if c in KNOWN:
            st.known[c] = st.known.get(c, 0) + 1
        else:
            out.append((c, t))
    return out


def trial(base, nb, modes, ents, ops, every, plain=False, perturb=False, stats=None, log=None,
          workers=None):
    """run ops (list of [op, uid]) on a fresh env; returns first unexpected (class, text,
    index) or None. index = op index (-1: initial view)"""
    st = stats or Stats()
    env = Env(base, nb, modes, ents, plain)
    try:
        d = unknown(st, env.new_hazards() + compare_trees(env.u, env.ref, env.cbr, st.allowed))
        st.cmp += 1
        if d:
            return d[0][0], "initial view: " + d[0][1], -1, d
        if workers:
            return run_workers(env, workers, st)
        for i, (op, uid) in enumerate(ops):
            if perturb and i == min(3, len(ops) - 1):
                open(os.path.join(env.u, "perturbed"), "w").close()
            ru = run_op(env.u, op, uid)
            hz = unknown(st, env.new_hazards())
            if hz:
                return hz[0][0], "op #%d %s: %s" % (i, op_shell(op, uid), hz[0][1]), i, hz
            rr = apply_ref(env, op, uid, ru, st)
            if rr is None:
                continue
            st.ops += 1
            if ru != rr and stat_nlink_allowed(env, op, ru, rr):
                allow(st.allowed, "nlink-hidden-names")
                continue
            if ru != rr:
                c = "result-%s-%s" % (op[0], "ok" if rr[0] == "OK" else rr[0])
                if unknown(st, [(c, "")]):
                    return (c, "op #%d %s: union %s, reference %s" % (i, op_shell(op, uid), ru, rr), i, [])
            if (i + 1) % every == 0 or i == len(ops) - 1:
                d = unknown(st, env.new_hazards() + compare_trees(env.u, env.ref, env.cbr, st.allowed))
                st.cmp += 1
                if d:
                    return d[0][0], "after op #%d: %s" % (i, d[0][1]), i, d
        return None
    finally:
        env.close()


def run_workers(env, specs, st):
    """specs: list of op lists per worker (disjoint prefixes); run them concurrently on the
    union, serially on the reference, compare each worker's results and the final trees"""
    pids = []
    for w, ops in enumerate(specs):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            res = [run_op(env.u, op, uid, False) for op, uid in ops]
            os.write(wfd, json.dumps(res).encode())
            os._exit(0)
        os.close(wfd)
        pids.append((pid, rfd))
    results = []
    for pid, rfd in pids:
        data = b""
        while True:
            c = os.read(rfd, 1 << 16)
            if not c:
                break
            data += c
        os.close(rfd)
        os.waitpid(pid, 0)
        results.append(json.loads(data.decode()) if data else None)
    for w, ops in enumerate(specs):
        for i, (op, uid) in enumerate(ops):
            ru = results[w][i] if results[w] else ["worker-died"]
            rr = apply_ref(env, op, uid, ru, st)
            if rr is None:
                continue
            st.ops += 1
            if ru != rr and stat_nlink_allowed(env, op, ru, rr):
                allow(st.allowed, "nlink-hidden-names")
                continue
            if ru != rr:
                return ("result-%s-%s" % (op[0], rr[0]),
                        "worker %d op #%d %s: union %s, reference %s" % (w, i, op_shell(op, uid), ru, rr), i, [])
    d = unknown(st, env.new_hazards() + compare_trees(env.u, env.ref, env.cbr, st.allowed))
    st.cmp += 1
    if d:
        return d[0][0], "after the workers: " + d[0][1], len(specs[0]), d
    return None


def gen_ops(base, nb, modes, ents, n, rnd, plain):
    """generate n ops against a scratch reference that follows them"""
    env = Env(base, nb, modes, ents, True)
    try:
        g = Gen(rnd)
        ops = []
        for _ in range(n):
            op, uid = g.op(env.ref)
            ops.append([op, uid])
            run_op(env.ref, op, uid)
        return ops
    finally:
        env.close()


def disjoint(op, w):
    """op names only worker w's own names (basename w<w>_, no other worker's component)"""
    paths = [op[1]] + ([op[2]] if op[0] in ("link", "rename") else [])
    for p in paths:
        comps = p.split("/")
        if not comps[-1].startswith("w%d_" % w):
            return False
        if any(c.startswith("w") and "_" in c and not c.startswith("w%d_" % w) for c in comps):
            return False
    return True


def gen_worker_ops(base, nb, modes, ents, n, nw, rnd):
    env = Env(base, nb, modes, ents, True)
    try:
        specs = []
        for w in range(nw):
            g = Gen(random.Random(rnd.getrandbits(32)), prefix="w%d_" % w)
            ops = []
            for _ in range(n):
                op, uid = g.op(env.ref)
                # disjoint: every path the op names must be the worker's own (a fresh name
                # under an existing dir, or a name it created)
                if not disjoint(op, w):
                    continue
                ops.append([op, uid])
                run_op(env.ref, op, uid)
            specs.append(ops)
        return specs
    finally:
        env.close()


# ---------------------------------------------------------------- shrinking
def ddmin(items, test, deadline):
    """minimal sublist of items for which test(sublist) is True (test(items) is True)"""
    if items and test([]):
        return []
    n = 2
    while len(items) >= 2 and time.time() < deadline:
        chunk = max(1, len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for i in range(len(subsets)):
            comp = [x for j, s in enumerate(subsets) if j != i for x in s]
            if time.time() < deadline and test(comp):
                items = comp
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    return items


def shrink(base, nb, modes, ents, ops, cls, every, budget, plain, perturb):
    deadline = time.time() + budget
    cnt = [0]

    def fails(e, o):
        cnt[0] += 1
        try:
            r = trial("%s.s%d" % (base, cnt[0]), nb, modes, e, o, every=max(1, len(o)),
                      plain=plain, perturb=perturb)
        except OSError:
            return False
        return r is not None and r[0] == cls

    ops = ddmin(ops, lambda o: fails(ents, o), deadline)
    ents = ddmin(ents, lambda e: fails(e, ops), deadline)
    ops = ddmin(ops, lambda o: fails(ents, o), deadline)
    return ents, ops, cnt[0]


def repro_script(seed, nb, modes, ents, ops, cls, text, perturb):
    me = os.path.abspath(__file__)
    L = ["#!/bin/bash",
         "# udiff.py minimal reproducer: seed %d, class %s" % (seed, cls),
         "# %s" % text,
         "# run in the guest as root: bash THIS [path of udiff.py]",
         "U=${1:-%s}" % me,
         "T=$(mktemp -d /tmp/udiff-repro.XXXXXX)",
         "for d in %s ref; do mkdir $T/$d; mount -t tmpfs -o mode=755 udiff $T/$d; done" %
         " ".join("b%d" % i for i in range(nb)),
         "mkdir $T/u"]
    for b, e in ents:
        L.append("python3 $U mkentry $T/b%d '%s'" % (b, json.dumps(e)))
    if perturb:
        L.append("mount -t tmpfs -o mode=755 udiff $T/u && python3 $U merge $T/u %s" %
                 " ".join("$T/b%d" % i for i in range(nb)))
    else:
        L.append("mount -i -t unionfs -o dirs=%s none $T/u" %
                 ":".join("$T/b%d=%s" % (i, m) for i, m in enumerate(modes)))
    L.append("python3 $U merge $T/ref %s   # the reference: merged view computed from the branches" %
             " ".join("$T/b%d" % i for i in range(nb)))
    brs = "" if perturb else " " + " ".join("$T/b%d" % i for i in range(nb))
    L.append("python3 $U compare $T/u $T/ref%s   # initial view" % brs)
    for i, (op, uid) in enumerate(ops):
        if perturb and i == min(3, len(ops) - 1):
            L.append("touch $T/u/perturbed")
        L.append("python3 $U op %d $T/u '%s'; python3 $U op %d $T/ref '%s'   # %s" %
                 (uid, json.dumps(op), uid, json.dumps(op), op_shell(op, uid)))
    L.append("python3 $U compare $T/u $T/ref%s" % brs)
    L.append("umount $T/u; for d in $T/b* $T/ref; do umount $d; done; rm -rf $T")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main
def one_seed(seed, nops, nbr, args, tot):
    rnd = random.Random(seed)
    nb = nbr or rnd.randint(2, 4)
    modes = ["rw"] + [rnd.choice(["rw", "ro", "ro"]) for _ in range(nb - 1)]
    ents = gen_lower(rnd, nb)
    base = os.path.join(args["tmp"], "s%d" % seed)
    st = Stats()
    if args["workers"] > 1:
        specs = gen_worker_ops(base + ".g", nb, modes, ents, nops // args["workers"],
                               args["workers"], rnd)
        ops = [x for s in specs for x in s]
        r = trial(base, nb, modes, ents, ops, args["every"], args["plain"], args["perturb"], st,
                  workers=specs)
    else:
        ops = gen_ops(base + ".g", nb, modes, ents, nops, rnd, args["plain"])
        r = trial(base, nb, modes, ents, ops, args["every"], args["plain"], args["perturb"], st)
    tot["seeds"] += 1
    tot["ops"] += st.ops
    for k, v in st.allowed.items():
        tot["allowed"][k] = tot["allowed"].get(k, 0) + v
    for k, v in st.known.items():
        tot["known"][k] = tot["known"].get(k, 0) + v
    desc = "seed %d: %d branches %s, %d lower entries, %d ops (%d compared, %d allowed), %d tree compares" % (
        seed, nb, ":".join(modes), len(ents), len(ops), st.ops, sum(st.allowed.values()), st.cmp)
    if r is None:
        print("ok - " + desc, flush=True)
        return True
    cls, text, idx, alld = r
    tot["unexpected"] += 1
    tot["classes"][cls] = tot["classes"].get(cls, 0) + 1
    print("not ok - %s: %s: %s" % (desc, cls, text), flush=True)
    print("#   class: %s" % cls)
    for c, t in alld[1:8]:
        print("#   also %s: %s" % (c, t))
    print("#   replay: udiff.py --seed %d --ops %d%s%s" % (
        seed, nops, " --branches %d" % nbr if nbr else "",
        " --workers %d" % args["workers"] if args["workers"] > 1 else ""), flush=True)
    if args["shrink"] and args["workers"] <= 1:
        o = ops[:idx + 1] if idx >= 0 else []
        se, so, n = shrink(base + ".m", nb, modes, ents, o, cls, args["every"], args["shrink_secs"],
                           args["plain"], args["perturb"])
        scr = repro_script(seed, nb, modes, se, so, cls, text, args["perturb"])
        print("#   shrunk in %d trials to %d lower entries, %d ops:" % (n, len(se), len(so)))
        for line in scr.splitlines():
            print("#     " + line)
        if args["out"]:
            os.makedirs(args["out"], exist_ok=True)
            fn = os.path.join(args["out"], "repro-seed%d-%s.sh" % (seed, cls))
            with open(fn, "w") as f:
                f.write(scr)
            print("#   reproducer: " + fn, flush=True)
    return False


def batch():
    """one call per stdin line (shell words, as on the command line): its output, then a line
    "\x1e" + its exit status (tests/t/97: one python for many mkentry/merge/op/compare calls)"""
    import contextlib
    import io
    import shlex
    import traceback
    for line in sys.stdin:
        out, rc = io.StringIO(), 1
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = main(shlex.split(line))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        except Exception:           # noqa: B902 - the call's failure is its answer
            out.write(traceback.format_exc())
        sys.stdout.write(out.getvalue())
        if out.getvalue() and not out.getvalue().endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.write("\x1e%d\n" % (rc or 0))
        sys.stdout.flush()
    return 0


def main(argv):
    if argv == ["batch"]:
        return batch()
    if argv and argv[0] == "mkentry":
        mkentry(argv[1], json.loads(argv[2]))
        return 0
    if argv and argv[0] == "merge":
        build_ref(argv[1], argv[2:])
        return 0
    if argv and argv[0] == "op":
        print("%s: %s" % (argv[2], json.dumps(run_op(argv[2], json.loads(argv[3]), int(argv[1])))))
        return 0
    if argv and argv[0] == "compare":       # compare U REF [BRANCH...]: allowances need branches
        al = {}
        d = compare_trees(argv[1], argv[2], argv[3:] or None, al)
        for k, v in sorted(al.items()):
            print("ALLOWED %s: %d" % (k, v))
        for c, t in d:
            print("DIFF %s: %s" % (c, t))
        print("%d differences" % len(d))
        return 1 if d else 0
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--branches", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--time", type=float, default=0)
    ap.add_argument("--seeds", type=int, default=1, help="consecutive seeds from --seed")
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--out", default="")
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--perturb", action="store_true")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--known", default="", help="exploration: difference classes (comma list) "
                    "counted as known and skipped; never used by the tests")
    ap.add_argument("--shrink-secs", type=float, default=90)
    a = ap.parse_args(argv)
    os.umask(0o022)
    tmp = os.path.join("/tmp", "udiff.%d" % os.getpid())
    os.makedirs(tmp)
    os.chmod(tmp, 0o755)
    args = {"workers": a.workers, "every": a.every, "plain": a.plain or a.perturb,
            "perturb": a.perturb, "shrink": not a.no_shrink, "shrink_secs": a.shrink_secs,
            "out": a.out, "tmp": tmp}
    tot = {"seeds": 0, "ops": 0, "unexpected": 0, "allowed": {}, "classes": {}, "known": {}}
    KNOWN.update(c for c in a.known.split(",") if c)
    start = time.time()
    seed = a.seed
    try:
        while True:
            one_seed(seed, a.ops, a.branches, args, tot)
            seed += 1
            if a.time:
                if time.time() - start >= a.time:
                    break
            elif seed - a.seed >= a.seeds:
                break
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("udiff: %d seeds, %d ops compared, %d unexpected%s, %d allowed (%s), %.0f s" % (
        tot["seeds"], tot["ops"], tot["unexpected"],
        " (" + " ".join("%s=%d" % kv for kv in sorted(tot["classes"].items())) + ")"
        if tot["classes"] else "",
        sum(tot["allowed"].values()),
        " ".join("%s=%d" % kv for kv in sorted(tot["allowed"].items())) or "none",
        time.time() - start))
    if tot["known"]:
        print("udiff: --known classes seen (not failures of this run, not allowed): %s" %
              " ".join("%s=%d" % kv for kv in sorted(tot["known"].items())))
    return 1 if tot["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
