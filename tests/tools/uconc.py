#!/usr/bin/env python3
"""tests/tools/uconc.py: concurrency workers and the union-view model for tests/t/92.

  uconc.py populate LOWER NW K        lower files/dirs the workers will own (in the ro branch)
  uconc.py owned UNION W SEED OPS NW K   worker W: random ops on the names it owns, in
                                      directories shared by all workers and by the branches;
                                      checks its own names in every readdir; prints its
                                      expected final state (JSON) on stdout
  uconc.py expect UNION STATE...      union view == merged worker states (for the owned names)
  uconc.py overlap UNION W SEED SECS  worker on shared names: anything may fail with a clean
                                      errno; prints op counts (JSON)
  uconc.py predict UNION BRANCH...    the union's view as predicted from the branch contents
                                      (priority, whiteouts, opaque dirs) == what the union
                                      shows (walk with lstat), plus invariants: no duplicates
                                      in readdir, no .wh. name, every name stat-able, every
                                      regular file readable. Exit 1 with the differences.
"""
import errno
import json
import os
import random
import stat
import sys
import time

DIRS = ["d0", "d1", "d2", "d3"]
CLEAN = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EXDEV, errno.EISDIR,
         errno.ENOTDIR, errno.EBUSY, errno.EINVAL, errno.EMLINK, errno.ESTALE}


def populate(lower, nw, k):
    for d in DIRS:
        os.makedirs(os.path.join(lower, d), exist_ok=True)
    for w in range(nw):
        for i in range(k):
            d = DIRS[i % len(DIRS)]
            with open(os.path.join(lower, d, "L%d_%d" % (w, i)), "w") as f:
                f.write("lower %d %d\n" % (w, i))
        os.makedirs(os.path.join(lower, DIRS[w % len(DIRS)], "LD%d" % w, "sub"), exist_ok=True)
        with open(os.path.join(lower, DIRS[w % len(DIRS)], "LD%d" % w, "sub", "f"), "w") as f:
            f.write("deep %d\n" % w)


def mine(name, w):
    """names owned by worker w (files, dirs, lower names)"""
    for p in ("f%d_" % w, "L%d_" % w, "D%d_" % w):
        if name.startswith(p):
            return True
    return name == "LD%d" % w


def owned(union, w, seed, nops, nw, k):
    rnd = random.Random(seed)
    # model: relative path -> content (str) for files, None for (empty) dirs;
    # lower files and LD<w> are the starting state
    model = {}
    for i in range(k):
        d = DIRS[i % len(DIRS)]
        model["%s/L%d_%d" % (d, w, i)] = "lower %d %d\n" % (w, i)
    ld = "%s/LD%d" % (DIRS[w % len(DIRS)], w)
    model[ld] = None
    model[ld + "/sub"] = None
    model[ld + "/sub/f"] = "deep %d\n" % w
    counts = {}
    seq = 0
    grp = {}            # path -> hard-link group id (names sharing an inode)

    def group(rel):
        g = grp.get(rel)
        return [rel] if g is None else [q for q in grp if grp[q] == g]

    def P(rel):
        return os.path.join(union, rel)

    def files():
        return sorted(p for p, v in model.items() if v is not None and p.count("/") == 1)

    def dirs():
        return sorted(p for p, v in model.items() if v is None and p.count("/") == 1 and
                      not any(q.startswith(p + "/") for q in model))

    for _ in range(nops):
        op = rnd.choice(["create", "create", "append", "unlink", "rename", "link", "mkdir",
                         "rmdir", "readdir", "readdir", "read", "truncate"])
        seq += 1
        d = rnd.choice(DIRS)
        try:
            if op == "create":
                rel = "%s/f%d_%d" % (d, w, rnd.randrange(12))
                if rel in model:
                    op = "exists"
                    continue
                data = "w%d s%d\n" % (w, seq)
                with open(P(rel), "x") as f:
                    f.write(data)
                model[rel] = data
            elif op == "append":        # copy-up of a lower file, or append to an upper one
                fl = files()
                if not fl:
                    continue
                rel = rnd.choice(fl)
                with open(P(rel), "a") as f:
                    f.write("+%d\n" % seq)
                for q in group(rel):
                    model[q] += "+%d\n" % seq
            elif op == "truncate":
                fl = files()
                if not fl:
                    continue
                rel = rnd.choice(fl)
                os.truncate(P(rel), 3)
                for q in group(rel):
                    model[q] = model[q][:3]
            elif op == "unlink":
                fl = files()
                if not fl:
                    continue
                rel = rnd.choice(fl)
                os.unlink(P(rel))
                del model[rel]
                grp.pop(rel, None)
            elif op == "rename":
                fl = files()
                if not fl:
                    continue
                src = rnd.choice(fl)
                dst = "%s/f%d_%d" % (d, w, rnd.randrange(12))
                if dst == src or (src in grp and grp.get(dst) == grp[src]):
                    continue
                os.rename(P(src), P(dst))
                model[dst] = model.pop(src)
                grp.pop(dst, None)
                if src in grp:
                    grp[dst] = grp.pop(src)
            elif op == "link":
                fl = files()
                if not fl:
                    continue
                src = rnd.choice(fl)
                dst = "%s/f%d_%d" % (d, w, rnd.randrange(12))
                if dst in model:
                    continue
                os.link(P(src), P(dst))
                model[dst] = model[src]
                grp[dst] = grp.setdefault(src, seq)
            elif op == "mkdir":
                rel = "%s/D%d_%d" % (d, w, rnd.randrange(6))
                if rel in model:
                    continue
                os.mkdir(P(rel))
                model[rel] = None
            elif op == "rmdir":
                dl = dirs()
                if not dl:
                    continue
                rel = rnd.choice(dl)
                if rel == ld:
                    continue
                os.rmdir(P(rel))
                del model[rel]
            elif op == "read":
                fl = files()
                if not fl:
                    continue
                rel = rnd.choice(fl)
                with open(P(rel)) as f:
                    got = f.read()
                if got != model[rel]:
                    raise SystemExit("worker %d: %s reads %r, model %r" % (w, rel, got, model[rel]))
            elif op == "readdir":
                names = os.listdir(P(d))
                if len(names) != len(set(names)):
                    raise SystemExit("worker %d: duplicate names in readdir of %s" % (w, d))
                got = sorted(n for n in names if mine(n, w))
                exp = sorted(p.split("/", 1)[1] for p in model
                             if p.startswith(d + "/") and p.count("/") == 1)
                if got != exp:
                    raise SystemExit("worker %d: readdir %s: own names %s, model %s" %
                                     (w, d, got, exp))
            counts[op] = counts.get(op, 0) + 1
        except OSError as e:
            raise SystemExit("worker %d op %d %s in %s: %s" % (w, seq, op, d, e))
    json.dump({"model": model, "counts": counts, "w": w, "seed": seed}, sys.stdout)
    return 0


def expect(union, states):
    want = {}
    ws = []
    for s in states:
        st = json.load(open(s))
        want.update(st["model"])
        ws.append(st["w"])
    got = {}
    for d in DIRS:
        for root, dnames, fnames in os.walk(os.path.join(union, d)):
            rel = os.path.relpath(root, union)
            for n in dnames + fnames:
                r = rel + "/" + n
                top = r.split("/")[1]
                if not any(mine(top, w) for w in ws):
                    continue
                p = os.path.join(union, r)
                if stat.S_ISDIR(os.lstat(p).st_mode):
                    got[r] = None
                else:
                    with open(p) as f:
                        got[r] = f.read()
    bad = []
    for r in sorted(set(want) | set(got)):
        if want.get(r, "<absent>") != got.get(r, "<absent>"):
            bad.append("%s: union %r, model %r" % (r, got.get(r, "<absent>"), want.get(r, "<absent>")))
    print("%d paths compared, %d differ" % (len(set(want) | set(got)), len(bad)))
    for b in bad[:20]:
        print("  " + b)
    return 1 if bad else 0


def overlap(union, w, seed, secs):
    rnd = random.Random(seed)
    names = ["o%d" % i for i in range(6)] + ["L0_%d" % i for i in range(4)]
    counts = {"ok": 0}
    errs = {}
    extra = set(getattr(errno, n) for n in os.environ.get("UCONC_EXTRA_ERRNO", "").split(",") if n)
    end = time.time() + secs
    while time.time() < end:
        d = rnd.choice(DIRS[:2])
        a = os.path.join(union, d, rnd.choice(names))
        b = os.path.join(union, rnd.choice(DIRS[:2]), rnd.choice(names))
        op = rnd.choice(["create", "unlink", "rename", "link", "mkdir", "rmdir", "append",
                         "readdir", "stat"])
        try:
            if op == "create":
                with open(a, "a") as f:
                    f.write("w%d\n" % w)
            elif op == "append":
                with open(a, "a") as f:
                    f.write("+\n")
            elif op == "unlink":
                os.unlink(a)
            elif op == "rename":
                os.rename(a, b)
            elif op == "link":
                os.link(a, b)
            elif op == "mkdir":
                os.mkdir(a)
            elif op == "rmdir":
                os.rmdir(a)
            elif op == "readdir":
                ns = os.listdir(os.path.join(union, d))
                if len(ns) != len(set(ns)):
                    raise SystemExit("overlap %d: duplicate names in readdir: %s" % (w, sorted(ns)))
                if any(n.startswith(".wh.") for n in ns):
                    raise SystemExit("overlap %d: .wh. name visible: %s" % (w, ns))
            elif op == "stat":
                os.lstat(a)
            counts["ok"] += 1
        except OSError as e:
            if e.errno not in CLEAN and e.errno not in extra and \
                    not (op == "link" and e.errno == errno.EPERM):
                raise SystemExit("overlap %d: %s %s %s: unexpected %s" % (w, op, a, b, e))
            n = errno.errorcode.get(e.errno, str(e.errno))
            errs[n] = errs.get(n, 0) + 1
    json.dump({"w": w, "seed": seed, "ok": counts["ok"], "errors": errs}, sys.stdout)
    return 0


def predict(union, branches):
    """expected view: {rel: type char} from the branches; compared with the union walk"""
    exp = {}

    def listing(rel, brs):
        # brs: branches (in priority order) where rel is a directory contributing to the view
        names = {}
        hidden = set()
        for b in brs:
            p = os.path.join(b, rel)
            ents = os.listdir(p)
            wh = set(e[4:] for e in ents if e.startswith(".wh.") and e != ".wh.__dir_opaque")
            for e in ents:
                if e.startswith(".wh.") or e in hidden or e in names:
                    continue
                names[e] = b
            hidden |= wh
            if ".wh.__dir_opaque" in ents:
                break
        for e, bw in sorted(names.items()):
            r = os.path.join(rel, e) if rel else e
            m = os.lstat(os.path.join(bw, r)).st_mode
            if stat.S_ISDIR(m):
                exp[r] = "d"
                sub = []
                i = brs.index(bw)
                for b in brs[i:]:
                    q = os.path.join(b, r)
                    if b != bw and os.path.lexists(os.path.join(b, rel, ".wh." + e)):
                        break
                    if not os.path.lexists(q):
                        continue
                    if not stat.S_ISDIR(os.lstat(q).st_mode):
                        break
                    sub.append(b)
                    if os.path.lexists(os.path.join(q, ".wh.__dir_opaque")):
                        break
                    # a whiteout of e in b hides e in the branches below b
                    if os.path.lexists(os.path.join(b, rel, ".wh." + e)):
                        break
                listing(r, sub)
            else:
                exp[r] = "l" if stat.S_ISLNK(m) else "f" if stat.S_ISREG(m) else "o"
    listing("", list(branches))
    got = {}
    bad = []
    for root, dnames, fnames in os.walk(union):
        rel = os.path.relpath(root, union)
        rel = "" if rel == "." else rel
        ns = os.listdir(root)
        if len(ns) != len(set(ns)):
            bad.append("duplicates in readdir of /%s" % rel)
        for n in ns:
            r = os.path.join(rel, n) if rel else n
            if n.startswith(".wh."):
                bad.append("whiteout name visible: /%s" % r)
            try:
                m = os.lstat(os.path.join(union, r)).st_mode
            except OSError as e:
                bad.append("listed but lstat fails: /%s: %s" % (r, e))
                continue
            got[r] = "d" if stat.S_ISDIR(m) else "l" if stat.S_ISLNK(m) else \
                "f" if stat.S_ISREG(m) else "o"
            if stat.S_ISREG(m):
                try:
                    with open(os.path.join(union, r), "rb") as f:
                        f.read()
                except OSError as e:
                    bad.append("listed regular file unreadable: /%s: %s" % (r, e))
    for r in sorted(set(exp) | set(got)):
        if exp.get(r) != got.get(r):
            bad.append("/%s: union %s, predicted from branches %s" % (r, got.get(r, "-"), exp.get(r, "-")))
    print("%d names predicted, %d seen, %d problems" % (len(exp), len(got), len(bad)))
    for b in bad[:20]:
        print("  " + b)
    return 1 if bad else 0


def main(a):
    if len(a) < 2:
        print(__doc__)
        return 2
    if a[1] == "populate":
        populate(a[2], int(a[3]), int(a[4]))
        return 0
    if a[1] == "owned":
        return owned(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]), int(a[7]))
    if a[1] == "expect":
        return expect(a[2], a[3:])
    if a[1] == "overlap":
        return overlap(a[2], int(a[3]), int(a[4]), float(a[5]))
    if a[1] == "predict":
        return predict(a[2], a[3:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
