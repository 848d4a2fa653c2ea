#!/usr/bin/env python3
"""bench/report.py BUILD_BENCH_DIR: raw.csv -> results.csv, results.md, *.png (gnuplot).

raw.csv rows: workload,fs,peer,param,run,seconds,mbps,note (bench/guest.sh, bench/run).
For every (workload, fs, param, peer): median/min/max over the runs. Ratios are time ratios
(> 1.00 = slower): seconds / seconds of the reference; for throughput rows (mbps set) the
inverse bandwidth ratio. Reference "native" is the bare branch fs doing the same thing (for the
branch-scaling workload w2: native at N=1 for every N). Peers that cannot express a cell have
one row whose note starts with "n/a:" (or "not run:"); it is shown instead of numbers.
"""
import csv
import os
import statistics
import subprocess
import sys
from collections import OrderedDict, defaultdict

D = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
PEERS = ["native", "unionfs", "overlayfs", "unionfs-fuse", "fuse-overlayfs", "mergerfs"]
TITLES = OrderedDict([
    ("w1", "W1 lookup/stat of every file of a 20k-file source tree, 2 branches (tree in the lower)"),
    ("w2", "W2 lookup scaling: 1000 files (W2_FILES) in the lowest of N branches (all N have the dirs); hits and misses"),
    ("w3", "W3 readdir (getdents64) of one merged directory, half of the names duplicated in both branches"),
    ("w4", "W4 fio read of a big lower file through the union (page cache warm), seq 1M / rand 4k"),
    ("w5", "W5 copy-up: first write to a big lower file (native: cp of it); chmod/chown -R over lower files"),
    ("w6", "W6 small-file churn (create/read/append/unlink, postmark-like)"),
    ("w7", "W7 untar of kernel/+mm/ of linux-source-6.1 (772 entries, 16 MiB) into the union, find, rm -rf"),
    ("tp", "TP tracepoint cost (bench/trace-cost.sh: 20k stats, 2 tmpfs branches)"),
])


def peer_order(p):
    return (PEERS.index(p) if p in PEERS else len(PEERS), p)


def nkey(param):
    """natural order: 'hit-cold/8' < 'hit-cold/16'"""
    parts = param.replace("/", " / ").split()
    return [int(x) if x.isdigit() else x for x in parts]


rows = list(csv.DictReader(open(os.path.join(D, "raw.csv"))))
cells = defaultdict(lambda: {"vals": [], "mbps": [], "notes": set()})
for r in rows:
    c = cells[(r["workload"], r["fs"], r["param"], r["peer"])]
    if r["seconds"]:
        c["vals"].append(float(r["seconds"]))
        if r["mbps"]:
            c["mbps"].append(float(r["mbps"]))
    if r["note"]:
        c["notes"].add(r["note"])


def stat(c):
    """(median, min, max, unit, n) in the cell's natural unit"""
    if c["mbps"]:
        v = c["mbps"]
        return statistics.median(v), min(v), max(v), "MB/s", len(v)
    if c["vals"]:
        v = c["vals"]
        return statistics.median(v), min(v), max(v), "s", len(v)
    return None


def as_time(s):
    """a time-like number (bigger = slower) for ratios"""
    med, _, _, unit, _ = s
    return 1.0 / med if unit == "MB/s" else med


def reference(w, fs, param, peer):
    if peer == "native" and w == "w2":
        kind = param.split("/")[0]
        return cells.get((w, fs, kind + "/1", "native"))
    return cells.get((w, fs, param, peer))


def ratio(w, fs, param, c, refpeer):
    s = stat(c)
    ref = reference(w, fs, param, refpeer)
    rs = stat(ref) if ref else None
    if not s or not rs:
        return None
    return as_time(s) / as_time(rs)


def na_text(c):
    return "; ".join(sorted(n for n in c["notes"] if n.startswith(("n/a", "not run")))) or "n/a"


keys = sorted({(w, fs, p) for (w, fs, p, _) in cells},
              key=lambda k: (list(TITLES).index(k[0]) if k[0] in TITLES else 99, k[1], nkey(k[2])))
peers_seen = sorted({k[3] for k in cells}, key=peer_order)

# ---- results.csv -----------------------------------------------------------------------------
with open(os.path.join(D, "results.csv"), "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["workload", "fs", "param", "peer", "runs", "median", "min", "max", "unit",
                  "ratio_vs_native", "ratio_vs_overlayfs", "note"])
    for (w, fs, p) in keys:
        for peer in peers_seen:
            c = cells.get((w, fs, p, peer))
            if not c:
                continue
            s = stat(c)
            rn, ro = ratio(w, fs, p, c, "native"), ratio(w, fs, p, c, "overlayfs")
            if s:
                out.writerow([w, fs, p, peer, s[4], "%.4f" % s[0], "%.4f" % s[1], "%.4f" % s[2], s[3],
                              "%.3f" % rn if rn else "", "%.3f" % ro if ro else "",
                              "; ".join(sorted(c["notes"]))])
            else:
                out.writerow([w, fs, p, peer, 0, "", "", "", "", "", "", na_text(c)])


# ---- results.md --------------------------------------------------------------------------------
def fmt(x):
    return "%.3g" % x if x < 100 else "%.0f" % x


md = ["# unionfs benchmark results", ""]
meta = os.path.join(D, "meta.txt")
if os.path.exists(meta):
    md += ["```"] + open(meta).read().strip().splitlines() + ["```", ""]
md += ["Cells: median of the runs (min-max), then the time ratio vs native (the bare branch fs) "
       "and vs overlayfs (> 1.00 = slower). W4 cells are MB/s (ratios use 1/bandwidth). "
       "W2 ratios vs native use native at N=1. TCG guest: compare ratios, not absolute times.", ""]
for w, title in TITLES.items():
    wk = [k for k in keys if k[0] == w]
    if not wk:
        continue
    wpeers = [p for p in peers_seen if any((w, fs, pa, p) in cells for (_, fs, pa) in wk)]
    md += ["## " + title, "", "| fs | param | " + " | ".join(wpeers) + " |",
           "|---|---|" + "---|" * len(wpeers)]
    for (_, fs, p) in wk:
        line = "| %s | %s |" % (fs, p)
        for peer in wpeers:
            c = cells.get((w, fs, p, peer))
            if not c:
                line += " |"
                continue
            s = stat(c)
            if not s:
                line += " %s |" % na_text(c)
                continue
            t = "%s (%s-%s)%s" % (fmt(s[0]), fmt(s[1]), fmt(s[2]), " MB/s" if s[3] == "MB/s" else " s")
            rn, ro = ratio(w, fs, p, c, "native"), ratio(w, fs, p, c, "overlayfs")
            extra = []
            if rn and peer != "native":
                extra.append("%.2fx nat" % rn)
            if ro and peer != "overlayfs":
                extra.append("%.2fx ovl" % ro)
            line += " %s%s |" % (t, "<br>" + ", ".join(extra) if extra else "")
        md.append(line)
    md.append("")
    md += ["@PLOT %s.png" % w]
    if w == "w2":
        md += ["@PLOT w2-scaling-tmpfs.png", "@PLOT w2-scaling-ext4.png"]
    md.append("")

# ---- plots (gnuplot) -------------------------------------------------------------------------
plots = []


def gp(script, name):
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, cwd=D,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        plots.append(name)
    except (OSError, subprocess.CalledProcessError) as e:
        print("report: gnuplot %s failed: %s" % (name, getattr(e, "stderr", e)), file=sys.stderr)


for w in TITLES:
    wk = [k for k in keys if k[0] == w and not (w == "w2" and not k[2].endswith(("/2", "/8", "/32", "/128")))]
    if not wk:
        continue
    wpeers = [p for p in peers_seen if p != "native" and any((w, fs, pa, p) in cells for (_, fs, pa) in wk)]
    if w == "tp":
        wpeers = [p for p in peers_seen if any((w, fs, pa, p) in cells for (_, fs, pa) in wk)]
    else:	# a peer without a single number (n/a everywhere) would break the histogram
        wpeers = [p for p in wpeers if any(cells.get((w, fs, pa, p)) and stat(cells[(w, fs, pa, p)])
                                           for (_, fs, pa) in wk)]
    dat = os.path.join(D, "%s.dat" % w)
    with open(dat, "w") as f:
        f.write("label " + " ".join(wpeers) + "\n")
        for (_, fs, p) in wk:
            vals = []
            for peer in wpeers:
                c = cells.get((w, fs, p, peer))
                r = ratio(w, fs, p, c, "native") if c and w != "tp" else None
                if w == "tp" and c and stat(c):
                    ref = cells.get((w, fs, p, "unionfs-compiled-out"))
                    r = as_time(stat(c)) / as_time(stat(ref)) if ref and stat(ref) else None
                vals.append("%.4f" % r if r else "NaN")
            f.write('"%s %s" %s\n' % (fs, p, " ".join(vals)))
    if not any(cells.get((w, fs, p, peer)) and stat(cells[(w, fs, p, peer)])
               for (_, fs, p) in wk for peer in wpeers):
        continue
    ylab = "time / compiled-out time" if w == "tp" else "time / native time (log)"
    n = len(wk)
    gp("""set terminal pngcairo size %d,520 font ",9"
set output "%s.png"
set title "%s" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top noenhanced
set ylabel "%s"
%s
set grid ytics
set xtics rotate by -35 noenhanced
set yrange [%s:*]
plot for [i=2:%d] "%s.dat" using i:xtic(1) title columnheader(i)
""" % (max(800, 90 * n + 300), w, TITLES[w][:110], ylab, "" if w == "tp" else "set logscale y",
       "0" if w == "tp" else "0.1", len(wpeers) + 1, w), w + ".png")

# lookup-scaling curve
for fs in sorted({k[1] for k in keys if k[0] == "w2"}):
    series = []
    for peer in peers_seen:
        if peer == "native":
            continue
        for kind in ("hit-cold", "miss-cold", "hit-warm"):
            pts = []
            for (w, f, p) in keys:
                if w == "w2" and f == fs and p.startswith(kind + "/"):
                    c = cells.get((w, f, p, peer))
                    s = stat(c) if c else None
                    if s:
                        pts.append((int(p.split("/")[1]), s[0]))
            if pts:
                name = "w2-%s-%s-%s.dat" % (fs, peer, kind)
                with open(os.path.join(D, name), "w") as f:
                    f.write("".join("%d %.5f\n" % pt for pt in sorted(pts)))
                series.append((name, "%s %s" % (peer, kind), kind, peer))
    if not series:
        continue
    nat = cells.get(("w2", fs, "hit-cold/1", "native"))
    natline = ""
    if nat and stat(nat):
        natline = ", %.5f with lines dt 3 lc rgb 'black' title 'native (N=1) hit-cold'" % stat(nat)[0]
    dts = {"hit-cold": 1, "miss-cold": 2, "hit-warm": 4}
    pts_ = {"hit-cold": 7, "miss-cold": 5, "hit-warm": 9}
    col = {"unionfs": "#d62728", "overlayfs": "#1f77b4", "unionfs-fuse": "#2ca02c",
           "fuse-overlayfs": "#ff7f0e", "mergerfs": "#9467bd"}
    gp("""set terminal pngcairo size 1000,600 font ",9"
set output "w2-scaling-%s.png"
set title "W2 lookup scaling on %s: 1000 lstat() per pass (W2_FILES), files in the lowest of N branches" noenhanced
set logscale x 2
set logscale y
set xlabel "branches N"
set ylabel "seconds per pass (median, TCG)"
set key outside right top noenhanced
set grid
plot %s%s
""" % (fs, fs, ", ".join("'%s' using 1:2 with linespoints lw 1.5 dt %d pt %d lc rgb '%s' title '%s'"
                         % (n, dts[k], pts_[k], col.get(pe, "gray"), t)
                         for n, t, k, pe in series), natline), "w2-scaling-%s.png" % fs)

md = [("![%s](%s)" % (m[6:-4], m[6:]) if m[6:] in plots else None) if m.startswith("@PLOT ") else m
      for m in md]
md = [m for m in md if m is not None]
md += ["Plots: " + ", ".join(plots) if plots else "Plots: none (gnuplot missing?)", ""]
open(os.path.join(D, "results.md"), "w").write("\n".join(md) + "\n")
print("report: %s/results.md, results.csv, %d plots" % (D, len(plots)))

# ---- summary.md: one line per cell, unionfs against the others (for docs/performance.md) -------
sm = ["| workload | fs | param | native | unionfs | overlayfs | unionfs x native | unionfs x overlayfs "
      "| FUSE peers: time / unionfs time |", "|---|---|---|---|---|---|---|---|---|"]


def med(w, fs, p, peer):
    c = cells.get((w, fs, p, peer))
    s = stat(c) if c else None
    if not s:
        return None, (na_text(c) if c else "")
    return s, "%s%s" % (fmt(s[0]), " MB/s" if s[3] == "MB/s" else "")


for (w, fs, p) in keys:
    if w == "tp":
        continue
    su, tu = med(w, fs, p, "unionfs")
    sn, tn = med(w, fs, p, "native")
    so, to = med(w, fs, p, "overlayfs")
    if w == "w2" and not sn:
        ref = reference(w, fs, p, "native")
        sn = stat(ref) if ref else None
        tn = "(N=1) %s" % fmt(sn[0]) if sn else ""
    rn = "%.2f" % (as_time(su) / as_time(sn)) if su and sn else ""
    ro = "%.2f" % (as_time(su) / as_time(so)) if su and so else ""
    fuse = []
    for peer in ("unionfs-fuse", "fuse-overlayfs", "mergerfs"):
        sf, tf = med(w, fs, p, peer)
        if sf and su:
            fuse.append("%s %.1f" % (peer, as_time(sf) / as_time(su)))
    sm.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (w, fs, p, tn, tu, to, rn, ro, ", ".join(fuse)))
tpk = [k for k in keys if k[0] == "tp"]
if tpk:
    sm += ["", "| tracepoints | param | median s | x compiled-out |", "|---|---|---|---|"]
    for (w, fs, p) in tpk:
        ref = cells.get((w, fs, p, "unionfs-compiled-out"))
        for v in ("compiled-out", "disabled", "enabled"):
            c = cells.get((w, fs, p, "unionfs-" + v))
            if c and stat(c):
                r = stat(c)[0] / stat(ref)[0] if ref and stat(ref) else 0
                sm.append("| %s | %s | %s (%s-%s) | %.3f |" % (v, p, fmt(stat(c)[0]), fmt(stat(c)[1]),
                                                             fmt(stat(c)[2]), r))
open(os.path.join(D, "summary.md"), "w").write("\n".join(sm) + "\n")
