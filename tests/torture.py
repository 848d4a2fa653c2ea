#!/usr/bin/env python3
"""tests/torture.py: direct-modification torture for tests/t/69-torture.sh.

  torture.py union  MNT SECS SEED MODEL   work through the union (comm union-writer):
        create/append/rewrite/rename/unlink u_* files with known content, readdir,
        stat and read the x_* names the direct writer churns; the expected content of
        every u_* file goes to MODEL (json); unexpected errors are counted there.
  torture.py direct SECS SEED B0 B1 ...   modify every branch directly (comm
        direct-writer): x_* files created/rewritten/truncated/chmod-ed/renamed/
        unlinked, xd_* dirs made and removed, whiteouts .wh.x_* added and removed
        by hand in B0. Never touches u_* names.
  torture.py verify MNT MODEL B0 B1 ...   after both stopped: every u_* file reads
        back exactly (through the union and in B0), each directory of the union
        lists exactly the merge of the branches (priority, whiteouts), every
        listed name can be stat-ed. Prints one "ok"/"not ok" line per check.

The seed is printed; the same seed replays the same operation sequence.
"""
import errno
import hashlib
import json
import os
import random
import sys
import time

DIRS = ["d0", "d1", "d2", "d3"]
EXPECTED_RACE = {errno.ENOENT, errno.ESTALE, errno.ENOTEMPTY, errno.EEXIST,
                 errno.ENOTDIR, errno.EISDIR}


def setcomm(name):
    with open("/proc/self/comm", "w") as f:
        f.write(name)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def union(mnt, secs, seed, model_path):
    setcomm("union-writer")
    rnd = random.Random(seed)
    files = {}          # relative path -> bytes
    errors = []
    ops = 0
    end = time.time() + secs
    n = 0

    def bad(op, path, e):
        errors.append("%s %s: %s" % (op, path, os.strerror(e.errno)))

    while time.time() < end:
        ops += 1
        r = rnd.random()
        d = rnd.choice(DIRS)
        if r < 0.25 or not files:                       # create
            n += 1
            rel = "%s/u_%d" % (d, n)
            data = rnd.randbytes(rnd.randint(0, 65536))
            try:
                with open(os.path.join(mnt, rel), "wb") as f:
                    f.write(data)
                files[rel] = data
            except OSError as e:
                bad("create", rel, e)
        elif r < 0.40:                                  # append
            rel = rnd.choice(sorted(files))
            data = rnd.randbytes(rnd.randint(1, 8192))
            try:
                with open(os.path.join(mnt, rel), "ab") as f:
                    f.write(data)
                files[rel] += data
            except OSError as e:
                bad("append", rel, e)
        elif r < 0.50:                                  # overwrite in the middle
            rel = rnd.choice(sorted(files))
            cur = files[rel]
            off = rnd.randint(0, len(cur))
            data = rnd.randbytes(rnd.randint(1, 4096))
            try:
                fd = os.open(os.path.join(mnt, rel), os.O_WRONLY)
                try:
                    os.pwrite(fd, data, off)
                finally:
                    os.close(fd)
                new = bytearray(cur)
                if off + len(data) > len(new):
                    new.extend(b"\0" * (off + len(data) - len(new)))
                new[off:off + len(data)] = data
                files[rel] = bytes(new)
            except OSError as e:
                bad("pwrite", rel, e)
        elif r < 0.60:                                  # rename (maybe across dirs)
            rel = rnd.choice(sorted(files))
            n += 1
            dst = "%s/u_%d" % (rnd.choice(DIRS), n)
            try:
                os.rename(os.path.join(mnt, rel), os.path.join(mnt, dst))
                files[dst] = files.pop(rel)
            except OSError as e:
                bad("rename", rel, e)
        elif r < 0.67:                                  # unlink
            rel = rnd.choice(sorted(files))
            try:
                os.unlink(os.path.join(mnt, rel))
                del files[rel]
            except OSError as e:
                bad("unlink", rel, e)
        elif r < 0.80:                                  # readdir + stat what is listed
            try:
                names = os.listdir(os.path.join(mnt, d))
            except OSError as e:
                bad("readdir", d, e)
                continue
            if len(names) != len(set(names)):
                errors.append("readdir %s: duplicate names" % d)
            for name in names:
                if name.startswith(".wh."):
                    errors.append("readdir %s: whiteout name %s shown" % (d, name))
                p = os.path.join(mnt, d, name)
                try:
                    os.lstat(p)
                except OSError as e:
                    # x_* may vanish between readdir and stat: that is a race, not a bug
                    if not (name.startswith("x") and e.errno in EXPECTED_RACE):
                        bad("stat-listed", "%s/%s" % (d, name), e)
        elif r < 0.90:                                  # read back one of ours
            rel = rnd.choice(sorted(files))
            try:
                with open(os.path.join(mnt, rel), "rb") as f:
                    got = f.read()
                if got != files[rel]:
                    errors.append("read %s: %d bytes, expected %d (content differs)" %
                                  (rel, len(got), len(files[rel])))
            except OSError as e:
                bad("read", rel, e)
        else:                                           # poke the direct writer's names
            p = os.path.join(mnt, d, "x_%d" % rnd.randint(0, 40))
            try:
                with open(p, "rb") as f:
                    f.read()
            except OSError as e:
                if e.errno not in EXPECTED_RACE:
                    bad("read-x", p, e)
    with open(model_path, "w") as f:
        json.dump({"seed": seed, "ops": ops,
                   "files": {k: sha(v) for k, v in files.items()},
                   "sizes": {k: len(v) for k, v in files.items()},
                   "bytes": sum(len(v) for v in files.values()),
                   "errors": errors}, f)
    print("union-writer: seed %d, %d ops, %d files, %d unexpected errors" %
          (seed, ops, len(files), len(errors)))


def direct(secs, seed, branches):
    setcomm("direct-writer")
    rnd = random.Random(seed)
    ops = 0
    end = time.time() + secs
    while time.time() < end:
        ops += 1
        bi = rnd.randrange(len(branches))
        b = branches[bi]
        d = os.path.join(b, rnd.choice(DIRS))
        x = "x_%d" % rnd.randint(0, 40)
        p = os.path.join(d, x)
        r = rnd.random()
        try:
            if r < 0.25:
                with open(p, "wb") as f:
                    f.write(rnd.randbytes(rnd.randint(0, 16384)))
            elif r < 0.35:
                os.truncate(p, rnd.randint(0, 4096))
            elif r < 0.42:
                os.chmod(p, rnd.choice([0o600, 0o644, 0o640]))
            elif r < 0.55:
                os.rename(p, os.path.join(d, "x_%d" % rnd.randint(0, 40)))
            elif r < 0.70:
                os.unlink(p)
            elif r < 0.78:
                os.mkdir(os.path.join(d, "xd_%d" % rnd.randint(0, 5)))
            elif r < 0.85:
                os.rmdir(os.path.join(d, "xd_%d" % rnd.randint(0, 5)))
            elif r < 0.93 and bi == 0:
                open(os.path.join(d, ".wh." + x), "wb").close()
            elif bi == 0:
                os.unlink(os.path.join(d, ".wh." + x))
        except OSError:
            pass
    print("direct-writer: seed %d, %d ops on %d branches" % (seed, ops, len(branches)))


def merged(branches, rel):
    """The names the union must show in directory rel: branch 0 first."""
    seen, hidden = set(), set()
    for b in branches:
        p = os.path.join(b, rel)
        if not os.path.isdir(p):
            continue
        names = os.listdir(p)
        here = set()
        for n in names:
            if n.startswith(".wh."):
                continue
            if n not in hidden:
                here.add(n)
        seen |= here
        hidden |= {n[4:] for n in names if n.startswith(".wh.")}
        if ".wh.__dir_opaque" in names:
            break
    return seen


def verify(mnt, model_path, branches):
    with open(model_path) as f:
        model = json.load(f)
    fails = 0

    def result(good, desc, diag=""):
        nonlocal fails
        print(("ok" if good else "not ok") + "\t" + desc)
        if not good:
            fails += 1
            for line in diag.splitlines()[:15]:
                print("#\t" + line)

    result(not model["errors"], "union workload: no unexpected errors (seed %d, %d ops)" %
           (model["seed"], model["ops"]), "\n".join(model["errors"]))
    bad = []
    for rel, h in sorted(model["files"].items()):
        try:
            with open(os.path.join(mnt, rel), "rb") as f:
                got = f.read()
            if sha(got) != h:
                bad.append("%s: union content differs (%d bytes, want %d)" %
                           (rel, len(got), model["sizes"][rel]))
            with open(os.path.join(branches[0], rel), "rb") as f:
                if sha(f.read()) != h:
                    bad.append("%s: branch 0 content differs" % rel)
        except OSError as e:
            bad.append("%s: %s" % (rel, e.strerror))
    result(not bad, "every byte written through the union is there: %d files, %d bytes" %
           (len(model["files"]), model["bytes"]), "\n".join(bad))
    for d in DIRS:
        want = merged(branches, d)
        got = set(os.listdir(os.path.join(mnt, d)))
        diff = sorted(want ^ got)
        result(not diff, "%s: union lists the merge of the branches (%d names)" % (d, len(want)),
               "differs: " + " ".join(diff[:40]))
        unstat = []
        for n in sorted(got):
            try:
                os.lstat(os.path.join(mnt, d, n))
            except OSError as e:
                unstat.append("%s: %s" % (n, e.strerror))
        result(not unstat, "%s: every listed name can be stat-ed" % d, "\n".join(unstat))
        ours = {n for n in got if n.startswith("u_")}
        want_ours = {os.path.basename(k) for k in model["files"] if k.startswith(d + "/")}
        result(ours == want_ours, "%s: exactly the union writer's files are listed (%d)" %
               (d, len(want_ours)), " ".join(sorted(ours ^ want_ours)))
    return 1 if fails else 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "union":
        union(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif cmd == "direct":
        direct(float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    elif cmd == "verify":
        sys.exit(verify(sys.argv[2], sys.argv[3], sys.argv[4:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
