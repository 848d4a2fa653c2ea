#!/bin/bash
# bench/coherency-cost-guest.sh RUNS FILES: guest half of bench/coherency-cost.sh.
set -uo pipefail
RUNS=${1:-3} FILES=${2:-20000}
D=/tmp/bench; ND=20
. bench/guest-lib.sh
bench_tree $D "$FILES"
pass() { bench_pass $D/m; }
declare -A cold warm after
run_mode() {	# run_mode MODE
	local m=$1 i c w a
	for ((i = 0; i < RUNS; i++)); do
		sync; echo 2 > /proc/sys/vm/drop_caches
		mount -i -t unionfs -o dirs=$D/b0:$D/b1=ro,coherency=$m none $D/m || return 1
		c=$(pass); w=$(pass)
		touch $D/b1/d3/direct-$i		# one direct change in a branch
		a=$(pass)
		[[ $m == notify ]] && marks=$(awk '$1 == "marks" { print $2 }' /sys/kernel/debug/unionfs/mounts/*/coherency)
		umount $D/m
		rm -f $D/b1/d3/direct-$i
		cold[$m]+=" $c" warm[$m]+=" $w" after[$m]+=" $a"
	done
	echo "# $m: cold ms:${cold[$m]}  warm ms:${warm[$m]}  warm after one direct change ms:${after[$m]}"
}
echo "# $FILES files in $ND dirs, 2 tmpfs branches, $RUNS runs per mode per round, 2 interleaved rounds; guest $(nproc) CPUs TCG"
for round in 1 2; do
	for m in none reval notify; do run_mode $m; done
done
echo "# coherency=notify: $marks fsnotify marks for $((ND + 1)) union directories x 2 branches"
printf '%-8s %16s %16s %28s\n' mode "cold median ms" "warm median ms" "warm after 1 direct change"
for m in none reval notify; do
	printf '%-8s %16s %16s %28s\n' "$m" "$(median <<< "${cold[$m]}")" "$(median <<< "${warm[$m]}")" "$(median <<< "${after[$m]}")"
done
umount $D/b0 $D/b1
