#!/bin/bash
# bench/link-cost.sh: what do link groups (hard links across copy-up, src/index.c) cost a
# copy-up? (a benchmark, not a test)
#
#   bench/link-cost.sh [ROUNDS] [FILES]     (on the host; default 6 rounds, 3000 files)
#
# Builds two modules from this tree without fault injection, in build/bench/link-cost/: "on"
# (as is) and "off" (unionfs_index_wanted() always false: no link group is ever made, the
# other hooks stay), then boots ONE guest running bench/link-cost-guest.sh: for each round
# and each module (the order rotated per round) a tmpfs union b0=rw:b1=ro with FILES lower
# files of 4 KiB per directory: one/ (nlink 1), two/ (nlink 2: each file has a second name),
# app/ (nlink 1); timed: chmod of every file of one/ and two/ (metadata copy-up) and an
# O_WRONLY|O_APPEND open of every file of app/ (data copy-up). Prints every round and the
# medians; saved in build/bench/link-cost.txt. TCG wall clock: compare on with off.
# Sample (2026-12-07, main ff53371, `bench/link-cost.sh 6 3000`, 3 min):
#   # link-cost: 6 rounds x 3000 files per directory, medians in s (TCG wall clock)
#   module  nlink1-chmod  nlink2-chmod  nlink1-open
#   on      0.706         1.075         0.829
#   off     0.659         0.841         0.991
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.." || exit 2
ROUNDS=${1:-6} FILES=${2:-3000}
KVER=$(cat build/kver 2>/dev/null || uname -r)
KDIR=/lib/modules/$KVER/build
O=build/bench/link-cost
rm -rf "$O" && mkdir -p "$O"
for v in on off; do
	mkdir -p "$O/$v" && cp -r src tracepoints "$O/$v/"
	rm -f "$O/$v"/src/*.o "$O/$v"/src/*.ko "$O/$v"/src/.*.cmd
done
sed -i 's/^\treturn d_is_reg(ld) && d_inode(ld)->i_nlink > 1 &&$/\treturn false \&\& d_is_reg(ld) \&\& d_inode(ld)->i_nlink > 1 \&\&/' \
	"$O/off/src/index.c"
grep -q '^	return false && d_is_reg(ld)' "$O/off/src/index.c" ||
	{ echo "link-cost: unionfs_index_wanted() not found as expected in src/index.c" >&2; exit 2; }
for v in on off; do
	make -s -C "$KDIR" M="$PWD/$O/$v/src" FAULT_INJECTION=0 modules 2>&1 | grep -v 'Skipping BTF' >&2
	[[ -f $O/$v/src/unionfs.ko ]] || { echo "link-cost: the $v build failed" >&2; exit 2; }
done
qemu-debug/boot --no-module -- bench/link-cost-guest.sh "$ROUNDS" "$FILES" \
	"$O/on/src/unionfs.ko" "$O/off/src/unionfs.ko" < /dev/null 2>&1 |
	tee "$O/raw" | grep --line-buffered -E '^(#|R |module|on |off )'
grep -E '^(#|module|on |off )' "$O/raw" > build/bench/link-cost.txt
echo "# saved: build/bench/link-cost.txt"
