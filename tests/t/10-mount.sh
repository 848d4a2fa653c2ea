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

# Branch paths with ':', '=', ',', whitespace and '\' (docs/unionfs.5 "Escapes"): dirs= decodes
# \: \= \\ and octal \ooo; /proc/mounts and mountinfo show them escaped, and the dirs= read back
# mounts the same union. A ',' cannot pass through mount(2)'s option string: \054, or raw with
# fsconfig(2) (one value per call).
E=$T/esc; mkdir -p "$E/a:b" "$E/x=y" "$E/sp ace" "$E/back\\slash" "$E/com,ma" "$E/q:r"
echo "x=y" > "$E/x=y/in1"; echo "sp ace" > "$E/sp ace/in2"; echo 'back\slash' > "$E/back\\slash/in3"
echo "com,ma" > "$E/com,ma/in4"; echo old > "$E/x=y/cu"
esc_dirs="$E/a\\:b=rw:$E/x\\=y=ro:$E/sp\\040ace=ro:$E/back\\\\slash=ro:$E/com\\054ma=ro"
want_dirs="$E/a\\:b=rw:$E/x\\=y=ro:$E/sp\\040ace=ro:$E/back\\\\slash=ro:$E/com\\054ma=ro"
mi_dirs() {	# the dirs= value of $T/m's super options in mountinfo, as the kernel shows it
	awk -v m="$T/m" '$5 == m { for (i = 7; $i != "-"; i++); print $(i + 3) }' /proc/self/mountinfo |
		tr ',' '\n' | sed -n 's/^dirs=//p'
}
esc_union() {	# esc_union WHAT: the union on $T/m is the 5 escaped branches
	is "$1: files of every branch visible" "$(cat "$T/m/in1" "$T/m/in2" "$T/m/in3" "$T/m/in4")" \
		"x=y"$'\n'"sp ace"$'\n'"back\\slash"$'\n'"com,ma"
	is "$1: sysfs branches" "$(cut -d' ' -f2- /sys/fs/unionfs/"$(stat -c '%Hd:%Ld' "$T/m")"/branches)" \
		"rw $E/a:b"$'\n'"ro $E/x=y"$'\n'"ro $E/sp\\040ace"$'\n'"ro $E/back\\134slash"$'\n'"ro $E/com,ma"
}
check "mount branches a:b x=y 'sp ace' back\\slash com,ma (escaped)" mount -i -t unionfs -o "dirs=$esc_dirs" none "$T/m"
esc_union "escaped dirs="
echo new > "$T/m/newfile"; echo changed > "$T/m/cu"
is "a new file lands in branch 0 'a:b'" "$(cat "$E/a:b/newfile" 2>&1)" new
is "a copy-up from 'x=y' lands in 'a:b', the lower copy unchanged" "$(cat "$E/a:b/cu" 2>&1) $(cat "$E/x=y/cu")" "changed old"
got=$(mi_dirs)
is "mountinfo shows dirs= escaped" "$got" "$want_dirs"
is "/proc/mounts shows the same" "$(awk -v m="$T/m" '$2 == m { print $4 }' /proc/mounts | tr ',' '\n' | sed -n 's/^dirs=//p')" "$want_dirs"
is "remount with the dirs= read back (unchanged) is accepted" "$($S remount "$T/m" "dirs=$got")" OK
br_line() { sed -n "$(($1 + 1))p" /sys/fs/unionfs/"$(stat -c '%Hd:%Ld' "$T/m")"/branches | cut -d' ' -f2-; }
is "remount add= with an escaped ':' (append q:r)" "$($S remount "$T/m" "add=:$E/q\\:r=ro")" OK
is "... the branch is 'q:r', last" "$(br_line 5)" "ro $E/q:r"
is "remount del= of an escaped branch" "$($S remount "$T/m" "del=$E/q\\:r")" OK
is "remount add=EXISTING:NEW, both escaped (q:r before com,ma)" "$($S remount "$T/m" "add=$E/com\\054ma:$E/q\\:r=ro")" OK
is "... q:r is branch 4, com,ma branch 5" "$(br_line 4) / $(br_line 5)" "ro $E/q:r / ro $E/com,ma"
is "remount mode= of an escaped branch" "$($S remount "$T/m" "mode=$E/q\\:r=ro")" OK
is "remount del= of it again" "$($S remount "$T/m" "del=$E/q\\:r")" OK
is "unionctl --add of a path with ':' and ','" "$(build/unionctl "$T/m" --add "$E/q:r=ro" --after "$E/com,ma" 2>&1 && br_line 5)" "ro $E/q:r"
check "unionctl --remove of it" build/unionctl "$T/m" --remove "$E/q:r"
# an older module has no sysfs branches file: unionctl reads dirs= of /proc/mounts, escapes and all
is "unionctl --list from /proc/mounts (UNIONCTL_SYSFS=0) = from sysfs" \
	"$(UNIONCTL_SYSFS=0 build/unionctl "$T/m" --list 2>&1)" "$(build/unionctl "$T/m" --list 2>&1)"
is "... which has the paths with ':', '=' and ','" \
	"$(UNIONCTL_SYSFS=0 build/unionctl "$T/m" --list 2>&1 | grep -c -e 'a:b' -e 'x=y' -e 'com,ma')" 3
check "umount the escaped union" umount "$T/m"
check "mount again with exactly the dirs= read from mountinfo" mount -i -t unionfs -o "dirs=$got" none "$T/m"
esc_union "dirs= read back"
is "... and mountinfo shows the same dirs=" "$(mi_dirs)" "$want_dirs"
check "umount it" umount "$T/m"
dmesg_mark
is "a bad escape is refused" "$($S mount none "$T/m" unionfs "dirs=$E/a\\qb")" EINVAL
is "... with one line naming it" "$(dmesg_since_mark | grep -c "unionfs: mount: branch 0: bad escape")" 1
is "an unescaped '=' in a path needs an explicit mode (as before)" "$($S mount none "$T/m" unionfs "dirs=$E/x=y")" EINVAL
is "fsconfig: a raw ',' in one dirs= value" "$(python3 tests/fsconfig.py mount "$T/m" unionfs "dirs=$E/com,ma=rw:$E/x\\=y=ro")" OK
is "... mountinfo shows it as \\054" "$(mi_dirs)" "$E/com\\054ma=rw:$E/x\\=y=ro"
echo w > "$T/m/w2"
is "... a new file lands in 'com,ma'" "$(cat "$E/com,ma/w2" 2>&1)" w
check "umount the fsconfig union" umount "$T/m"

# Refusals reach an fsconfig(2) caller through the fs_context log too (read(2) of the fs fd),
# and the kernel log still has exactly one line each.
fslog() {	# fslog DESC WANT_ERRNO WANT_LOG_REGEX fsconfig.py-ARGS...
	local desc=$1 want=$2 re=$3 out
	shift 3
	dmesg_mark
	out=$(python3 tests/fsconfig.py "$@")
	is "fsconfig $desc: errno" "$(head -n 1 <<< "$out")" "$want"
	if grep -Eq "^e unionfs: $re" <<< "$(sed 1d <<< "$out")"; then
		ok "fsconfig $desc: the reason in the fs_context log"
	else
		not_ok "fsconfig $desc: the reason in the fs_context log" "log: $(sed 1d <<< "$out")"
	fi
	is "fsconfig $desc: one kernel log line" "$(dmesg_since_mark | grep -c 'unionfs: ')" 1
}
fslog "unknown option" EINVAL "mount: unknown option 'bogus'" mount "$T/m" unionfs "dirs=$T/b0" bogus=1
fslog "unknown coherency" EINVAL "mount: unknown coherency 'x'" mount "$T/m" unionfs "dirs=$T/b0" coherency=x
fslog "missing branch" ENOENT "mount: branch 1 '$T/nonexistent': lookup failed \\(-2\\)" mount "$T/m" unionfs "dirs=$T/b0:$T/nonexistent"
fslog "branch not a directory" ENOTDIR "mount: branch 1 '$T/notdir' is not a directory" mount "$T/m" unionfs "dirs=$T/b0:$T/notdir"
fslog "bad branch mode" EINVAL "mount: branch 0: unknown branch mode 'rx'" mount "$T/m" unionfs "dirs=$T/b0=rx"
fslog "no dirs=" EINVAL "mount: missing dirs= option" mount "$T/m" unionfs coherency=none
check "mount for fspick" mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro" none "$T/m"
fslog "remount add= of a missing path" ENOENT "remount: add: '$T/nonexistent': lookup failed \\(-2\\)" reconfigure "$T/m" "add=$T/nonexistent"
fslog "remount del= of a non-branch" ENOENT "remount: del: '$T/b2' is not a branch of this union" reconfigure "$T/m" "del=$T/b2"
check "umount after fspick" umount "$T/m"
check "rmmod after umount" rmmod unionfs
check "insmod again" insmod "$UNIONFS_KO"
finish
