#!/bin/bash
# bench/trace-cost-guest.sh RUNS FILES: guest half of bench/trace-cost.sh (needs the guest
# booted with --no-module and build/bench/{trace,notrace}/src/unionfs.ko).
set -uo pipefail
RUNS=${1:-3} FILES=${2:-20000}
TR=/sys/kernel/tracing
D=/tmp/bench; ND=20
. bench/guest-lib.sh
bench_tree $D "$FILES"
pass() { bench_pass $D/m; }
declare -A cold warm
run_variant() {	# run_variant NAME MODULE EVENTS(0/1)
	local name=$1 ko=$2 ev=$3 i c w
	rmmod unionfs 2>/dev/null
	insmod "$ko" || { echo "# insmod $ko failed"; return 1; }
	echo 0 > $TR/tracing_on; echo > $TR/trace
	[[ -d $TR/events/unionfs ]] && echo "$ev" > $TR/events/unionfs/enable
	echo 1 > $TR/tracing_on
	cold[$name]= warm[$name]=
	for ((i = 0; i < RUNS; i++)); do
		mount -i -t unionfs -o dirs=$D/b0:$D/b1=ro none $D/m
		c=$(pass); w=$(pass)
		umount $D/m
		cold[$name]+=" $c" warm[$name]+=" $w"
	done
	[[ -d $TR/events/unionfs ]] && echo 0 > $TR/events/unionfs/enable
	local nev=$(grep -c unionfs_ $TR/trace 2>/dev/null)
	echo "# $name: cold ms:${cold[$name]}  warm ms:${warm[$name]}  (events in ring buffer at end: $nev)"
	echo > $TR/trace
	rmmod unionfs
}
echo "# $FILES files in $ND dirs, 2 tmpfs branches, $RUNS runs per variant per round, 2 interleaved rounds; guest $(nproc) CPUs TCG"
# interleave the variants twice to spread drift; medians are over all runs
for round in 1 2; do
	run_variant compiled-out build/bench/notrace/src/unionfs.ko 0
	run_variant disabled build/bench/trace/src/unionfs.ko 0
	run_variant enabled build/bench/trace/src/unionfs.ko 1
	eval "c_${round}_co=\"${cold[compiled-out]}\" w_${round}_co=\"${warm[compiled-out]}\""
	eval "c_${round}_di=\"${cold[disabled]}\" w_${round}_di=\"${warm[disabled]}\""
	eval "c_${round}_en=\"${cold[enabled]}\" w_${round}_en=\"${warm[enabled]}\""
done
printf '%-14s %16s %16s\n' variant "cold median ms" "warm median ms"
for v in co:compiled-out di:disabled en:enabled; do
	k=${v%%:*} name=${v#*:}
	eval "cs=\"\$c_1_$k \$c_2_$k\" ws=\"\$w_1_$k \$w_2_$k\""
	printf '%-14s %16s %16s\n' "$name" "$(median <<< "$cs")" "$(median <<< "$ws")"
done
umount $D/b0 $D/b1
