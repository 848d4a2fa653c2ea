#!/bin/bash
# Setting POSIX ACLs through the union as the objects' (unprivileged) owners (issue 21; the
# root cases are in 47-acl.sh). Each operation is done through the union on an upper object
# and on a lower-only one (copied up by it), and on the same object in a plain tmpfs; then
# getfacl and the mode through the union, getfacl in the writable branch, and what other users
# may do with the object must all be tmpfs's:
#   - the owner adds a named user and a named group (setfacl -m), then removes them (-x, -b);
#   - the owner, not a member of the owning group, sets an ACL on a setgid file: the setgid
#     bit is cleared (posix_acl_update_mode) exactly as on tmpfs;
#   - chmod through the union of a file with an ACL rewrites its mask;
#   - a default ACL set by the owner of a directory is inherited by a file a named user then
#     creates in it.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
command -v getfacl > /dev/null && command -v setfacl > /dev/null || skip_all "no getfacl/setfacl (package acl)"
mk_tmpdir
chmod 755 "$T"
dmesg_mark
mkdir -p "$T/R" "$T/u/m"
mount -t tmpfs nat "$T/R"
branch_fs tmpfs "$T/u" 2
B0=$T/u/b0 B1=$T/u/b1 M=$T/u/m R=$T/R
chmod 755 "$B0" "$B1" "$R"
O=4343 U=4345 V=4346 G=4350
as() {	# as UID[:GROUPS] CMD...: without capabilities
	local u=${1%%:*} g=(--clear-groups)
	[[ $1 == *:* ]] && g=(--groups="${1#*:}")
	shift
	setpriv --reuid="$u" --regid="$u" "${g[@]}" --inh-caps=-all --bounding-set=-all "$@"
}
sy_start
wr() { sy "$1" open "$2" wa; }	# wr UID[:GROUPS] PATH: open O_WRONLY|O_APPEND as UID: OK or the errno
facl() { getfacl -c -p "$1" 2>&1 | sed '/^$/d'; }
st() { stat -c '%A %u %g' "$1"; }

# objects: f (file 0640), s (setgid 2775, group G the owner is not in), d (dir 0755), all
# owned by O; "up" ones in b0, "lo" ones in b1 only, and a copy of each in R (r-up, r-lo)
mk() {	# mk DIR
	mkdir -m 755 "$1"
	echo f > "$1/f"; chmod 640 "$1/f"
	echo s > "$1/s"; chown $O:$G "$1/s"; chmod 2775 "$1/s"
	mkdir "$1/d"; chmod 755 "$1/d"
	chown $O:$O "$1/f" "$1/d"
}
mk "$B0/up"; mk "$B1/lo"; mk "$R/up"; mk "$R/lo"
snap() { (cd "$B1" && find . -printf '%P %y %m %u %g %s\n' | LC_ALL=C sort && getfacl -R -p . 2>/dev/null); }
snap1=$(snap)
check "mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || exit 1

same() {	# same DESC V REL: through the union, in b0, and as seen by U and V: as on tmpfs
	local desc=$1 v=$2 rel=$3 uni nat
	uni="$(st "$M/$v/$rel"); $(facl "$M/$v/$rel"); U $(wr $U "$M/$v/$rel"); V $(wr $V "$M/$v/$rel")"
	nat="$(st "$R/$v/$rel"); $(facl "$R/$v/$rel"); U $(wr $U "$R/$v/$rel"); V $(wr $V "$R/$v/$rel")"
	is "$v: $desc: through the union as on tmpfs" "$uni" "$nat"
	is "$v: $desc: in the writable branch as on tmpfs" \
		"$(st "$B0/$v/$rel"); $(facl "$B0/$v/$rel")" "$(st "$R/$v/$rel"); $(facl "$R/$v/$rel")"
}
for v in up lo; do
	for r in "$M" "$R"; do
		as $O setfacl -m u:$U:rw-,g:$G:r-- "$r/$v/f" || not_ok "$v: setfacl -m by the owner in $r"
	done
	same "the owner adds a named user and group" $v f
	for r in "$M" "$R"; do chmod 600 "$r/$v/f"; done
	same "chmod 600 of a file with an ACL (the mask becomes ---)" $v f
	for r in "$M" "$R"; do as $O chmod 660 "$r/$v/f"; done
	same "the owner's chmod 660 (the mask becomes rw-)" $v f
	for r in "$M" "$R"; do as $O setfacl -x u:$U "$r/$v/f"; done
	same "the owner removes the named user" $v f
	for r in "$M" "$R"; do as $O setfacl -b "$r/$v/f"; done
	same "the owner removes the ACL" $v f
	for r in "$M" "$R"; do
		as $O setfacl -m u:$U:r-x "$r/$v/s" || not_ok "$v: setfacl on the setgid file in $r"
	done
	same "an ACL set by the owner outside the group clears setgid" $v s
	is "$v: ... the setgid bit is gone on tmpfs (the case is meaningful)" "$(stat -c %A "$R/$v/s")" "-rwxrwxr-x"
	for r in "$M" "$R"; do
		as $O setfacl -m d:u:$U:rwx,u:$U:rwx "$r/$v/d" || not_ok "$v: default ACL by the owner in $r"
		as $U bash -c "umask 022; echo n > '$r/$v/d/new'" || not_ok "$v: the named user creates in $r"
	done
	same "a default ACL by the owner" $v d
	same "... inherited by the named user's new file" $v d/new
done
is "the lower branch is unchanged" "$(snap)" "$snap1"
check "umount" umount "$M"
is "no kernel warnings" "$(dmesg_bad)" ""
finish
