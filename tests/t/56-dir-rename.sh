#!/bin/bash
# Directory rename without EXDEV (docs/concepts.md "Directory rename"): rename(2) of a
# directory whose contents live in a read-only branch succeeds, copying up only the
# directory (marked with trusted.unionfs.redirect), and everything inside keeps working.
# Differential: every operation is done on the union and on a plain tmpfs copy of the merged
# tree, errnos compared, then the whole trees (names, types, sizes, modes, contents), before
# and after umount/mount. Error cases as on a plain fs; the redirect tracepoint; the O(1)
# check (a lower directory of 100,000 entries against an empty one: ratio printed, not
# asserted).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
branch_fs tmpfs "$T" 2
M=$T/m P=$T/p B0=$T/b0 B1=$T/b1
mkdir -p "$M" "$P"
mount -t tmpfs -o size=256m plain "$P"

# the lower tree
mkdir -p "$B1/ld/sub/deep" "$B1/md" "$B1/dst" "$B1/ch" "$B1/ops/sub" "$B1/full" \
	"$B1/emptyd" "$B1/tgt" "$B1/back"
echo f1 > "$B1/ld/f1"; echo f2 > "$B1/ld/sub/f2"; echo f3 > "$B1/ld/sub/deep/f3"
echo x > "$B1/md/x"; echo y > "$B1/md/y"; echo z > "$B1/md/z"
mkdir -p "$B0/md"; echo w > "$B0/md/w"; : > "$B0/md/.wh.x"
echo c1 > "$B1/ch/c1"; echo dd > "$B1/dst/dd"
echo a > "$B1/ops/a"; echo b > "$B1/ops/b"; echo s > "$B1/ops/sub/s"
echo q > "$B1/full/q"; echo file > "$B1/file"; echo t > "$B1/tgt/t"
echo k > "$B1/back/k"
chmod 750 "$B1/ld/sub"; chmod 640 "$B1/ld/f1"

check "mount" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || finish
cp -a "$M/." "$P/"

# both SYSCALL ARGS...: the same call on the union and on the plain copy (paths relative)
both() {
	local op=$1 u p
	shift
	case $op in
	rename) u=$($S rename "$M/$1" "$M/$2"); p=$($S rename "$P/$1" "$P/$2") ;;
	rmdir|unlink|mkdir) u=$($S "$op" "$M/$1"); p=$($S "$op" "$P/$1") ;;
	create) u=$( (echo "$2" > "$M/$1") 2>&1 && echo OK); p=$( (echo "$2" > "$P/$1") 2>&1 && echo OK) ;;
	append) u=$( (echo "$2" >> "$M/$1") 2>&1 && echo OK); p=$( (echo "$2" >> "$P/$1") 2>&1 && echo OK) ;;
	esac
	echo "$u"
	[[ $u == "$p" ]] || echo "differs from the plain fs: $p"
}
tree() {	# tree DIR: one line per name (type, mode, size of files) and file contents
	(cd "$1" && find . -mindepth 1 \( -type d -printf '%p d %m\n' \) -o \
		\( ! -type d -printf '%p %y %s %m\n' \) | LC_ALL=C sort
	 find . -type f | LC_ALL=C sort | xargs -r md5sum)
}
same_tree() {	# (no process substitution: its cd into $M could outlive diff and busy umount)
	local d
	tree "$P" > "$T/tree.p"; tree "$M" > "$T/tree.m"
	d=$(diff "$T/tree.p" "$T/tree.m")
	if [[ -z $d ]]; then ok "$1"; else not_ok "$1" "$d"; fi
}
rd() { python3 -c 'import os,sys
try: print(os.getxattr(sys.argv[1], "trusted.unionfs.redirect").decode())
except OSError as e: print("none")' "$1"; }

TR=/sys/kernel/tracing
[[ -d $TR/events/unionfs/unionfs_redirect ]] && echo 1 > "$TR/events/unionfs/unionfs_redirect/enable"
echo > "$TR/trace" 2>/dev/null

# a lower-only directory
is "rename of a lower-only directory" "$(both rename ld ld2)" OK
is "its contents show under the new name" "$(cat "$M/ld2/f1" "$M/ld2/sub/deep/f3" 2>&1)" "f1
f3"
is "the old name is gone" "$($S open "$M/ld" r)" ENOENT
is "only the directory was copied up" "$(cd "$B0/ld2" && find . -mindepth 1 | wc -l)" 0
is "redirect marker in the writable branch" "$(rd "$B0/ld2")" ld
is "old name whited out" "$(test -f "$B0/.wh.ld" && echo wh)" wh
is "redirected directory is not opaque" "$(test -e "$B0/ld2/.wh.__dir_opaque" && echo opaque)" ""
is "the marker is not visible through the union" "$($S getxattr "$M/ld2" trusted.unionfs.redirect)" \
	"$($S getxattr "$M/dst" trusted.unionfs.redirect)"
if [[ -r $TR/trace ]]; then
	is "tracepoint: redirect set" "$(grep -c 'unionfs_redirect:.*redirect ld set err 0' "$TR/trace")" 1
	ls "$M/ld2/sub" > /dev/null
	echo 2 > /proc/sys/vm/drop_caches
	ls "$M/ld2" > /dev/null
	is "tracepoint: redirect followed" "$(grep -q 'unionfs_redirect:.*name ld2 branch 1 redirect ld followed' "$TR/trace" && echo yes)" yes
	echo 0 > "$TR/events/unionfs/unionfs_redirect/enable"
fi

# a merged directory with a whiteout inside
is "rename of a merged directory" "$(both rename md md2)" OK
is "merged listing after the rename" "$(names "$M/md2" | tr '\n' ' ')" "w y z "

# a move into another (lower) directory, of a subdirectory of a renamed one
is "move a redirected subdirectory into another dir" "$(both rename ld2/sub dst/sub)" OK
is "its redirect names the original lower path" "$(rd "$B0/dst/sub")" ld/sub
is "deep file reachable after the move" "$(cat "$M/dst/sub/deep/f3" 2>&1)" f3

# chains and rename back
is "chain 1: ch -> ch2" "$(both rename ch ch2)" OK
is "chain 2: ch2 -> ch3" "$(both rename ch2 ch3)" OK
is "chain keeps the first lower path" "$(rd "$B0/ch3")" ch
is "chain 3: ch3 -> ch (back)" "$(both rename ch3 ch)" OK
is "content after the round trip" "$(cat "$M/ch/c1" 2>&1)" c1
is "back: rename there and back at once" "$(both rename back back2)$(both rename back2 back)" OKOK
# into a redirected directory
is "move into a redirected directory" "$(both rename back md2/back)" OK
is "a redirected dir inside a redirected dir" "$(cat "$M/md2/back/k" 2>&1)" k

# changes inside a renamed directory
is "rename ops -> ops2" "$(both rename ops ops2)" OK
is "create inside" "$(both create ops2/new new)" OK
is "unlink a lower file inside" "$(both unlink ops2/a)" OK
is "append to a lower file inside (copy-up)" "$(both append ops2/b more)" OK
is "copy-up lands under the new name" "$(cat "$B0/ops2/b" 2>&1)" "b
more"
is "mkdir inside" "$(both mkdir ops2/nd)" OK
is "unlink in a lower subdirectory" "$(both unlink ops2/sub/s)" OK
is "rmdir of the emptied lower subdirectory" "$(both rmdir ops2/sub)" OK
is "lower data untouched" "$(cat "$B1/ops/a" "$B1/ops/b")" "a
b"

# errors as on a plain file system
is "rmdir of a renamed non-empty directory" "$(both rmdir ld2)" ENOTEMPTY
is "rename onto a non-empty directory" "$(both rename ops2 full)" ENOTEMPTY
is "rename a directory onto a file" "$(both rename ops2 file)" ENOTDIR
is "rename a file onto a directory" "$(both rename file emptyd)" EISDIR
is "rename a directory into itself" "$(both rename ops2 ops2/nd/x)" EINVAL
is "rename onto an empty lower directory" "$(both rename tgt emptyd)" OK
is "its contents, not the replaced dir's" "$(names "$M/emptyd" | tr '\n' ' ')" "t "
is "rename to another mount" "$($S rename "$M/ops2" "$P/elsewhere")" EXDEV

same_tree "whole tree equals the plain copy"
is "no temporary names left" "$(find "$B0" -name '.wh..wh.unionfs*' | wc -l)" 0
check "umount" umount "$M"
check "mount again" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M"
same_tree "after umount/mount, whole tree equals the plain copy"
is "rename back after remount" "$(both rename md2 md)" OK
is "whiteout inside still honoured" "$(names "$M/md" | tr '\n' ' ')" "back w y z "
same_tree "after the last rename, whole tree equals the plain copy"

# three branches: the rename lands in the lower writable branch b1; a later move of a file
# from b0 into the renamed dir copies it to b0 (without the marker): the redirect of b1's copy
# must still lead to b2's contents
umount "$M"
mkdir -p "$T/3"; branch_fs tmpfs "$T/3" 3
mkdir -p "$T/3/b2/d3"; echo d3 > "$T/3/b2/d3/x"; echo top > "$T/3/b0/f0"
check "3 branches: mount" mount -i -t unionfs -o "dirs=$T/3/b0=rw:$T/3/b1=rw:$T/3/b2=ro" none "$M"
is "3 branches: rename of a b2-only directory" "$($S rename "$M/d3" "$M/e3")" OK
is "3 branches: redirect set in b1" "$(rd "$T/3/b1/e3")" d3
is "3 branches: move a b0 file into it" "$($S rename "$M/f0" "$M/e3/f0")" OK
is "3 branches: copy in b0 has no marker" "$(test -d "$T/3/b0/e3" && rd "$T/3/b0/e3")" none
is "3 branches: both entries show" "$(names "$M/e3" | tr '\n' ' ')" "f0 x "
umount "$M"
check "3 branches: mount again" mount -i -t unionfs -o "dirs=$T/3/b0=rw:$T/3/b1=rw:$T/3/b2=ro" none "$M"
is "3 branches: after umount/mount" "$(names "$M/e3" | tr '\n' ' ')$(cat "$M/e3/x" 2>&1)" "f0 x d3"

# a directory renamed again, higher than the copy that carries its redirect (review 21): X of
# b2 renamed to Y (made in b1: Y redirected to X, .wh.X in b1), Y/g added in b1, then Y renamed
# over z (in b0): z's redirect names Y as b1 has it, and a lookup follows b1's redirect on.
# Before, z got X: b93b8db showed only b2's f (g lost), 2090060 nothing (b1's .wh.X hid b2)
umount "$M"
mkdir -p "$T/5"; branch_fs tmpfs "$T/5" 3
mkdir -p "$T/5/b2/X"; echo f > "$T/5/b2/X/f"
check "over z: mount" mount -i -t unionfs -o "dirs=$T/5/b0=rw:$T/5/b1=rw:$T/5/b2=ro" none "$M"
is "over z: rename X Y (in b1)" "$($S rename "$M/X" "$M/Y")" OK
is "over z: Y's redirect in b1 is X" "$(rd "$T/5/b1/Y")" X
umount "$M"
echo g > "$T/5/b1/Y/g"; mkdir "$T/5/b0/z"
check "over z: mount again" mount -i -t unionfs -o "dirs=$T/5/b0=rw:$T/5/b1=rw:$T/5/b2=ro" none "$M"
is "over z: rename Y z (z in b0, above b1's redirect)" "$($S rename "$M/Y" "$M/z")" OK
is "over z: z's redirect is Y" "$(rd "$T/5/b0/z")" Y
is "over z: z shows f and g" "$(names "$M/z" | tr '\n' ' ')" "f g "
echo 2 > /proc/sys/vm/drop_caches
is "over z: the same after a cache drop" "$(names "$M/z" | tr '\n' ' ')$(cat "$M/z/f" "$M/z/g" | tr -d '\n')" "f g fg"
umount "$M"
check "over z: mount once more" mount -i -t unionfs -o "dirs=$T/5/b0=rw:$T/5/b1=rw:$T/5/b2=ro" none "$M"
is "over z: after umount/mount" "$(names "$M/z" | tr '\n' ' ')" "f g "
is "over z: no redirect hazard" "$(awk '$1 == "redirect" {print $2}' "/sys/fs/unionfs/$(mountpoint -d "$M")/hazards")" 0
umount "$M"
# the same through an ancestor: oldA renamed in b1 (redirect oldA, whiteout .wh.oldA there),
# then A/d renamed over z in b0: its redirect is A/d, and the walk follows A's redirect in b1
mkdir -p "$T/4"; branch_fs tmpfs "$T/4" 3
mkdir -p "$T/4/b2/oldA/d" "$T/4/b0/z"; echo f > "$T/4/b2/oldA/d/f"
check "ancestor: mount" mount -i -t unionfs -o "dirs=$T/4/b0=rw:$T/4/b1=rw:$T/4/b2=ro" none "$M"
is "ancestor: rename oldA A (in b1)" "$($S rename "$M/oldA" "$M/A")" OK
is "ancestor: rename A/d z (z in b0)" "$($S rename "$M/A/d" "$M/z")" OK
is "ancestor: z's redirect is A/d" "$(rd "$T/4/b0/z")" A/d
echo 2 > /proc/sys/vm/drop_caches
is "ancestor: z shows f after a cache drop" "$(names "$M/z" | tr '\n' ' ')$(cat "$M/z/f")" "f f"
is "ancestor: A is empty" "$(names "$M/A" | wc -l)" 0
is "ancestor: no redirect hazard" "$(awk '$1 == "redirect" {print $2}' "/sys/fs/unionfs/$(mountpoint -d "$M")/hazards")" 0

# a copy into a branch below a renamed directory's redirect (review 22): A (b2) renamed over Q
# (b0, redirect A), then Q/f1 renamed to Q/f2 in b1, where nothing is looked up under the name
# Q: f1 showed again at once and f2 was gone; the same for an append to Q/f1 (lost after a
# cache drop). The copies now go to b0, where Q shows from
umount "$M"
mkdir -p "$T/6"; branch_fs tmpfs "$T/6" 3
mkdir -p "$T/6/b2/A/sub" "$T/6/b0/Q"; echo one > "$T/6/b2/A/f1"; echo two > "$T/6/b2/A/f9"
echo 8 > "$T/6/b2/A/f8"
check "between: mount" mount -i -t unionfs -o "dirs=$T/6/b0=rw:$T/6/b1=rw:$T/6/b2=ro" none "$M"
is "between: rename A Q (Q in b0: redirect A)" "$($S rename "$M/A" "$M/Q")" OK
is "between: rename Q/f1 Q/f2" "$($S rename "$M/Q/f1" "$M/Q/f2")" OK
is "between: rm Q/f8 (its whiteout in b0)" "$($S unlink "$M/Q/f8")" OK
is "between: rmdir Q/sub" "$($S rmdir "$M/Q/sub")" OK
is "between: Q shows f2, f9" "$(names "$M/Q" | tr '\n' ' ')" "f2 f9 "
check "between: append to Q/f9" sh -c "echo x >> '$M/Q/f9'"
echo 2 > /proc/sys/vm/drop_caches
is "between: after a cache drop" "$(names "$M/Q" | tr '\n' ' ')$(cat "$M/Q/f2" "$M/Q/f9" | tr '\n' ' ')" "f2 f9 one two x "
is "between: nothing made in b1" "$(ls -A "$T/6/b1")" ""

# O(1): a lower directory of 100,000 entries against an empty one (ratio printed only)
umount "$M"
mkdir -p "$B1/big" "$B1/empty"
(cd "$B1/big" && seq -f 'f%g' 100000 | xargs touch)
check "mount for the timing" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M"
# mv -T: rename(2) from a light process (mv would copy after EXDEV: the unfixed module's cost)
t0=$(date +%s%N); mv -T "$M/empty" "$M/empty2"; t1=$(date +%s%N)
mv -T "$M/big" "$M/big2"; t2=$(date +%s%N)
is "rename of an empty lower dir" "$(test -d "$M/empty2" && $S open "$M/empty" r)" ENOENT
is "rename of a 100,000-entry lower dir" "$(test -d "$M/big2" && $S open "$M/big" r)" ENOENT
is "100,000 entries after the rename" "$(ls "$M/big2" | wc -l)" 100000
is "nothing of it copied" "$(ls -A "$B0/big2" | wc -l)" 0
e=$(((t1 - t0) / 1000)) b=$(((t2 - t1) / 1000))
echo "# timing: empty ${e} us, 100,000 entries ${b} us, ratio $(awk -v a="$b" -v c="$e" 'BEGIN {printf "%.2f", c ? a / c : 0}') # not asserted"
umount "$M"
umount "$P"
finish
