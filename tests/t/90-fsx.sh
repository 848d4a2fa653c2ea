#!/bin/bash
# Data integrity with build/ufsx (tests/tools/ufsx.c), an fsx-style exerciser: random read,
# write, ftruncate, truncate(2), mmap read/write, fallocate, punch hole, fsync, close+reopen,
# with an in-memory model compared (whole file, fstat and stat size) after every op.
# Cases, on tmpfs and on ext4 branches: (a) a file on the read-only branch, first opened
# O_RDONLY so the copy-up happens in the middle of the run; (b) a new file; (c) a file that is
# already on the writable branch. The same seed replayed on a copy on the bare branch fs must
# give the same bytes; the lower original stays intact; no copy-up temporaries are left.
# Short: 800 ops per case; UNIONFS_SOAK=1: 20000-op rounds with fresh seeds for SOAK_SECS.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
UFSX=$PWD/build/ufsx
[[ -x $UFSX ]] || { not_ok "build/ufsx is built (make)"; finish; }
M=$T/m B0=$T/b0 B1=$T/b1 R=$T/ref
NOPS=800	# measured: 3 tmpfs cases x 2500 ops (+ bare replays) took ~160 s of TCG
((SOAK)) && NOPS=20000
dmesg_mark
total_ops=0 ncases=0

one_case() {	# one_case FS CASE SEED : run ufsx on the union and the same seed on a bare copy
	local fs=$1 c=$2 seed=$3 f out rout lsum opts=-q rc
	f=$c$round	# a fresh name each round (the last round's whiteout hides the old one)
	case $c in
	lower) opts+=" -R"; head -c 200000 /dev/urandom > "$B1/$f"; cp "$B1/$f" "$R/$f" ;;
	new) rm -f "$R/$f" ;;
	upper) head -c 150000 /dev/urandom > "$B0/$f"; cp "$B0/$f" "$R/$f" ;;
	esac
	[[ -e $B1/$f ]] && lsum=$(sha1sum < "$B1/$f")
	ncases=$((ncases + 1))
	wd $((NOPS / 10 + 120)) "$UFSX" $opts -N "$NOPS" -s "$seed" "$M/$f"
	rc=$? out=$(cat "$WD_OUT")
	if [[ $rc == 0 ]]; then
		ok "$fs ($c): $(tail -n 1 <<< "$out" | cut -d' ' -f2-7)"
		total_ops=$((total_ops + NOPS))
	else
		not_ok "$fs ($c): ufsx -s $seed -N $NOPS $opts on $M/$f (exit $rc)" "$(tail -n 14 <<< "$out")"
		echo "$out"
		[[ $rc == 124 ]] && finish	# a task stuck in the kernel: nothing more to learn here
		return
	fi
	rout=$("$UFSX" $opts -N "$NOPS" -s "$seed" "$R/$f" 2>&1) ||
		{ not_ok "$fs ($c): same seed on the bare fs" "$(tail -n 5 <<< "$rout")"; return; }
	is "$fs ($c): union result == same seed on the bare fs" \
		"$(sha1sum < "$M/$f") $(stat -c %s "$M/$f")" "$(sha1sum < "$R/$f") $(stat -c %s "$R/$f")"
	is "$fs ($c): file now lives in branch 0 with the same bytes" "$(cmp "$M/$f" "$B0/$f" && echo same)" same
	[[ $c == lower ]] && is "$fs ($c): read-only original intact" "$(sha1sum < "$B1/$f")" "$lsum"
	rm -f "$M/$f" "$R/$f"
	[[ $c == lower ]] && is "$fs ($c): unlink after copy-up hides the lower file" \
		"$(test -e "$M/$f" || echo gone) $(test -e "$B0/.wh.$f" && echo wh)" "gone wh"
}

for fs in tmpfs ext4; do
	mkdir -p "$R"
	branch_fs $fs "$T" 2 || { not_ok "$fs: branches"; continue; }
	mkdir -p "$M"
	check "$fs: mount b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || continue
	start=$(date +%s) round=0
	while :; do
		for c in lower new upper; do
			one_case $fs $c "$((SRANDOM % 4294967295 + round))"
		done
		round=$((round + 1))
		soak_more "$start" || break
	done
	is "$fs: no copy-up temporaries left" "$(find "$B0" "$B1" -name '.wh..wh.unionfs.*')" ""
	# (no no_hazards check here: each case writes its start file into a branch directly)
	check "$fs: umount" umount "$M"
	umount_all "$T"; rm -rf "$B0" "$B1" "$R" "$T"/img*
done
is "all $ncases ufsx runs completed: $total_ops ops through the union" "$total_ops" "$((ncases * NOPS))"
is "dmesg clean" "$(dmesg_bad)" ""
finish
