#!/bin/bash
# Removal through the union by unprivileged users, compared with a plain tmpfs (issue 21).
# The branch unlink/rmdir of unionfs_remove_locked runs as the mounter (docs/security.md), so
# the only check of the caller's right to remove a name is the VFS's may_delete on the union
# directory and inode. This compares, as real uids, every errno and the resulting tree with
# the same operations on a plain tmpfs holding the same objects:
#   - sticky directories (1777, and 1770 with a group), files and directories of several
#     owners removed by a stranger (EPERM), their owner, the directory's owner, root; rename
#     out of and over names in a sticky directory;
#   - directories the user cannot write (EACCES): root's 0755, the user's own 0555, a group
#     one without the group;
#   - write access only through a POSIX ACL entry (plain and sticky directory);
# each with the objects in the writable branch (up), only in a read-only lower branch (lo: the
# removal is a whiteout in a recreated parent), and in both (mix: branch unlink + whiteout).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dmesg_mark

A=4343 B=4344 C=4345 D=4346 G=4350
run_ops() {	# run_ops ROOT: each of ${ops[@]} under ROOT as its uid (sys.py batch); one answer a line
	local o who op p1 rest p2
	for o in "${ops[@]}"; do
		read -r who op p1 rest <<< "$o"
		p2=
		[[ $op == rename ]] && p2=$1/${rest%% *}
		printf '%s %s %s %s\n' "$who" "$op" "$1/$p1" "$p2"
	done | python3 "$S" batch
}

layout() {	# layout DIR: the same objects in each tree
	local d=$1
	mkdir -m 755 "$d"
	mkdir "$d/st"; chown $D:$D "$d/st"; chmod 1777 "$d/st"
	for f in fa fa2; do echo a > "$d/st/$f"; chown $A:$A "$d/st/$f"; done
	echo b > "$d/st/fb"; chown $B:$B "$d/st/fb"
	echo r > "$d/st/fr"; chmod 666 "$d/st/fr"
	echo d > "$d/st/fd"; chown $D:$D "$d/st/fd"; chmod 666 "$d/st/fd"
	mkdir "$d/st/da" "$d/st/db" "$d/st/dr"
	chown $A:$A "$d/st/da"; chown $B:$B "$d/st/db"; chmod 777 "$d/st/dr"
	mkdir "$d/gst"; chown 0:$G "$d/gst"; chmod 1770 "$d/gst"
	echo a > "$d/gst/fa"; chown $A:$A "$d/gst/fa"
	echo b > "$d/gst/fb"; chown $B:$B "$d/gst/fb"
	mkdir -m 755 "$d/ro"; echo a > "$d/ro/fa"; chown $A:$A "$d/ro/fa"; chmod 666 "$d/ro/fa"
	mkdir -m 777 "$d/ro/dw"; chmod 755 "$d/ro"
	mkdir "$d/own"; echo a > "$d/own/fa"; chown -R $A:$A "$d/own"; chmod 555 "$d/own"
	mkdir -m 755 "$d/acl"; echo r > "$d/acl/fr"; chmod 600 "$d/acl/fr"
	echo r > "$d/acl/fr2"; mkdir -m 700 "$d/acl/dr"
	setfacl -m u:$C:rwx "$d/acl"
	mkdir -m 1755 "$d/acls"; echo r > "$d/acls/fr"
	echo c > "$d/acls/fc"; chown $C:$C "$d/acls/fc"
	setfacl -m u:$C:rwx "$d/acls"
	echo i > "$d/imm"; mkdir -m 777 "$d/ap"; echo f > "$d/ap/f"; chmod 666 "$d/ap/f"
}
flags() {	# flags DIR: an immutable file, an append-only directory (not copied by cp -a)
	chattr +i "$1/imm" && chattr +a "$1/ap"
}

mkdir -p "$T/N" "$T/u/m"
mount -t tmpfs nat "$T/N"; chmod 755 "$T/N"
branch_fs tmpfs "$T/u" 2
chmod 755 "$T/u/b0" "$T/u/b1"
layout "$T/N/t"
layout "$T/u/b0/up"
layout "$T/u/b1/lo"
layout "$T/u/b1/mix"
cp -a "$T/u/b1/mix" "$T/u/b0/mix"
for d in N/t u/b0/up u/b1/lo u/b1/mix u/b0/mix; do flags "$T/$d" || break; done
have_flags=$(lsattr -d "$T/u/b0/mix/ap" 2>/dev/null | grep -c '^[^ ]*a')
M=$T/u/m
snap1=$(cd "$T/u/b1" && find . -printf '%P %y %m %u %g %s\n' | LC_ALL=C sort)
check "mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$T/u/b0=rw:$T/u/b1=ro" none "$M"

# the operations, in order: WHO OP PATH [PATH2] EXPECTED (the errno tmpfs must give)
ops=(
	"$C unlink st/fa EPERM"
	"$C unlink st/fr EPERM"
	"$C rmdir st/da EPERM"
	"$C rmdir st/dr EPERM"
	"$B unlink st/fa EPERM"
	"$A unlink st/fb EPERM"
	"$C rename st/fd st/x EPERM"
	"$A rename st/fa2 st/fd EPERM"
	"$A unlink st/fa OK"
	"$D unlink st/fb OK"
	"$A rmdir st/da OK"
	"$D rmdir st/db OK"
	"$D rename st/fr st/fr3 OK"
	"0 unlink st/fr3 OK"
	"0 rmdir st/dr OK"
	"$A rename st/fa2 st/fa3 OK"
	"$C:$G unlink gst/fa EPERM"
	"$C unlink gst/fb EACCES"
	"$A:$G unlink gst/fa OK"
	"$A unlink ro/fa EACCES"
	"$A rename ro/fa ro/dw/fa EACCES"
	"$A unlink own/fa EACCES"
	"$B unlink acl/fr EACCES"
	"$C unlink acl/fr OK"
	"$C rename acl/fr2 acl/fr4 OK"
	"$C rmdir acl/dr OK"
	"$C unlink acls/fr EPERM"
	"$C unlink acls/fc OK"
	"0 unlink imm EPERM"
	"0 rename imm imm2 EPERM"
	"$A unlink ap/f EPERM"
	"$A rename ap/f f2 EPERM"
)
((have_flags)) || { ops=("${ops[@]:0:${#ops[@]}-4}"); skip "chattr +i/+a" "tmpfs here has no FS_IOC_SETFLAGS"; }
tree() {	# tree DIR: what a user sees (names, type, mode, owner; ACLs)
	(cd "$1" && find . -type d -printf '%P %y %m %u %g\n' -o -printf '%P %y %m %u %g %s\n' |
		LC_ALL=C sort && find . | LC_ALL=C sort | xargs -d '\n' getfacl -p --skip-base 2>/dev/null)
}
nat_ok=1
mapfile -t NAT <<< "$(run_ops "$T/N/t")"	# (no /dev/fd in the guest)
for i in "${!ops[@]}"; do
	exp=${ops[i]##* }
	if [[ ${NAT[i]-none} != "$exp" ]]; then
		nat_ok=0
		not_ok "tmpfs: ${ops[i]}" "tmpfs answered ${NAT[i]-nothing}"
	fi
done
((nat_ok)) && ok "tmpfs gives the expected answer to each of ${#ops[@]} operations"

for v in up lo mix; do
	bad=()
	mapfile -t R <<< "$(run_ops "$M/$v")"
	for i in "${!ops[@]}"; do
		read -r who op p1 rest <<< "${ops[i]}"
		[[ ${R[i]-none} == "${NAT[i]}" ]] ||
			bad+=("uid ${who%%:*} $op $p1: union ${R[i]-nothing}, tmpfs ${NAT[i]}")
	done
	is "$v: all ${#ops[@]} answers as on tmpfs" "$(printf '%s\n' "${bad[@]}")" ""
	is "$v: the resulting tree is tmpfs's" "$(tree "$M/$v")" "$(tree "$T/N/t")"
done
is "the read-only branch is unchanged" \
	"$(cd "$T/u/b1" && find . -printf '%P %y %m %u %g %s\n' | LC_ALL=C sort)" "$snap1"
is "lo: the removals are whiteouts in the recreated parents" \
	"$(cd "$T/u/b0/lo" && find . -name '.wh.*' | LC_ALL=C sort | tr '\n' ' ')" \
	"./acl/.wh.dr ./acl/.wh.fr ./acl/.wh.fr2 ./acls/.wh.fc ./gst/.wh.fa ./st/.wh.da ./st/.wh.db ./st/.wh.dr ./st/.wh.fa ./st/.wh.fa2 ./st/.wh.fb ./st/.wh.fr "
is "lo: the recreated parents keep owner and mode" \
	"$(cd "$T/u/b0/lo" && stat -c '%n %u %g %a' st gst acl acls)" \
	"$(cd "$T/u/b1/lo" && stat -c '%n %u %g %a' st gst acl acls)"
check "umount" umount "$M"
is "no kernel warnings" "$(dmesg_bad)" ""
finish
