#!/bin/bash
# Regression checks for differences found by tests/tools/udiff.py (the shrunk reproducers, each
# rebuilt with udiff.py's own mkentry/merge/op/compare): union view == reference view.
#  1. a non-directory in a middle branch does not end the merge of a directory: a file "a" in
#     b2 between dirs "a" in b1 and b3 must hide b3/a/d (docs/concepts.md lookup).
#  2. readdir d_ino != st_ino after a copy-up (copied-up file and its recreated parents).
#  3. names hard-linked on a read-only branch stop being one file after a copy-up of one name
#     (chown through one name; the other keeps the old owner) - the partition differs.
#  4. st_nlink of a file counts names hidden in its branch (shadowed or whited out): the
#     documented difference (docs/concepts.md hard links), allowed by udiff only within bounds
#     (a branch's count at the path, or for a copied-up group the lower group's count).
#  5. no false direct-modification report after a copy-up (udiff class hazard-dir_changed),
#  6. nor after a directory rename or an opaque parent copy-up.
#  7. a rename (or link) into a directory that must be copied to the source's writable branch,
#     where a file the directory shadows is in the way, fails with EEXIST: it goes higher.
#  8. a directory opened for reading is read from every branch copy: a lower copy the caller
#     may not read gives EACCES (documented), which udiff now counts as allowed.
#  9. a link group renamed out of the branch that keeps it became two files: EXDEV now.
# 10. a renamed directory's redirect passed a file or whiteout that ended its merge before.
# The seeds that found them run in 96 (CLEAN_SEEDS).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
# ud ARGS...: one udiff.py call in one persistent python (udiff.py batch): its output and status
coproc UDB { exec python3 "$PWD/tests/tools/udiff.py" batch 2>&1; }
ud() {
	local a
	shq "$@" >&"${UDB[1]}" || { echo "ud: the batch died"; return 99; }
	while IFS= read -r a <&"${UDB[0]}"; do
		[[ $a == $'\x1e'* ]] && return "${a#?}"
		printf '%s\n' "$a"
	done
	echo "ud: the batch died"
	return 99
}
dmesg_mark

setup() {	# setup N MODES: fresh tmpfs branches b0..b(N-1), ref and the union u under $T/$case
	local n=$1 i
	D=$T/c$((++case))
	mkdir -p "$D/u"
	for ((i = 0; i < n; i++)); do mkdir "$D/b$i"; mount -t tmpfs -o mode=755 udiff "$D/b$i"; done
	mkdir "$D/ref"; mount -t tmpfs -o mode=755 udiff "$D/ref"
}
ent() { ud mkentry "$D/$1" "$2"; }
union() { mount -i -t unionfs -o "dirs=$1" none "$D/u" && ud merge "$D/ref" "$D"/b[0-9]; }
both() {	# both UID OP: OP on the union and on the reference, with the same result
	local u r
	u=$(ud op "$1" "$D/u" "$2"); r=$(ud op "$1" "$D/ref" "$2")
	is "c$case: $2: the union's result is the reference's" "${u#"$D/u: "}" "${r#"$D/ref: "}"
}
allowed_nlink_only() {	# compare: the only difference is one ALLOWED nlink-hidden-names
	local out
	out=$(ud compare "$D/u" "$D/ref" "$D"/b[0-9]) && grep -qx 'ALLOWED nlink-hidden-names: 1' <<< "$out"
}
same() { check "$1" ud compare "$D/u" "$D/ref" "$D"/b[0-9]; }	# branches: documented allowances
case=0

setup 4
ent b1 '["file", "a/a/e", 416, 0, 0, 568, 62167091, 0]'
ent b2 '["file", "a", 493, 0, 0, 100, 103357581, 0]'
ent b3 '["file", "a/d", 493, 1000, 1000, 765, 936413668, 0]'
union "$D/b0=rw:$D/b1=ro:$D/b2=rw:$D/b3=ro"
same "a file a in b2 ends the merge of dir a (b1) before b3: no a/d in the view"
is "a/d not visible" "$(ls "$D/u/a")" "a"

setup 3
ent b2 '["file", "e/a/e", 416, 1000, 1000, 403, 413389930, 0]'
union "$D/b0=rw:$D/b1=rw:$D/b2=ro"
both 0 '["fallocate", "e/a/e", 0, 8192]'
same "after the copy-up of e/a/e (fallocate): d_ino == st_ino for e, e/a, e/a/e"

setup 2
ent b1 '["file", "b/c/b", 511, 1000, 1000, 2272, 912650859, 0]'
ent b1 '["link", "b/c/a", 0, 0, 0, "b/c/b"]'
union "$D/b0=rw:$D/b1=ro"
both 0 '["chown", "b/c/a", 0, 0, true]'
same "chown of one of two hard-linked lower names: both names show the new owner, still one file"

setup 2
ent b0 '["file", "d", 420, 1000, 1000, 270, 510611510, 0]'
ent b1 '["file", "b/b/a", 438, 1000, 1000, 262, 484711993, 0]'
ent b1 '["link", "d", 0, 1000, 1000, "b/b/a"]'
union "$D/b0=rw:$D/b1=ro"
same "st_nlink of b/b/a: the only difference is the documented one (its link d is shadowed by b0/d)"
is "st_nlink of b/b/a is the branch's count (docs/concepts.md hard links)" "$(stat -c %h "$D/u/b/b/a")" 2
check "udiff compare reports it as ALLOWED nlink-hidden-names" allowed_nlink_only
check_fail "udiff compare without the branches reports the st_nlink difference" "tree-nlink" ud compare "$D/u" "$D/ref"
both 0 '["unlink", "b/b/a"]'
same "after unlink of b/b/a: no difference left (d in b0 is another file)"

# ... and after a rename copies up a name of a lower group whose other names are hidden (seed
# 3020): the union counts the lower group's names (trusted.unionfs.origin), udiff follows it
setup 3
ent b0 '["file", "b", 420, 1000, 1000, 2136, 175355069, 0]'
ent b1 '["file", "a/c/a", 438, 0, 0, 396, 194100620, 0]'
ent b1 '["link", "b/e", 0, 0, 0, "a/c/a"]'
ent b1 '["link", "b/d/c", 0, 1000, 1000, "a/c/a"]'
ent b2 '["file", "e/a/c", 511, 1000, 1000, 2688, 478850186, 0]'
union "$D/b0=rw:$D/b1=ro:$D/b2=ro"
both 0 '["rename", "a/c/a", "e/b", 0]'
is "st_nlink of e/b after the rename: the lower group's 3 names" "$(stat -c %h "$D/u/e/b")" 3
check "udiff compare: the only difference is ALLOWED nlink-hidden-names (seed 3020)" allowed_nlink_only
check_fail "udiff compare without the branches reports it" "tree-nlink" ud compare "$D/u" "$D/ref"

# 5. no false direct-modification report after a copy-up (seeds 11, 13, 14): utime, or an
#    O_TRUNC write, copies e/c up; the next look at it must not count a branch change
hz() { awk '{ n += $2 } END { print n + 0 }' "/sys/fs/unionfs/$(mountpoint -d "$D/u")/hazards"; }
setup 3
ent b1 '["file", "e/c", 416, 0, 0, 1799, 565500520, 0]'
union "$D/b0=rw:$D/b1=ro:$D/b2=ro"
both 0 '["utime", "e/c", 267601377858984824]'
same "utime copies e/c up: same view"
ls -la "$D/u/e" > /dev/null; stat "$D/u/e/c" > /dev/null
is "utime copy-up: no direct modification reported (sysfs hazards)" "$(hz)" 0
setup 2
ent b1 '["file", "a/e/c", 384, 1000, 1000, 1501, 526392849, 0]'
union "$D/b0=rw:$D/b1=ro"
both 0 '["open", "a/e/c", 513, 438, 1000, 581189902]'
both 0 '["listdir", "a/e/c"]'
same "O_TRUNC write copies a/e/c up: same view"
is "O_TRUNC copy-up: no direct modification reported (sysfs hazards)" "$(hz)" 0
setup 3
ent b2 '["file", "d/a/a", 493, 0, 0, 1096, 161973833, 65536]'
ent b2 '["link", "d/d/d", 0, 0, 0, "d/a/a"]'
union "$D/b0=rw:$D/b1=ro:$D/b2=ro"
both 0 '["utime", "d/d/d", 864263693692555931]'
same "utime copies a hard-linked d/d/d up: same view"
stat "$D/u/d/a/a" "$D/u/d/d/d" > /dev/null
is "link-group copy-up: no direct modification reported (sysfs hazards)" "$(hz)" 0

# 6. ... nor after the union's own rename of a directory (made opaque) or the copy-up of a
#    parent directory below its range (an opaque copy) (seeds 3022, 3027, 3032)
setup 2
ent b0 '["file", "b/b/d", 420, 0, 0, 1911, 671754554, 65536]'
union "$D/b0=rw:$D/b1=ro"
same "initial view"
both 0 '["rename", "b/b", "b/e", 0]'
both 0 '["unlink", "b/e/d"]'
same "mv b/b b/e; rm b/e/d: same view"
is "directory rename: no direct modification reported (sysfs hazards)" "$(hz)" 0
setup 2
ent b1 '["file", "a", 493, 1000, 1000, 317, 772405157, 65536]'
union "$D/b0=rw:$D/b1=rw"
same "initial view"
both 0 '["mkdir", "d", 493]'
both 0 '["rename", "a", "d/n2", 0]'
both 0 '["symlink", "d/n2/e/d", "a"]'
same "mkdir d; mv a d/n2 (d copied to b1, opaque): same view"
is "opaque parent copy-up: no direct modification reported (sysfs hazards)" "$(hz)" 0

# 7. rename/link into b/d (only in b0) from c (only in b3, rw): the rename happens at b3, where
#    b/d is copied first; b3's file b, shadowed by b0's directory b, is in the way (EEXIST
#    before). Such a copy "does not fit" like one a whiteout would hide: the name goes to the
#    branch the directory shows from (seed 223652)
#    The same with the shadowed file in b2, between: the old module "succeeded" by making b/d
#    in b3, below the file that ends the directory's merge, so the name was gone once the
#    union's cache was dropped
for where in b3 b2; do
	for op in rename link; do
		setup 4
		ent b0 '["link", "b/d/b", 0, 0, 0, "b/e"]'
		ent b3 '["file", "e/d", 416, 0, 0, 2963, 950745900, 0]'
		ent "$where" '["file", "b", 416, 0, 0, 2963, 950745900, 0]'
		ent b3 '["file", "c", 384, 1000, 1000, 1617, 13099243, 0]'
		union "$D/b0=rw:$D/b1=ro:$D/b2=ro:$D/b3=rw"
		same "initial view"
		if [[ $op == rename ]]; then both 0 '["rename", "c", "b/d/d", 0]'
		else both 0 '["link", "c", "b/d/d"]'; fi
		echo 2 > /proc/sys/vm/drop_caches
		same "$op c b/d/d (shadowed file b in $where): same view after a cache drop"
		is "$op ($where): no b/d made below b0" "$(ls -d "$D"/b[123]/b/d 2>/dev/null)" ""
		is "$op ($where): the new name is in b0" "$(test -f "$D/b0/b/d/d" && echo b0)" b0
	done
done

# 8. fsync/listing of a directory as uid 1000, made 0777 through the union (copied up) while
#    its lower copy stays 0700 root: EACCES (docs/concepts.md credentials: every contributing
#    branch is checked); stat shows 0777. udiff counts it as EACCES-lower-dir-copy (seed 222046)
setup 4
ent b1 '["dir", "c", 511, 1000, 1000]'
ent b1 '["dir", "c/e", 448, 0, 0]'
union "$D/b0=rw:$D/b1=ro:$D/b2=ro:$D/b3=ro"
both 0 '["chmod", "c/e", 511]'
is "the union shows c/e as 777" "$(stat -c %a "$D/u/c/e")" 777
is "as uid 1000: fsync c/e gives EACCES (b1's copy is 0700 root)" \
	"$(ud op 1000 "$D/u" '["fsync", "c/e"]')" "$D/u: [\"EACCES\"]"
check "udiff seed 222046 (300 ops): the difference is counted as allowed" \
	python3 "$PWD/tests/tools/udiff.py" --seed 222046 --ops 300 --out "$T/s222046"

# 9. a file with other names (a link group) renamed to a name shown from a branch above the one
#    that keeps its group: the old module copied it up there and removed it below, so the new
#    name was another file (nlink 1) and the other names stayed behind (seed 740821). EXDEV
#    now, as link(2) gives (mv copies); where the group's branch can take the new name, the
#    rename happens there and the names stay one file.
lsame() {	# lsame A B: the union shows A and B as one file, with nlink 2
	is "c$case: $1 and $2 are one file, nlink 2" \
		"$(stat -c '%d:%i %h' "$D/u/$1")" "$(stat -c '%d:%i 2' "$D/u/$2")"
}
for kind in '["symlink", "e/b/b", 511, 1000, 1000, "a"]' \
	'["file", "e/b/b", 420, 1000, 1000, 300, 5, 0]'; do
	k=${kind#'["'}; k=${k%%'"'*}
	setup 2
	ent b0 '["file", "e/a/b", 438, 1000, 1000, 2897, 191941758, 1048576]'
	ent b1 "$kind"
	union "$D/b0=rw:$D/b1=rw"
	both 0 '["link", "e/b/b", "e/c"]'
	is "c$case: rename of a linked $k in b1 over e/a/b of b0: EXDEV" \
		"$(ud op 0 "$D/u" '["rename", "e/b/b", "e/a/b", 0]')" "$D/u: [\"EXDEV\"]"
	same "c$case: nothing changed (e/c and e/b/b still one file, e/a/b b0's)"
	lsame e/b/b e/c
	# into a directory of b0 only: made in b1, where the group is
	both 0 '["rename", "e/b/b", "e/a/d", 0]'
	same "c$case: rename into e/a (b0 only) happens in b1: the view is the reference's"
	lsame e/a/d e/c
	is "c$case: e/a/d is in b1 only" "$(ls "$D"/b[01]/e/a/d 2>/dev/null)" "$D/b1/e/a/d"
done
# a read-only group: in b2, under the rw b1 that keeps its index, and b0's name above it: EXDEV;
# without b1 the group's branch is b0: copied up there through the index, still one file
for dirs in "b0=rw:b1=rw:b2=ro" "b0=rw:b1=ro:b2=ro"; do
	setup 3
	ent b0 '["file", "e/a/b", 438, 1000, 1000, 2897, 191941758, 0]'
	ent b2 '["file", "e/b/b", 420, 1000, 1000, 300, 5, 0]'
	ent b2 '["link", "e/c", 0, 0, 0, "e/b/b"]'
	union "${dirs//b/$D/b}"
	if [[ $dirs == *b1=rw* ]]; then
		is "c$case ($dirs): rename of a read-only group's name over b0's e/a/b: EXDEV" \
			"$(ud op 0 "$D/u" '["rename", "e/b/b", "e/a/b", 0]')" "$D/u: [\"EXDEV\"]"
		same "c$case: nothing changed"
		lsame e/b/b e/c
	else
		both 0 '["rename", "e/b/b", "e/a/b", 0]'
		same "c$case ($dirs): renamed (copied up to b0 through the index): the reference's view"
		lsame e/a/b e/c
	fi
done
# 10. a directory renamed (a redirect to its old path) showed lower copies that its merge did
#    not show before: a file e in the middle branch b2 ends the merge of dir e (b0, b1) before
#    b3's e, but the redirect's walk passed it, so d/n5/a/a of b3 appeared, and revalidation
#    reported a direct modification of n5 in branch 3 (dir_changed; seed 740821, after 9). The
#    same with a whiteout of e in b2, and with a whiteout or an opaque directory on the way
#    (x/e, x whited out or opaque in b2)
for hider in file wh xwh xopq; do
	setup 4
	p=e
	[[ $hider == x* ]] && p=x/e
	ent b0 "[\"file\", \"$p/a/b\", 438, 1000, 1000, 29, 1, 0]"
	ent b1 "[\"symlink\", \"$p/e\", 511, 1000, 1000, \"e\"]"
	case $hider in
	file) ent b2 '["file", "e", 384, 0, 0, 28, 2, 0]' ;;
	wh) ent b2 '["wh", "e"]' ;;
	xwh) ent b2 '["wh", "x"]' ;;
	xopq) ent b2 '["dir", "x", 493, 0, 0]'; ent b2 '["opq", "x"]' ;;
	esac
	ent b3 "[\"file\", \"$p/a/a\", 493, 1000, 1000, 97, 3, 0]"
	ent b3 '["dir", "d", 511, 0, 0]'
	union "$D/b0=rw:$D/b1=rw:$D/b2=ro:$D/b3=ro"
	hz0=$(hz)
	same "c$case ($hider): initial view (no $p/a/a)"
	both 0 "[\"rename\", \"$p\", \"d/n5\", 1]"
	same "c$case ($hider): after the rename of $p to d/n5 (a redirect): no d/n5/a/a"
	echo 2 > /proc/sys/vm/drop_caches
	same "c$case ($hider): the same after a cache drop (looked up through the redirect)"
	is "c$case ($hider): no direct modification reported" "$(hz)" "$hz0"
done
check "udiff seed 740821 (500 ops): the difference is counted as allowed" \
	python3 "$PWD/tests/tools/udiff.py" --seed 740821 --ops 500 --out "$T/s740821"

is "dmesg clean" "$(dmesg_bad)" ""
finish
