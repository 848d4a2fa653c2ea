#!/bin/bash
# Branch validation (issues 20 and 21.5): mount (dirs=) and remount,add= build a branch with one
# constructor (unionfs_branch_new), so they refuse the same branches the same way. For each bad
# branch and for both paths: the exact errno (mount(2) through tests/sys.py), exactly one
# "unionfs:" line naming the context ("mount: branch 1 '...'" / "remount: add: '...'"), the branch
# and the reason; after a refused add= the union is unchanged (branch list, a file still read).
# And one rule for a branch's inode-number index (fsidx): the same numbers whether a branch list
# is mounted at once or built with add=, and index == position for distinct file systems.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
V=/tmp/v$$	# short paths for the 128-branch union (mount(2) data is one page)
trap '_t_cleanup; rm -rf "$V"' EXIT
modprobe loop
sy_start
branch_fs tmpfs "$T" 3
B0=$T/b0 B1=$T/b1 B2=$T/b2 M=$T/m M2=$T/m2
mkdir -p "$M" "$M2" "$B0/d" "$B1/x" "$B1/z" "$B2/x/y" "$T/o" "$T/u2"
echo lower > "$B1/x/f"
touch "$T/notdir"
dirs() { awk -v m="$1" '$2 == m { print $4 }' /proc/mounts | tr ',' '\n' | sed -n 's/^dirs=//p'; }
top() { echo $(( $(stat -c %i "$1") >> 56 )); }	# fsidx of a union inode number

check "mount the union add= is tried on" mount -i -t unionfs -o "dirs=$B0:$B1/x=ro" none "$M"
check "mount another union" mount -i -t unionfs -o "dirs=$T/o" none "$T/u2"
before=$(dirs "$M")

# one_line DESC LINES PREFIX REASON: LINES is exactly one line, holding PREFIX then REASON (ERE)
one_line() {
	local n
	n=$(grep -c . <<< "$2")
	is "$1: one pr_warn line" "$n" 1
	if grep -F -- "$3" <<< "$2" | grep -qE -- "$4"; then
		ok "$1: message names the context, the branch and the reason"
	else
		not_ok "$1: message names the context, the branch and the reason" \
			"want '$3' ... /$4/"$'\n'"got: $2"
	fi
}

# refuse DESC ERRNO SPEC REASON [mount|add]: dirs=$B2/x:SPEC and add=:SPEC both fail with
# ERRNO and one message matching REASON (an ERE); the latter changes nothing
refuse() {
	local desc=$1 want=$2 spec=$3 re=$4 only=${5:-} path got lines
	path=${spec%=r[ow]}
	if [[ $only != add ]]; then
		dmesg_mark
		got=$(sy - mount none "$M2" unionfs "dirs=$B2/x:$spec")
		lines=$(dmesg_since_mark | grep -a 'unionfs: ')
		[[ $got == OK ]] && umount "$M2"
		is "mount: $desc: errno" "$got" "$want"
		one_line "mount: $desc" "$lines" "unionfs: mount: branch 1 '$path'" "$re"
	fi
	if [[ $only != mount ]]; then
		dmesg_mark
		got=$(sy - remount "$M" "add=:$spec")
		lines=$(dmesg_since_mark | grep -a 'unionfs: ')
		[[ $got == OK ]] && sy - remount "$M" "del=$path" > /dev/null
		is "add=: $desc: errno" "$got" "$want"
		one_line "add=: $desc" "$lines" "unionfs: remount: add: '$path'" "$re"
		is "add=: $desc: union unchanged" "$(dirs "$M")" "$before"
		is "add=: $desc: a file still read" "$(cat "$M/f" 2>&1)" lower
	fi
}

refuse "not a directory" ENOTDIR "$T/notdir=ro" "is not a directory"
refuse "nonexistent" ENOENT "$T/nonexistent=ro" "lookup failed"
refuse "the union itself" EINVAL "$M=ro" "unionfs|this union"
refuse "a directory inside the union" EINVAL "$M/d=ro" "unionfs|this union"
refuse "another unionfs" EINVAL "$T/u2=ro" "is itself a unionfs"
refuse "parent of a branch (overlap)" EINVAL "$B2=ro" "overlaps branch 0 '$B2/x'" mount
refuse "child of a branch (overlap)" EINVAL "$B2/x/y=ro" "overlaps branch 0 '$B2/x'" mount
refuse "parent of a branch (overlap)" EINVAL "$B1=ro" "overlaps branch 1 '$B1/x'" add
mkdir -p "$B1/x/y"
refuse "child of a branch (overlap)" EINVAL "$B1/x/y=ro" "overlaps branch 1 '$B1/x'" add
rmdir "$B1/x/y"

mkdir -p "$T/ro"
mount -t tmpfs -o ro tmpfs "$T/ro"
refuse "rw branch on a read-only fs" EROFS "$T/ro" "read-write but its file system is mounted read-only"

# case folding: on an ext4 with the casefold feature every dentry but the root gets the
# case-insensitive d_ops; a +F directory compares names without case
truncate -s 64M "$T/cf.img"
if mkfs.ext4 -q -F -O casefold,^has_journal "$T/cf.img" 2> "$T/cf.err" && mkdir -p "$T/cf" &&
   mount -o loop "$T/cf.img" "$T/cf" 2>> "$T/cf.err" && mkdir "$T/cf/d" &&
   chattr +F "$T/cf/d" 2>> "$T/cf.err"; then
	refuse "case-folding directory" EINVAL "$T/cf/d=ro" "case-folding"
	refuse "root of a case-folding file system" EINVAL "$T/cf=ro" "case-folding"
else
	skip "case-folding branch refused" "no ext4 with casefold here: $(tr '\n' ' ' < "$T/cf.err")"
fi

# an idmapped mount (util-linux 2.38 has no X-mount.idmap: open_tree/mount_setattr/move_mount
# through ctypes; ext4 supports idmapped mounts on 6.1, tmpfs does not)
idmap_mount() {	# idmap_mount SRC DST: attach an idmapped clone of SRC at DST
	python3 - "$1" "$2" << 'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *a):
    r = libc.syscall(nr, *a)
    if r < 0:
        e = ctypes.get_errno()
        raise SystemExit("syscall %d: %s" % (nr, os.strerror(e)))
    return r
class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
src, dst = sys.argv[1].encode(), sys.argv[2].encode()
r, w = os.pipe()
r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:	# CLONE_NEWUSER
        os._exit(1)
    os.write(w, b"x")
    os.read(r2, 1)
    os._exit(0)
try:
    os.read(r, 1)
    for f in ("uid_map", "gid_map"):
        with open("/proc/%d/%s" % (pid, f), "w") as fh:
            fh.write("0 100000 65536\n")
    ufd = os.open("/proc/%d/ns/user" % pid, os.O_RDONLY)
    AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
    fd = sc(428, ctypes.c_int(AT_FDCWD), ctypes.c_char_p(src), ctypes.c_uint(1 | os.O_CLOEXEC))
    attr = MountAttr(0x00100000, 0, 0, ufd)	# MOUNT_ATTR_IDMAP
    sc(442, ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_uint(AT_EMPTY_PATH),
       ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    sc(429, ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_int(AT_FDCWD), ctypes.c_char_p(dst),
       ctypes.c_uint(4))	# MOVE_MOUNT_F_EMPTY_PATH
finally:
    os.write(w2, b"x")
    os.waitpid(pid, 0)
EOF
}
truncate -s 64M "$T/id.img"
mkdir -p "$T/idsrc" "$T/idm"
if mkfs.ext4 -q -F -O ^has_journal "$T/id.img" 2> "$T/id.err" &&
   mount -o loop "$T/id.img" "$T/idsrc" 2>> "$T/id.err" && mkdir "$T/idsrc/d" &&
   idmap_mount "$T/idsrc" "$T/idm" 2>> "$T/id.err"; then
	refuse "idmapped mount" EINVAL "$T/idm=ro" "idmapped mount"
	refuse "directory of an idmapped mount" EINVAL "$T/idm/d=ro" "idmapped mount"
else
	skip "idmapped branch refused" "cannot make an idmapped mount here: $(tr '\n' ' ' < "$T/id.err")"
fi

# too deep a stack: overlayfs on overlayfs has depth 2, the most there is; a union on it would
# be 3 (mount); an add= may not deepen the union either (this one is 1: tmpfs branches)
mkdir -p "$T/ol1" "$T/ol2" "$T/ol3" "$T/ou" "$T/ow" "$T/ov1" "$T/ov2"
if mount -t overlay overlay -o "lowerdir=$T/ol1,upperdir=$T/ou,workdir=$T/ow" "$T/ov1" 2> "$T/ov.err" &&
   mount -t overlay overlay -o "lowerdir=$T/ov1:$T/ol2" "$T/ov2" 2>> "$T/ov.err"; then
	refuse "too deep a stack" EINVAL "$T/ov2=ro" "too deep"
	refuse "deeper than the union" EINVAL "$T/ov1=ro" "too deep" add
else
	skip "too deep a stack refused" "no overlayfs here: $(tr '\n' ' ' < "$T/ov.err")"
fi

# too many branches: 128 is the most
mkdir -p "$V"
mkdir "$V"/{0..128}
many=$(for i in $(seq 0 127); do printf '%s:' "$V/$i"; done)
dmesg_mark
is "mount: 129 branches: errno" "$(sy - mount none "$M2" unionfs "dirs=$many$V/128")" E2BIG
one_line "mount: 129 branches" "$(dmesg_since_mark | grep -a 'unionfs: ')" "unionfs: mount: " \
	"129 branches given, at most 128"
mkdir -p "$T/mm"
check "mount 128 branches" mount -i -t unionfs -o "dirs=${many%:}" none "$T/mm"
before128=$(dirs "$T/mm")
dmesg_mark
is "add=: a 129th branch: errno" "$(sy - remount "$T/mm" "add=:$V/128")" E2BIG
one_line "add=: a 129th branch" "$(dmesg_since_mark | grep -a 'unionfs: ')" \
	"unionfs: remount: add: '$V/128'" "more than 128 branches"
is "add=: a 129th branch: union unchanged" "$(dirs "$T/mm")" "$before128"
check "umount the 128-branch union" umount "$T/mm"

# good branches are still taken (the same ones, both ways)
is "mount: a good branch taken" "$(sy - mount none "$M2" unionfs "dirs=$B2/x:$T/o=ro")" OK
check "umount" umount "$M2"
is "add=: a good branch taken" "$(sy - remount "$M" "add=:$B2/x=ro")" OK
is "add=: a good branch shows" "$(dirs "$M")" "$before:$B2/x=ro"
check "umount the add= union" umount "$M"
check "umount the other union" umount "$T/u2"

# inode-number index (fsidx): distinct file systems get their position at mount
echo g > "$B2/g"; echo h > "$B0/h"
check "mount b0:b1/x:b2 (three file systems)" mount -i -t unionfs -o "dirs=$B0:$B1/x=ro:$B2=ro" none "$M"
is "fsidx == position: branch 0" "$(top "$M/h")" 0
is "fsidx == position: branch 1" "$(top "$M/f")" 1
is "fsidx == position: branch 2" "$(top "$M/g")" 2
check "umount" umount "$M"
# two branches on one file system share its index; the next file system gets the lowest free
# one, at mount as by add=: the same numbers both ways
check "mount b0:b1/x:b1/z:b2" mount -i -t unionfs -o "dirs=$B0:$B1/x=ro:$B1/z=ro:$B2=ro" none "$M"
ino_mount="$(stat -c %i "$M/h") $(stat -c %i "$M/f") $(stat -c %i "$M/g")"
is "fsidx of the third file system (4th branch) at mount" "$(top "$M/g")" 2
check "umount" umount "$M"
check "mount b0" mount -i -t unionfs -o "dirs=$B0" none "$M"
is "add= b1/x, b1/z, b2" "$(sy - remount "$M" "add=:$B1/x=ro,add=:$B1/z=ro,add=:$B2=ro")" OK
is "same branch list" "$(dirs "$M")" "$B0=rw:$B1/x=ro:$B1/z=ro:$B2=ro"
is "same inode numbers as the mount" \
	"$(stat -c %i "$M/h") $(stat -c %i "$M/f") $(stat -c %i "$M/g")" "$ino_mount"
check "umount" umount "$M"
finish
