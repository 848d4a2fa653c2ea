#!/bin/bash
# Direct-modification torture (tests/torture.py): a workload through the union (writes
# with checksums, appends, renames, unlinks, readdir) while another process modifies
# every branch directly (files, dirs, whiteouts by hand), for a bounded time, with
# coherency=reval and coherency=notify. Afterwards: every byte written through the union
# is there, each directory lists exactly the merge of the branches, dmesg is clean,
# umount works. In the notify run, bpf-scripts/unionfs-hazards watches and must name the
# direct writer and its paths, and never the union's own changes.
# Length: TORTURE_SECS per mode (default 20; `make soak` sets it long). Seed: TORTURE_SEED.
# timeout: 900
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
secs=${TORTURE_SECS:-20}
seed=${TORTURE_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "# torture: $secs s per mode, seed $seed (TORTURE_SEED=$seed replays)"

torture() {	# torture MODE [hazard-watch]
	local mode=$1 watch=${2:-} dir=$T/$1 up dp wp rc
	mkdir -p "$dir"
	branch_fs tmpfs "$dir" 3
	local B=("$dir/b0" "$dir/b1" "$dir/b2") M=$dir/m
	mkdir -p "$M"
	for b in "${B[@]}"; do mkdir -p "$b"/d{0,1,2,3}; done
	# lower files the union reads and copies up
	for i in 1 2 3; do echo "lower $i" > "$dir/b2/d$i/x_$i"; done
	dmesg_mark
	check "$mode: mount 3 branches" mount -i -t unionfs \
		-o "dirs=${B[0]}:${B[1]}=ro:${B[2]}=ro,coherency=$mode" none "$M" || return
	if [[ -n $watch ]]; then
		bpf-scripts/unionfs-hazards -d $((secs + 60)) "$M" > "$dir/hazards.out" 2>&1 &
		wp=$!
		for _ in $(seq 120); do
			grep -q '^unionfs-hazards: watching' "$dir/hazards.out" && break
			sleep 1
		done
		if grep -q '^unionfs-hazards: watching' "$dir/hazards.out"; then
			ok "$mode: unionfs-hazards attached ($(head -n 1 "$dir/hazards.out" | grep -o 'watching.*union(s)'))"
		else
			not_ok "$mode: unionfs-hazards attached" "$(tail -n 15 "$dir/hazards.out")"
		fi
	fi
	python3 tests/torture.py union "$M" "$secs" "$seed" "$dir/model.json" &
	up=$!
	python3 tests/torture.py direct "$secs" "$((seed + 1))" "${B[@]}" &
	dp=$!
	wait $up; rc=$?
	is "$mode: union workload finished" "$rc" 0
	wait $dp
	python3 tests/torture.py verify "$M" "$dir/model.json" "${B[@]}" > "$dir/verify.out" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok	"*) ok "$mode: ${line#ok	}" ;;
		"not ok	"*) not_ok "$mode: ${line#not ok	}" "$(grep -A15 -F "$line" "$dir/verify.out" | sed -n '2,16p' | grep '^#' | sed 's/^#\t//')" ;;
		esac
	done < "$dir/verify.out"
	grep -q '^ok' "$dir/verify.out" || not_ok "$mode: verify ran" "$(tail "$dir/verify.out")"
	echo "# $mode: $(python3 -c "import json,sys; m=json.load(open('$dir/model.json')); print('%d ops, %d files, %d bytes' % (m['ops'], len(m['files']), m['bytes']))")"
	echo "# $mode hazards: $(tr '\n' ' ' < "/sys/kernel/debug/unionfs/mounts/$(stat -c '%Hd:%Ld' "$M")/hazards")"
	if [[ -n $watch ]]; then
		kill -INT $wp 2>/dev/null; wait $wp 2>/dev/null
		local out=$dir/hazards.out
		is "$mode: hazard watcher names the direct writer" \
			"$(grep -cE '^[0-9]+ +direct-writer +[0-9]+ +(create|write|unlink|rename|setattr|mkdir|rmdir) ' "$out" | grep -c '^[1-9]')" 1
		is "$mode: hazard watcher gives branch and path" \
			"$(grep -cE "^[0-9]+ +direct-writer +[0-9]+ +[a-z]+ +u1:b[012] +d[0-3]/(x_|xd_|\\.wh\\.x_)" "$out" | grep -c '^[1-9]')" 1
		is "$mode: hazard watcher legend names the branches" \
			"$(grep -cE "^u1:b[012] $dir/b[012] \\(union $M\\)$" "$out")" 3
		is "$mode: the union's own changes are not reported" \
			"$(grep -cE '^[0-9]+ +union-writer ' "$out")" 0
		is "$mode: hazard watcher printed the detections of the module" \
			"$(grep -c '^DETECTED .* direct-writer\|^DETECTED direct-writer' "$out" | grep -c '^[1-9]')" 1
		echo "# hazard watcher: $(grep -c direct-writer "$out") lines naming direct-writer; sample:"
		grep -m3 -E '^[0-9]+ +direct-writer' "$out" | sed 's/^/#   /'
	fi
	# files removed in the branch behind the union's back must not stay allocated because the
	# union caches them (was: thousands of removed inodes pinned by unused union inodes, ENOSPC);
	# allowed: one per name the direct writer uses that a hashed union dentry may still hold
	local held=$(($(df --output=iused "${B[0]}" | tail -n 1) - $(find "${B[0]}" | wc -l)))
	check "$mode: b0: removed files are not kept allocated by the union ($held inodes held, <= 200)" \
		test "$held" -le 200
	is "$mode: dmesg has no BUG/WARNING/Oops" \
		"$(dmesg_since_mark | grep -cE 'BUG|WARNING|Oops|general protection|refcount_t')" 0
	check "$mode: umount" umount "$M"
}

torture reval
torture notify hazard-watch
finish
