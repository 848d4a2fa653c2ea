#!/bin/bash
# bench/coherency-cost.sh: what does each coherency= mode cost? (a benchmark, not a test)
#
#   bench/coherency-cost.sh [RUNS] [FILES]     (on the host; default 3 runs x 2 rounds, 20000 files)
#
# Boots ONE guest with src/unionfs.ko and runs bench/coherency-cost-guest.sh: a 2-branch
# tmpfs union of FILES files in 20 directories, mounted with coherency=none, reval and
# notify in turn (interleaved, two rounds); for each: a cold pass (fresh mount: every
# name looked up), a warm pass (dcache hits: revalidation only) and a warm pass after one
# file was created directly in a branch. `find -printf %s` stats every file and reads
# every directory. Prints medians; saved in build/bench/coherency-cost.txt. TCG wall
# clock: compare the modes with each other.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.." || exit 2
RUNS=${1:-3} FILES=${2:-20000}
mkdir -p build/bench
qemu-debug/boot -- bench/coherency-cost-guest.sh "$RUNS" "$FILES" < /dev/null 2>&1 |
	tee build/bench/coherency-cost.raw | grep --line-buffered -E '^(#|mode|none|reval|notify)'
grep -E '^(#|mode|none|reval|notify)' build/bench/coherency-cost.raw > build/bench/coherency-cost.txt
echo "# saved: build/bench/coherency-cost.txt"
