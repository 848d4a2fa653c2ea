#!/bin/bash
# bench/ab-lookup.sh: A/B of warm lookups at N branches between unionfs modules, in one guest boot.
# What it answers: "is this module's warm stat slower than that one's, and where does it go?"
# (docs/performance.md, the 2026-12-07 rerun). A benchmark: nothing is asserted.
# Usage (host; the modules built by make, copied anywhere under the project):
#   qemu-debug/boot --no-module --mem 2048 -- env N=128 PERF=1 bench/ab-lookup.sh OLD.ko NEW.ko
# Builds N directories on one tmpfs, each with the 19 directories of build/bench/tree2.list (make
# bench makes it), 1000 files in the lowest; mounts dirs=b0=rw:b1=ro:...; per module and round:
# one cold pass, 5 warm hit passes and 3 warm miss passes of build/bench/bhelper stat (seconds
# each); with PERF=1, the last round also records 8 warm passes with perf and prints the top
# symbols. Sample output (2026-12-07, N=128, old255.ko = 255224e, head.ko = 67e3216, other
# guests beside it):
#   AB round 2 old255 N=128 hit-warm: 0.091232 0.043098 0.098036 0.121252 0.109298 miss-warm: 1.252290 0.061507 0.056314
#   AB round 2 head N=128 hit-warm: 0.172503 0.206528 0.269069 0.202722 0.284332 miss-warm: 1.548342 0.183680 0.146851
#   PERF head     21.58%  [k] unionfs_reval_need
cd "$(dirname "$(readlink -f "$0")")/.." || exit 2
[[ $# -ge 1 ]] || { sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BH=build/bench/bhelper
N=${N:-128}
B=/tmp/ab-lookup; mkdir -p $B; mount -t tmpfs -o size=2g ab $B || exit 2
list=$B/list
awk -v k=5 '(NR - 1) % k == 0' build/bench/tree2.list | head -n 1000 > $list
for ((i = 0; i < N; i++)); do
	mkdir -p $B/b$i; (cd $B/b$i && sed 's|/[^/]*$||' $list | sort -u | xargs mkdir -p)
done
(cd $B/b$((N - 1)) && xargs touch < $list)
dirs=$B/b0=rw; for ((i = 1; i < N; i++)); do dirs+=":$B/b$i=ro"; done
mkdir -p $B/m
for round in 1 2 3; do
	for ko in "$@"; do
		name=$(basename "$ko" .ko)
		insmod "$ko" || { echo "insmod $ko failed"; continue; }
		mount -i -t unionfs -o "dirs=$dirs" none $B/m || { rmmod unionfs; continue; }
		$BH stat $B/m $list > /dev/null
		t=""; for p in 1 2 3 4 5; do t+=" $($BH stat $B/m $list | cut -d' ' -f1)"; done
		m=""; for p in 1 2 3; do m+=" $($BH stat $B/m $list .missing | cut -d' ' -f1)"; done
		echo "AB round $round $name N=$N hit-warm:$t miss-warm:$m"
		if [[ $round == 3 && -n ${PERF:-} ]]; then
			perf record -q -g -o /tmp/perf.$name -- bash -c \
				"for p in 1 2 3 4 5 6 7 8; do $BH stat $B/m $list; done" > /dev/null 2>&1
			perf report -i /tmp/perf.$name --no-children --sort symbol --stdio 2>/dev/null |
				grep -v '^#' | grep '%' | head -25 | sed "s/^/PERF $name /"
		fi
		umount $B/m; rmmod unionfs
	done
done
umount $B
