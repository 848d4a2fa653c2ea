#!/bin/bash
# bench/walk-mode.sh [N]: in the guest (qemu-debug/boot -- bash bench/walk-mode.sh 128), how a
# warm W2 stat walk goes through unionfs with N branches (all holding the directory skeleton of
# build/bench/tree2.list, 1000 files in the lowest): a bpftrace count of d_revalidate results,
# of permission() calls with and without MAY_NOT_BLOCK (0x80: RCU walk) and of lookups, then
# warm pass times for coherency=none, reval and notify, by absolute path (the walk crosses
# the guest's 9p root: ref-walk) and relative to the union root (RCU walk).
# Needs the data and bhelper of bench/run. Columns of a pass: seconds, found, missing.
# Sample output (N=128, TCG, 2026-12-04, module 22fbda1; bpftrace lines trimmed):
#   none abs: 0.034966 1000 0 0.021919 1000 0 0.022439 1000 0
#   none rel: 0.023364 1000 0 0.018487 1000 0 0.017574 1000 0
#   @mask[0]: 3424        (every permission() call in ref-walk: absolute paths)
#   @rev[1]: 3424
#   @mask_rel[128]: 3424  (relative paths: all in RCU walk)
#   reval abs: 0.059294 1000 0 0.043706 1000 0 0.035209 1000 0
#   reval rel: 0.028481 1000 0 0.042521 1000 0 0.030519 1000 0
#   notify abs: 0.023992 1000 0 0.023561 1000 0 0.022915 1000 0
#   notify rel: 0.020378 1000 0 0.017719 1000 0 0.017970 1000 0
set -u
D=$PWD/build/bench; BH=$D/bhelper; B=/tmp/walkmode; n=${1:-128}
[[ -x $BH && -s $D/tree2.list ]] || { echo "run bench/run first (data)" >&2; exit 2; }
mkdir -p $B; mount -t tmpfs -o size=90% walkmode $B
awk '(NR - 1) % 5 == 0' $D/tree2.list > $B/w2.list
. bench/guest-lib.sh
w2_branches $B/t "$n" $B/w2.list
ul=; for l in "${LOWS[@]}"; do ul+=":$l=ro"; done
mkdir -p $B/m
# absolute names: bhelper's root "/" + /tmp/walkmode/m/...
sed "s|^|${B#/}/m/|" $B/w2.list > $B/w2.abs
for coh in none reval notify; do
	mount -i -t unionfs -o "dirs=$B/t/b0=rw$ul,coherency=$coh" none $B/m
	$BH stat $B/m $B/w2.list > /dev/null; sleep 0.1
	if [[ $coh == reval ]]; then
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
