#!/bin/bash
# POSIX behaviour where the union must answer what a plain filesystem answers (issue 21):
#  A. an unprivileged user's refused modification (xattrs incl. POSIX ACLs, setattr, open
#     for write, truncate, link, rename, unlink) gives the errno a plain tmpfs gives and
#     copies nothing up: the writable branch stays exactly as it was;
#  B. per-call flags (pwritev2 RWF_APPEND/RWF_DSYNC/RWF_SYNC/RWF_HIPRI) and O_APPEND /
#     F_SETFL O_APPEND, O_DIRECT reach the branch file;
#  C. NAME_MAX is the advertised 251 (statfs, pathconf) at every entry point: 251 works,
#     252 gives ENAMETOOLONG (lookup, create, mkdir, mknod, symlink, link, rename target);
#  D. a descriptor opened before a copy-up reads the copy (read, pread, sendfile, splice,
#     llseek SEEK_END, mmap made after the copy-up);
#  E. renameat2 flags: NOREPLACE honoured, EXCHANGE and WHITEOUT refused with EINVAL.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
dmesg_mark

sy_start	# one python: the calls below as uid 4343 (no capabilities) or as root
u() { sy 4343 "$@"; }
ux() {	# ux OP PATH ...: as uid 4343: setacl (4343 may read), setx, rmx, utimenull (utimes NULL)
	local op=$1
	shift
	case $op in
	setacl) sy 4343 setacl "$1" 4343;;
	setx) sy 4343 setxattr "$@";;
	rmx) sy 4343 removexattr "$@";;
	utimenull) sy 4343 utime "$1";;
	*) echo "ux: unknown op $op";;
	esac
}

# ---- A: refused modifications copy nothing up --------------------------------------------
# the same objects in a plain tmpfs (N) and in the read-only branch of a union (b1)
layout() {	# layout DIR
	local d=$1
	head -c $((16 << 20)) /dev/zero > "$d/big"; chmod 644 "$d/big"
	echo secret > "$d/secret"; chmod 600 "$d/secret"
	echo pub > "$d/pub"; chmod 644 "$d/pub"
	echo mine > "$d/mine"; chown 4343:4343 "$d/mine"; chmod 644 "$d/mine"
	mkdir -m 755 "$d/rootdir"; echo f > "$d/rootdir/file"
	mkdir -m 1777 "$d/tmp"; echo r > "$d/tmp/rootf"; chmod 666 "$d/tmp/rootf"
	echo m > "$d/tmp/minef"; chown 4343:4343 "$d/tmp/minef"
	setfattr -n security.here -v 1 "$d/pub"
	setfattr -n security.here -v 1 "$d/mine"
	return 0
}
mkdir -p "$T/N" "$T/a/m"
mount -t tmpfs nat "$T/N"; chmod 755 "$T/N"
branch_fs tmpfs "$T/a" 2
chmod 755 "$T/a/b0" "$T/a/b1"
layout "$T/N"; layout "$T/a/b1"
M=$T/a/m
check "A: mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$T/a/b0=rw:$T/a/b1=ro" none "$M"
hl=$(cat /proc/sys/fs/protected_hardlinks)
echo 1 > /proc/sys/fs/protected_hardlinks
snapa() { (cd "$T/a/b0" && find . -printf '%P %y %m %u %g %s\n' | LC_ALL=C sort; getfattr -R -d -m - . 2>/dev/null); }
before=$(snapa)
# each: description, then the op as for u/ux with a path relative to the tree
same() {	# same DESC HELPER OP REL [ARGS...]: the union answers what tmpfs answers, not OK
	local desc=$1 h=$2 op=$3 rel=$4 nat uni
	shift 4
	# an argument starting with % is a second path in the tree
	nat=$($h "$op" "$T/N/$rel" "${@/#%/$T/N/}")
	uni=$($h "$op" "$M/$rel" "${@/#%/$M/}")
	if [[ $nat == OK ]]; then
		not_ok "A: $desc: refused on tmpfs" "tmpfs answered OK"
		return
	fi
	is "A: $desc: $nat as on tmpfs" "$uni" "$nat"
}
same "remove the ACL of a root file" ux rmx pub system.posix_acl_access
same "set an ACL on a root file" ux setacl pub
same "set an ACL on a root 16 MiB file" ux setacl big
same "set an ACL on a root 0600 file" ux setacl secret
same "remove a missing security.* xattr of the user's file" ux rmx mine security.nothere
same "XATTR_REPLACE of a missing security.* xattr" ux setx mine security.nothere 1 replace
same "XATTR_CREATE of an existing security.* xattr" ux setx mine security.here 2 create
same "user.* xattr where the branch fs has none (tmpfs)" ux setx mine user.x 1
same "remove user.* where the branch fs has none" ux rmx mine user.x
same "user.* xattr on a root 0644 file" ux setx pub user.x 1
same "trusted.* xattr on the user's file" ux setx mine trusted.x 1
same "chmod of a root file" u chmod pub 777
same "chmod of a root 0600 file" u chmod secret 777
same "chown of a root file" u chown pub 4343 4343
same "chown of the user's file to root" u chown mine 0 0
same "utimes of a root file to a given time" u utime pub 978307200
same "utimes(NULL) of a root 0644 file" ux utimenull pub
same "truncate(2) of a root file" u truncate big 0
same "open for write of a root file" u open pub w
same "open O_RDONLY|O_TRUNC of a root file" u open secret rt
same "open O_APPEND of a root 0600 file" u open secret wa
same "link of a root file (protected_hardlinks)" u link pub %tmp/l
same "rename of a root file in a sticky dir" u rename tmp/rootf %tmp/x
same "rename of the user's file over a root one (sticky)" u rename tmp/minef %tmp/rootf
same "unlink of a root file in a sticky dir" u unlink tmp/rootf
same "rename out of a root dir" u rename rootdir/file %tmp/y
same "unlink in a root dir" u unlink rootdir/file
is "A: refused attempts left the writable branch exactly as it was" "$(snapa)" "$before"
echo "$hl" > /proc/sys/fs/protected_hardlinks
# what is allowed still works (and copies up)
is "A: the user may set an ACL on its own file" "$(ux setacl "$M/mine")" "OK"
is "A: ... which was copied up with it" "$(getfattr -n system.posix_acl_access --only-values "$T/a/b0/mine" 2>/dev/null | od -An -tx1 | tr -d ' \n' | head -c 8)" "02000000"
is "A: root may remove a security.* xattr of a lower file" "$(sy - removexattr "$M/pub" security.here) $(getfattr -n security.here "$T/a/b0/pub" 2>&1 | grep -c 'No such attribute')" "OK 1"
check "A: umount" umount "$M"
umount "$T/N"

# ---- B: per-call flags and O_APPEND reach the branch --------------------------------------
cat > "$T/w.py" <<'PY'
import fcntl, os, sys
d = sys.argv[1]
out = []
def fresh(n, data=b"AAAA"):
    p = os.path.join(d, n)
    with open(p, "wb") as f:
        f.write(data)
    return p
def content(p):
    with open(p, "rb") as f:
        return f.read().decode()
def tryw(fn):
    try:
        fn()
        return "OK"
    except OSError as e:
        import errno
        return errno.errorcode.get(e.errno, str(e.errno))
p = fresh("ra"); fd = os.open(p, os.O_WRONLY)
out.append("RWF_APPEND:" + tryw(lambda: os.pwritev(fd, [b"BB"], 0, os.RWF_APPEND)) + ":" + content(p) + ":" + str(os.lseek(fd, 0, os.SEEK_CUR)))
os.close(fd)
for name, fl in (("RWF_DSYNC", os.RWF_DSYNC), ("RWF_SYNC", os.RWF_SYNC), ("RWF_HIPRI", os.RWF_HIPRI)):
    p = fresh("r" + name); fd = os.open(p, os.O_WRONLY)
    out.append(name + ":" + tryw(lambda: os.pwritev(fd, [b"C"], 1, fl)) + ":" + content(p))
    os.close(fd)
p = fresh("oa"); fd = os.open(p, os.O_WRONLY | os.O_APPEND)
out.append("O_APPEND pwrite:" + tryw(lambda: os.pwrite(fd, b"DD", 0)) + ":" + content(p))
os.close(fd)
p = fresh("sa"); fd = os.open(p, os.O_WRONLY)
os.write(fd, b"E")
fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND)
out.append("F_SETFL O_APPEND:" + tryw(lambda: os.write(fd, b"FF")) + ":" + content(p))
fcntl.fcntl(fd, fcntl.F_SETFL, 0)
os.lseek(fd, 0, os.SEEK_SET)
out.append("F_SETFL 0:" + tryw(lambda: os.write(fd, b"G")) + ":" + content(p))
os.close(fd)
p = fresh("rr"); fd = os.open(p, os.O_RDONLY)
out.append("preadv2 RWF_HIPRI:" + tryw(lambda: os.preadv(fd, [bytearray(4)], 0, os.RWF_HIPRI)))
os.close(fd)
if len(sys.argv) > 2:	# a branch fs with O_DIRECT: F_SETFL O_DIRECT then an unaligned write
    p = fresh("od", b"A" * 4096); fd = os.open(p, os.O_WRONLY)
    fcntl.fcntl(fd, fcntl.F_SETFL, os.O_DIRECT)
    out.append("F_SETFL O_DIRECT unaligned:" + tryw(lambda: os.pwrite(fd, b"xyz", 1)))
    os.close(fd)
    p = fresh("nw", b"A" * 4096); fd = os.open(p, os.O_RDONLY)
    out.append("preadv2 RWF_NOWAIT:" + tryw(lambda: os.preadv(fd, [bytearray(4)], 0, os.RWF_NOWAIT)))
    os.close(fd)
print("\n".join(out))
PY
mkdir -p "$T/b/N" "$T/b/m"
mount -t tmpfs natb "$T/b/N"
branch_fs tmpfs "$T/b" 2
check "B: mount b0=rw:b1=ro (tmpfs)" mount -i -t unionfs -o "dirs=$T/b/b0=rw:$T/b/b1=ro" none "$T/b/m"
nat=$(python3 "$T/w.py" "$T/b/N" 2>&1)
uni=$(python3 "$T/w.py" "$T/b/m" 2>&1)
KEYS="RWF_APPEND,RWF_DSYNC,RWF_SYNC,RWF_HIPRI,O_APPEND pwrite,F_SETFL O_APPEND,F_SETFL 0,preadv2 RWF_HIPRI,"
is "B: tmpfs answered every case (the reference is complete)" "$(cut -d: -f1 <<< "$nat" | tr '\n' ,)" "$KEYS"
while IFS= read -r line; do
	key=${line%%:*}
	is "B: $key as on tmpfs ($line)" "$(grep -- "^$key:" <<< "$uni")" "$line"
done <<< "$nat"
is "B: the branch holds what the union shows (RWF_APPEND)" "$(cat "$T/b/b0/ra")" "AAAABB"
umount "$T/b/m"
umount "$T/b/N"
mkdir -p "$T/e"
branch_fs ext4 "$T/e" 2
mkdir -p "$T/e/N" "$T/e/m"
check "B: mount b0=rw:b1=ro (ext4)" mount -i -t unionfs -o "dirs=$T/e/b0=rw:$T/e/b1=ro" none "$T/e/m"
mkdir "$T/e/b1/nat"
nat=$(python3 "$T/w.py" "$T/e/b1/nat" direct 2>&1)
uni=$(python3 "$T/w.py" "$T/e/m" direct 2>&1)
is "B: ext4 answered every case (the reference is complete)" "$(cut -d: -f1 <<< "$nat" | tr '\n' ,)" \
	"${KEYS}F_SETFL O_DIRECT unaligned,preadv2 RWF_NOWAIT,"
for key in "F_SETFL O_DIRECT unaligned" "preadv2 RWF_NOWAIT" RWF_APPEND "O_APPEND pwrite"; do
	is "B: ext4: $key as on ext4" "$(grep -- "^$key:" <<< "$uni")" "$(grep -- "^$key:" <<< "$nat")"
done
umount "$T/e/m"

# ---- C: one NAME_MAX everywhere ----------------------------------------------------------
mkdir -p "$T/c/m"
branch_fs tmpfs "$T/c" 2
n251=$(printf 'a%.0s' {1..251}) n252=$(printf 'b%.0s' {1..252})
l251=$(printf 'c%.0s' {1..251}) l252=$(printf 'd%.0s' {1..252}) x255=$(printf 'e%.0s' {1..255})
echo lower > "$T/c/b1/src"
echo long > "$T/c/b1/$x255"
M=$T/c/m
check "C: mount" mount -i -t unionfs -o "dirs=$T/c/b0=rw:$T/c/b1=ro" none "$M"
is "C: statfs namelen 251" "$(stat -f -c %l "$M")" 251
is "C: pathconf NAME_MAX 251" "$(getconf NAME_MAX "$M")" 251
for op in create mkdir mknod symlink link rename; do
	for n in 251 252; do
		case $n in 251) name=$n251; want=OK;; 252) name=$n252; want=ENAMETOOLONG;; esac
		case $op in
		create) got=$(sy - open "$M/$name" wcx);;
		mkdir) got=$(sy - mkdir "$M/${name:1}d");;
		mknod) got=$(sy - mknod "$M/${name:1}p" fifo);;
		symlink) got=$(sy - symlink src "$M/${name:1}s");;
		link) got=$(sy - link "$M/src" "$M/${name:1}l");;
		rename) echo r > "$M/r$n"; got=$(sy - rename "$M/r$n" "$M/${name:1}r");;
		esac
		is "C: $op of a $n-char name: $want" "$got" "$want"
	done
done
for n in 251 252; do
	case $n in 251) name=$n251; want=OK;; 252) name=$n252; want=ENAMETOOLONG;; esac
	is "C: stat (lookup) of a $n-char name: ${want/OK/ENOENT}" "$(sy - chmod "$M/${name:2}zz" 644)" "${want/OK/ENOENT}"
done
is "C: chmod, truncate of a 251-char name" "$(sy - chmod "$M/$n251" 600) $(sy - truncate "$M/$n251" 3)" "OK OK"
is "C: unlink of a 251-char name leaves a whiteout when needed" \
	"$(cp "$T/c/b1/src" "$T/c/b1/${l251}"; sy - unlink "$M/$l251" > /dev/null; test -f "$T/c/b0/.wh.$l251" && echo wh; test -e "$M/$l251" && echo visible)" wh
is "C: a 255-char name in a lower branch is listed by readdir" "$(ls "$M" | grep -c "^$x255\$")" 1
is "C: ... and its lookup gives ENAMETOOLONG" "$(sy - open "$M/$x255" r)" ENAMETOOLONG
is "C: nothing longer than 251 chars reached the writable branch" "$(cd "$T/c/b0" && find . -regextype posix-extended -regex '.*/[^/]{252,}' ! -name '.wh.*')" ""
umount "$M"

# ---- D: a descriptor opened before a copy-up reads the copy ------------------------------
mkdir -p "$T/d/m"
branch_fs tmpfs "$T/d" 2
for f in f1 f2 f3 f4 f5; do printf 'old-contents' > "$T/d/b1/$f"; done
check "D: mount" mount -i -t unionfs -o "dirs=$T/d/b0=rw:$T/d/b1=ro" none "$T/d/m"
out=$(cd "$T/d/m" && timeout -s KILL $(t_limit 60) python3 - <<'PY'
import mmap, os, socket
def upd(n, data=b"NEW-contents-longer"):
    fd = os.open(n, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, data); os.close(fd)
res = []
fd = os.open("f1", os.O_RDONLY)
os.read(fd, 3)
upd("f1")
res.append("pread:" + os.pread(fd, 64, 0).decode())
res.append("read:" + os.read(fd, 64).decode())
res.append("seek_end:%d" % os.lseek(fd, 0, os.SEEK_END))
os.close(fd)
fd = os.open("f2", os.O_RDONLY)
upd("f2")
r, w = os.pipe()
n = os.splice(fd, w, 64, offset_src=0)
res.append("splice:" + os.read(r, n).decode())
a, b = socket.socketpair()
n = os.sendfile(a.fileno(), fd, 0, 64)
res.append("sendfile:" + b.recv(64).decode())
os.close(fd)
fd = os.open("f3", os.O_RDONLY)
upd("f3")
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
res.append("mmap:" + m[:].decode())
m.close(); os.close(fd)
# a second copy-up-free write is seen at once too, and repeated switching is stable
fd = os.open("f4", os.O_RDONLY)
for i in range(200):
    upd("f4", b"v%03d" % i)
    if os.pread(fd, 4, 0) != b"v%03d" % i:
        res.append("loop:bad at %d" % i); break
else:
    res.append("loop:ok")
os.close(fd)
print("\n".join(res))
PY
)
for want in "pread:NEW-contents-longer" "read:-contents-longer" "seek_end:19" "splice:NEW-contents-longer" \
	"sendfile:NEW-contents-longer" "mmap:NEW-contents-longer" "loop:ok"; do
	is "D: ${want%%:*} after another descriptor's copy-up sees the copy" "$(grep -- "^${want%%:*}:" <<< "$out")" "$want"
done
# concurrent readers while the copy-up happens: no error, only old, truncated or new content
out=$(cd "$T/d/m" && timeout -s KILL $(t_limit 90) python3 - <<'PY'
import os, threading
fd = os.open("f5", os.O_RDONLY)
bad = []
stop = False
def reader():
    while not stop:
        d = os.pread(fd, 64, 0)
        # b"": between O_TRUNC and the write, as on any fs
        if d not in (b"old-contents", b"", b"NEW"):
            bad.append(d)
ts = [threading.Thread(target=reader) for _ in range(3)]
for t in ts: t.start()
w = os.open("f5", os.O_WRONLY | os.O_TRUNC)
os.write(w, b"NEW"); os.close(w)
for i in range(200):
    os.pread(fd, 64, 0)
stop = True
for t in ts: t.join()
print("bad:%d last:%s" % (len(bad), os.pread(fd, 64, 0).decode()))
PY
)
is "D: concurrent readers across the copy-up see old, truncated or new only" "$out" "bad:0 last:NEW"
check "D: umount (no file left open)" umount "$T/d/m"

# ---- E: renameat2 flags ------------------------------------------------------------------
mkdir -p "$T/r/m"
branch_fs tmpfs "$T/r" 2
echo a > "$T/r/b1/a"; echo b > "$T/r/b1/b"; echo c > "$T/r/b0/c"
M=$T/r/m
check "E: mount" mount -i -t unionfs -o "dirs=$T/r/b0=rw:$T/r/b1=ro" none "$M"
before=$(cd "$T/r/b0" && find . -printf '%P %s\n' | sort)
is "E: RENAME_NOREPLACE onto an existing name: EEXIST" "$(sy - rename "$M/a" "$M/b" noreplace)" EEXIST
is "E: RENAME_NOREPLACE onto an upper name: EEXIST" "$(sy - rename "$M/a" "$M/c" noreplace)" EEXIST
is "E: RENAME_EXCHANGE: EINVAL" "$(sy - rename "$M/a" "$M/b" exchange)" EINVAL
is "E: RENAME_WHITEOUT: EINVAL" "$(sy - rename "$M/a" "$M/n" whiteout)" EINVAL
is "E: refused renames changed nothing" "$(cd "$T/r/b0" && find . -printf '%P %s\n' | sort)" "$before"
is "E: RENAME_NOREPLACE to a new name works" "$(sy - rename "$M/a" "$M/n" noreplace) $(cat "$M/n") $(test -e "$M/a" || echo gone)" "OK a gone"
umount "$M"
# coherency=none: a name made in the branch behind the union's back stays unseen (a cached
# negative dentry); RENAME_NOREPLACE onto it must still not replace it
check "E: mount coherency=none" mount -i -t unionfs -o "dirs=$T/r/b0=rw:$T/r/b1=ro,coherency=none" none "$M"
sy - unlink "$M/n2" > /dev/null
echo direct > "$T/r/b0/n2"
is "E: RENAME_NOREPLACE onto a name the branch has: EEXIST" "$(sy - rename "$M/b" "$M/n2" noreplace)" EEXIST
is "E: ... and the branch's file is intact" "$(cat "$T/r/b0/n2")" direct
umount "$M"
is "dmesg clean" "$(dmesg_bad)" ""
finish
