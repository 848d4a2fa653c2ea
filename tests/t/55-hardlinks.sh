#!/bin/bash
# Hard links across copy-up (docs/concepts.md "Hard links"): a lower file with several names,
# copied up through one of them, is one file through every name (content, st_ino, st_nlink
# counting the names the union shows), after umount/mount too; unlink and new links behave
# as on a plain file system (link structure, tar, du compared with a plain copy that went
# through the same operations); a file with one name leaves nothing in the index; two
# appends racing through two names of one lower group both land in the one file.
# On tmpfs and on ext4 branches.
# timeout: 420
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
modprobe loop
mk_tmpdir
dmesg_mark

IX=.wh..wh.unionfs.index
# one line per file (not directory) group under DIR: "nlink name name...", names sorted
groups() {
	(cd "$1" && find . -mindepth 1 ! -type d -printf '%i %n %p\n') | LC_ALL=C sort -k3 |
		awk '{g[$1] = g[$1] " " $3; n[$1] = $2} END {for (k in g) print n[k] g[k]}' |
		LC_ALL=C sort
}
inos() { stat -c %i "$@" | sort -u | wc -l; }
nlinks() { stat -c %h "$@" | tr '\n' ' '; }
tarlinks() { tar -cf - -C "$1" . | tar -tvf - | grep -c ' link to '; }
dus() { du -s "$1" | cut -f1; }

run_case() {
	local fs=$1 D=$T/$1
	mkdir -p "$D/m"
	branch_fs "$fs" "$D" 3 || { not_ok "$fs: make branches"; return; }
	local UP=$D/b0 LO=$D/b1 P=$D/b2 M=$D/m
	local OPTS="dirs=$UP=rw:$LO=ro"
	mkdir -p "$LO/sub"
	echo old > "$LO/a"; ln "$LO/a" "$LO/b"; ln "$LO/a" "$LO/sub/c"
	echo single > "$LO/one"
	cp -a "$LO/." "$P/"
	check "$fs: mount" mount -i -t unionfs -o "$OPTS" none "$M" || return
	is "$fs: before copy-up: nlink 3" "$(nlinks "$M/a" "$M/b" "$M/sub/c")" "3 3 3 "

	local TRE=/sys/kernel/tracing/events/unionfs/unionfs_index
	[[ -d $TRE ]] && { echo 1 > "$TRE/enable"; echo > /sys/kernel/tracing/trace; }
	echo x >> "$M/a"; echo x >> "$P/a"
	if [[ -d $TRE ]]; then
		is "$fs: tracepoint unionfs_index: group created by the copy-up of a" \
			"$(grep -c 'unionfs_index: .* name a branch 0 group .* created err 0' /sys/kernel/tracing/trace)" 1
		echo 0 > "$TRE/enable"
	else
		skip "$fs: tracepoint unionfs_index" "no tracefs"
	fi
	is "$fs: append through a: b shows it" "$(cat "$M/b" 2>&1 | tr '\n' ' ')" "old x "
	is "$fs: append through a: sub/c shows it" "$(cat "$M/sub/c" 2>&1 | tr '\n' ' ')" "old x "
	is "$fs: a, b, sub/c: one st_ino" "$(inos "$M/a" "$M/b" "$M/sub/c")" 1
	is "$fs: a, b, sub/c: st_nlink 3" "$(nlinks "$M/a" "$M/b" "$M/sub/c")" "3 3 3 "
	chmod 640 "$M/b"; chmod 640 "$P/b"
	is "$fs: chmod through b shows on a" "$(stat -c %a "$M/a")" 640
	echo y >> "$M/sub/c"; echo y >> "$P/sub/c"
	is "$fs: append through sub/c shows on a" "$(cat "$M/a" 2>&1 | tr '\n' ' ')" "old x y "
	is "$fs: link groups as on a plain copy" "$(groups "$M")" "$(groups "$P")"
	is "$fs: lower branch untouched" "$(cat "$LO/b" | tr '\n' ' ')" "old "
	is "$fs: the index holds the group" "$(ls -A "$UP/$IX" 2>/dev/null | wc -l)" 1
	echo more >> "$M/one"
	is "$fs: a file with nlink 1 leaves nothing in the index" \
		"$(ls -A "$UP/$IX" 2>/dev/null | wc -l)" 1
	is "$fs: the index is not shown" "$(ls -A "$M" | grep -c wh)" 0
	check_fail "$fs: the index cannot be opened through the union" - stat "$M/$IX"
	# the index's own xattrs are on the branch inode, not the file's
	local ent; ent=$(ls -A "$UP/$IX" 2>/dev/null | head -n 1)
	is "$fs: the index entry carries trusted.unionfs.nlink" \
		"$(getfattr --absolute-names -m '^trusted\.unionfs\.' "$UP/$IX/$ent" 2>&1 | grep -c '^trusted\.unionfs\.')" 2
	is "$fs: getfattr -d -m - through the union lists no trusted.unionfs.*" \
		"$(getfattr --absolute-names -d -m - "$M/a" 2>&1 | grep -c 'trusted\.unionfs')" 0
	check_fail "$fs: reading trusted.unionfs.nlink through the union" EOPNOTSUPP \
		getfattr --absolute-names -n trusted.unionfs.nlink "$M/a"
	check_fail "$fs: setting trusted.unionfs.nlink through the union" EOPNOTSUPP \
		setfattr -n trusted.unionfs.nlink -v 9 "$M/a"
	check_fail "$fs: removing trusted.unionfs.origin through the union" EOPNOTSUPP \
		setfattr -x trusted.unionfs.origin "$M/a"
	is "$fs: st_nlink unchanged by those attempts" "$(nlinks "$M/a" "$M/b" "$M/sub/c")" "3 3 3 "
	check "$fs: another trusted xattr can still be set" setfattr -n trusted.t1 -v v "$M/a"
	is "$fs: ... and is listed through the union" \
		"$(getfattr --absolute-names -d -m - "$M/b" 2>&1 | grep -c 'trusted\.t1')" 1
	setfattr -x trusted.t1 "$M/a"	# (on ext4 a third xattr may take a block: du below)

	check "$fs: umount" umount "$M"
	check "$fs: mount again" mount -i -t unionfs -o "$OPTS" none "$M"
	is "$fs: after remount: b, sub/c content" \
		"$(cat "$M/b" "$M/sub/c" 2>&1 | tr '\n' ' ')" "old x y old x y "
	is "$fs: after remount: one st_ino" "$(inos "$M/a" "$M/b" "$M/sub/c")" 1
	is "$fs: after remount: st_nlink 3" "$(nlinks "$M/a" "$M/b" "$M/sub/c")" "3 3 3 "
	is "$fs: after remount: groups as on the plain copy" "$(groups "$M")" "$(groups "$P")"

	check "$fs: rm b" rm "$M/b"
	rm "$P/b"
	is "$fs: after rm b: nlink 2 on a, sub/c" "$(nlinks "$M/a" "$M/sub/c")" "2 2 "
	check_fail "$fs: b is gone" ENOENT stat "$M/b"
	check "$fs: ln a d" ln "$M/a" "$M/d"
	ln "$P/a" "$P/d"
	is "$fs: after ln a d: nlink 3" "$(nlinks "$M/a" "$M/d" "$M/sub/c")" "3 3 3 "
	is "$fs: after ln a d: one st_ino" "$(inos "$M/a" "$M/d" "$M/sub/c")" 1
	check "$fs: mv sub/c e" mv "$M/sub/c" "$M/e"
	mv "$P/sub/c" "$P/e"
	is "$fs: after mv: nlink 3" "$(nlinks "$M/a" "$M/d" "$M/e")" "3 3 3 "
	is "$fs: groups as on the plain copy after rm, ln, mv" "$(groups "$M")" "$(groups "$P")"
	is "$fs: tar sees the links as on the plain copy" "$(tarlinks "$M")" "$(tarlinks "$P")"
	is "$fs: du -s as on the plain copy" "$(dus "$M")" "$(dus "$P")"
	rm -rf "$D/rs-m" "$D/rs-p"
	check "$fs: rsync -aH of the union" rsync -aH "$M/" "$D/rs-m/"
	rsync -aH "$P/" "$D/rs-p/"
	is "$fs: rsync -H copies the link groups of the plain copy" "$(groups "$D/rs-m")" "$(groups "$D/rs-p")"
	check "$fs: umount" umount "$M"
	check "$fs: mount again" mount -i -t unionfs -o "$OPTS" none "$M"
	is "$fs: after remount: groups as on the plain copy" "$(groups "$M")" "$(groups "$P")"
	is "$fs: after remount: content" "$(cat "$M/a" "$M/d" "$M/e" | tr '\n' ' ')" \
		"old x y old x y old x y "
	rm "$M/a" "$M/d" "$M/e"
	is "$fs: every name removed: none shown" "$(ls "$M" | tr '\n' ' ')" "one sub "
	check "$fs: umount" umount "$M"
	# the group's entry is now used by no name: unionctl --fsck finds it, --repair removes it
	is "$fs: fsck: the entry is unused" \
		"$(build/unionctl --fsck "$UP" "$LO" | grep -c '^unused-index-entry')" 1
	build/unionctl --fsck --repair "$UP" "$LO" > /dev/null
	is "$fs: fsck --repair: exit 1 (repaired), the index empty" \
		"$?:$(ls -A "$UP/$IX" | wc -l)" "1:0"
}

run_case tmpfs
run_case ext4

# link(2) where the new name's directory is higher than the source (udiff seed 3028): the
# link goes where the source is (its directory copied there, as rename does), and the
# source's other names stay the same file; before, EXDEV. Only where the new name would be
# hidden there (a whiteout above) does a one-name source move up; one with other names
# gets EXDEV then (moving it would split them).
L=$T/link
mkdir -p "$L/m"
branch_fs tmpfs "$L" 4 || not_ok "link: make branches"
echo f > "$L/b3/f"; ln "$L/b3/f" "$L/b3/f2"
echo s > "$L/b3/s"
mkdir -p "$L/b1/d"; echo w > "$L/b1/w"; echo w2 > "$L/b1/w2"
LDIRS="dirs=$L/b0=rw:$L/b1=ro:$L/b2=rw:$L/b3=rw"
check "link: mount" mount -i -t unionfs -o "$LDIRS" none "$L/m"
check "link: mkdir c (in b0)" mkdir "$L/m/c"
check "link: ln f c/f (f, f2 in b3, c in b0)" ln "$L/m/f" "$L/m/c/f"
check "link: ln f d/g (d in ro b1 only)" ln "$L/m/f" "$L/m/d/g"
links_same() {	# f, f2, c/f, d/g: one inode and count; one content
	echo x >> "$L/m/c/f"
	echo "$(stat -c '%i %h' "$L/m/f" "$L/m/f2" "$L/m/c/f" "$L/m/d/g" | sort -u | wc -l)" \
		"$(stat -c %h "$L/m/f")" "$(cat "$L/m/f2" | tr '\n' ' ')"
}
is "link: f, f2, c/f, d/g: one inode, nlink 4, one content" "$(links_same)" "1 4 f x "
is "link: all four names in b3, where f was" \
	"$(stat -c %h "$L/b3/f" "$L/b3/f2" "$L/b3/c/f" "$L/b3/d/g" 2>&1 | tr '\n' ' ')" "4 4 4 4 "
check "link: rm w (whiteout in b0)" rm "$L/m/w"
check "link: rm w2 (whiteout in b0)" rm "$L/m/w2"
check "link: ln s w (one name, w whited out in b0): s moves up" ln "$L/m/s" "$L/m/w"
is "link: s and w: one inode, nlink 2, in b0" \
	"$(stat -c '%i %h' "$L/m/s" "$L/m/w" | sort -u | wc -l) $(stat -c %h "$L/b0/s" "$L/b0/w" 2>&1 | tr '\n' ' ')" "1 2 2 "
check_fail "link: ln f w2 (f has other names, w2 whited out above it): EXDEV" EXDEV ln "$L/m/f" "$L/m/w2"
is "link: f keeps its 4 names after the refusal" "$(stat -c %h "$L/m/f") $(ls "$L/m/w2" 2>&1 | grep -c 'No such')" "4 1"
check "link: umount" umount "$L/m"
check "link: mount again" mount -i -t unionfs -o "$LDIRS" none "$L/m"
is "link: after remount: one inode, nlink 4, one content" "$(links_same)" "1 4 f x x "
check "link: umount" umount "$L/m"

# two writable branches: a name of a group, copied up into the upper one of them (its index is
# in the lower one), is copied as a file of its own (docs/concepts.md "Not covered"); its count
# must be its own, not the group's (udiff seed 3018: st_nlink 0 for a shown name)
W=$T/tworw
mkdir -p "$W/m"
branch_fs tmpfs "$W" 3 || not_ok "tworw: make branches"
mkdir -p "$W/b2/a" "$W/b2/d" "$W/b0/b"
echo g > "$W/b2/a/c"; ln "$W/b2/a/c" "$W/b2/d/e"; echo t > "$W/b0/b/e"
check "tworw: mount" mount -i -t unionfs -o "dirs=$W/b0=rw:$W/b1=rw:$W/b2=ro" none "$W/m"
check "tworw: chmod a/c (group copy-up into b1)" chmod 600 "$W/m/a/c"
check "tworw: rm d/e (the group's other lower name)" rm "$W/m/d/e"
is "tworw: a/c: nlink 1" "$(stat -c %h "$W/m/a/c")" 1
check "tworw: mv a/c b/e (b/e in b0: a/c copied into b0)" mv "$W/m/a/c" "$W/m/b/e"
is "tworw: b/e: nlink 1, content g" "$(stat -c %h "$W/m/b/e") $(cat "$W/m/b/e")" "1 g"
is "tworw: b/e in b0" "$(cat "$W/b0/b/e")" g
check "tworw: umount" umount "$W/m"

# a lower group's name renamed over a name of a branch above the group's index branch (b2):
# it was given its own link in b2, then copied up into b0 in one rename(2) (udiff seed 3147:
# the second copy-up read the first one's copy, still open for writing: ESTALE, 6 false
# copyup_raced). That copy left the group (b/a/e another file than e/b; udiff seed 740821):
# EXDEV now, as link(2), and nothing changes
C=$T/chain
mkdir -p "$C/m"
branch_fs tmpfs "$C" 4 || not_ok "chain: make branches"
mkdir -p "$C/b1/b/a" "$C/b3/e/e"
echo old > "$C/b1/b/a/e"; echo grp > "$C/b3/e/b"; ln "$C/b3/e/b" "$C/b3/e/e/a"
check "chain: mount" mount -i -t unionfs -o "dirs=$C/b0=rw:$C/b1=ro:$C/b2=rw:$C/b3=ro" none "$C/m"
is "chain: rename e/e/a -> b/a/e (b/a/e in b1, above the group's b2): EXDEV" \
	"$($S rename "$C/m/e/e/a" "$C/m/b/a/e")" EXDEV
is "chain: b/a/e is b1's, e/e/a and e/b are the group" \
	"$(cat "$C/m/b/a/e" "$C/m/e/e/a" "$C/m/e/b" | tr '\n' ' ')" "old grp grp "
is "chain: e/e/a and e/b are one file, nlink 2" "$(stat -c '%i %h' "$C/m/e/e/a")" \
	"$(stat -c '%i 2' "$C/m/e/b")"
is "chain: nothing copied up" "$(find "$C/b0" "$C/b2" -mindepth 1 ! -name '.wh..wh.unionfs*' | wc -l)" 0
is "chain: no copyup_raced hazard" "$(awk '$1 == "copyup_raced" {print $2}' "/sys/fs/unionfs/$(mountpoint -d "$C/m")/hazards")" 0
check "chain: umount" umount "$C/m"

# a group of a writable branch whose file system is read-only for now (review 21): the rename
# or link happened in b0 with a copy (another file, the group split); EROFS now, as the
# index answers for a read-only index branch
R=$T/rofs
mkdir -p "$R/m"
branch_fs tmpfs "$R" 2 || not_ok "rofs: make branches"
echo grp > "$R/b1/a"; ln "$R/b1/a" "$R/b1/c"; echo top > "$R/b0/x"
check "rofs: mount" mount -i -t unionfs -o "dirs=$R/b0=rw:$R/b1=rw" none "$R/m"
check "rofs: b1's file system read-only" mount -o remount,ro "$R/b1"
is "rofs: rename a over x (in b0): EROFS" "$($S rename "$R/m/a" "$R/m/x")" EROFS
is "rofs: rename a n: EROFS" "$($S rename "$R/m/a" "$R/m/n")" EROFS
is "rofs: link a y: EROFS" "$($S link "$R/m/a" "$R/m/y")" EROFS
is "rofs: nothing in b0 but x" "$(ls -A "$R/b0" | grep -v '^\.wh\.' | tr '\n' ' ')" "x "
is "rofs: a and c still one file" "$(stat -c '%i %h' "$R/m/a")" "$(stat -c '%i 2' "$R/m/c")"
check "rofs: b1 read-write again" mount -o remount,rw "$R/b1"
is "rofs: rename a n now" "$($S rename "$R/m/a" "$R/m/n")" OK
is "rofs: n and c one file, in b1" "$(stat -c '%i %h' "$R/m/n") $(cat "$R/b1/n")" "$(stat -c '%i 2' "$R/m/c") grp"
check "rofs: umount" umount "$R/m"

# the race: two appends through two names of one lower group, 200 groups
D=$T/race
mkdir -p "$D/m"
branch_fs tmpfs "$D" 2 || not_ok "race: make branches"
N=200
for ((i = 0; i < N; i++)); do
	echo o > "$D/b1/f$i.a"; ln "$D/b1/f$i.a" "$D/b1/f$i.b"
done
check "race: mount" mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=ro" none "$D/m"
# Few forks per group (two appends and one stat): under TCG each fork costs tens of ms, and
# the old loop's ten per group took 100-150 s, which a slow CI machine pushed past the limit.
race() {
	local i bad=0 M=$1 a b ino
	for ((i = 0; i < N; i++)); do
		(echo A >> "$M/f$i.a") 2>> "$M.err" &
		(echo B >> "$M/f$i.b") 2>> "$M.err" &
		wait
		mapfile -t a < "$M/f$i.a"
		mapfile -t b < "$M/f$i.b"
		ino=($(stat -c %i "$M/f$i.a" "$M/f$i.b"))
		[[ ${a[*]} == "${b[*]}" && ${ino[0]} == "${ino[1]}" ]] &&
			[[ ${a[*]} == "o A B" || ${a[*]} == "o B A" ]] ||
			{ echo "f$i: '${a[*]}' / '${b[*]}', st_ino ${ino[*]}"; bad=$((bad + 1)); }
	done
	echo "bad $bad"
}
# a hang must not eat the file's limit (the debug kernel is up to 6x slower)
rt=$(t_limit 200)
t0=$SECONDS
out=$(timeout -s KILL $rt bash -c "N=$N; $(declare -f race); race $D/m" 2>&1)
[[ $out == "bad 0" ]] || out="$(tail -n 5 <<< "$out") [after $((SECONDS - t0)) s, limit $rt s]"
is "race: both appends in the one file, one st_ino (of $N)" "$out" "bad 0"
is "race: no error to userspace" "$(head -c 300 "$D/m.err" 2>/dev/null)" ""
check "race: umount" umount "$D/m"

is "no oops, WARN or BUG in the kernel log" "$(dmesg_bad)" ""
finish
