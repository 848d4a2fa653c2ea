#!/bin/bash
# bench/link-cost-guest.sh ROUNDS FILES ON.ko OFF.ko: the guest half of bench/link-cost.sh
set -uo pipefail
ROUNDS=$1 N=$2
declare -A KO=([on]=$3 [off]=$4)
NAMES=(on off)
for ((r = 0; r < ROUNDS; r++)); do
	for k in 0 1; do
		v=${NAMES[$(((r + k) % 2))]}
		insmod "${KO[$v]}" || exit 1
		W=$(mktemp -d)
		mkdir -p "$W/b0" "$W/b1" "$W/m"
		mount -t tmpfs t "$W/b0"; mount -t tmpfs t "$W/b1"
		mkdir "$W/b1/one" "$W/b1/two" "$W/b1/app"
		python3 - "$W/b1" "$N" <<'PY'
import os, sys
b, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    for d in ("one", "two", "app"):
        with open("%s/%s/f%d" % (b, d, i), "w") as f:
            f.write("x" * 4096)
    os.link("%s/two/f%d" % (b, i), "%s/two/g%d" % (b, i))
PY
		mount -i -t unionfs -o "dirs=$W/b0=rw:$W/b1=ro" none "$W/m"
		ls -l "$W/m/one" "$W/m/two" "$W/m/app" > /dev/null	# names cached: time copy-ups only
		out=$(python3 - "$W/m" "$N" <<'PY'
import os, sys, time
m, n = sys.argv[1], int(sys.argv[2])
r = []
for d in ("one", "two"):
    t = time.perf_counter()
    for i in range(n):
        os.chmod("%s/%s/f%d" % (m, d, i), 0o640)
    r.append(time.perf_counter() - t)
t = time.perf_counter()
for i in range(n):
    os.close(os.open("%s/app/f%d" % (m, i), os.O_WRONLY | os.O_APPEND))
r.append(time.perf_counter() - t)
print("%.3f %.3f %.3f" % tuple(r))
PY
)
		echo "R $v $out"
		echo "$v $out" >> /tmp/link-cost.rows
		umount "$W/m" "$W/b0" "$W/b1"
		rmmod unionfs
	done
done
echo "# link-cost: $ROUNDS rounds x $N files per directory, medians in s (TCG wall clock)"
python3 - /tmp/link-cost.rows <<'PY'
import collections, statistics, sys
d = collections.defaultdict(lambda: [[], [], []])
for line in open(sys.argv[1]):
    w = line.split()
    for i in range(3):
        d[w[0]][i].append(float(w[1 + i]))
print("module  nlink1-chmod  nlink2-chmod  nlink1-open")
for k in ("on", "off"):
    print("%-7s %-13.3f %-13.3f %.3f" % ((k,) + tuple(statistics.median(x) for x in d[k])))
PY
