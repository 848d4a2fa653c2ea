#!/bin/bash
# Inode identity (docs/concepts.md "Inode numbers"): two names share (st_dev, st_ino) exactly
# when they are the same branch file; a copied-up name gets a new identity; numbers survive
# cache eviction, remount and branch add/del; readdir's d_ino == st_ino; find -inum, tar,
# rsync -H and du see a lower hard-linked pair as one file. Uniqueness over many files in 4
# branches (5,000 in make check, 100,000 with UNIONFS_SOAK=1).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
dmesg_mark

# every name under DIR: "st_dev st_ino path", sorted by path
ids() { (cd "$1" && find . -mindepth 1 -printf '%D %i %p\n' | LC_ALL=C sort -k3); }
# d_ino == st_ino for every entry of every directory under DIR (prints the differences)
dino_check() {
	python3 - "$1" << 'EOF'
import os, sys
bad = 0
for root, dirs, files in os.walk(sys.argv[1]):
    for e in os.scandir(root):
        st = os.lstat(e.path)
        if e.inode() != st.st_ino:
            print("%s: d_ino %d st_ino %d" % (e.path, e.inode(), st.st_ino))
            bad += 1
sys.exit(1 if bad else 0)
EOF
}
# the names sharing a (st_dev, st_ino) under DIR: one line per group of 2 or more
links() { ids "$1" | awk '{k = $1 " " $2; g[k] = g[k] " " $3; n[k]++} END {for (k in g) if (n[k] > 1) print substr(g[k], 2)}' | LC_ALL=C sort; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

D=$T/id
mkdir -p "$D/m"
branch_fs tmpfs "$D" 4 || { not_ok "make branches"; finish; }
B0=$D/b0 B1=$D/b1 B2=$D/b2 B3=$D/b3 M=$D/m
OPTS="dirs=$B0=rw:$B1=rw:$B2=ro:$B3=ro"
# the same relative names in every branch: the branch inode numbers (per-tmpfs counters) collide
for b in 0 1 2 3; do
	mkdir -p "$D/b$b/d/sub"
	for i in 1 2 3 4; do echo "$b" > "$D/b$b/d/f$b$i"; done
	echo "$b" > "$D/b$b/d/sub/s$b"
done
echo pair > "$B3/d/a"; ln "$B3/d/a" "$B3/d/b"
echo pair2 > "$B2/d/p"; ln "$B2/d/p" "$B2/d/q"
echo deep > "$B3/d/sub/deep"
mkdir -p "$B3/only/one"; touch "$B3/only/one/x"	# directories of one branch (read straight through)
dd if=/dev/zero of="$B3/big" bs=1M count=1 status=none; ln "$B3/big" "$B3/big2"

check "mount 4 branches" mount -i -t unionfs -o "$OPTS" none "$M" || finish
is "lower hard-linked pair: one inode" "$(stat -c %i "$M/d/a")" "$(stat -c %i "$M/d/b")"
is "lower hard-linked pair: nlink 2" "$(stat -c %h "$M/d/a")" 2
is "names share (dev, ino) exactly when hard-linked in a branch" "$(links "$M" | tr '\n' ,)" \
	"./big ./big2,./d/a ./d/b,./d/p ./d/q,"
check "d_ino == st_ino before any copy-up" dino_check "$M"
# d_ino of NAME in DIR as getdents64 returns it (ls -ai stats "." and "..": not d_ino)
dotino() {
	python3 - "$1" "$2" << 'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
buf = ctypes.create_string_buffer(65536)
while True:
    n = libc.syscall(217, fd, buf, len(buf))	# getdents64
    if n <= 0:
        break
    off = 0
    while off < n:
        ino, _, reclen, _ = struct.unpack_from("<QqHB", buf.raw, off)
        if buf.raw[off + 19:off + reclen].split(b"\0", 1)[0].decode() == sys.argv[2]:
            print(ino)
        off += reclen
EOF
}
is "one-branch dir: d_ino of . is its st_ino" "$(dotino "$M/only/one" .)" "$(stat -c %i "$M/only/one")"
is "one-branch dir: d_ino of .. is the union parent's st_ino" "$(dotino "$M/only" ..)" "$(stat -c %i "$M")"
is "merged dir: d_ino of .. is the union parent's st_ino" "$(dotino "$M/d/sub" ..)" "$(stat -c %i "$M/d")"
is "find -inum finds both names of the pair" \
	"$(cd "$M" && find . -inum "$(stat -c %i d/a)" | sort | tr '\n' ' ')" "./d/a ./d/b "
is "du counts a hard-linked pair once" "$(du -sk "$M/big" "$M/big2" | awk '{s += $1} END {print s}')" \
	"$(du -sk "$B3/big" "$B3/big2" | awk '{s += $1} END {print s}')"
(cd "$M" && tar cf "$D/t.tar" d big big2)
is "tar stores the pair as one file and a link" \
	"$(tar tvf "$D/t.tar" | grep -c ' link to ')" 3
mkdir "$D/x"; tar xf "$D/t.tar" -C "$D/x"
is "tar: extracted pair is one file" "$(stat -c %i "$D/x/d/a")" "$(stat -c %i "$D/x/d/b")"
check "rsync -aH through the union (make deps installs rsync)" rsync -aH "$M/" "$D/r/"
is "rsync -H: pair is one file" "$(stat -c %i "$D/r/d/a" 2>&1)" "$(stat -c %i "$D/r/d/b" 2>&1)"

before=$(ids "$M")
drop
is "st_ino stable across drop_caches (no copy-up)" "$(ids "$M")" "$before"

# copy-up of one name of the pair (b3 -> b1, the middle rw branch) and of a top-level dir:
# a hard-linked pair stays one file (docs/concepts.md "Hard links", tests/t/55-hardlinks.sh)
echo more >> "$M/d/a"
is "copied-up name: its link shows the change" "$(cat "$M/d/a" "$M/d/b" | tr '\n' ' ')" \
	"pair more pair more "
is_same() { [[ $(stat -c '%d %i' "$1") == $(stat -c '%d %i' "$2") ]]; }
check "copied-up name and its old link: same inode" is_same "$M/d/a" "$M/d/b"
is "copied-up name is in b1" "$(cat "$B1/d/a" 2> /dev/null | head -n 1)" pair
touch "$M/d/sub/deep"      # parents d, d/sub exist in b1 already; deep is copied up to b1
echo top > "$M/d/f31"       # b3 -> b1 as well (b0 is only for new names here)
chmod 600 "$M/d/p"          # b2 -> b1
check "copied-up pair2 name and its link: same inode" is_same "$M/d/p" "$M/d/q"
is "after copy-ups of d/a, d/p: the pairs still share (dev, ino)" "$(links "$M" | tr '\n' ,)" \
	"./big ./big2,./d/a ./d/b,./d/p ./d/q,"
check "d_ino == st_ino after copy-ups to the middle branch" dino_check "$M"
# copy-up to the top branch: mount with b0 as the only rw branch
after=$(ids "$M")
ls -l "$M/d" > /dev/null
drop
is "st_ino stable across drop_caches after copy-ups" "$(ids "$M")" "$after"
check "umount" umount "$M"
check "mount again" mount -i -t unionfs -o "$OPTS" none "$M"
is "st_ino stable across remount" "$(ids "$M")" "$after"
check "umount" umount "$M"

OPTS2="dirs=$B0=rw:$B1=ro:$B2=ro:$B3=ro"
check "mount with only b0 rw" mount -i -t unionfs -o "$OPTS2" none "$M"
echo top >> "$M/d/b"; echo top >> "$M/d/q"; touch "$M/d/sub/s3"; echo x >> "$M/d/f21"
is "copied-up to top: d/b in b0" "$(head -n 1 "$B0/d/b" 2> /dev/null)" pair
check "d_ino == st_ino after copy-ups to the top branch" dino_check "$M"
is "after copy-ups to top: only big, big2 share (dev, ino)" "$(links "$M" | tr '\n' ,)" "./big ./big2,"
after=$(ids "$M")
drop
is "st_ino stable across drop_caches after copy-ups to top" "$(ids "$M")" "$after"

# branch add/del: the numbers of the other branches do not change, a new fs gets new numbers
mkdir -p "$D/n1" "$D/n2"
mount -t tmpfs tmpn1 "$D/n1"; mount -t tmpfs tmpn2 "$D/n2"
echo n1 > "$D/n1/nf1"; echo n2 > "$D/n2/nf2"
for ((i = 0; i < 140; i++)); do
	mount -i -o "remount,add=:$D/n1=ro" "$M" || break
	mount -i -o "remount,del=$D/n1" "$M" || break
done
is "140 remount add/del cycles" "$i" 140
check "remount,add two new branch file systems" mount -i -o "remount,add=:$D/n1=ro,add=:$D/n2=ro" "$M"
is "a new branch fs does not reuse a number space: nf1, nf2 differ" \
	"$([[ $(stat -c %i "$M/nf1") != $(stat -c %i "$M/nf2") ]] && echo diff)" diff
is "after add: old numbers unchanged" "$(ids "$M" | grep -v ' ./nf[12]$')" "$after"
check "remount,del the new branches" mount -i -o "remount,del=$D/n1,del=$D/n2" "$M"
is "after del: numbers unchanged" "$(ids "$M")" "$after"
check "umount" umount "$M"

# d_ino of a link group's name in a directory listed (and its listing cached) before a copy-up
# through a name in another directory: the group's number changes to its index entry's, and
# that directory did not change (udiff seeds 3016, 3018, 3050: before, the old number stayed)
G=$T/grp
mkdir -p "$G/m"
branch_fs tmpfs "$G" 2 || { not_ok "make branches"; finish; }
mkdir -p "$G/b0/x" "$G/b1/x" "$G/b1/y"
echo g > "$G/b1/x/f"; ln "$G/b1/x/f" "$G/b1/y/g"; echo h > "$G/b1/x/h"
check "group: mount" mount -i -t unionfs -o "dirs=$G/b0=rw:$G/b1=ro" none "$G/m"
check "group: d_ino == st_ino before the copy-up" dino_check "$G/m"
old_ino=$(stat -c %i "$G/m/x/f")
echo more >> "$G/m/y/g"
is "group: the copy-up through y/g renumbered x/f" \
	"$([[ $(stat -c %i "$G/m/x/f") != "$old_ino" ]] && echo new)" new
check "group: d_ino == st_ino in x (listed before the copy-up)" dino_check "$G/m"
is "group: x/f and y/g one inode" "$(stat -c %i "$G/m/x/f")" "$(stat -c %i "$G/m/y/g")"
check "group: umount" umount "$G/m"

# uniqueness over many files in 4 branches: N/4 per branch, same names in every branch except
# the shown ones, so the branch inode numbers overlap
N=5000
((SOAK)) && N=100000
U=$T/many
mkdir -p "$U/m"
branch_fs tmpfs "$U" 4 || { not_ok "make branches"; finish; }
t0=$(date +%s)
for b in 0 1 2 3; do
	mkdir "$U/b$b/d"
	(cd "$U/b$b/d" && seq -f "b${b}_%g" 1 $((N / 4)) | xargs touch)
done
check "mount 4 branches ($N files)" mount -i -t unionfs -o "dirs=$U/b0=rw:$U/b1=ro:$U/b2=ro:$U/b3=ro" none "$U/m"
is "$N files listed" "$(ls -f "$U/m/d" | grep -c '^b')" "$N"
is "$N files: $N distinct inode numbers" "$(find "$U/m/d" -type f -printf '%D %i\n' | sort -u | wc -l)" "$N"
check "$N files: d_ino == st_ino" dino_check "$U/m/d"
echo "# $N files took $(($(date +%s) - t0)) s (not asserted)"
umount "$U/m"

is "dmesg clean" "$(dmesg_bad)" ""
finish
