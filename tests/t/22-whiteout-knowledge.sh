#!/bin/bash
# Whiteout knowledge (src/lookup.c): a name absent from a lower directory known to hold no
# ".wh." entry costs no ".wh.NAME" probe there (unionfs_lookup's whskip counts those). What is
# checked: the probe is skipped where the knowledge holds (learnt by a lookup on a read-only
# branch, by a merged readdir on any branch), and the knowledge never hides a whiteout:
# whiteouts made directly in the branch (fresh and cached names), removed again, and made by
# the union itself; on tmpfs and ext4 branches.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop

TR=/sys/kernel/tracing
EV=$TR/events/unionfs/unionfs_lookup
[[ -d $EV ]] || skip_all "no $EV (tracefs not mounted or module without tracepoints)"
trap 'echo 0 > "$EV/enable"; _t_cleanup' EXIT

# lk PATH : stat PATH with the lookup event on; prints "probed N whskip N RESULT" of the
# lookup of PATH's last component ("none" if that name was not looked up: a cached dentry)
lk() {
	local name=${1##*/} got
	echo 0 > "$TR/tracing_on"
	: > "$TR/trace"
	echo 1 > "$EV/enable"
	echo 1 > "$TR/tracing_on"
	stat "$1" > /dev/null 2>&1
	echo 0 > "$EV/enable"
	got=$(sed -n "s|^.* unionfs_lookup: .*/$name branches [0-9.]* probed \([0-9]*\) whskip \([0-9]*\) -> \([a-z]*\) .*|probed \1 whskip \2 \3|p" \
		"$TR/trace" | tail -n 1)
	echo "${got:-none}"
}
gone() { [[ ! -e $1 ]]; }

for fs in tmpfs ext4; do
	D=$T/$fs
	mkdir -p "$D/m"
	branch_fs $fs "$D" 3 || { not_ok "$fs: make branches"; continue; }
	B0=$D/b0 B1=$D/b1 B2=$D/b2 M=$D/m
	# b0 (rw) over b1 (ro) over b2 (ro)
	mkdir -p "$B1/k" "$B2/k"; echo own > "$B1/k/own"
	for n in x y z u; do echo "$n" > "$B2/k/$n"; done
	mkdir -p "$B1/w" "$B2/w"; touch "$B1/w/.wh.hid"; echo h > "$B2/w/hid"; echo v > "$B2/w/vis"
	mkdir -p "$B0/r" "$B1/r"; echo f > "$B1/r/f"
	mkdir -p "$B0/top"; touch "$B0/top/.wh.s"	# a stale whiteout where nothing is below
	sleep 0.2	# every branch dir's ctime out of the knowledge's trust window
	check "$fs: mount b0 (rw) : b1 (ro) : b2 (ro)" \
		mount -i -t unionfs -o "dirs=$B0:$B1=ro:$B2=ro" none "$M" || continue

	# learnt by the lookup itself on read-only branches
	is "$fs: k/x: b1/k read, no whiteout: its .wh.x probe skipped" "$(lk "$M/k/x")" "probed 2 whskip 1 positive"
	is "$fs: k/nothere: skipped in b1 (known) and b2 (last branch: nothing to hide)" "$(lk "$M/k/nothere")" "probed 2 whskip 2 negative"
	is "$fs: w/vis: b1/w holds a whiteout: probed there" "$(lk "$M/w/vis")" "probed 2 whskip 0 positive"
	check "$fs: w/hid still whited out by b1" gone "$M/w/hid"

	# a whiteout made directly in the branch is seen at once (fresh name and cached name)
	touch "$B1/k/.wh.y" "$B1/k/.wh.x"
	check "$fs: direct .wh.y in b1/k hides k/y (never looked up)" gone "$M/k/y"
	check "$fs: direct .wh.x in b1/k hides k/x (cached before)" gone "$M/k/x"
	check "$fs: k/z still visible" test -e "$M/k/z"
	sleep 0.2
	is "$fs: k/u after the change: b1/k relearnt, holds whiteouts: probed" "$(lk "$M/k/u")" "probed 2 whskip 0 positive"
	rm "$B1/k/.wh.y" "$B1/k/.wh.x"
	check "$fs: direct whiteouts removed: k/y visible again" test -e "$M/k/y"
	check "$fs: ... and k/x" test -e "$M/k/x"
	sleep 0.2
	is "$fs: k/nothere2: b1/k clean again: skipped" "$(lk "$M/k/nothere2")" "probed 2 whskip 2 negative"

	# the union's own whiteout (in b0, rw)
	check "$fs: rm k/z through the union" rm "$M/k/z"
	check "$fs: k/z gone (whiteout in b0/k)" test -e "$B0/k/.wh.z"
	check "$fs: k/z not visible" gone "$M/k/z"
	check "$fs: k/z not listed" bash -c "! ls -A '$M/k' | grep -qx z"
	sleep 0.2
	ls -A "$M/k" > /dev/null
	is "$fs: k/new: b0/k holds .wh.z (probed), b1 and b2 skipped" "$(lk "$M/k/new")" "probed 3 whskip 2 negative"
	echo 2 > /proc/sys/vm/drop_caches	# the union's dentries go: k/z is looked up afresh
	check "$fs: k/z still not visible after dentries were dropped" gone "$M/k/z"

	# learnt by a merged readdir on the read-write branch
	is "$fs: r/g: b0 is rw (not read by lookups): probed; b1 last" "$(lk "$M/r/g")" "probed 2 whskip 1 negative"
	ls -A "$M/r" > /dev/null
	is "$fs: r/h after a readdir of r: b0/r known clean too" "$(lk "$M/r/h")" "probed 2 whskip 2 negative"
	check "$fs: r/f visible" test -e "$M/r/f"

	# the last branch of a range is not probed: a whiteout there hides nothing
	is "$fs: top/s: b0 is top's last branch: not probed" "$(lk "$M/top/s")" "probed 1 whskip 1 negative"
	check "$fs: mkdir top/s next to the stale .wh.s" mkdir "$M/top/s"
	check "$fs: top/s is a directory" test -d "$M/top/s"
	check "$fs: top/s listed" bash -c "ls -A '$M/top' | grep -qx s"
	check "$fs: umount" umount "$M"
done
finish
