# tests/harness.sh: runs test files and prints numbered TAP (used by tests/run in the guest
# and tests/check on the host). run_suite FILE... ; uses/updates H_NUM H_PASS H_FAIL.
# Before each file it prints "# NAME: started (limit N s)" (a file's results are printed when
# it ends) and after them "# NAME: K results in S s"; h_plan prints the TAP plan "1..N" (at the
# end of the stream, which TAP allows: `prove --exec cat LOG` reads a saved log).
H_NUM=${H_NUM:-0} H_PASS=${H_PASS:-0} H_FAIL=${H_FAIL:-0}
H_LOGDIR=${H_LOGDIR:-$(mktemp -d /tmp/unionfs-tap.XXXXXX)}

h_plan() {	# the TAP plan, once, after the last result
	echo "1..$H_NUM"
}

h_result() {	# h_result "ok"|"not ok" "file: desc" [diag lines]
	H_NUM=$((H_NUM + 1))
	if [[ $1 == ok ]]; then H_PASS=$((H_PASS + 1)); else H_FAIL=$((H_FAIL + 1)); fi
	echo "$1 $H_NUM - $2"
	[[ -n ${3:-} ]] && printf '%s\n' "$3" | sed 's/^/#   /'
	return 0
}

run_suite() {
	local f name res log rc nres nfail status desc diag line to t0
	for f in "$@"; do
		name=$(basename "$f")
		res=$H_LOGDIR/${name%.sh}.tap log=$H_LOGDIR/${name%.sh}.log
		: > "$res"
		# a file may ask for more time with a line "# timeout: SECONDS"
		to=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$f" | head -n 1)
		to=${UNIONFS_TEST_TIMEOUT:-${to:-300}}
		# the debug kernel (lockdep + KASAN under TCG) runs 3-8x slower; guests sharing the
		# cores (tests/check's lanes) set UNIONFS_TIMEOUT_SCALE
		[[ $(uname -r) == *-ufsdebug ]] && to=$((to * ${UNIONFS_DEBUG_TIMEOUT_SCALE:-6}))
		to=$((to * ${UNIONFS_TIMEOUT_SCALE:-1}))
		echo "# $name: started (limit $to s)"
		t0=$SECONDS
		UNIONFS_TAP_OUT=$res timeout -k 10 "$to" bash "$f" > "$log" 2>&1
		rc=$?
		nres=0 nfail=0 status= desc= diag=
		while IFS= read -r line; do
			if [[ $line == "#"$'\t'* ]]; then
				diag+=${diag:+$'\n'}${line#*$'\t'}
				continue
			fi
			[[ -n $status ]] && h_result "$status" "$name: $desc" "$diag"
			status=${line%%$'\t'*} desc=${line#*$'\t'} diag=
			nres=$((nres + 1))
			[[ $status == "not ok" ]] && nfail=$((nfail + 1))
		done < "$res"
		[[ -n $status ]] && h_result "$status" "$name: $desc" "$diag"
		if [[ $rc != 0 && $nfail == 0 ]]; then
			local why="exited with status $rc"
			[[ $rc == 124 || $rc == 137 ]] && why="timed out after ${to}s"
			h_result "not ok" "$name: $why after $nres results" "$(tail -n 10 "$log")"
		elif [[ $nres == 0 ]]; then
			h_result "not ok" "$name: reported no results" "$(tail -n 10 "$log")"
		fi
		echo "# $name: $nres results in $((SECONDS - t0)) s"
	done
}
