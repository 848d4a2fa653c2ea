#!/bin/bash
# Concurrency (tests/tools/uconc.py): b0=rw over b1=ro over b2=ro, all tmpfs, directories
# d0..d3 present in every branch (shared parents across branches).
#  1. owned names: NW workers race on the shared parent dirs; each owns disjoint names (its
#     new files, its lower files in b1 to copy up, append, truncate, unlink into whiteouts,
#     rename, link, its own dirs) and checks its own names in every readdir and read; after
#     all finish the union shows exactly the merged models, again after umount + mount.
#  2. overlapping names: all workers on the same few names (create/unlink/rename/link/mkdir/
#     rmdir/append/readdir/stat); every failure must be a clean errno; afterwards the union's
#     view equals the view predicted from the branch contents (priority, whiteouts, opaque
#     dirs), readdir has no duplicates and no .wh. names, every name stats and every file reads.
#  3. stress-ng --dir --dentry --rename --link --filename --symlink --chmod --utime --fallocate
#     --hdd (copy-file wants >= 128 MB per instance) with --temp-path in the union,
#     bounded by --timeout; then the same prediction check.
#  After 1. and after 3.: no hazard counted (only the union writes). Rounds alternate
#  coherency=notify and reval.
# Short: 4 workers x 300 ops, 20 s overlap, 20 s stress-ng; UNIONFS_SOAK=1: rounds for SOAK_SECS.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
UC="python3 $PWD/tests/tools/uconc.py"
M=$T/m B0=$T/b0 B1=$T/b1 B2=$T/b2
NW=4 NOPS=300 OSECS=20 SSECS=20
((SOAK)) && NW=6 NOPS=2000 OSECS=60 SSECS=60
dmesg_mark

setup() {
	umount_all "$T"; rm -rf "$B0" "$B1" "$B2"
	branch_fs tmpfs "$T" 3
	mkdir -p "$M" "$B0"/d{0,1,2,3} "$B2"/d{0,1,2,3}
	$UC populate "$B1" $NW 8
	# b2 holds names the workers never touch, partly hidden by b1 entries
	for d in d0 d1 d2 d3; do echo b2 > "$B2/$d/bottom"; done
	echo b2 > "$B2/d0/L0_0"	# under b1's d0/L0_0 (worker 0's): hidden by it, and by its whiteout
	mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro:$B2=ro,coherency=$COH" none "$M"
}

start=$(date +%s) round=0 total=0
while :; do
	# coherency=notify first (where the union's own changes were once taken for direct ones),
	# then reval, alternating
	COH=notify; ((round % 2)) && COH=reval
	check "round $round: mount b0=rw:b1=ro:b2=ro,coherency=$COH" setup || break
	pids=() seeds=()
	for ((w = 0; w < NW; w++)); do
		seeds+=($((SRANDOM % 100000)))
		$UC owned "$M" $w "${seeds[w]}" $NOPS $NW 8 > "$T/state$w.json" 2> "$T/err$w" &
		pids+=($!)
	done
	fails=
	for ((w = 0; w < NW; w++)); do
		wait "${pids[w]}" || fails+="worker $w (seed ${seeds[w]}): $(cat "$T/err$w")"$'\n'
	done
	is "round $round: $NW workers x $NOPS ops on owned names, seeds ${seeds[*]}: every op, readdir and read as modelled" "$fails" ""
	total=$((total + NW * NOPS))
	out=$($UC expect "$M" "$T"/state*.json); rc=$?
	if ((rc == 0)); then ok "round $round: union view == merged worker models ($(head -n 1 <<< "$out"))"
	else not_ok "round $round: union view == merged worker models" "$out"; fi
	no_hazards "$M" "round $round, owned names (coherency=$COH)"
	umount "$M" && mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro:$B2=ro,coherency=$COH" none "$M"
	out=$($UC expect "$M" "$T"/state*.json); rc=$?
	if ((rc == 0)); then ok "round $round: same after umount + mount"
	else not_ok "round $round: same after umount + mount" "$out"; fi
	out=$($UC predict "$M" "$B0" "$B1" "$B2"); rc=$?
	if ((rc == 0)); then ok "round $round: union view == prediction from branches ($(head -n 1 <<< "$out"))"
	else not_ok "round $round: union view == prediction from branches" "$out"; fi

	# 2. overlapping names
	pids=() seeds=()
	for ((w = 0; w < NW; w++)); do
		seeds+=($((SRANDOM % 100000)))
		$UC overlap "$M" $w "${seeds[w]}" $OSECS > "$T/ov$w.json" 2> "$T/err$w" &
		pids+=($!)
	done
	fails=
	for ((w = 0; w < NW; w++)); do
		wait "${pids[w]}" || fails+="overlap worker $w (seed ${seeds[w]}): $(cat "$T/err$w")"$'\n'
	done
	nok=$(cat "$T"/ov*.json | python3 -c "import sys,json; print(sum(json.loads(l)['ok'] for l in sys.stdin.read().replace('}{','}\n{').splitlines()))" 2>/dev/null)
	is "round $round: $NW overlapping workers for ${OSECS}s ($nok ops succeeded, seeds ${seeds[*]}): only clean errnos, no duplicate or .wh. names" "$fails" ""
	out=$($UC predict "$M" "$B0" "$B1" "$B2"); rc=$?
	if ((rc == 0)); then ok "round $round: after overlap: union view == prediction from branches ($(head -n 1 <<< "$out"))"
	else not_ok "round $round: after overlap: union view == prediction from branches" "$out"; fi
	is "round $round: no copy-up temporaries" "$(find "$B0" -name '.wh..wh.unionfs.*')" ""

	# 3. stress-ng filesystem stressors inside the union
	if command -v stress-ng > /dev/null; then
		mkdir -p "$M/sng"
		wd $((SSECS + 60)) stress-ng --dir 2 --dentry 2 --rename 2 --link 2 --filename 1 \
			--symlink 1 --chmod 1 --utime 1 --fallocate 1 --hdd 1 --hdd-bytes 4M \
			--temp-path "$M/sng" --timeout "${SSECS}s" --metrics-brief
		rc=$?
		if [[ $rc == 0 ]] && grep -q 'successful run completed' "$WD_OUT" && ! grep -qiE 'fail|error' "$WD_OUT"; then
			ok "round $round: stress-ng dir/dentry/rename/link/filename/symlink/chmod/utime/fallocate/hdd ${SSECS}s in the union: bogo ops $(awk '$2 == "metrc:" && $4 ~ /^(dir|dentry|rename|link|filename|symlink|chmod|utime|fallocate|hdd)$/ && $5 ~ /^[0-9]+$/ { print $4 "=" $5 }' "$WD_OUT" | tr '\n' ' ')"
		else
			not_ok "round $round: stress-ng in the union (exit $rc)" "$(grep -iE 'fail|error|wd:|fault' "$WD_OUT" | head -n 12; tail -n 5 "$WD_OUT")"
		fi
		out=$($UC predict "$M" "$B0" "$B1" "$B2"); rc=$?
		if ((rc == 0)); then ok "round $round: after stress-ng: union view == prediction from branches"
		else not_ok "round $round: after stress-ng: union view == prediction" "$out"; fi
	else
		not_ok "stress-ng installed (make deps)"
	fi
	no_hazards "$M" "round $round, overlap + stress-ng (coherency=$COH)"
	check "round $round: umount" umount "$M"
	round=$((round + 1))
	soak_more "$start" || break
done
is "dmesg clean" "$(dmesg_bad)" ""
finish
