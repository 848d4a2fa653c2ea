#!/usr/bin/env python3
"""tests/tools/ufuzz.py: seeded fuzzing of unionfs inputs (tests/t/94-fuzz.sh).

  ufuzz.py mount   SEED N DIR        N random/mutated mount option strings (mount(2) on
                                     DIR/mnt, branches under DIR); a success is unmounted
  ufuzz.py remount SEED N DIR UNION  N random/mutated remount strings on the union at UNION
  ufuzz.py ioctl   SEED N FILE       N random ioctl numbers/arguments on FILE (in a union)
  ufuzz.py debugfs SEED N            N random writes to /sys/kernel/debug/unionfs/inject and
                                     crash_at (never a valid crash_at site); every armed site
                                     is cleared again
  ufuzz.py sample  KIND SEED N DIR [UNION]  like mount/remount/debugfs, but one line per case
                                     "errno<TAB>input" (for the pr_warn-per-error check)

Each case must return success or an errno from the kind's allowed set; any other errno is
reported. Prints one JSON line: {"kind", "seed", "cases", "ok", "errors": {ERRNO: count},
"bad": [first unexpected results]}; exit 1 if any case was bad.
"""
import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import random
import struct
import sys

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_void_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
MS_RDONLY, MS_REMOUNT = 1, 32
DBG = "/sys/kernel/debug/unionfs"
SITES = ["lookup", "readdir", "open", "create", "mkdir", "mknod", "symlink", "link", "unlink",
         "rmdir", "rename", "setattr", "setxattr", "removexattr", "copyup_create",
         "copyup_data", "copyup_attr", "copyup_rename", "whiteout", "opaque"]
NOISE = [",", "=", ":", "::", "==", "=rw", "=ro", "=RW", "=rx", "dirs", "dirs=", "add=", "del=",
         "mode=", "incgen", "remount", "ro", "rw", "\x01", "\xff", "%s", "%n", "/", "//", "..",
         "../..", "/nonexistent/x", "/dev/null/x", "/dev/null", "/etc/passwd", " ", "\t", "\\", "'", "\"",
         "é", "\u202e", "a" * 300, "/" * 100]
MOUNT_OK = {errno.EINVAL, errno.ENOENT, errno.ENOTDIR, errno.E2BIG, errno.ENAMETOOLONG,
            errno.ELOOP, errno.EBUSY, errno.EROFS}
REMOUNT_OK = MOUNT_OK
IOCTL_OK = {errno.ENOTTY, errno.EFAULT, errno.EINVAL, errno.EPERM, errno.EOPNOTSUPP,
            errno.EBADF, errno.EXDEV, errno.ESTALE, errno.ENOIOCTLCMD if hasattr(errno, "ENOIOCTLCMD") else 515,
            errno.ENODATA, errno.EACCES, errno.ENOSPC, errno.ENXIO, errno.ENODEV, errno.EISDIR}
DEBUGFS_OK = {errno.EINVAL, errno.EPERM, errno.EACCES, errno.EFAULT}


class Gen:
    def __init__(self, seed, base):
        self.r = random.Random(seed)
        self.base = base

    def path(self):
        r = self.r
        k = r.randrange(10)
        if k < 5:
            return "%s/b%d" % (self.base, r.randrange(6))     # b0..b3 exist, b4 b5 do not
        if k == 5:
            return "%s/file" % self.base
        if k == 6:
            return "%s/b%d/sub" % (self.base, r.randrange(4))  # nested: overlap
        if k == 7:
            return self.base
        return r.choice(NOISE)

    def branch(self):
        p = self.path()
        return p + self.r.choice(["", "", "=rw", "=ro", "=" + self.r.choice(NOISE)])

    def options(self):
        r = self.r
        parts = []
        for _ in range(r.randrange(4)):
            k = r.randrange(8)
            if k < 4:
                n = r.choice([0, 1, 2, 3, 5, 130]) if r.randrange(6) else r.randrange(140)
                parts.append("dirs=" + ":".join(self.branch() for _ in range(n)))
            elif k == 4:
                parts.append(r.choice(NOISE) + "=" + r.choice(NOISE))
            elif k == 5:
                parts.append(r.choice(["add=", "del=", "mode=", "incgen", "ro", "rw", "dirs"]) +
                             r.choice(["", self.branch()]))
            else:
                parts.append(r.choice(NOISE))
        s = ",".join(parts)
        return self.mutate(s)

    def remount_options(self):
        r = self.r
        cmds = []
        for _ in range(1 + r.randrange(3)):
            k = r.randrange(6)
            if k == 0:
                cmds.append("add=" + r.choice(["", ":", self.path() + ":"]) + self.branch())
            elif k == 1:
                cmds.append("del=" + self.path())
            elif k == 2:
                cmds.append("mode=" + self.branch())
            elif k == 3:
                cmds.append("incgen")
            elif k == 4:
                cmds.append("dirs=" + self.branch())
            else:
                cmds.append(r.choice(NOISE))
        return self.mutate(",".join(cmds))

    def mutate(self, s):
        r = self.r
        b = bytearray(s.encode(errors="surrogateescape"))
        for _ in range(r.choice([0, 0, 0, 1, 2, 5])):
            if not b:
                b += bytes([r.randrange(1, 256)])
                continue
            i = r.randrange(len(b))
            k = r.randrange(4)
            if k == 0:
                b[i] = r.randrange(1, 256)
            elif k == 1:
                del b[i]
            elif k == 2:
                b[i:i] = r.choice([b",", b"=", b":", b"/", b"\xff", b"dirs="])
            else:
                b[i:i] = b[i:i + r.randrange(1, 40)] * r.randrange(1, 4)
        return bytes(b.replace(b"\0", b"\x01"))[:4000]

    def inject(self):
        r = self.r
        k = r.randrange(6)
        site = r.choice(SITES + ["", "nosuch", "LOOKUP", "all", "clear"] + NOISE[:8])
        if k == 0:
            s = "clear " + site
        else:
            kv = []
            for _ in range(r.randrange(5)):
                key = r.choice(["errno", "probability", "interval", "times", "bogus", "", "errno"])
                val = r.choice(["5", "0", "-1", "4096", "4095", "101", "100", "1", "x", "",
                                "99999999999999999999", "0x10", "5 ", "1e3", str(r.randrange(1 << 31))])
                kv.append(key + r.choice(["=", "", "==", "= "]) + val)
            s = site + " " + " ".join(kv)
        s = self.mutate(s)
        if r.randrange(20) == 0:
            s = bytes(r.randrange(1, 256) for _ in range(r.choice([0, 1, 255, 256, 257, 600])))
        return s

    def crash_at(self):
        r = self.r
        s = self.mutate(r.choice(SITES + ["none", "nosuch"]) + r.choice(["x", "-", "9", "_z"]))
        if r.randrange(10) == 0:
            s = bytes(r.randrange(1, 256) for _ in range(r.choice([1, 64, 255, 300])))
        return s


def errname(e):
    return errno.errorcode.get(e, str(e))


def safe_crash(s):
    """a crash_at write that cannot arm a site: no site name anywhere in it (the module
    stops at a NUL and trims whitespace)"""
    return not any(site.encode() in s for site in SITES)


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


class Run:
    def __init__(self, kind, seed, allowed):
        self.kind, self.seed, self.allowed = kind, seed, allowed
        self.cases = self.ok = 0
        self.errors = {}
        self.bad = []

    def result(self, rc, inp):
        self.cases += 1
        if rc == 0:
            self.ok += 1
            return
        n = errname(rc)
        self.errors[n] = self.errors.get(n, 0) + 1
        if rc not in self.allowed and len(self.bad) < 10:
            self.bad.append("%s: %r" % (n, inp[:200]))
        elif rc not in self.allowed:
            self.bad.append("...")

    def dump(self):
        json.dump({"kind": self.kind, "seed": self.seed, "cases": self.cases, "ok": self.ok,
                   "errors": self.errors, "bad": self.bad[:10], "nbad": len(self.bad)}, sys.stdout)
        print()
        return 1 if self.bad else 0


def do_mount(d, opts, flags=0, target=None):
    tgt = (target or os.path.join(d, "mnt")).encode()
    rc = libc.mount(b"none", tgt, b"unionfs", flags, ctypes.c_char_p(opts))
    if rc == 0:
        if not (flags & MS_REMOUNT):
            libc.umount2(tgt, 0)
        return 0
    return ctypes.get_errno()


SAMPLES = []
MARK = "ufuzz-sample-%d-" % os.getpid()


def mark():
    with open("/dev/kmsg", "w") as f:
        f.write("%s%d\n" % (MARK, len(SAMPLES)))


def sample_check():
    """every failed case of the sample must have logged exactly one 'unionfs:' line"""
    import subprocess
    log = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    per = {}
    cur = 0
    for line in log:
        if MARK in line:
            cur = int(line.split(MARK)[1].split()[0]) + 1
            continue
        if cur and "unionfs" in line:
            per[cur] = per.get(cur, []) + [line]
    bad = []
    nfail = 0
    for i, (rc, inp) in enumerate(SAMPLES, 1):
        if rc == 0:
            continue
        nfail += 1
        lines = per.get(i, [])
        if len(lines) != 1:
            bad.append("%s %r: %d unionfs lines %s" % (errname(rc), inp[:120], len(lines), lines[:3]))
    print("sample: %d cases, %d failed, %d without exactly one unionfs: line" %
          (len(SAMPLES), nfail, len(bad)))
    for b in bad[:8]:
        print("  " + b)
    return 1 if bad or not nfail else 0


def fuzz_mount(seed, n, d, sample=False):
    os.chdir(d)                 # relative branch paths resolve inside the test dir
    g = Gen(seed, d)
    run = Run("mount", seed, MOUNT_OK)
    if sample:
        mark()
    for _ in range(n):
        o = g.options()
        rc = do_mount(d, o, MS_RDONLY if g.r.randrange(4) == 0 else 0)
        if sample:
            SAMPLES.append((rc, o))
            mark()
        run.result(rc, o)
    return sample_check() if sample else run.dump()


def fuzz_remount(seed, n, d, union, sample=False):
    os.chdir(d)
    g = Gen(seed, d)
    run = Run("remount", seed, REMOUNT_OK)
    if sample:
        mark()
    for _ in range(n):
        o = g.remount_options()
        rc = do_mount(d, o, MS_REMOUNT, union)
        if sample:
            SAMPLES.append((rc, o))
            mark()
        run.result(rc, o)
    return sample_check() if sample else run.dump()


# ioctls the VFS handles itself that change state outside the union file (freeze, flags,
# cloning, space reservation): not fuzzed with random arguments
DENY = {0xc0045877, 0xc0045878,            # FIFREEZE FITHAW
        0x40086602, 0x40046602,            # FS_IOC_SETFLAGS (64/32)
        0x401c5820,                        # FS_IOC_FSSETXATTR
        0x40049409, 0x4020940d, 0xc0189436,  # FICLONE FICLONERANGE FIDEDUPERANGE
        0x40305828, 0x40305829, 0x4030582a, 0x4030582b,  # FS_IOC_RESVSP/UNRESVSP(64)
        0x40305830, 0x40305831,
        0x5421, 0x5452, 0x5450, 0x5451,    # FIONBIO FIOASYNC FIONCLEX FIOCLEX
        0x80086601, 0x80046601,            # harmless GETFLAGS stays allowed below
        }
DENY -= {0x80086601, 0x80046601}


def fuzz_ioctl(seed, n, path):
    r = random.Random(seed)
    run = Run("ioctl", seed, IOCTL_OK)
    buf = ctypes.create_string_buffer(4096)
    fds = [os.open(path, os.O_RDONLY), os.open(path, os.O_RDWR),
           os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)]
    for _ in range(n):
        k = r.randrange(5)
        if k < 2:                 # the unionfs type 0x15, every nr, dir, size
            cmd = (r.randrange(4) << 30) | (r.randrange(1 << 14) << 16) | (0x15 << 8) | r.randrange(256)
            if r.randrange(3) == 0:
                cmd = r.choice([0x80041509, 0x8004150b, 0x8004150f, 0x4004150b, 0xc004150f,
                                0x8010150f, 0x8018150f, 0x1509, 0x150b, 0x150f])
        elif k == 2:              # the two real ones
            cmd = r.choice([0x8004150b, 0x8004150f])
        else:
            cmd = r.randrange(1 << 32)
        if cmd in DENY:
            continue
        a = r.randrange(6)
        if a == 0:
            arg = None
        elif a == 1:
            arg = ctypes.c_void_p(r.choice([1, 8, 4095, 0xffffffffffff, 0x7ffffffff000,
                                            0xffff888000000000, 0xffffffff81000000, 0xdead0000]))
        else:
            for i in range(0, 64, 8):
                struct.pack_into("<Q", buf, i, r.randrange(1 << 64))
            arg = ctypes.cast(buf, ctypes.c_void_p)
        fd = r.choice(fds)
        rc = libc.ioctl(fd, cmd, arg)
        e = ctypes.get_errno() if rc < 0 else 0
        run.result(e, "cmd 0x%08x fd %d arg %s" % (cmd, fds.index(fd), a))
    for fd in fds:
        os.close(fd)
    return run.dump()


def fuzz_debugfs(seed, n, sample=False):
    g = Gen(seed, "/nonexistent")
    run = Run("debugfs", seed, DEBUGFS_OK)
    if sample:
        mark()
    inj, crash = os.path.join(DBG, "inject"), os.path.join(DBG, "crash_at")
    armed = 0
    for i in range(n):
        if g.r.randrange(8) == 0:
            s = g.crash_at()
            if not safe_crash(s):
                continue
            rc = write_file(crash, s)
            with open(crash) as f:
                if f.read().strip() != "none":
                    print("crash_at armed by %r" % s, file=sys.stderr)
                    write_file(crash, b"none")
                    run.bad.append("crash_at armed by %r" % s)
        else:
            s = g.inject()
            rc = write_file(inj, s)
            if rc == 0 and not s.strip().startswith(b"clear"):
                armed += 1
                write_file(inj, b"clear all")
        if sample:
            SAMPLES.append((rc, s))
            mark()
        run.result(rc, s)
    write_file(inj, b"clear all")
    return sample_check() if sample else run.dump()


def main(a):
    if len(a) < 4:
        print(__doc__)
        return 2
    kind = a[1]
    if kind == "sample":
        sub, seed, n = a[2], int(a[3]), int(a[4])
        if sub == "mount":
            return fuzz_mount(seed, n, a[5], True)
        if sub == "remount":
            return fuzz_remount(seed, n, a[5], a[6], True)
        if sub == "debugfs":
            return fuzz_debugfs(seed, n, True)
        print(__doc__)
        return 2
    seed, n = int(a[2]), int(a[3])
    if kind == "mount":
        return fuzz_mount(seed, n, a[4])
    if kind == "remount":
        return fuzz_remount(seed, n, a[4], a[5])
    if kind == "ioctl":
        return fuzz_ioctl(seed, n, a[4])
    if kind == "debugfs":
        return fuzz_debugfs(seed, n)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
