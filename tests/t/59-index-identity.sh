#!/bin/bash
# Hard links: a link group is named by its lower file system's uuid (docs/concepts.md "Hard
# links", "The index"). A file system without one, or with the uuid of another file system
# of the union, cannot name its files for good: its hard-linked files are copied up as
# files with one name (the copied-up name becomes a file of its own; the other names keep
# the lower file), and never show another file system's index entries.
#   nouuid  an ext4 image whose uuid was cleared (tune2fs -U clear): the device number was
#           the key, so after the lower fs was mounted again on another loop device a
#           name showed the old content, having shown the new one before
#   ramfs   no uuid at all
#   clone   two ext4 images with one uuid (a copy of an image, then changed): a group of
#           the lower copy took the upper copy's index entry (another file's content)
#   rofs    the writable branch's file system remounted read-only for a while: the other
#           names of a group showed the old lower file meanwhile (another inode), and a
#           write through one after made it a second inode of the group (st_nlink wrong)
#   rofs3   the same with a writable branch above: a write or unlink through a name that
#           showed the entry copied it up there, or whited it out (the group split)
#   aliases every name of the group held open (40) moves over at the copy-up
#   err     a look in the index that fails (fault site index) fails the lookup (before, the
#           name showed its lower file: another inode, the old content)
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
dmesg_mark
modprobe loop
IX=.wh..wh.unionfs.index
entries() { ls -A "$1/$IX" 2>/dev/null | wc -l; }
# group_ok TAG NAME: a write through NAME is the group {a, b, c}'s (the union at $D/m, a's
# content "old new" before), st_nlink 3, one inode; then the union is unmounted
group_ok() {
	echo more >> "$D/m/$2"
	is "$1: then a write through $2 is the group's" "$(cat "$D/m/a")" $'old\nnew\nmore'
	is "$1: st_nlink of a, b, c" "$(stat -c %h "$D/m/a" "$D/m/b" "$D/m/c" | tr '\n' ' ')" "3 3 3 "
	is "$1: one inode for a, b, c" "$(stat -c %i "$D/m/a" "$D/m/b" "$D/m/c" | sort -u | wc -l)" 1
	umount "$D/m"
}
mkimg() {	# mkimg IMG DIR: a 32 MiB ext4 image without a journal, holding DIR's files
	truncate -s 32M "$1" && mkfs.ext4 -q -F -O ^has_journal -d "$2" "$1"
}

# ---- nouuid: an ext4 lower fs without a uuid, mounted again on another loop device ----
D=$T/nu
mkdir -p "$D/rw" "$D/lo" "$D/m"
mount -t tmpfs -o size=64m nu "$D/rw"
mkdir "$D/src"; echo old > "$D/src/a"; ln "$D/src/a" "$D/src/b"
check "nouuid: an image with a, b (hard links)" mkimg "$D/lo.img" "$D/src"
check "nouuid: tune2fs -U clear" tune2fs -U clear "$D/lo.img"
check "nouuid: mount it" mount -o loop,ro "$D/lo.img" "$D/lo"
is "nouuid: the lower fs has a null uuid" \
	"$(blkid -s UUID -o value "$D/lo.img")" ""
dev1=$(stat -c %d "$D/lo")
check "nouuid: mount" mount -i -t unionfs -o "dirs=$D/rw=rw:$D/lo=ro" none "$D/m"
echo new >> "$D/m/a"
first=$(cat "$D/m/b")
is "nouuid: the write went to a's copy" "$(cat "$D/m/a")" $'old\nnew'
is "nouuid: b is not a's group: it keeps the lower file" "$first" old
is "nouuid: no index entry" "$(entries "$D/rw")" 0
check "nouuid: umount" umount "$D/m"
check "nouuid: umount the lower fs" umount "$D/lo"
# another loop device in between: the lower fs gets another device number
truncate -s 1M "$D/pad.img"; pad=$(losetup -f --show "$D/pad.img")
check "nouuid: mount the lower fs again" mount -o loop,ro "$D/lo.img" "$D/lo"
is "nouuid: ... on another device" "$(($(stat -c %d "$D/lo") != dev1))" 1
check "nouuid: mount the union again" \
	mount -i -t unionfs -o "dirs=$D/rw=rw:$D/lo=ro" none "$D/m"
is "nouuid: b shows what it showed before the lower fs moved" "$(cat "$D/m/b")" "$first"
is "nouuid: a still shows its copy" "$(cat "$D/m/a")" $'old\nnew'
umount "$D/m"; umount "$D/lo"; losetup -d "$pad"; umount "$D/rw"

# ---- ramfs: no uuid at all ------------------------------------------------------------
D=$T/ra
mkdir -p "$D/rw" "$D/lo" "$D/m"
mount -t tmpfs -o size=64m ra "$D/rw"
if mount -t ramfs ra "$D/lo"; then
	echo old > "$D/lo/a"; ln "$D/lo/a" "$D/lo/b"
	check "ramfs: mount" mount -i -t unionfs -o "dirs=$D/rw=rw:$D/lo=ro" none "$D/m"
	chmod 600 "$D/m/a"
	is "ramfs: the chmod went to a's copy" "$(stat -c %a "$D/m/a")" 600
	is "ramfs: b keeps the lower file's mode" "$(stat -c %a "$D/m/b")" \
		"$(stat -c %a "$D/lo/b")"
	is "ramfs: a and b are two files now" \
		"$(($(stat -c %i "$D/m/a") != $(stat -c %i "$D/m/b")))" 1
	is "ramfs: no index entry" "$(entries "$D/rw")" 0
	umount "$D/m"; umount "$D/lo"
else
	not_ok "ramfs: mount -t ramfs"
fi
umount "$D/rw"

# ---- clone: two lower file systems with one uuid ---------------------------------------
D=$T/cl
mkdir -p "$D/rw" "$D/l1" "$D/l2" "$D/m"
mount -t tmpfs -o size=64m cl "$D/rw"
# the copy of an image, changed: the same uuid; its c, d where the original has a, b
mkdir "$D/s1" "$D/s2"
echo orig > "$D/s1/a"; ln "$D/s1/a" "$D/s1/b"; echo other > "$D/s2/c"; ln "$D/s2/c" "$D/s2/d"
check "clone: the image" mkimg "$D/l1.img" "$D/s1"
check "clone: its changed copy" mkimg "$D/l2.img" "$D/s2"
check "clone: ... with the image's uuid" \
	tune2fs -U "$(blkid -s UUID -o value "$D/l1.img")" "$D/l2.img"
mount -o loop,ro "$D/l1.img" "$D/l1"; mount -o loop,ro "$D/l2.img" "$D/l2"
is "clone: the two lower file systems have one uuid" \
	"$(blkid -s UUID -o value "$D/l1.img")" "$(blkid -s UUID -o value "$D/l2.img")"
is "clone: c and a are one inode number and generation in their branches" \
	"$(stat -c %i "$D/l2/c") $(lsattr -vd "$D/l2/c" | awk '{ print $1 }')" \
	"$(stat -c %i "$D/l1/a") $(lsattr -vd "$D/l1/a" | awk '{ print $1 }')"
check "clone: mount rw over both" \
	mount -i -t unionfs -o "dirs=$D/rw=rw:$D/l1=ro:$D/l2=ro" none "$D/m"
echo new >> "$D/m/a"
is "clone: the write went to a's copy" "$(cat "$D/m/a")" $'orig\nnew'
is "clone: c shows its own file system's file" "$(cat "$D/m/c")" other
is "clone: d too" "$(cat "$D/m/d")" other
is "clone: b keeps the lower file" "$(cat "$D/m/b")" orig
is "clone: no index entry" "$(entries "$D/rw")" 0
umount "$D/m"; umount "$D/l1"; umount "$D/l2"; umount "$D/rw"

# ---- the writable branch's file system read-only for a while ----------------------------
D=$T/ro
mkdir -p "$D/m"
branch_fs tmpfs "$D" 2 || not_ok "rofs: make branches"
echo old > "$D/b1/a"; ln "$D/b1/a" "$D/b1/b"; ln "$D/b1/a" "$D/b1/c"
check "rofs: mount" mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=ro" none "$D/m"
echo new >> "$D/m/a"
check "rofs: remount the writable branch's tmpfs read-only" mount -o remount,ro "$D/b0"
# b was never looked up: its lookup now, with the branch read-only, still finds the entry
is "rofs: b shows the group's file while the branch is read-only" "$(cat "$D/m/b")" $'old\nnew'
is "rofs: ... the same inode as a" "$(stat -c %i "$D/m/b")" "$(stat -c %i "$D/m/a")"
check_fail "rofs: a write through c: EROFS (nothing copied elsewhere)" EROFS \
	bash -c "echo x >> '$D/m/c'"
check "rofs: remount it read-write" mount -o remount,rw "$D/b0"
group_ok rofs b

# ... and with a writable branch above the index's: a write or an unlink through a name
# that shows the entry gives EROFS, it does not copy the entry up there (the group would
# split: the other names another inode, st_nlink too high for good)
D=$T/r3
mkdir -p "$D/m"
branch_fs tmpfs "$D" 3 || not_ok "rofs3: make branches"
echo old > "$D/b2/a"; ln "$D/b2/a" "$D/b2/b"; ln "$D/b2/a" "$D/b2/c"
check "rofs3: mount top=rw:mid=rw:lo=ro" \
	mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=rw:$D/b2=ro" none "$D/m"
echo new >> "$D/m/a"
is "rofs3: the group's entry is in mid" "$(entries "$D/b1") $(entries "$D/b0")" "1 0"
check "rofs3: remount mid's tmpfs read-only" mount -o remount,ro "$D/b1"
is "rofs3: b shows the group's file" "$(cat "$D/m/b")" $'old\nnew'
check_fail "rofs3: a write through c: EROFS" EROFS bash -c "echo x >> '$D/m/c'"
check_fail "rofs3: an unlink of b: EROFS" EROFS rm "$D/m/b"
is "rofs3: nothing went to top" "$(ls -A "$D/b0")" ""
check "rofs3: remount mid read-write" mount -o remount,rw "$D/b1"
group_ok rofs3 c

# ---- a copy-up moves every name of the group held open over to its entry ---------------
# (before: 16 at most; the others, dropped, kept showing the lower file while held: fstat of
# an open file gave the lower file's st_ino, and st_nlink one too many)
D=$T/al
mkdir -p "$D/m"
branch_fs tmpfs "$D" 2 || not_ok "aliases: make branches"
echo old > "$D/b1/n0"; for i in $(seq 1 39); do ln "$D/b1/n0" "$D/b1/n$i"; done
check "aliases: mount" mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=ro" none "$D/m"
is "aliases: 40 names held open, then a write through another: every fstat is the group's" \
	"$(python3 - "$D/m" <<'PY'
import os, sys
m = sys.argv[1]
fds = [os.open(os.path.join(m, "n%d" % i), os.O_RDONLY) for i in range(1, 40)]
with open(os.path.join(m, "n0"), "a") as f:
    f.write("new\n")
st = os.stat(os.path.join(m, "n0"))
bad = [i + 1 for i, fd in enumerate(fds)
       if (os.fstat(fd).st_ino, os.fstat(fd).st_nlink) != (st.st_ino, st.st_nlink)]
print("st_nlink %d, not the group's: %s" % (st.st_nlink, bad or "none"))
PY
)" "st_nlink 40, not the group's: none"
umount "$D/m"

# ---- a failed look in the index fails the lookup ---------------------------------------
D=$T/er
mkdir -p "$D/m"
branch_fs tmpfs "$D" 2 || not_ok "err: make branches"
echo old > "$D/b1/a"; ln "$D/b1/a" "$D/b1/b"
check "err: mount" mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=ro" none "$D/m"
echo new >> "$D/m/a"
is "err: the group's index entry" "$(entries "$D/b0")" 1
armed=0; fault_arm "index errno=5 times=1" 2>/dev/null && armed=1
is "err: the fault site index armed" "$armed" 1
if ((armed)); then
	is "err: a lookup of b whose look in the index fails: EIO" \
		"$(cat "$D/m/b" 2>&1 >/dev/null | grep -c 'Input/output error')" 1
	is "err: the site injected once" \
		"$(awk '$1 == "index" { print $7 }' /sys/kernel/debug/unionfs/inject)" 1
	echo "clear index" > /sys/kernel/debug/unionfs/inject
fi
is "err: then b shows the group's file" "$(cat "$D/m/b")" $'old\nnew'
is "err: ... the same inode as a" "$(stat -c %i "$D/m/b")" "$(stat -c %i "$D/m/a")"
umount "$D/m"

is "no kernel warning" "$(dmesg_bad)" ""
finish
