#!/bin/bash
# bench/walk-mode.sh [N]: in the guest (qemu-debug/boot -- bash bench/walk-mode.sh 128), how a
# warm W2 stat walk goes through unionfs with N branches (all holding the directory skeleton of
# build/bench/tree2.list, 1000 files in the lowest): a bpftrace count of d_revalidate results,
# of permission() calls with and without MAY_NOT_BLOCK (0x80: RCU walk) and of lookups, then
# warm pass times for coherency=none, reval and notify, by absolute path (the walk crosses
# the guest's 9p root: ref-walk) and relative to the union root (RCU walk).
# Needs the data and bhelper of bench/run. Sample output (N=128, TCG, 2026-12-03):
#   @mask[0]: 3424        (every permission() call in ref-walk: absolute paths)
#   reval  abs: 0.105544 1000 0 ...   rel: ...
#   notify abs: 0.036479 1000 0 ...
set -u
D=$PWD/build/bench; BH=$D/bhelper; B=/tmp/walkmode; n=${1:-128}
[[ -x $BH && -s $D/tree2.list ]] || { echo "run bench/run first (data)" >&2; exit 2; }
mkdir -p $B; mount -t tmpfs -o size=90% walkmode $B
awk '(NR - 1) % 5 == 0' $D/tree2.list > $B/w2.list
. bench/guest-lib.sh
w2_branches $B/t "$n" $B/w2.list
ul=; for l in "${LOWS[@]}"; do ul+=":$l=ro"; done
mkdir -p $B/m
for coh in none reval notify; do
	mount -i -t unionfs -o "dirs=$B/t/b0=rw$ul,coherency=$coh" none $B/m
	$BH stat $B/m $B/w2.list > /dev/null; sleep 0.1
	if [[ $coh == reval ]]; then
		# absolute names: bhelper's root "/" + /tmp/walkmode/m/...
		sed "s|^|${B#/}/m/|" $B/w2.list > $B/w2.abs
		bpftrace -e 'kretprobe:unionfs_d_revalidate { @rev[retval] = count(); }
			kprobe:unionfs_permission { @mask[arg2 & 0x80] = count(); }
			kprobe:unionfs_lookup { @lookups = count(); }' -c "$BH stat / $B/w2.abs"
		bpftrace -e 'kprobe:unionfs_permission { @mask_rel[arg2 & 0x80] = count(); }' -c "$BH stat $B/m $B/w2.list"
	fi
	echo "$coh abs: $(for i in 1 2 3; do $BH stat / $B/w2.abs; done | paste -sd' ')"
	echo "$coh rel: $(for i in 1 2 3; do $BH stat $B/m $B/w2.list; done | paste -sd' ')"
	umount $B/m
done
umount $B
