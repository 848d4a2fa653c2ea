#!/bin/bash
# Read path: read, llseek incl. SEEK_DATA/SEEK_HOLE, splice/sendfile, read-only mmap,
# getattr of the winning branch, readlink, getxattr/listxattr, directory permission
# checked on every contributing branch.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
branch_fs ext4 "$T" 2
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1

head -c 1000000 /dev/urandom > "$B1/data"
python3 -c "
f=open('$B1/sparse','wb'); f.seek(8<<20); f.write(b'X'*4096); f.seek(16<<20); f.write(b'Y')"
ln -s data "$B1/link"
chmod 0640 "$B1/data"; chown 12:34 "$B1/data"; touch -d '2001-02-03 04:05:06' "$B1/data"
setfattr -n user.color -v blue "$B1/data"
mkdir -p "$B0/pd" "$B1/pd"; touch "$B1/pd/f"; chmod 0755 "$B0/pd"; chmod 0700 "$B1/pd"
mkfifo "$B1/fifo"

check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
is "read matches the branch" "$(sha1sum < "$M/data")" "$(sha1sum < "$B1/data")"
is "stat mode/owner/size/mtime from the branch" "$(stat -c '%a %u %g %s %Y' "$M/data")" "$(stat -c '%a %u %g %s %Y' "$B1/data")"
is "readlink" "$(readlink "$M/link")" data
is "read through symlink" "$(sha1sum < "$M/link")" "$(sha1sum < "$B1/data")"
is "fifo type" "$(stat -c %F "$M/fifo")" fifo
is "getxattr" "$(getfattr --only-values -n user.color "$M/data")" blue
is "listxattr" "$(getfattr -d "$M/data" 2>/dev/null | grep -c user.color)" 1
out=$(python3 - "$M/sparse" "$M/data" <<'PY'
import os, sys, mmap, socket
fd = os.open(sys.argv[1], os.O_RDONLY)
print(os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 8 << 20, os.SEEK_HOLE),
      os.lseek(fd, (8 << 20) + 8192, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_END))
os.close(fd)
fd = os.open(sys.argv[2], os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
a = m[:1000000]; m.close()
os.lseek(fd, 0, 0); b = os.read(fd, 1000000)
r, w = os.pipe()
n = os.splice(fd, w, 65536, offset_src=0) if hasattr(os, "splice") else 65536
c = os.read(r, 65536)
print(a == b, n == 65536 and c == b[:65536], os.pread(fd, 10, 999995) == b[999995:])
PY
)
is "SEEK_DATA/SEEK_HOLE" "$(head -1 <<< "$out")" "8388608 8392704 16777216 16777217"
is "mmap, splice and pread agree with read" "$(tail -1 <<< "$out")" "True True True"
is "sendfile copy" "$(python3 -c "
import os; i=os.open('$M/data',os.O_RDONLY); o=os.open('$T/copy',os.O_WRONLY|os.O_CREAT,0o644)
n=0
while True:
    k=os.sendfile(o,i,None,1<<20)
    if not k: break
    n+=k
print(n)")" 1000000
# permission: b1's copy of pd is 0700, so others may not search the merged dir
is "dir permission checked on every branch (root ok)" "$(ls "$M/pd")" f
is "dir permission checked on every branch (uid 65534 refused)" "$(setpriv --reuid=65534 --regid=65534 --clear-groups ls "$M/pd" 2>&1 | grep -c 'Permission denied')" 1
check "umount" umount "$M"

# the permission cache (inode.c): when every branch's copy of a merged directory has the same
# mode and owner and no ACL, only the top one is checked; any change must be seen at once:
# made directly in a branch (chmod, ACL: coherency=reval via ctimes, notify via events) or
# through the union (chmod). Each step first warms the cache with allowed accesses.
U=(setpriv --reuid=65534 --regid=65534 --clear-groups)
ucan() { local i; for i in 1 2 3; do sleep 0.05; "${U[@]}" ls "$M/pc" > /dev/null 2>&1 || { echo denied; return; }; done; echo allowed; }
for coh in reval notify; do
	rm -rf "$B0/pc" "$B1/pc"; mkdir -m 755 "$B0/pc" "$B1/pc"; echo f > "$B1/pc/f"
	check "permcache $coh: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=$coh" none "$M"
	is "permcache $coh: same mode everywhere: allowed" "$(ucan)" allowed
	chmod 700 "$B1/pc"
	is "permcache $coh: lower copy chmod 700 in the branch: denied" "$(ucan)" denied
	chmod 755 "$B1/pc"
	is "permcache $coh: chmod 755 again: allowed" "$(ucan)" allowed
	setfacl -m u:65534:--- "$B1/pc"
	is "permcache $coh: an ACL denying the user on the lower copy: denied" "$(ucan)" denied
	setfacl -b "$B1/pc"
	is "permcache $coh: ACL removed: allowed" "$(ucan)" allowed
	chmod 700 "$M/pc"
	is "permcache $coh: chmod 700 through the union: denied" "$(ucan)" denied
	chmod 755 "$M/pc"
	is "permcache $coh: chmod 755 through the union: allowed" "$(ucan)" allowed
	chown 65534 "$B1/pc"; chmod 700 "$B1/pc"
	is "permcache $coh: lower copy owned by the user, 0700; top 0755 root: allowed" "$(ucan)" allowed
	chown 0 "$B1/pc"
	is "permcache $coh: lower owner back to root (still 0700): denied" "$(ucan)" denied
	check "permcache $coh: umount" umount "$M"
done
finish
