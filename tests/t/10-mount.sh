#!/bin/bash
# Mounting: dirs= parsing, every mount error with its errno and one pr_warn line,
# /proc/mounts, statfs, umount + rmmod leave nothing behind.
. "$(dirname "$0")/../lib.sh"
require_guest
mk_tmpdir
S=tests/sys.py
mkbranches "$T" 3
mkdir -p "$T/m" "$T/file-parent"
touch "$T/notdir"

# mount_err DESC ERRNO OPTIONS : mount fails with ERRNO and logs exactly one unionfs: line
mount_err() {
	local desc=$1 want=$2 opts=$3 got warn
	dmesg_mark
	got=$($S mount none "$T/m" unionfs "$opts")
	warn=$(dmesg_since_mark | grep -c 'unionfs: ')
	is "$desc: errno" "$got" "$want"
	is "$desc: one pr_warn line" "$warn" 1
}
mount_err "no dirs=" EINVAL ""
mount_err "empty branch list" EINVAL "dirs="
mount_err "missing branch" ENOENT "dirs=$T/b0:$T/nonexistent"
mount_err "branch not a directory" ENOTDIR "dirs=$T/b0:$T/notdir"
mount_err "overlapping branches" EINVAL "dirs=$T/b0:$T/b0/../b0"
mkdir -p "$T/b0/sub"
mount_err "nested branches" EINVAL "dirs=$T/b0:$T/b0/sub"
rmdir "$T/b0/sub"
mount_err "unknown option" EINVAL "dirs=$T/b0,bogus=1"
mount_err "unknown branch mode" EINVAL "dirs=$T/b0=rx"
mount_err "read-only leftmost branch on a rw mount" EINVAL "dirs=$T/b0=ro:$T/b1"
# the guest's / is 9p mounted read-only: a rw branch there is refused, a ro one is fine
mount_err "read-write branch on a read-only file system" EROFS "dirs=$T/b0:/usr/share/doc"
is "read-only branch on a read-only file system" "$($S mount none "$T/m" unionfs "dirs=$T/b0:/usr/share/doc=ro")" OK
check "umount the union with a branch on a read-only fs" umount "$T/m"
mkdir -p /tmp/u$$
many=$(for i in $(seq 0 128); do printf '%s:' /tmp/u$$; done)
mount_err "129 branches" E2BIG "dirs=${many%:}"
rmdir /tmp/u$$

# a unionfs as a branch
check "mount a union" mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro" none "$T/m"
mkdir -p "$T/m2"
mount_err "unionfs branch" EINVAL "dirs=$T/b2:$T/m"
check "umount" umount "$T/m"

# read-only leftmost branch is fine on a ro mount
is "ro mount with ro leftmost branch" "$($S mount none "$T/m" unionfs "dirs=$T/b0=ro:$T/b1=ro" ro)" OK
check "umount ro union" umount "$T/m"

# /proc/mounts shows the exact branch list
check "mount 3 branches" mount -i -t unionfs -o "dirs=$T/b0=rw:$T/b1=ro:$T/b2" none "$T/m"
opts=$(awk -v m="$T/m" '$2 == m { print $4 }' /proc/mounts)
is "/proc/mounts dirs=" "$(tr ',' '\n' <<< "$opts" | grep '^dirs=')" "dirs=$T/b0=rw:$T/b1=ro:$T/b2=rw"
is "/proc/mounts fstype" "$(awk -v m="$T/m" '$2 == m { print $3 }' /proc/mounts)" unionfs

# statfs: branch 0's numbers, namelen reduced by the whiteout prefix
nl0=$(stat -f -c %l "$T/b0")
is "statfs namelen = branch0 - 4" "$(stat -f -c %l "$T/m")" "$((nl0 - 4))"
is "statfs type is unionfs magic" "$(stat -f -c %t "$T/m")" f15f083d
is "statfs blocks from branch 0" "$(stat -f -c %b "$T/m")" "$(stat -f -c %b "$T/b0")"

# remount with the same dirs= (as mount(8) sends it) is accepted; a changed one is not
is "remount with unchanged dirs=" "$($S remount "$T/m" "dirs=$T/b0=rw:$T/b1=ro:$T/b2=rw")" OK
dmesg_mark
is "remount with changed dirs=" "$($S remount "$T/m" "dirs=$T/b1")" EINVAL
is "remount error logs one line" "$(dmesg_since_mark | grep -c 'unionfs: ')" 1

echo hello > "$T/b1/f"
is "read through the union" "$(cat "$T/m/f")" hello
check "umount" umount "$T/m"
check "rmmod after umount" rmmod unionfs
check "insmod again" insmod "$UNIONFS_KO"
finish
