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

is "dmesg clean" "$(dmesg_bad)" ""
finish
