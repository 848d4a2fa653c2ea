#!/usr/bin/env python3
"""tests/sys.py: make one system call and print its result as an errno name.

Tests need the exact errno of a call (mount(8) and coreutils rewrite them),
so this runs the raw syscall through libc and prints "OK" or the errno name
(ENOENT, EXDEV, ...). Exit status: 0 on success, 1 on an errno, 2 on usage.

  sys.py mount SRC TARGET FSTYPE OPTIONS [ro]    mount(2) (no helpers)
  sys.py remount TARGET OPTIONS                  mount(2) MS_REMOUNT
  sys.py rename OLD NEW [noreplace|exchange|whiteout]
  sys.py unlink|rmdir|mkdir|readlink PATH
  sys.py link OLD NEW | symlink TARGET NEW
  sys.py mknod PATH fifo|sock|chr MAJ MIN
  sys.py open PATH FLAGS                         FLAGS: r w rw a t c x (letters)
  sys.py truncate PATH LEN | chmod PATH OCTAL | chown PATH UID GID
  sys.py setxattr PATH NAME VALUE [create|replace] | getxattr PATH NAME
  sys.py removexattr PATH NAME
  sys.py setacl PATH UID                         access ACL: owner rw, UID r, group r, other r
  sys.py utime PATH [SECONDS]                    utimes to SECONDS, or to now (NULL)
  sys.py getdents PATH BUFSIZE                   list names using getdents64 with a small buffer
  sys.py seekdir PATH                            telldir/seekdir walk: prints names, checks resume
  sys.py ioctl PATH REQ [INT]                    ioctl with an int argument (prints the int back)
  sys.py batch                                   one call per stdin line "WHO OP ARGS..."
                                                 (shell words), in order, each in a child
                                                 as WHO: "-" (as is), UID or UID:G1,G2 (that
                                                 uid and gid, those groups, so no
                                                 capabilities); prints each result's last
                                                 line: one python for many calls
"""
import ctypes
import ctypes.util
import errno
import os
import struct
import sys

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_char_p]
MS_RDONLY, MS_REMOUNT = 1, 32
RENAME_FLAGS = {"noreplace": 1, "exchange": 2, "whiteout": 4}
SYS_renameat2, SYS_getdents64 = 316, 217
AT_FDCWD = -100


def b(s):
    return s.encode()


def check(rc):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc


def getdents(path, bufsize):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    buf = ctypes.create_string_buffer(bufsize)
    names = []
    try:
        while True:
            n = check(libc.syscall(SYS_getdents64, fd, buf, bufsize))
            if n == 0:
                break
            off = 0
            while off < n:
                _ino, _off, reclen, _typ = struct.unpack_from("<QqHB", buf.raw, off)
                name = buf.raw[off + 19:off + reclen].split(b"\0", 1)[0]
                names.append(name.decode(errors="replace"))
                off += reclen
    finally:
        os.close(fd)
    return names


def seekdir_walk(path):
    """Read entries one at a time, remembering telldir() cookies; then
    seekdir() back to every third cookie and check the same names follow."""
    libc.opendir.restype = ctypes.c_void_p
    libc.readdir.restype = ctypes.c_void_p
    libc.readdir.argtypes = [ctypes.c_void_p]
    libc.telldir.restype = ctypes.c_long
    libc.telldir.argtypes = [ctypes.c_void_p]
    libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
    libc.closedir.argtypes = [ctypes.c_void_p]
    d = libc.opendir(b(path))
    if not d:
        check(-1)

    def rd():
        ent = libc.readdir(d)
        if not ent:
            return None
        # struct dirent64: d_ino(8) d_off(8) d_reclen(2) d_type(1) d_name
        return ctypes.string_at(ent + 19).decode(errors="replace")

    seq, cookies = [], []
    while True:
        cookies.append(libc.telldir(d))
        name = rd()
        if name is None:
            break
        seq.append(name)
    bad = 0
    for i in range(0, len(seq), 3):
        libc.seekdir(d, cookies[i])
        if rd() != seq[i]:
            bad += 1
    libc.closedir(d)
    print("entries %d seekdir-mismatches %d" % (len(seq), bad))
    return 0 if bad == 0 else 1


def run_as(who, args):
    """main(args) in a child as @who; its last line of output."""
    import contextlib
    import io
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = io.StringIO()
        try:
            if who != "-":
                u, _, g = who.partition(":")
                os.setgroups([int(x) for x in g.split(",")] if g else [])
                os.setresgid(int(u), int(u), int(u))
                os.setresuid(int(u), int(u), int(u))   # drops every capability
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                main(["sys.py"] + args)
        except BaseException as e:  # noqa: B902 - anything the child hits is the answer
            out.write("child: %r\n" % (e,))
        lines = out.getvalue().splitlines() or [""]
        os.write(w, (lines[-1] + "\n").encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        res = f.read().rstrip("\n")
    os.waitpid(pid, 0)
    return res


def batch():
    import shlex
    for line in sys.stdin:
        words = shlex.split(line)
        if words:
            print(run_as(words[0], words[1:]), flush=True)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "batch":
        return batch()
    if len(argv) < 2:
        print(__doc__)
        return 2
    op, a = argv[1], argv[2:]
    try:
        if op == "mount":
            flags = MS_RDONLY if len(a) > 4 and a[4] == "ro" else 0
            check(libc.mount(b(a[0]), b(a[1]), b(a[2]), flags, b(a[3])))
        elif op == "remount":
            flags = MS_REMOUNT | (MS_RDONLY if len(a) > 2 and a[2] == "ro" else 0)
            check(libc.mount(None, b(a[0]), None, flags, b(a[1])))
        elif op == "rename":
            fl = RENAME_FLAGS[a[2]] if len(a) > 2 else 0
            check(libc.syscall(SYS_renameat2, AT_FDCWD, b(a[0]), AT_FDCWD, b(a[1]),
                               ctypes.c_uint(fl)))
        elif op == "unlink":
            os.unlink(a[0])
        elif op == "rmdir":
            os.rmdir(a[0])
        elif op == "mkdir":
            os.mkdir(a[0], int(a[1], 8) if len(a) > 1 else 0o755)
        elif op == "readlink":
            print(os.readlink(a[0]))
        elif op == "link":
            os.link(a[0], a[1])
        elif op == "symlink":
            os.symlink(a[0], a[1])
        elif op == "mknod":
            import stat
            kind = {"fifo": stat.S_IFIFO, "sock": stat.S_IFSOCK, "chr": stat.S_IFCHR}[a[1]]
            dev = os.makedev(int(a[2]), int(a[3])) if len(a) > 3 else 0
            os.mknod(a[0], kind | 0o644, dev)
        elif op == "open":
            m = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR}
            fl = m.get(a[1].rstrip("atcx"), os.O_RDONLY)
            for ch, f in (("a", os.O_APPEND), ("t", os.O_TRUNC), ("c", os.O_CREAT),
                          ("x", os.O_EXCL)):
                if ch in a[1][1:] or (ch in a[1] and a[1][0] not in "rw"):
                    fl |= f
            os.close(os.open(a[0], fl, 0o644))
        elif op == "utime":
            os.utime(a[0], (int(a[1]), int(a[1])) if len(a) > 1 else None)
        elif op == "truncate":
            os.truncate(a[0], int(a[1]))
        elif op == "chmod":
            os.chmod(a[0], int(a[1], 8))
        elif op == "chown":
            os.chown(a[0], int(a[1]), int(a[2]))
        elif op == "setxattr":
            fl = {"create": os.XATTR_CREATE, "replace": os.XATTR_REPLACE}
            os.setxattr(a[0], a[1], b(a[2]), fl[a[3]] if len(a) > 3 else 0)
        elif op == "setacl":
            # POSIX ACL xattr v2: USER_OBJ rw, USER uid r, GROUP_OBJ r, MASK r, OTHER r;
            # "setacl PATH UID nomask": without the MASK entry (parses, but is invalid: EINVAL)
            und = 0xffffffff
            ents = [(1, 6, und), (2, 4, int(a[1])), (4, 4, und), (0x10, 4, und), (0x20, 4, und)]
            if len(a) > 2 and a[2] == "nomask":
                ents.remove((0x10, 4, und))
            os.setxattr(a[0], "system.posix_acl_access", struct.pack("<I", 2) + b"".join(
                struct.pack("<HHI", t, p, i) for t, p, i in ents))
        elif op == "getxattr":
            print(os.getxattr(a[0], a[1]).decode(errors="replace"))
        elif op == "removexattr":
            os.removexattr(a[0], a[1])
        elif op == "getdents":
            for n in getdents(a[0], int(a[1])):
                print(n)
            return 0
        elif op == "seekdir":
            return seekdir_walk(a[0])
        elif op == "ioctl":
            import fcntl
            fd = os.open(a[0], os.O_RDONLY)
            try:
                arg = struct.pack("i", int(a[2]) if len(a) > 2 else 0)
                res = fcntl.ioctl(fd, int(a[1], 0), arg)
                print(struct.unpack("i", res[:4])[0])
            finally:
                os.close(fd)
            return 0
        else:
            print("unknown op " + op, file=sys.stderr)
            return 2
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
