#!/bin/bash
# O_TMPFILE through the union (issue 21, item 13). Differential: the same sequence runs in a
# union (tmpfs b0=rw over tmpfs b1=ro) and in a plain tmpfs holding the same names, and the
# outputs must be equal:
#  A. as root: write/read back, fstat (mode, owner, nlink 0), linkat from /proc/self/fd
#     (AT_SYMLINK_FOLLOW) into the root, a merged dir, a dir only in the read-only branch
#     (parent copy-up), over a whited-out name; a tmpfile made in a lower-only dir;
#     linkat(fd, "", AT_EMPTY_PATH); a second link; EEXIST; fchmod/ftruncate before the
#     link; unlink after the link (then ENOENT); O_TMPFILE|O_EXCL never linkable (ENOENT);
#     umask; a reopen through /proc/self/fd; the new names' st_ino equal fstat's and are
#     distinct; readdir shows the names;
#  B. as uid 4343: in its own lower-only dir (copied up), in a root 0755 dir (EACCES for
#     the open and for a linkat there; the writable branch stays byte for byte the same);
#  C. default ACL inheritance as on the branch fs;
#  D. nothing but the linked names appears in the writable branch (no "#N", no temporary);
#     an unlinked tmpfile's space is in b0 while open and given back at close;
#  E. race: 200 x (tmpfile + write + linkat to a distinct name) while another process lists
#     the dir, plus 200 tmpfiles closed unlinked while listing.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dmesg_mark

B0=$T/a/b0 B1=$T/a/b1 M=$T/a/m R=$T/R
mkdir -p "$M" "$R"
branch_fs tmpfs "$T/a" 2
mount -t tmpfs -o size=256m ref "$R"
chmod 755 "$B0" "$B1" "$R"

layout() {	# layout DIR: the names the union shows, in DIR
	local d=$1
	mkdir -p "$d/merged" "$d/lowonly" "$d/lowonly2" "$d/rdir" "$d/udir" "$d/acl" "$d/race"
	echo low > "$d/merged/lowfile"
	chown 4343:4343 "$d/udir"
	chmod 755 "$d/rdir"
	chmod 777 "$d/acl"
	setfacl -d -m u:4343:rwx,g::r-x,o::--- "$d/acl" 2>/dev/null
}
layout "$B1"
layout "$R"
echo gone > "$B1/gone"
mkdir "$B0/merged" "$B0/race"
check "mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || exit 1
check "whiteout a lower file (rm gone)" rm "$M/gone"
[[ -e $B0/.wh.gone ]] || not_ok "whiteout .wh.gone in b0"

P=$T/tf.py
cat > "$P" <<'PY'
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000
def en(e): return errno.errorcode.get(e, str(e))
def linkat(fd, dst, empty=False):
    if empty:
        r = libc.linkat(fd, b"", AT_FDCWD, dst.encode(), AT_EMPTY_PATH)
    else:
        r = libc.linkat(AT_FDCWD, b"/proc/self/fd/%d" % fd, AT_FDCWD, dst.encode(),
                        AT_SYMLINK_FOLLOW)
    return "OK" if r == 0 else en(ctypes.get_errno())
def tmp(d, flags=0, mode=0o666):
    try:
        return os.open(d, os.O_TMPFILE | os.O_RDWR | flags, mode), "OK"
    except OSError as e:
        return None, en(e.errno)
def st(s): return "mode=%o uid=%d gid=%d nlink=%d size=%d" % (s.st_mode, s.st_uid, s.st_gid,
                                                              s.st_nlink, s.st_size)
def data(p):
    with open(p, "rb") as f:
        return f.read()
def ls(p): return " ".join(sorted(os.listdir(p)))
op, base = sys.argv[1], sys.argv[2]
B = lambda n: os.path.join(base, n)
if op == "root":
    os.umask(0o022)
    inos = {}
    fd, r = tmp(base)
    print("A1 open in root:", r)
    if fd is None:
        sys.exit(0)
    print("A1 write:", os.write(fd, b"hello tmpfile\n"))
    os.lseek(fd, 0, 0)
    print("A1 read back:", os.read(fd, 100))
    print("A1 fstat:", st(os.fstat(fd)))
    print("A1 listing before link:", ls(base))
    fd2 = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
    print("A1 reopen via /proc/self/fd reads:", os.read(fd2, 100), st(os.fstat(fd2)))
    os.close(fd2)
    print("A1 linkat /proc/self/fd -> t1:", linkat(fd, B("t1")))
    s = os.stat(B("t1"))
    print("A1 t1 ino == fstat ino:", s.st_ino == os.fstat(fd).st_ino)
    print("A1 stat t1:", st(s), "fstat:", st(os.fstat(fd)))
    print("A1 t1 data:", data(B("t1")))
    os.write(fd, b"more\n")
    print("A1 write after link seen by name:", data(B("t1")))
    print("A1 second link t1b:", linkat(fd, B("t1b")), st(os.fstat(fd)))
    print("A1 t1b same ino:", os.stat(B("t1b")).st_ino == s.st_ino)
    inos["t1"] = s.st_ino
    os.close(fd)
    for name, where, d in (("A2", "merged/t2", base), ("A3", "lowonly/t3", base),
                           ("A4", "gone", base), ("A5", "lowonly2/t5", B("lowonly2"))):
        fd, r = tmp(d)
        print(name, "open in", os.path.relpath(d, base) + ":", r)
        if fd is None:
            continue
        os.write(fd, name.encode())
        print(name, "linkat ->", where + ":", linkat(fd, B(where)), st(os.fstat(fd)))
        s = os.stat(B(where))
        print(name, "ino == fstat ino:", s.st_ino == os.fstat(fd).st_ino, "data:", data(B(where)))
        inos[where] = s.st_ino
        os.close(fd)
    fd, r = tmp(base)
    print("A6 open:", r)
    if fd is not None:
        print("A6 AT_EMPTY_PATH -> t6:", linkat(fd, B("t6"), empty=True), st(os.fstat(fd)))
        inos["t6"] = os.stat(B("t6")).st_ino
        print("A6 ino == fstat ino:", inos["t6"] == os.fstat(fd).st_ino)
        print("A6 linkat onto existing t1:", linkat(fd, B("t1")))
        os.close(fd)
    fd, r = tmp(base, os.O_EXCL)
    print("A7 O_EXCL open:", r)
    if fd is not None:
        os.write(fd, b"excl")
        print("A7 fstat:", st(os.fstat(fd)))
        print("A7 linkat /proc/self/fd:", linkat(fd, B("x1")))
        print("A7 linkat AT_EMPTY_PATH:", linkat(fd, B("x2"), empty=True))
        print("A7 linkat into merged:", linkat(fd, B("merged/x3")))
        os.close(fd)
    fd, r = tmp(base)
    print("A8 open:", r)
    if fd is not None:
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 4096)
        os.fsync(fd)
        print("A8 after fchmod/ftruncate:", st(os.fstat(fd)))
        print("A8 linkat -> t8:", linkat(fd, B("t8")), st(os.stat(B("t8"))))
        inos["t8"] = os.stat(B("t8")).st_ino
        os.unlink(B("t8"))
        print("A8 after unlink:", st(os.fstat(fd)), "exists:", os.path.exists(B("t8")))
        print("A8 linkat after unlink:", linkat(fd, B("t8")))
        os.close(fd)
    os.umask(0o077)
    fd, r = tmp(base, 0, 0o666)
    print("A9 umask 077 open:", r)
    if fd is not None:
        print("A9 fstat:", st(os.fstat(fd)))
        print("A9 linkat -> t9:", linkat(fd, B("t9")), st(os.stat(B("t9"))))
        inos["t9"] = os.stat(B("t9")).st_ino
        os.close(fd)
    os.umask(0o022)
    fd, r = tmp(B("acl"), 0, 0o666)
    print("C open in acl:", r)
    if fd is not None:
        print("C fstat:", st(os.fstat(fd)))
        print("C linkat -> acl/ta:", linkat(fd, B("acl/ta")), st(os.stat(B("acl/ta"))))
        os.close(fd)
    inos["lowfile"] = os.stat(B("merged/lowfile")).st_ino
    print("A inos distinct:", len(set(inos.values())) == len(inos), len(inos))
    for d in ("", "merged", "lowonly", "lowonly2", "acl"):
        print("A readdir", d or ".", ":", ls(B(d)))
elif op == "user-deny":
    os.umask(0o022)
    fd, r = tmp(B("rdir"))
    print("B open in root-owned rdir:", r)
    fd, r = tmp(B("udir"))
    print("B open in own udir:", r)
    if fd is not None:
        print("B linkat into rdir:", linkat(fd, B("rdir/no")))
        os.close(fd)
elif op == "user-ok":
    os.umask(0o022)
    fd, r = tmp(B("udir"))
    print("B open in own udir:", r)
    if fd is not None:
        os.write(fd, b"user")
        print("B fstat:", st(os.fstat(fd)))
        print("B linkat -> udir/ut:", linkat(fd, B("udir/ut")), st(os.stat(B("udir/ut"))))
        print("B ino == fstat ino:", os.stat(B("udir/ut")).st_ino == os.fstat(fd).st_ino)
        print("B AT_EMPTY_PATH without CAP_DAC_READ_SEARCH:", linkat(fd, B("udir/ue"), empty=True))
        os.close(fd)
    print("B readdir udir:", ls(B("udir")))
elif op == "space":	# space DIR FS: an unlinked tmpfile's blocks are in FS while open
    fs = sys.argv[3]
    def used():
        v = os.statvfs(fs)
        return (v.f_blocks - v.f_bfree) * v.f_frsize
    u0 = used()
    fd, r = tmp(base)
    print("D open:", r)
    if fd is not None:
        os.write(fd, b"x" * (8 << 20))
        u1 = used()
        print("D 8 MiB in the branch while open:", u1 - u0 >= (8 << 20))
        os.close(fd)
        time.sleep(0.2)
        print("D given back at close:", used() - u0 < (1 << 20), used() - u0)
    fd, r = tmp(base, os.O_EXCL)
    if fd is not None:
        os.write(fd, b"x" * (4 << 20))
        os.close(fd)
        print("D O_EXCL given back at close:", used() - u0 < (1 << 20))
elif op == "race":	# race DIR N: N x tmpfile + linkat to DIR/nI
    n = int(sys.argv[3])
    bad = 0
    for i in range(n):
        fd, r = tmp(base)
        if fd is None:
            print("race open", i, r); bad += 1; continue
        os.write(fd, b"%d\n" % i)
        r = linkat(fd, B("n%d" % i))
        if r != "OK":
            print("race linkat", i, r); bad += 1
        os.close(fd)
    print("race failures:", bad)
elif op == "race-unlinked":	# N tmpfiles closed without a link
    n = int(sys.argv[3])
    bad = 0
    for i in range(n):
        fd, r = tmp(base)
        if fd is None:
            bad += 1; continue
        os.write(fd, b"y" * 8192)
        os.close(fd)
    print("race-unlinked failures:", bad)
elif op == "lister":	# list DIR until the file argv[3] exists
    n = bad = 0
    while not os.path.exists(sys.argv[3]):
        try:
            os.listdir(base); n += 1
        except OSError as e:
            bad += 1
    print("lister errors:", bad, "rounds>0:", n > 0)
PY

# ---- A, C: as root ---------------------------------------------------------------------
snap1() { (cd "$B1" && find . -printf '%P %y %m %s %u\n' | LC_ALL=C sort; find . -type f -exec md5sum {} + | LC_ALL=C sort); }
b1before=$(snap1)
ref=$(python3 "$P" root "$R" 2>&1)
uni=$(python3 "$P" root "$M" 2>&1)
echo "$uni" | head -n 3 | sed 's/^/# union: /'
if [[ $uni == "$ref" ]]; then
	ok "A: root sequence gives what tmpfs gives ($(wc -l <<< "$ref") lines)"
else
	not_ok "A: root sequence gives what tmpfs gives" "$(diff <(echo "$ref") <(echo "$uni") | head -n 14)"
fi
is "A: tmpfile open works in the union" "$(grep -c '^A1 open in root: OK' <<< "$uni")" 1
is "A: O_EXCL tmpfile never linkable (union)" "$(grep '^A7 linkat' <<< "$uni" | grep -vc ENOENT)" 0
is "A: new names have distinct inode numbers (union)" "$(grep '^A inos distinct' <<< "$uni")" "A inos distinct: True 9"
is "A: whiteout of 'gone' removed from b0" "$(ls -A "$B0" | grep -c '^\.wh\.gone$')" 0
is "A: 'gone' is the tmpfile's data" "$(cat "$M/gone" 2>&1)" "A4"
is "A: lowonly copied up to b0 with t3 in it" "$(ls -A "$B0/lowonly" 2>&1)" "t3"
is "A: t5 made in lower-only lowonly2 lands in b0" "$(ls -A "$B0/lowonly2" 2>&1)" "t5"
if command -v getfacl > /dev/null; then
	is "C: default ACL inherited as on tmpfs" "$(cd "$M/acl" && getfacl -cp ta 2>&1)" \
		"$(cd "$R/acl" && getfacl -cp ta 2>&1)"
fi

# ---- B: as an unprivileged uid ------------------------------------------------------------
AS=(setpriv --reuid=4343 --regid=4343 --clear-groups --inh-caps=-all --bounding-set=-all)
snap0() { (cd "$B0" && find . -printf '%P %y %m %s %u %T@\n' | LC_ALL=C sort; find . -type f -exec md5sum {} + | LC_ALL=C sort; getfattr -R -d -m - . 2>/dev/null); }
ref=$("${AS[@]}" python3 "$P" user-ok "$R" 2>&1)
uni=$("${AS[@]}" python3 "$P" user-ok "$M" 2>&1)
is "B: tmpfile + linkat as uid 4343 in its own (lower-only) dir as on tmpfs" "$uni" "$ref"
is "B: udir/ut in b0 owned by 4343" "$(stat -c %u "$B0/udir/ut" 2>&1)" 4343
before=$(snap0)
ref=$("${AS[@]}" python3 "$P" user-deny "$R" 2>&1)
uni=$("${AS[@]}" python3 "$P" user-deny "$M" 2>&1)
is "B: refused tmpfile/linkat as uid 4343 as on tmpfs" "$uni" "$ref"
is "B: refused open is EACCES (union)" "$(grep -c 'open in root-owned rdir: EACCES' <<< "$uni")" 1
is "B: refused linkat is EACCES (union)" "$(grep -c 'into rdir: EACCES' <<< "$uni")" 1
is "B: refusals leave b0 byte for byte unchanged" "$(snap0)" "$before"
is "B: rdir not copied up" "$(ls -d "$B0/rdir" 2>&1 | grep -c 'No such')" 1

# ---- D: nothing else in the branch; space given back -------------------------------------
files() { (cd "$1" && find . -type f ! -name '.wh.*' -printf '%P\n' | LC_ALL=C sort); }
is "D: b0 holds exactly the linked names (as the plain tmpfs, less b1's own)" \
	"$(files "$B0")" "$(files "$R" | grep -vx 'merged/lowfile')"
is "D: no '#N' or temporary names in b0" "$(find "$B0" -name '#*' -o -name '.wh..wh.unionfs.*')" ""
is "D: b1 unchanged" "$(snap1)" "$b1before"
ref=$(python3 "$P" space "$R" "$R" 2>&1)
uni=$(python3 "$P" space "$M" "$B0" 2>&1)
D_EXP=$(printf '%s\n' 'D open: OK' 'D 8 MiB in the branch while open: True' \
	'D given back at close: True' 'D O_EXCL given back at close: True')
is "D: unlinked tmpfile's space (tmpfs, reference)" "$(sed 's/ [0-9-]*$//' <<< "$ref")" "$D_EXP"
is "D: unlinked tmpfile's space (union: in b0 while open, given back at close)" \
	"$(sed 's/ [0-9-]*$//' <<< "$uni")" "$D_EXP"
is "D: b0 files unchanged by unlinked tmpfiles" "$(files "$B0")" "$(files "$R" | grep -vx 'merged/lowfile')"

# ---- E: races against a lister ------------------------------------------------------------
rm -f "$T/stop"*
timeout -s KILL $(t_limit 150) python3 "$P" lister "$M/race" "$T/stop" > "$T/lister.out" 2>&1 &
lp=$!
timeout -s KILL $(t_limit 120) python3 "$P" race-unlinked "$M/race" 200 > "$T/unl.out" 2>&1 &
up=$!
out=$(timeout -s KILL $(t_limit 120) python3 "$P" race "$M/race" 200 2>&1)
wait $up
touch "$T/stop"
wait $lp
is "E: 200 tmpfile+linkat while listing: no failure" "$out" "race failures: 0"
is "E: 200 unlinked tmpfiles meanwhile: no failure" "$(cat "$T/unl.out")" "race-unlinked failures: 0"
is "E: lister saw no error" "$(cat "$T/lister.out")" "lister errors: 0 rounds>0: True"
is "E: 200 names listed" "$(ls "$M/race" | wc -l)" 200
is "E: b0 holds exactly those 200" "$(ls -A "$B0/race" | wc -l)" 200
is "E: every name has its data" "$(for i in $(seq 0 199); do cat "$M/race/n$i"; done | md5sum)" \
	"$(seq 0 199 | md5sum)"
is "E: 200 distinct inode numbers" \
	"$(stat -c %i "$M"/race/* | sort -u | wc -l)" 200
good=1
for i in 0 57 199; do
	u=$(stat -c %i "$M/race/n$i") l=$(stat -c %i "$B0/race/n$i")
	[[ $(( u & ((1 << 56) - 1) )) == "$l" ]] || good=0
done
is "E: union numbers carry the branch numbers" "$good" 1

check "umount" umount "$M"
umount "$R" "$B0" "$B1"
is "dmesg clean" "$(dmesg_bad)" ""
finish
