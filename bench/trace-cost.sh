#!/bin/bash
# bench/trace-cost.sh: what do the unionfs tracepoints cost? (a benchmark, not a test)
#
#   bench/trace-cost.sh [RUNS] [FILES]      (on the host; default 3 runs x 2 interleaved rounds, 20000 files)
#
# Builds two variants of the module from ONE snapshot of src/ + tracepoints/ (copied to
# build/bench/): "trace" (as shipped) and "notrace" (same code with -DNOTRACE, which makes
# <linux/tracepoint.h> turn every trace_*() and trace_*_enabled() into an empty inline:
# tracepoints compiled out). Then boots ONE guest (--no-module) that runs
# bench/trace-cost-guest.sh: for each of
#     compiled-out   notrace module
#     disabled       trace module, no unionfs event enabled (static keys off)
#     enabled        trace module, all unionfs events enabled (ring buffer, nobody reading)
# it stats FILES files in a 2-branch tmpfs union (20 dirs present in both branches, half
# the files in each branch, so half the cold lookups probe 2 branches), cold (fresh mount:
# every name is looked up) and warm (dcache hit, revalidation only), 2 x RUNS times (two interleaved rounds), and
# prints the medians. Results: build/bench/trace-cost.txt. Timings are TCG wall clock:
# compare the variants with each other, not with real hardware.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.." || exit 2
RUNS=${1:-3} FILES=${2:-20000}
KVER=$(cat build/kver) KDIR=/lib/modules/$(cat build/kver)/build
B=build/bench
rm -rf "$B/trace" "$B/notrace"
for v in trace notrace; do
	mkdir -p "$B/$v"
	cp -r src tracepoints "$B/$v/"
	rm -f "$B/$v"/src/*.o "$B/$v"/src/*.ko "$B/$v"/src/*.mod* "$B/$v"/src/.*.cmd
	flags=; [[ $v == notrace ]] && flags=-DNOTRACE
	make -s -C "$KDIR" M="$PWD/$B/$v/src" KCFLAGS="$flags" modules >/dev/null 2>"$B/$v/build.log" ||
		{ echo "build of $v failed:"; cat "$B/$v/build.log"; exit 1; }
done
n_tp() { grep -c '__tracepoint_unionfs_' <(nm "$1" 2>/dev/null); }
echo "# module variants built from one snapshot of src/ ($(date -u +%F\ %T) UTC):"
echo "#   trace:   $(stat -c %s $B/trace/src/unionfs.ko) bytes, $(n_tp $B/trace/src/unionfs.ko) __tracepoint_unionfs_* symbols"
echo "#   notrace: $(stat -c %s $B/notrace/src/unionfs.ko) bytes, $(n_tp $B/notrace/src/unionfs.ko) __tracepoint_unionfs_* symbols"
qemu-debug/boot --no-module -- bench/trace-cost-guest.sh "$RUNS" "$FILES" < /dev/null 2>&1 |
	tee "$B/trace-cost.raw" | grep --line-buffered -E '^(#|variant|compiled|disabled|enabled|  )'
grep -E '^(#|variant|compiled|disabled|enabled|  )' "$B/trace-cost.raw" > "$B/trace-cost.txt"
echo "# saved: $B/trace-cost.txt"
