#!/bin/bash
# Direct modification of branches while mounted: each kind of change made in a branch
# after the union cached the object is seen through the union, counted in debugfs and
# traced (unionfs_hazard), with one pr_notice per mount; nothing oopses. Run with
# coherency=reval (default, lazy checks) and coherency=notify (fsnotify, eager), then
# coherency=none (documented: cached names stay until incgen).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
TR=/sys/kernel/tracing
hz() { awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/unionfs/mounts/*/hazards | tail -1; }


direct_changes() {	# direct_changes MODE
local mode=$1 opt=
[[ $mode == reval ]] || opt=",coherency=$mode"
mkdir -p "$T/$mode"
branch_fs tmpfs "$T/$mode" 2
M=$T/$mode/m; mkdir -p "$M"
B0=$T/$mode/b0 B1=$T/$mode/b1
echo a > "$B1/f"; echo b > "$B1/g"; echo c > "$B0/h"; mkdir "$B1/d"; echo x > "$B1/d/x"
echo w > "$B1/wh"
check "$mode: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro$opt" none "$M"
cat "$M/f" "$M/g" "$M/h" "$M/d/x" "$M/wh" > /dev/null; ls "$M" "$M/d" > /dev/null
cat "$M/new" 2>/dev/null	# a cached negative entry
echo > $TR/trace; echo 1 > $TR/events/unionfs/unionfs_hazard/enable; echo 1 > $TR/tracing_on
dmesg_mark

echo NEW > "$B1/new"
is "$mode: file created in a branch appears" "$(cat "$M/new")" NEW
rm "$B1/g"
is "$mode: file removed in a branch disappears" "$(cat "$M/g" 2>&1 | grep -c 'No such file')" 1
echo REWRITTEN > "$B1/f"
is "$mode: file rewritten in a branch is read fresh" "$(cat "$M/f")" REWRITTEN
truncate -s 0 "$B0/h"
is "$mode: file truncated in a branch: size" "$(stat -c %s "$M/h")" 0
chmod 600 "$B1/f"
is "$mode: chmod in a branch seen" "$(stat -c %a "$M/f")" 600
mv "$B1/d" "$B1/d2"
is "$mode: dir renamed in a branch: old name gone" "$(ls "$M" | grep -cx d)" 0
is "$mode: dir renamed in a branch: new name there" "$(cat "$M/d2/x")" x
mkdir "$B1/nd"
is "$mode: mkdir in a branch seen" "$(stat -c %F "$M/nd")" directory
rmdir "$B1/nd"
is "$mode: rmdir in a branch seen" "$(ls "$M" | grep -cx nd)" 0
touch "$B0/.wh.wh"
is "$mode: whiteout added by hand hides the name" "$(ls "$M" | grep -cx wh)" 0
rm "$B0/.wh.wh"
is "$mode: whiteout removed by hand shows it again" "$(cat "$M/wh")" w
# replace a file by another object under the same name
mv "$B1/f" "$B1/f.old"; echo OTHER > "$B1/f"
is "$mode: file replaced in a branch" "$(cat "$M/f")" OTHER
# O_APPEND after a direct rewrite appends at the real end
echo 1 > "$M/app"; exec 5>> "$M/app"
echo 1234567890 > "$B0/app"
echo end >&5; exec 5>&-
is "$mode: O_APPEND after a direct rewrite lands at the real end" "$(cat "$M/app" | tr '\n' ' ')" "1234567890 end "

if [[ $mode == notify ]]; then
	is "$mode: marks placed on branch dirs" "$(( $(awk '$1 == "marks" { print $2 }' /sys/kernel/debug/unionfs/mounts/*/coherency | tail -1) >= 2 ))" 1
	for k in created removed renamed; do
		is "$mode: '$k' counted as it happened" "$(( $(hz $k) >= 1 ))" 1
	done
	is "$mode: hazard event names the modifying process" "$(grep -c 'unionfs_hazard:.*kind created.*name /new' $TR/trace | grep -c '^[1-9]')" 1
fi
total=$(( $(hz vanished) + $(hz replaced) + $(hz dir_changed) + $(hz created) + $(hz removed) + $(hz renamed) ))
# notify counts each change as it happens; reval each cached name found changed when
# used again: 'new' (appeared), 'g' (vanished), 'f' (replaced)
min=5; [[ $mode == reval ]] && min=3
is "$mode: direct changes were counted" "$(( total >= min ))" 1
is "$mode: hazard events traced" "$(( $(grep -c 'unionfs_hazard:' $TR/trace) >= min ))" 1
if [[ $mode == reval ]]; then
	is "$mode: each counted in its branch and kind" \
		"$(hz dir_changed):$(hz vanished):$(hz replaced):$(grep -c 'unionfs_hazard:.* branch -1 ' $TR/trace)" "1:1:1:0"
fi
is "$mode: hazard event names the kind" "$(grep -m1 -o 'kind [a-z_]*' $TR/trace | grep -c kind)" 1
is "$mode: one pr_notice per mount" "$(dmesg_since_mark | grep -c 'unionfs: .*modified directly')" 1
echo 0 > $TR/events/unionfs/unionfs_hazard/enable
check "$mode: umount" umount "$M"
}

direct_changes reval
direct_changes notify

# coherency=notify after an add= above a branch: a report names the branch's index in the current table. A mark
# on a branch directory is shared by the union inodes of every table that has the directory,
# so it keeps the branch (its id), not the index it had when the mark was placed.
mkdir -p "$T/idx"; branch_fs tmpfs "$T/idx" 3
M=$T/idx/m; mkdir -p "$M"; B0=$T/idx/b0 B1=$T/idx/b1 B2=$T/idx/b2
mkdir "$B1/d"
check "idx: mount (notify)" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=notify" none "$M"
ls "$M/d" > /dev/null
check "idx: remount,add=$B1:$B2=ro (b2 before b1: b1 becomes branch 2)" mount -i -o "remount,add=$B1:$B2=ro" "$M"
ls "$M/d" > /dev/null
echo > $TR/trace; echo 1 > $TR/events/unionfs/unionfs_hazard/enable; echo 1 > $TR/tracing_on
dmesg_mark
touch "$B1/d/direct"
echo 0 > $TR/events/unionfs/unionfs_hazard/enable
is "idx: the report names b1 by its current index, 2" \
	"$(dmesg_since_mark | grep 'modified directly' | grep -o "in branch [-0-9]*")" "in branch 2"
is "idx: the hazard event carries branch 2" \
	"$(grep 'unionfs_hazard:.*name [^ ]*/d/direct ' $TR/trace | grep -o ' branch [-0-9]* ' | sort -u)" " branch 2 "
# del= and add= of the same directory in one remount, while a process keeps d (its cwd): the
# directory's inode keeps its vector, so the new vector finds the old mark, placed for b1's
# old id; it must take b1's new id (else every later change there went unreported)
(cd "$M/d" && exec sleep 60) &
cwdjob=$!
for ((i = 0; i < 200; i++)); do [[ $(readlink /proc/$cwdjob/cwd) == "$M/d" ]] && break; sleep 0.05; done
is "idx: a process has its cwd in d" "$(readlink /proc/$cwdjob/cwd)" "$M/d"
check "idx: remount,del=$B1,add=:$B1=ro (b1 under a new id)" mount -i -o "remount,del=$B1,add=:$B1=ro" "$M"
ls "$M/d" > /dev/null
echo > $TR/trace; echo 1 > $TR/events/unionfs/unionfs_hazard/enable
touch "$B1/d/again"
echo 0 > $TR/events/unionfs/unionfs_hazard/enable
kill $cwdjob 2>/dev/null; wait $cwdjob 2>/dev/null
is "idx: after del= and add= of b1 a change in it is still traced, as branch 2" \
	"$(grep 'unionfs_hazard:.*name [^ ]*/d/again ' $TR/trace | grep -o ' branch [-0-9]* ' | sort -u)" " branch 2 "
check "idx: umount" umount "$M"

# coherency=none: no checks at all, by design (static branches); incgen refreshes
mkdir -p "$T/none"; branch_fs tmpfs "$T/none" 2
M=$T/none/m; mkdir -p "$M"; B0=$T/none/b0 B1=$T/none/b1
echo a > "$B1/f"
check "none: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=none" none "$M"
is "none: shown in /proc/mounts" "$(grep -c " $M unionfs .*coherency=none" /proc/mounts)" 1
stat "$M/f" > /dev/null; stat "$M/g" > /dev/null 2>&1
echo b > "$B1/g"
is "none: a cached negative name stays negative (no checks)" "$(stat -c %n "$M/g" 2>&1 | grep -c 'No such file')" 1
check "none: remount,incgen" mount -i -o remount,incgen "$M"
is "none: after incgen the name is found" "$(cat "$M/g")" b
is "none: coherency cannot change on remount" "$($S remount "$M" coherency=notify)" EINVAL
check "umount" umount "$M"

# a copy-up racing with a direct rewrite never settles on a mix of old and new data:
# the writer rewrites a 4 MiB lower file, each pass with one letter; the copy-up either
# gives a file of one letter or fails with ESTALE (and counts copyup_raced): while the
# writer holds the file open for writing, the copy-up cannot trust it and says ESTALE
mkdir -p "$T/race"; branch_fs tmpfs "$T/race" 2
M=$T/race/m; mkdir -p "$M"; B0=$T/race/b0 B1=$T/race/b1
head -c 4M /dev/zero | tr '\0' A > "$B1/big"
check "race: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
python3 - "$B1/big" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
end = time.time() + 8
i = 0
while time.time() < end:
    os.pwrite(fd, bytes([66 + i % 24]) * (4 << 20), 0)
    i += 1
PY
rw=$!
sleep 1
mixed=0 stale=0 good=0
for i in 1 2 3; do
	r=$($S truncate "$M/big" 4194304 2>&1)	# a setattr copy-up of the whole file
	if [[ $r == OK ]]; then
		n=$(python3 -c 'import sys; print(len(set(open(sys.argv[1], "rb").read())))' "$B0/big")
		if [[ $n == 1 ]]; then good=$((good + 1)); else mixed=$((mixed + 1)); fi
		break
	elif [[ $r == ESTALE ]]; then
		stale=$((stale + 1))
	else
		echo "# unexpected: $r"; mixed=$((mixed + 1)); break
	fi
done
wait $rw
if ((!good)); then
	is "race: after the writer closed the file, the copy-up succeeds" "$($S truncate "$M/big" 4194304)" OK
	is "race: ...and copies the branch file's last version" "$(cmp "$B0/big" "$B1/big" && echo same)" same
fi
is "race: copyup_raced counted" "$(( $(hz copyup_raced) >= 1 ))" 1
echo "# race: $good consistent copy-ups, $stale ESTALE, copyup_raced $(hz copyup_raced)"
is "race: copy-up under a direct rewrite is never a mix of two versions" "$mixed" 0
is "race: the copy-up finished or said ESTALE" "$(( good + stale >= 1 ))" 1
check "race: umount" umount "$M"
is "coherency=bogus is refused" "$($S mount none "$M" unionfs "dirs=$B0:$B1=ro,coherency=bogus")" EINVAL
is "coherency=bogus: one pr_warn line" "$(dmesg | tail -n 5 | grep -c "unknown coherency 'bogus'")" 1
finish
