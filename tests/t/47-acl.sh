#!/bin/bash
# POSIX ACLs through the union (issue 21, items 1 and 2). Run as real uids (setpriv):
#  A. the two reproducers: a named-group member whose ACL mask allows r-- may not write a
#     lower file (its "other" bits say rw-), a named user with user:4343:rw- may;
#  B. a permission matrix, differential: owner / owning-group member / other / named user /
#     named-group member x read / write / exec (access(2), then open(2)) x lower-only /
#     upper / copied-up / new objects (files and directories) with four ACLs: the union
#     answers, for every cell, what a plain tmpfs holding the same objects answers;
#  C. getfacl/setfacl through the union on upper, lower-only (copy-up) and new objects;
#  D. default ACL inheritance of objects created through the union (by root and by a user,
#     in an upper directory and in a lower-only one that gets copied up) equals the branch's;
#     on a branch fs without ACLs (ramfs) the umask is applied as the VFS would;
#  E. copy-up into a directory with a default ACL: the copy of a 0600 root file and of a
#     plain directory is exactly as restrictive as the original (mode, getfacl), uid 4343
#     cannot open it, and the temporary never carries the inherited ACL during the copy;
#     every other xattr (trusted.*, security.*) is copied too.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dmesg_mark
command -v getfacl > /dev/null && command -v setfacl > /dev/null || skip_all "no getfacl/setfacl (package acl)"

B0=$T/a/b0 B1=$T/a/b1 M=$T/a/m R=$T/R
mkdir -p "$M" "$R"
branch_fs tmpfs "$T/a" 2
mount -t tmpfs -o size=256m ref "$R"
chmod 755 "$B0" "$B1" "$R"
check "mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || exit 1
as() {	# as UID[:GROUP] CMD...: run CMD as uid UID (gid UID), supplementary group GROUP if given
	local u=${1%%:*} g=${1#*:}
	shift
	if [[ $g == "$u" ]]; then
		setpriv --reuid="$u" --regid="$u" --clear-groups --inh-caps=-all --bounding-set=-all "$@"
	else
		setpriv --reuid="$u" --regid="$u" --groups="$g" --inh-caps=-all --bounding-set=-all "$@"
	fi
}
P=$T/p.py
cat > "$P" <<'PY'
import errno, os, sys
def res(f):
    try:
        f()
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def acc(p, m):
    return "OK" if os.access(p, m) else "EACCES"
op, a = sys.argv[1], sys.argv[2:]
if op == "write":	# open O_WRONLY|O_APPEND and append a byte
    def w():
        fd = os.open(a[0], os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"w")
        finally:
            os.close(fd)
    print(res(w))
elif op == "read":
    print(res(lambda: os.close(os.open(a[0], os.O_RDONLY))))
elif op == "access":	# access R W X of each path under the base a[0]
    for p in a[1:]:
        print(p, "access", acc(os.path.join(a[0], p), os.R_OK),
              acc(os.path.join(a[0], p), os.W_OK), acc(os.path.join(a[0], p), os.X_OK))
elif op == "open":	# open r, open w (no change), dirs: list and stat an entry
    for p in a[1:]:
        q = os.path.join(a[0], p)
        if os.path.isdir(q):
            print(p, "open", res(lambda: os.listdir(q)), res(lambda: os.stat(q + "/x")),
                  res(lambda: os.close(os.open(q + "/x", os.O_RDONLY))))
        else:
            print(p, "open", res(lambda: os.close(os.open(q, os.O_RDONLY))),
                  res(lambda: os.close(os.open(q, os.O_WRONLY))))
PY
# the users: owner, owning-group member, other, named user, named-group member
OWN=4340 GRP=4341:4350 OTH=4342 NU=4343 NG=4344:4351
# ACLs (explicit masks are kept by setfacl --set)
ACL1="u::rw-,u:4343:rw-,g::rw-,g:4351:rw-,m::r--,o::rw-"
ACL2="u::r--,u:4343:rw-,g::r--,g:4351:-wx,m::rwx,o::---"
ACL3="u::rwx,u:4343:--x,g::r-x,g:4351:rwx,m::r-x,o::r--"
DACL1="u::rwx,u:4343:rwx,g::rwx,g:4351:rw-,m::r-x,o::rwx"
DACL2="u::rwx,u:4343:r-x,g::--x,g:4351:r-x,m::rwx,o::---"
facl() { getfacl -c -p "$1" 2>&1 | sed '/^$/d'; }	# the ACL without the header lines

# ---- A: the reproducers -----------------------------------------------------------------
for d in "$R" "$B1"; do
	echo orig > "$d/ng"; chown 4340:4350 "$d/ng"; setfacl --set "$ACL1" "$d/ng"
	echo orig > "$d/nu"; chown 4340:4350 "$d/nu"; setfacl --set "$ACL2" "$d/nu"
done
is "A: named-group member (mask r--) may not write a lower file: EACCES as on tmpfs" \
	"$(as $NG python3 "$P" write "$M/ng") $(as $NG python3 "$P" write "$R/ng")" "EACCES EACCES"
is "A: ... the lower file and the writable branch are unchanged" \
	"$(cat "$B1/ng"; ls -A "$B0")" "orig"
is "A: named user with user:4343:rw- may write a lower file, as on tmpfs" \
	"$(as $NU python3 "$P" write "$M/nu") $(as $NU python3 "$P" write "$R/nu")" "OK OK"
is "A: ... through a copy-up with the ACL" "$(cat "$B0/nu" 2>&1; facl "$B0/nu")" \
	"$(cat "$R/nu"; facl "$R/nu")"

# ---- B: the permission matrix ------------------------------------------------------------
# objects: cat_k for cat in lo (lower only), up (upper), cu (copied up), nw (new through the
# union), k = 1..4 (ACL1..ACL3, then no ACL, mode 0750); files f*, directories d* (each with
# a 0644 file x)
mkobj() {	# mkobj DIR NAME K KIND
	local p=$1/$2
	if [[ $4 == f ]]; then echo data > "$p"; else mkdir "$p"; echo x > "$p/x"; chmod 644 "$p/x"; fi
	chown 4340:4350 "$p"
	case $3 in
	1) setfacl --set "$ACL1" "$p" ;; 2) setfacl --set "$ACL2" "$p" ;;
	3) setfacl --set "$ACL3" "$p" ;; 4) chmod 0750 "$p" ;;
	esac
}
OBJS=()
for kind in f d; do
	for k in 1 2 3 4; do
		for c in lo up cu nw; do OBJS+=("$kind$c$k"); done
		mkobj "$B1" "${kind}lo$k" $k $kind; mkobj "$R" "${kind}lo$k" $k $kind
		mkobj "$B0" "${kind}up$k" $k $kind; mkobj "$R" "${kind}up$k" $k $kind
		mkobj "$B1" "${kind}cu$k" $k $kind; mkobj "$R" "${kind}cu$k" $k $kind
		mkobj "$M" "${kind}nw$k" $k $kind; mkobj "$R" "${kind}nw$k" $k $kind
		# copy-up by root: a no-op chown
		chown 4340:4350 "$M/${kind}cu$k"; chown 4340:4350 "$R/${kind}cu$k"
	done
done
is "B: the copied-up objects are in the writable branch" "$(ls -d "$B0"/?cu? | wc -l)" 8
is "B: the lower-only objects are not" "$(ls -d "$B0"/?lo? 2>/dev/null | wc -l)" 0
is "B: the new objects' ACLs (set through the union) as on tmpfs" \
	"$(for o in fnw1 fnw2 fnw3 fnw4 dnw1 dnw2 dnw3 dnw4; do facl "$B0/$o"; done)" \
	"$(for o in fnw1 fnw2 fnw3 fnw4 dnw1 dnw2 dnw3 dnw4; do facl "$R/$o"; done)"
matrix() {	# matrix OP: the union's and tmpfs's answers for every user, one line per cell
	local u base
	for base in "$M" "$R"; do
		for u in 4340 $GRP 4342 4343 $NG; do
			as $u python3 "$P" "$1" "$base" "${OBJS[@]}" | sed "s/^/$u /"
		done > "$T/matrix.$(basename "$base")"
	done
	diff "$T/matrix.m" "$T/matrix.R"
}
out=$(matrix access)
is "B: access(2) R/W/X: 5 users x 32 objects, differences from tmpfs" "$(grep -c '^[<>]' <<< "$out")" 0
[[ -n $out ]] && not_ok "B: access differences (< union, > tmpfs)" "$out"
is "B: ... nothing was copied up by access(2)" "$(ls -d "$B0"/?lo? 2>/dev/null | wc -l)" 0
out=$(matrix open)
is "B: open(2) read/write, readdir, search: differences from tmpfs" "$(grep -c '^[<>]' <<< "$out")" 0
[[ -n $out ]] && not_ok "B: open differences (< union, > tmpfs)" "$out"
is "B: the union's answers were not all the same (the matrix can fail)" \
	"$(cut -d' ' -f3- "$T/matrix.m" | sort -u | wc -l | awk '{ print ($1 > 3) }')" 1
is "B: open(2) for write copied lower objects up (the next check compares something)" \
	"$(ls -d "$B0"/flo? 2>/dev/null | wc -l | awk '{ print ($1 > 0) }')" 1
is "B: objects copied up by open(2) for write kept their ACLs" \
	"$(for o in flo1 flo2 flo3 flo4; do [[ -e $B0/$o ]] && facl "$B0/$o"; done)" \
	"$(for o in flo1 flo2 flo3 flo4; do [[ -e $B0/$o ]] && facl "$R/$o"; done)"

# ---- C: getfacl/setfacl through the union ------------------------------------------------
for d in "$B1" "$R"; do echo c > "$d/clo"; chmod 640 "$d/clo"; done
for d in "$B0" "$R"; do echo c > "$d/cup"; chmod 640 "$d/cup"; done
setfacl -m u:4343:r-- "$B1/clo"; setfacl -m u:4343:r-- "$R/clo"
is "C: getfacl of a lower-only file through the union" "$(facl "$M/clo")" "$(facl "$R/clo")"
is "C: ... (nothing copied up)" "$(ls "$B0/clo" 2>&1 | grep -c 'No such')" 1
check "C: setfacl -m on the lower-only file" setfacl -m u:4344:rw-,g:4351:r-- "$M/clo"
setfacl -m u:4344:rw-,g:4351:r-- "$R/clo"
is "C: ... copied up, ACL as on tmpfs" "$(facl "$B0/clo")" "$(facl "$R/clo")"
is "C: ... getfacl through the union" "$(facl "$M/clo")" "$(facl "$R/clo")"
is "C: ... the lower original is unchanged" "$(facl "$B1/clo" | grep -c 4344)" 0
check "C: setfacl -m on an upper file" setfacl -m u:4343:rwx "$M/cup"
setfacl -m u:4343:rwx "$R/cup"
is "C: ... as on tmpfs" "$(facl "$B0/cup"; stat -c %a "$B0/cup")" "$(facl "$R/cup"; stat -c %a "$R/cup")"
is "C: ... uid 4343 may now write it" "$(as 4343 python3 "$P" write "$M/cup")" OK
check "C: setfacl -x through the union" setfacl -x u:4343 "$M/cup"
setfacl -x u:4343 "$R/cup"
is "C: ... as on tmpfs" "$(facl "$B0/cup"; stat -c %a "$B0/cup")" "$(facl "$R/cup"; stat -c %a "$R/cup")"
is "C: ... uid 4343 may no longer write it" "$(as 4343 python3 "$P" write "$M/cup")" EACCES
check "C: setfacl -b through the union" setfacl -b "$M/clo"
setfacl -b "$R/clo"
is "C: ... as on tmpfs" "$(facl "$M/clo"; stat -c %a "$M/clo")" "$(facl "$R/clo"; stat -c %a "$R/clo")"
echo r > "$B1/croot"; chmod 644 "$B1/croot"
is "C: a user may not set an ACL on root's lower file (EPERM, no copy-up)" \
	"$(as 4343 setfacl -m u:4343:rwx "$M/croot" 2>&1 | grep -c 'Operation not permitted') $(ls "$B0/croot" 2>&1 | grep -c 'No such')" "1 1"
check "C: a default ACL on an upper dir through the union" setfacl -d -m u:4343:rwx "$M/dup1"
setfacl -d -m u:4343:rwx "$R/dup1"
is "C: ... as on tmpfs" "$(facl "$M/dup1")" "$(facl "$R/dup1")"
check "C: a default ACL on a lower-only dir through the union (copy-up)" setfacl -d -m g:4351:r-x "$M/dlo4"
setfacl -d -m g:4351:r-x "$R/dlo4"
is "C: ... as on tmpfs" "$(facl "$B0/dlo4")" "$(facl "$R/dlo4")"

# ---- D: default ACL inheritance of new objects -------------------------------------------
for d in "$B0" "$R"; do mkdir "$d/da"; chmod 777 "$d/da"; setfacl -d --set "$DACL1" "$d/da"; done
for d in "$B1" "$R"; do mkdir "$d/db"; chmod 777 "$d/db"; setfacl -d --set "$DACL2" "$d/db"; done
mkd() {	# mkd BASE: create objects in BASE/da and BASE/db as root (umask 022) and 4343 (077)
	local b=$1 d
	for d in da db; do
		(umask 022; touch "$b/$d/r"; mkdir "$b/$d/rd"; mknod "$b/$d/rp" p)
		as 4343 bash -c "umask 077; touch '$b/$d/u'; mkdir '$b/$d/ud'; mkdir -m 0750 '$b/$d/ud2'"
	done
}
mkd "$M"; mkd "$R"
desc() { local d o; for d in da db; do for o in "" /r /rd /rp /u /ud /ud2; do
	stat -c "$d$o %A %u %g" "$1/$d$o"; facl "$1/$d$o"; done; done; }
is "D: new objects in an upper and a copied-up dir with default ACLs: as on tmpfs" \
	"$(desc "$M")" "$(desc "$R")"
is "D: ... in the branch too" "$(desc "$B0")" "$(desc "$R")"

# a branch fs without ACLs (ramfs): the VFS leaves the umask to the union (SB_POSIXACL), which
# applies it as the VFS would have
mkdir -p "$T/n/b0" "$T/n/m"
if mount -t ramfs nacl "$T/n/b0" && mount -i -t unionfs -o "dirs=$T/n/b0=rw" none "$T/n/m"; then
	mkdir "$T/n/b0/ref"
	for d in "$T/n/m" "$T/n/b0/ref"; do
		(umask 027; touch "$d/f"; mkdir "$d/d"; mknod "$d/p" p)
	done
	is "D: umask on a branch fs without ACLs (ramfs): as on that fs" \
		"$(stat -c %a "$T/n/m/f" "$T/n/m/d" "$T/n/m/p")" "$(stat -c %a "$T/n/b0/ref/f" "$T/n/b0/ref/d" "$T/n/b0/ref/p")"
	umount "$T/n/m"
else
	skip "D: umask on a branch fs without ACLs" "no ramfs"
fi

# ---- E: copy-up into a directory with a default ACL --------------------------------------
mkdir -m 755 "$B0/dd" "$B1/dd"
setfacl -m u:4343:rwx "$B0/dd"; setfacl -d -m u:4343:rwx,o::r "$B0/dd"
echo secret > "$B1/dd/secret"; chmod 600 "$B1/dd/secret"
setfattr -n trusted.t1 -v tv "$B1/dd/secret"; setfattr -n security.s1 -v sv "$B1/dd/secret"
mknod -m 600 "$B1/dd/dev" c 1 3
mkdir -m 755 "$B1/dd/sub"
mkdir -m 700 "$B1/dd/psub"
check "E: root appends to the 0600 root file (copy-up)" bash -c "echo more >> '$M/dd/secret'"
is "E: the copy's mode is 0600" "$(stat -c '%a %u %g' "$B0/dd/secret")" "600 0 0"
is "E: the copy has no ACL (as the original)" "$(facl "$B0/dd/secret")" "$(facl "$B1/dd/secret")"
is "E: trusted.* and security.* xattrs were copied" \
	"$(getfattr -d -m '^(trusted|security)\.' --absolute-names "$B0/dd/secret" | grep -c '^[ts]')" 2
check_fail "E: uid 4343 cannot open the copy through the union" "Permission denied" as 4343 cat "$M/dd/secret"
check_fail "E: ... nor in the branch" "Permission denied" as 4343 cat "$B0/dd/secret"
check "E: chown of the 0600 device node (copy-up)" chown 0:0 "$M/dd/dev"
is "E: ... the copy: 0600, no ACL" "$(stat -c '%a %F' "$B0/dd/dev"; facl "$B0/dd/dev")" \
	"$(stat -c '%a %F' "$B1/dd/dev"; facl "$B1/dd/dev")"
check "E: touch of a lower dir and a 0700 one (copy-up)" touch "$M/dd/sub" "$M/dd/psub"
is "E: the copied dirs have the original's mode and ACL (no inherited default ACL)" \
	"$(for s in sub psub; do stat -c %a "$B0/dd/$s"; facl "$B0/dd/$s"; done)" \
	"$(for s in sub psub; do stat -c %a "$B1/dd/$s"; facl "$B1/dd/$s"; done)"
(umask 022; echo n > "$M/dd/sub/new")
is "E: a file created in the copied dir: 0644, no ACL" "$(stat -c %a "$B0/dd/sub/new"; facl "$B0/dd/sub/new" | grep -c 4343)" "644
0"
check_fail "E: uid 4343 cannot list the copied 0700 dir" "Permission denied" as 4343 ls "$M/dd/psub"
# during the copy: the temporary in the default-ACL dir never carries the inherited ACL nor
# more than the final mode (a 96 MiB file: the data phase lasts long enough to look at it)
python3 -c "open('$B1/dd/big', 'wb').write(b'x' * (96 << 20))"; chmod 600 "$B1/dd/big"
# A copy-up writes into an O_TMPFILE (nameless: nothing to look at) where the branch has one;
# the named temporary is the fallback. Make the branch answer EOPNOTSUPP once so that the
# fallback is what is watched (the O_TMPFILE path: same mode 0 + ACL strip, 51-copyup-phases).
fault_injection_built && echo "tmpfile errno=95 times=1" > /sys/kernel/debug/unionfs/inject
(echo y >> "$M/dd/big") & cpid=$!
seen=0 bad= ent=
for ((i = 0; i < 2000 && seen < 20; i++)); do
	for f in "$B0"/dd/.wh..wh.unionfs.*; do
		[[ -e $f ]] || continue
		st=$(stat -c %a "$f" 2>/dev/null) || continue
		# named entries whose effective permissions are not empty
		a=$(getfacl -c -p -e "$f" 2>/dev/null | awk -F'[:\t#]+' '/^(user|group):[0-9]/ {
			e = ($4 == "effective") ? $5 : $3; if (e != "---") n++ } END { print n + 0 }')
		ent+=$(getfacl -c -p "$f" 2>/dev/null | grep -c 4343)
		o=$(as 4343 python3 "$P" read "$f")
		[[ -n $st ]] && seen=$((seen + 1))
		[[ -n $st && ( $((8#$st & ~8#0600)) != 0 || $a != 0 || $o == OK ) ]] && bad+="$st acl:$a open:$o; "
	done
	kill -0 $cpid 2>/dev/null || break
done
timeout -s KILL $(t_limit 60) tail --pid=$cpid -f /dev/null
fault_injection_built && echo "clear all" > /sys/kernel/debug/unionfs/inject
if ((seen)); then
	is "E: the temporary during the copy: no effective ACL entry, no bits beyond 0600, 4343 refused ($seen looks)" "$bad" ""
	# its inherited entries are removed right after it is made, before the data phase
	is "E: ... and it never showed the ACL inherited from the directory" "${ent//0/}" ""
else
	skip "E: the temporary during the copy" "the copy-up ended before a look"
fi
is "E: the big copy: 0600, no ACL" "$(stat -c %a "$B0/dd/big"; facl "$B0/dd/big" | grep -c 4343)" "600
0"

check "umount" umount "$M"
is "no kernel warnings" "$(dmesg_bad)" ""
finish
