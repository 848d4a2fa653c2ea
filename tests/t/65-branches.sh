#!/bin/bash
# Branch management at run time: remount add=/del=/mode=/incgen (all or nothing),
# generation numbers, open files across branch changes, the INCGEN/QUERYFILE
# ioctls and unionctl(8); the largest file size follows an added branch (s_maxbytes).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
branch_fs tmpfs "$T" 6
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1 B2=$T/b2 B3=$T/b3 B4=$T/b4 B5=$T/b5
U=build/unionctl
dirs() { awk -v m="$M" '$2 == m { print $4 }' /proc/mounts | tr ',' '\n' | sed -n 's/^dirs=//p'; }
gen() { sed -n 's/^generation //p' /sys/kernel/debug/unionfs/mounts/*/branches | tail -1; }

echo b1 > "$B1/f"; echo b1 > "$B1/common"; echo b2 > "$B2/common"; echo b2 > "$B2/only2"
echo b3 > "$B3/common"; echo head > "$B3/headfile"; mkdir "$B1/d" "$B2/d"; touch "$B1/d/x" "$B2/d/y"
check "mount b0:b1=ro" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
g0=$(gen)
is "debugfs view lists branches" "$(grep -c "^[01] " /sys/kernel/debug/unionfs/mounts/*/branches)" 2

# a file opened before the changes keeps working
exec 7< "$M/f"
echo w > "$M/wfile"; exec 8>> "$M/wfile"

# insert at head, middle, tail
is "add at head" "$($S remount "$M" "add=$B3=rw")" OK
is "head branch in /proc/mounts" "$(dirs)" "$B3=rw:$B0=rw:$B1=ro"
is "head branch visible in lookups" "$(cat "$M/common")" b3
is "generation bumped" "$(( $(gen) > g0 ))" 1
is "add in the middle" "$($S remount "$M" "add=$B1:$B2=ro")" OK
is "middle branch in /proc/mounts" "$(dirs)" "$B3=rw:$B0=rw:$B2=ro:$B1=ro"
is "middle branch visible in readdir" "$(names "$M/d" | tr '\n' ' ')" "x y "
is "add at the tail" "$($S remount "$M" "add=:$B4=ro")" OK
is "tail branch in /proc/mounts" "$(dirs)" "$B3=rw:$B0=rw:$B2=ro:$B1=ro:$B4=ro"
is "file opened before the changes still reads" "$(cat <&7)" b1
echo more >&8
is "file opened before the changes still writes" "$(cat "$M/wfile" | tr '\n' ' ')" "w more "
# remove, mode
is "remove the head branch" "$($S remount "$M" "del=$B3")" OK
is "removed branch gone from lookups" "$(cat "$M/common")" b2
is "removed branch gone from readdir" "$(names "$M" | grep -c headfile)" 0
is "mode change" "$($S remount "$M" "mode=$B2=rw")" OK
is "mode change in /proc/mounts" "$(dirs)" "$B0=rw:$B2=rw:$B1=ro:$B4=ro"
# all or nothing
before=$(dirs); gb=$(gen)
dmesg_mark
is "combined remount with one bad command" "$($S remount "$M" "add=$B5,del=$T/nonexistent")" ENOENT
is "bad command: one pr_warn line" "$(dmesg_since_mark | grep -c 'unionfs: ')" 1
is "bad command changed nothing" "$(dirs)" "$before"
is "bad command did not bump the generation" "$(gen)" "$gb"
is "overlapping branch refused" "$($S remount "$M" "add=$B0/sub")" ENOENT
mkdir "$B5/sub"
is "overlapping branch refused (EINVAL)" "$($S remount "$M" "add=$B5,add=$B5/sub")" EINVAL
is "ro leftmost branch on a rw union refused" "$($S remount "$M" "mode=$B0=ro")" EINVAL
is "unknown remount command refused" "$($S remount "$M" "bogus=1")" EINVAL
# a rw branch needs a writable mount (the guest's / is 9p mounted read-only)
dmesg_mark
is "add of a rw branch on a read-only fs refused" "$($S remount "$M" "add=:/usr/share/doc")" EROFS
is "rw branch on a read-only fs: one pr_warn line" "$(dmesg_since_mark | grep -c 'unionfs: ')" 1
is "add of a ro branch on a read-only fs" "$($S remount "$M" "add=:/usr/share/doc=ro")" OK
is "mode=rw of a branch on a read-only fs refused" "$($S remount "$M" "mode=/usr/share/doc=rw")" EROFS
is "del of the branch on a read-only fs" "$($S remount "$M" "del=/usr/share/doc")" OK
# EBUSY with an open file on the branch
exec 9< "$M/only2"
is "del of a branch with an open file" "$($S remount "$M" "del=$B2")" EBUSY
exec 9<&-
is "del after close" "$($S remount "$M" "del=$B2")" OK
exec 7<&- 8>&-
is "deleting every branch refused" "$($S remount "$M" "del=$B0,del=$B1,del=$B4")" EINVAL
# ioctls
is "QUERYFILE needs a union file" "$($S ioctl "$B0" 0x80041516 2>&1 | tail -1)" ENOTTY
check "re-add b2, b3" mount -i -o "remount,add=:$B2=ro,add=:$B3=ro" "$M"
out=$($U "$M" --query "$M/common")
is "QUERYFILE: file in 3 branches" "$(head -1 <<< "$out" | cut -d' ' -f2-4)" "3 of 5"
is "QUERYFILE: file in 1 branch" "$($U "$M" --query "$M/f" | head -1 | cut -d' ' -f2-4)" "1 of 5"
echo x > "$B3/f"
is "QUERYFILE: file in 2 branches (1: $B1, 4: $B3)" "$($U "$M" --query "$M/f" | sed 1d | cut -d' ' -f1 | tr '\n' ' ')" "1 4 "
g1=$(gen)
is "INCGEN as root" "$($U "$M" --incgen)" "generation $((g1 + 1))"
is "INCGEN as uid 65534" "$(setpriv --reuid=65534 --regid=65534 --clear-groups $U "$M" --incgen 2>&1)" "unionctl: incgen: Operation not permitted"
# unionctl commands and errors
is "unionctl --list" "$($U "$M" --list | sed 1d | awk '{print $1 $2}' | tr '\n' ' ')" "0rw 1ro 2ro 3ro 4ro "
check "unionctl --add --before" $U "$M" --add --before "$B1" "$B5=ro"
is "unionctl --add --before placed it" "$($U "$M" --list | awk -v p="$B5" '$3 == p {print $1}')" 1
check "unionctl --mode" $U "$M" --mode "$B5=rw"
check "unionctl --remove" $U "$M" --remove "$B5"
check "unionctl --add --after (tail)" $U "$M" --add --after "$B3" "$B5"
is "unionctl --add --after placed it last" "$($U "$M" --list | tail -1 | awk '{print $3}')" "$B5"
$U "$M" --remove "$T/nothere" >/dev/null 2>&1; is "unionctl --remove unknown: exit 1" "$?" 1
$U /tmp --list >/dev/null 2>&1; is "unionctl on a non-union: exit 3" "$?" 3
$U "$M" --frob >/dev/null 2>&1; is "unionctl usage error: exit 2" "$?" 2
$U "$M" --mode "$B0=ro" >/dev/null 2>&1; is "unionctl refused mode change: exit 1" "$?" 1
# unionctl keeps the mount's flags (a bare MS_REMOUNT cleared nosuid,nodev,noexec)
M2=$T/m2; mkdir -p "$M2" "$T/s0" "$T/s1" "$T/s2"
mflags() { awk -v m="$M2" '$5 == m { print $6 }' /proc/self/mountinfo | tr ',' '\n' | grep -E '^(nosuid|nodev|noexec|noatime|ro)$' | sort | tr '\n' ' '; }
check "mount nosuid,nodev,noexec,noatime union" mount -i -t unionfs -o nosuid,nodev,noexec,noatime,dirs="$T/s0=rw:$T/s1=ro" none "$M2"
is "flags before unionctl" "$(mflags)" "noatime nodev noexec nosuid "
check "unionctl --add DIR=ro without a position (the syntax usage prints)" $U "$M2" --add "$T/s2=ro"
is "a ro branch without a position goes just below branch 0" "$($U "$M2" --list | sed 1d | awk '{print $3 "=" $2}' | tr '\n' ' ')" "$T/s0=rw $T/s2=ro $T/s1=ro "
is "unionctl --add kept nosuid,nodev,noexec,noatime" "$(mflags)" "noatime nodev noexec nosuid "
check "unionctl --remove" $U "$M2" --remove "$T/s2"
is "unionctl --remove kept nosuid,nodev,noexec,noatime" "$(mflags)" "noatime nodev noexec nosuid "
check "unionctl --mode" $U "$M2" --mode "$T/s1=ro"
is "unionctl --mode kept the flags" "$(mflags)" "noatime nodev noexec nosuid "
# --list --json, --busy, --fsck on a mounted union's branches
echo s1 > "$T/s1/lowfile"; mkdir -p "$T/s1/ld"; echo up > "$M2/upfile"
js=$($U "$M2" --list --json)
is "unionctl --list --json: valid JSON with the branches" \
	"$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j["mount"] == sys.argv[2], j["coherency"], j["markers"], [(b["index"], b["mode"], b["path"] == sys.argv[3] + "/s" + str(b["index"])) for b in j["branches"]], j["generation"] > 0)' "$js" "$M2" "$T")" \
	"True reval unionfs [(0, 'rw', True), (1, 'ro', True)] True"
$U "$M2" --busy "$T/s1" > "$T/busy.out"; rc=$?
is "unionctl --busy: nothing holds s1: exit 1, header only" "$rc:$(wc -l < "$T/busy.out")" "1:1"
exec 5< "$M2/lowfile"
(cd "$M2/ld" && exec sleep 30) & bpid=$!
sleep 0.5
$U "$M2" --busy "$T/s1" > "$T/busy.out"; rc=$?
is "unionctl --busy s1: this shell's fd5 and the sleeper's cwd, exit 0" \
	"$rc $(awk -v me=$$ -v s=$bpid 'NR > 1 && (($1 == me && $3 == "fd5") || ($1 == s && $3 == "cwd")) { print $4 }' "$T/busy.out" | sort | tr '\n' ' ')" \
	"0 $M2/ld $M2/lowfile "
exec 6< "$M2/upfile"
is "unionctl --busy: a file on s0 is listed for s0, not for s1" \
	"$($U "$M2" --busy "$T/s0" | awk -v me=$$ '$1 == me { print $3, $4 }') / $($U "$M2" --busy "$T/s1" | awk -v me=$$ '$1 == me && $3 == "fd6"')" \
	"fd6 $M2/upfile / "
exec 6<&-
# a mapping outlives its fd: the process still uses the branch's file
python3 -c 'import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
addr = libc.mmap(None, 4096, 1, 1, fd, 0)	# PROT_READ, MAP_SHARED (python mmap keeps a dup of the fd)
os.close(fd)
print("ready" if addr not in (None, ctypes.c_void_p(-1).value) else "mmap failed", flush=True)
time.sleep(30)' "$M2/lowfile" > "$T/mm.out" 5<&- & mpid=$!
for i in $(seq 50); do grep -q . "$T/mm.out" && break; sleep 0.1; done
is "a process maps a union file on s1 and closes its fd" "$(cat "$T/mm.out") $(ls -l /proc/$mpid/fd | grep -c "$M2")" "ready 0"
is "unionctl --busy s1: a mapping of a union file whose fd is closed" \
	"$($U "$M2" --busy "$T/s1" | awk -v p=$mpid '$1 == p { print $3, $4 }')" "mmap $M2/lowfile"
is "... not listed for s0" "$($U "$M2" --busy "$T/s0" | awk -v p=$mpid '$1 == p')" ""
kill $mpid 2>/dev/null; wait $mpid 2>/dev/null
# an object opened before a branch change (QUERYFILE: ESTALE) pins the earlier table's branches
check "a branch change while fd5 is open" $U "$M2" --add "$T/s2=ro" --after "$T/s1"
is "unionctl --busy s1: an fd of an earlier table is listed as a stale table" \
	"$($U "$M2" --busy "$T/s1" | awk -v me=$$ '$1 == me && $3 == "fd5" { print $4, $5, $6 }')" "$M2/lowfile (stale table)"
exec 5<&-; kill $bpid 2>/dev/null; wait $bpid 2>/dev/null
check "unionctl --remove s2 again" $U "$M2" --remove "$T/s2"
touch "$T/s0/.wh..wh.unionfs.77"
$U --fsck --repair "$T/s0" "$T/s1" > /dev/null 2> "$T/fsck.err"; rc=$?
is "unionctl --fsck --repair refuses a mounted union's branches: exit 8, a line for each" "$rc $(grep -c "is a branch of the union mounted at $M2" "$T/fsck.err")" "8 2"
is "... and removed nothing" "$(ls -A "$T/s0" | grep -c unionfs)" 1
check "umount the nosuid union" umount "$M2"
out=$($U --fsck --repair "$T/s0" "$T/s1"); rc=$?
is "unionctl --fsck --repair after umount: the leftover removed, exit 1" "$rc $(ls -A "$T/s0" | grep -c unionfs)" "1 0"
out=$($U --help 2>/dev/null); is "unionctl --help: exit 0, usage on stdout" "$?:$(grep -c '^usage:' <<< "$out")" "0:1"
is "unionctl --version" "$($U --version)" "unionctl 1.2"
# s_maxbytes follows an added branch: a file system with bigger files than those at mount
modprobe loop 2>/dev/null
mkdir -p "$T/e4" "$T/big" "$T/mx"
truncate -s 64M "$T/e4.img" && mkfs.ext4 -q -F "$T/e4.img" && mount -o loop "$T/e4.img" "$T/e4"
mount -t tmpfs t "$T/big"
check "mount dirs=ext4=rw (its files up to 16 TiB)" mount -i -t unionfs -o "dirs=$T/e4=rw" none "$T/mx"
touch "$T/mx/f"
is "a 17 TiB file on it: EFBIG" "$($S truncate "$T/mx/f" 18691697672192)" EFBIG
check "add= a tmpfs branch on top" $U "$T/mx" --add "$T/big=rw"
touch "$T/mx/g"
is "a 17 TiB sparse file on the tmpfs branch: as on tmpfs" \
	"$($S truncate "$T/mx/g" 18691697672192) $(touch "$T/big/h"; $S truncate "$T/big/h" 18691697672192)" "OK OK"
check "umount it" umount "$T/mx"
umount "$T/e4" "$T/big"
check "umount after branch churn" umount "$M"
check "rmmod after branch churn" rmmod unionfs
check "insmod again" insmod "$UNIONFS_KO"
finish
