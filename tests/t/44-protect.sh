#!/bin/bash
# What a copy-up must keep of an object's protection, and writes that must still work, compared
# with a plain tmpfs holding the same objects (found by a review, session 17):
#   - append-only and immutable flags (chattr +a, +i) of a lower file or directory survive the
#     copy-up that an operation they allow causes (an open for append; a create in an
#     append-only directory; a create below an immutable one): what they forbid afterwards
#     fails with EPERM as on tmpfs, also after a remount (the copy keeps them in
#     trusted.unionfs.protattr, never listed), and lsattr through the union shows them;
#   - a file with a file capability (security.capability): an O_TRUNC open, truncate or chown
#     by its owner (no CAP_SETFCAP) succeeds and drops the capability, as on tmpfs (was EPERM
#     on the debug kernel, whose LSMs leave the removexattr check to commoncap; Debian's passed);
#   - fsync of a file open for writing after its branch was made read-only (mode=) still
#     reaches the branch (was skipped: 0 returned, nothing synced);
#   - a chmod or chown made directly in the branch decides the next access through the union
#     at once (was: the cached mode until a stat); an invalid POSIX ACL (no mask) is refused
#     with EINVAL before any copy-up;
#   - tmpfs mounts inside union directories stay mounted while walks race incgen remounts (a
#     revalidation whose lookup met the remount (ESTALE) dropped the directory in use: the
#     VFS detached its mounts; the test build's race_delay_us widens that window).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dmesg_mark
sy_start
U=4343
A=$T/a B=$T/b N=$T/n M=$T/m
mkdir -p "$A" "$B" "$N" "$M"
for d in "$A" "$B" "$N"; do mount -t tmpfs -o mode=755 t "$d"; done

CAP=0x0100000200200000000000000000000000000000	# cap_net_raw+p, VFS_CAP_REVISION_2
layout() {	# layout DIR: the same protected objects in each tree
	local d=$1 f
	echo log > "$d/log"; chmod 666 "$d/log"; chattr +a "$d/log"
	mkdir -m 777 "$d/ap"; echo f > "$d/ap/f"; chmod 666 "$d/ap/f"; chattr +a "$d/ap"
	mkdir -m 777 "$d/imm" "$d/imm/sub"; echo g > "$d/imm/g"; chattr +i "$d/imm"
	for f in cap cap2 cap3; do
		echo hi > "$d/$f"; chown $U:$U "$d/$f"; chmod 755 "$d/$f"
		setfattr -n security.capability -v $CAP "$d/$f"
	done
}
layout "$N"
layout "$B"
for d in "$N" "$A"; do	# a capability file in the writable branch too (no copy-up)
	echo hi > "$d/capup"; chown $U:$U "$d/capup"; chmod 755 "$d/capup"
	setfattr -n security.capability -v $CAP "$d/capup"
done
check "mount dirs=a=rw:b=ro (flags and capabilities in b)" \
	mount -i -t unionfs -o "dirs=$A=rw:$B=ro" none "$M" || finish

# the same operation on tmpfs (the judge) and on the union: the same answer
same() {	# same DESC WHO OP PATH [ARGS...]
	local desc=$1 who=$2 op=$3 p=$4 n m
	shift 4
	n=$(sy "$who" "$op" "$N/$p" "$@") m=$(sy "$who" "$op" "$M/$p" "$@")
	is "$desc: $m (tmpfs: $n)" "$m" "$n"
}
caps() { getfattr --absolute-names -n security.capability "$1" 2>&1 | grep -c 'security.capability='; }
lsflag() { lsattr -d "$1" 2>/dev/null | cut -d' ' -f1 | tr -cd "$2" | wc -c; }

same "open O_WRONLY|O_APPEND of an append-only file (copy-up)" $U open log wa
check "it was copied up" test -f "$A/log"
same "then O_TRUNC" $U open log wt
same "then O_WRONLY without O_APPEND" $U open log w
same "then unlink by root" - unlink log
same "then chmod by root" - chmod log 600
is "lsattr through the union: a" "$(lsflag "$M/log" a)" 1
same "create in an append-only directory (copies it up)" $U open ap/new wc
check "the directory was copied up" test -d "$A/ap"
same "then unlink of its entry" $U unlink ap/f
same "then rename of its entry" $U rename ap/f ap/f2
is "lsattr -d through the union: a" "$(lsflag "$M/ap" a)" 1
same "create below an immutable directory (copies it up)" $U open imm/sub/x wc
check "the immutable directory was copied up" test -d "$A/imm"
same "then a create in it" $U open imm/new wc
same "then unlink in it by root" - unlink imm/g
same "then mkdir in it by root" - mkdir imm/d2
is "lsattr -d through the union: i" "$(lsflag "$M/imm" i)" 1
is "the copies keep the flags in trusted.unionfs.protattr" \
	"$(for f in log ap imm; do getfattr --absolute-names --only-values -n trusted.unionfs.protattr "$A/$f"; echo; done | tr '\n' ' ')" "a a i "
is "protattr never listed through the union" "$(getfattr --absolute-names -d -m - "$M/log" "$M/imm" 2>&1 | grep -c protattr)" 0
is "protattr cannot be read through the union (the private namespace: EOPNOTSUPP)" "$(sy - getxattr "$M/log" trusted.unionfs.protattr)" ENOTSUP

same "O_TRUNC open of a file with a capability, by its owner" $U open cap wt
is "  the capability is gone" "$(caps "$M/cap")" "$(caps "$N/cap")"
same "truncate of one, by its owner" $U truncate cap2 1
is "  the capability is gone" "$(caps "$M/cap2")" "$(caps "$N/cap2")"
same "chown of one to its owner, by its owner" $U chown cap3 $U $U
is "  the capability is gone" "$(caps "$M/cap3")" "$(caps "$N/cap3")"
same "O_TRUNC open of one in the writable branch" $U open capup wt
is "  the capability is gone" "$(caps "$M/capup")" "$(caps "$N/capup")"
is "tmpfs dropped them all (the judge works)" "$(caps "$N/cap")$(caps "$N/cap2")$(caps "$N/cap3")$(caps "$N/capup")" 0000

# the flags hold after a remount (a new union inode reads protattr)
check "umount and mount again" bash -c "umount '$M' && mount -i -t unionfs -o 'dirs=$A=rw:$B=ro' none '$M'"
same "after remount: O_TRUNC of the append-only file" $U open log wt
same "after remount: unlink in the append-only directory" $U unlink ap/f
same "after remount: unlink in the immutable directory by root" - unlink imm/g
is "after remount: lsattr shows a, a, i" "$(lsflag "$M/log" a)$(lsflag "$M/ap" a)$(lsflag "$M/imm" i)" 111
echo x > "$A/bad"; setfattr -n trusted.unionfs.protattr -v zz "$A/bad"
is "a malformed protattr fails the lookup (EIO)" "$(sy - open "$M/bad" r)" EIO
is "  with one warning" "$(dmesg_since_mark | grep -c 'bad: malformed trusted.unionfs.protattr')" 1
umount "$M"

# fsync after mode=ro reaches the branch
C=$T/c
mkdir -p "$C"; mount -t tmpfs -o mode=755 t "$C"
echo d > "$C/f"
mount -i -t unionfs -o "dirs=$A=rw:$C=rw:$B=ro" none "$M"
TR=/sys/kernel/tracing EV=/sys/kernel/tracing/events/unionfs/unionfs_branch_op
exec 3>> "$M/f"
is "mode=c=ro with a file open for writing on it" "$($S remount "$M" "mode=$C=ro")" OK
echo > $TR/trace
echo "op == $(tr_enum unionfs_branch_op fsync)" > $EV/filter
echo 1 > $EV/enable
python3 -c 'import os; os.write(3, b"x\n"); os.fsync(3)'
is "fsync of it: one fsync of the branch file" "$(grep -c 'unionfs_branch_op:.* fsync branch' $TR/trace)" 1
echo 0 > $EV/enable; echo 0 > $EV/filter
exec 3>&-
is "its data is in the branch" "$(cat "$C/f")" "$(printf 'd\nx')"
umount "$M"

# mounts inside union directories survive incgens racing walks
M2=$T/m2
mkdir -p "$M2" "$B/w"
for i in $(seq 20); do mkdir -p "$B/w/d$i/m"; done
mount -i -t unionfs -o "dirs=$A=rw:$B=ro" none "$M2"
for i in $(seq 20); do mount -t tmpfs t "$M2/w/d$i/m" && touch "$M2/w/d$i/m/x"; done
nmounts() { awk -v m="$M2/" 'index($2, m) == 1' /proc/mounts | wc -l; }
is "20 tmpfs mounted inside the union" "$(nmounts)" 20
walk() { local i; while :; do for i in {1..20}; do [[ -e $M2/w/d$i/m/x ]]; done; done; }
walk & w1=$!
walk & w2=$!
for k in $(seq 200); do build/unionctl "$M2" --incgen > /dev/null || break; done
is "200 incgens racing 2 walkers: all 20 still mounted" "$(nmounts)" 20
# the test build's race_delay_us holds each revalidation's lookup 20 ms (unionfs_race_window)
DELAY=/sys/kernel/debug/unionfs/race_delay_us
check "race_delay_us exists (test build)" test -w "$DELAY"
echo 20000 > "$DELAY"
for k in $(seq 40); do build/unionctl "$M2" --incgen > /dev/null || break; done
echo 0 > "$DELAY"
kill $w1 $w2; wait $w1 $w2 2> /dev/null
is "40 more with revalidation held 20 ms: all 20 still mounted" "$(nmounts)" 20
is "  each still shows its file" "$(ls "$M2"/w/d*/m/x 2>/dev/null | wc -l)" 20
umount_all "$M2"

# a chmod or chown made directly in the branch decides the next access at once (was: the
# union inode's cached mode and owner until the next stat of the name)
mount -i -t unionfs -o "dirs=$A=rw:$B=ro" none "$M"
echo secret > "$B/sec"; chmod 644 "$B/sec"; mkdir -m 755 "$B/sd"; echo s > "$B/sd/x"
cat "$M/sec" "$M/sd/x" > /dev/null
is "before: another user reads the file" "$(sy $U open "$M/sec" r)" OK
chmod 600 "$B/sec"; chmod 700 "$B/sd"
is "after a direct chmod 600 in the branch: another user's open for reading: EACCES" \
	"$(sy $U open "$M/sec" r)" EACCES
is "after a direct chmod 700 of a directory: another user's search in it: EACCES" \
	"$(sy $U open "$M/sd/x" r)" EACCES
chown $U "$B/sec"
is "after a direct chown to that user: the open succeeds" "$(sy $U open "$M/sec" r)" OK
# a POSIX ACL that parses but is invalid (a named user, no mask): EINVAL as on tmpfs, and
# the refused change copies nothing up (was: copied up, then EINVAL)
for d in "$N" "$B"; do echo acl > "$d/aclf"; chown $U "$d/aclf"; done
same "an ACL without a mask, set by the owner of a lower file" $U setacl aclf 1000 nomask
check "  nothing was copied up" test ! -e "$A/aclf"
umount "$M"

is "no kernel warnings" "$(dmesg_bad | head -n 3)" ""
finish
