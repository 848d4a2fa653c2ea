#!/bin/bash
# Modifying operations: the create family, unlink/rmdir with whiteouts, the write path,
# files open across a copy-up, and an unprivileged user (uid 65534).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
branch_fs tmpfs "$T" 3
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1 B2=$T/b2

mkdir -p "$B1/a/b"; chmod 0750 "$B1/a"; chown 4:5 "$B1/a"
echo low > "$B1/a/b/old"
echo gone > "$B2/del"; echo gone > "$B1/del"
mkdir -p "$B1/rd" "$B2/rd"; touch "$B2/rd/x"
mkdir -p "$B1/emptyd"; mkdir -p "$B1/whd" "$B2/whd"; touch "$B2/whd/y" "$B1/whd/.wh.y"
echo wh > "$B2/recreate"; touch "$B1/.wh.recreate"
mkdir -p "$B2/redir"; touch "$B2/redir/old"; touch "$B1/.wh.redir"
echo base > "$B1/app"; echo base > "$B1/suid"; chmod 4755 "$B1/suid"
echo reader > "$B1/shared"

check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro:$B2=ro" none "$M"
# create family
echo new > "$M/a/b/new"
is "create in a lower-only dir goes to branch 0" "$(cat "$B0/a/b/new")" new
is "parents recreated with their attributes" "$(stat -c '%a %u %g' "$B0/a")" "750 4 5"
mkdir "$M/a/b/nd"; ln -s tgt "$M/a/sl"; mkfifo "$M/a/ff"; mknod "$M/a/cd" c 1 3
python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind('$M/a/so')"
is "mkdir/symlink/fifo/chr/socket land in branch 0" \
	"$(stat -c %F "$B0/a/b/nd" "$B0/a/sl" "$B0/a/ff" "$B0/a/cd" "$B0/a/so" | tr '\n' ,)" \
	"directory,symbolic link,fifo,character special file,socket,"
echo again > "$M/recreate"
is "create over a whiteout: visible" "$(cat "$M/recreate")" again
is "create over a whiteout: in branch 0" "$(cat "$B0/recreate")" again
mkdir "$M/redir"
is "mkdir over a whited-out dir: empty" "$(ls -A "$M/redir" | wc -l)" 0
is "mkdir over a whited-out dir: opaque in branch 0" "$(test -f "$B0/redir/.wh.__dir_opaque" && echo yes)" yes
# unlink / rmdir
rm "$M/del"
is "unlink of a lower file leaves a whiteout" "$(test -f "$B0/.wh.del" && echo yes) $($S open "$M/del" r)" "yes ENOENT"
is "lower copies untouched" "$(cat "$B1/del" "$B2/del" | tr '\n' ' ')" "gone gone "
echo mine > "$M/own"; rm "$M/own"
is "unlink of a branch-0-only file leaves no whiteout" "$(ls -A "$B0" | grep -c own)" 0
is "rmdir of a non-empty merged dir" "$($S rmdir "$M/rd")" ENOTEMPTY
is "rmdir of an empty lower dir" "$($S rmdir "$M/emptyd") $(test -f "$B0/.wh.emptyd" && echo wh)" "OK wh"
is "rmdir of a dir with only whiteouts" "$($S rmdir "$M/whd")" OK
is "rmdir'd names gone" "$($S open "$M/emptyd" r) $($S open "$M/whd" r)" "ENOENT ENOENT"
# rmdir of a directory held by branch 0 only: its emptiness is checked by the read that clears
# its whiteouts (no merged readdir first)
mkdir -p "$M/sd/sub"; touch "$M/sd/f"
is "rmdir of a branch-0-only dir holding a file" "$($S rmdir "$M/sd")" ENOTEMPTY
is "... nothing removed from it" "$(ls -A "$B0/sd" | LC_ALL=C sort | tr '\n' ' ')" "f sub "
rm "$M/sd/f"
is "rmdir of a branch-0-only dir holding a directory" "$($S rmdir "$M/sd")" ENOTEMPTY
rmdir "$M/sd/sub"
mkdir -p "$B0/sd2"; touch "$B0/sd2/.wh.stale" "$B0/sd2/.wh.__dir_opaque"	# made in the branch
is "rmdir of a branch-0-only dir holding only whiteouts" "$($S rmdir "$M/sd2")" OK
is "... gone from branch 0" "$(test -e "$B0/sd2" && echo there || echo gone)" gone
is "rmdir of the emptied branch-0-only dir" "$($S rmdir "$M/sd") $(test -e "$B0/sd" && echo there || echo gone)" "OK gone"
mkdir "$M/emptyd"
is "mkdir after rmdir: empty and opaque" "$(ls -A "$M/emptyd" | wc -l) $(test -f "$B0/emptyd/.wh.__dir_opaque" && echo opaque)" "0 opaque"
# write path
echo more >> "$M/app"
is "O_APPEND after copy-up" "$(cat "$M/app" | tr '\n' ' ')" "base more "
out=$(python3 - "$M/app" <<'PY'
import os, sys
p = sys.argv[1]
a = os.open(p, os.O_WRONLY | os.O_APPEND)
b = os.open(p, os.O_WRONLY)
os.pwrite(b, b"0123456789", 100)    # extend behind the O_APPEND descriptor's back
os.write(a, b"END")                  # must land at the real end (110)
os.fsync(a); os.fdatasync(a)
os.posix_fallocate(b, 200, 100)
os.close(a); os.close(b)
print(os.stat(p).st_size, open(p, "rb").read()[110:113])
PY
)
is "O_APPEND positions at the branch file's real end; fallocate extends" "$out" "300 b'END'"
setpriv --reuid=65534 --regid=65534 --clear-groups true
chmod 666 "$M/suid"; chmod 4777 "$M/suid"
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo x >> '$M/suid'"
is "setuid bit dropped on write by another user" "$(stat -c %a "$M/suid")" 777
python3 -c "
import os
i=os.open('$M/a/b/old',os.O_RDONLY); o=os.open('$M/cfr',os.O_WRONLY|os.O_CREAT,0o644)
os.copy_file_range(i,o,100); os.close(i); os.close(o)"
is "copy_file_range" "$(cat "$M/cfr")" low
# files open across a copy-up
out=$(python3 - "$M/shared" <<'PY'
import os, sys
p = sys.argv[1]
r = os.open(p, os.O_RDONLY)            # opened before the copy-up: follows it (issue 21 item 12)
w = os.open(p, os.O_WRONLY | os.O_TRUNC)  # triggers the copy-up
os.write(w, b"writer\n")
print(os.read(r, 100).decode().strip(), open(p).read().strip())
PY
)
is "a reader opened before a copy-up reads the copy, as new opens do" "$out" "writer writer"
check "umount" umount "$M"

# unprivileged user: refused writes leave nothing behind
umount_all "$T"; rm -rf "$T"/b*
branch_fs tmpfs "$T" 2
mkdir -p "$B1/rootdir" "$B1/open"; chmod 755 "$B1/rootdir"; chmod 777 "$B1/open"
echo secret > "$B1/secret"; chmod 600 "$B1/secret"; echo pub > "$B1/rootdir/pub"
chmod 644 "$B1/rootdir/pub"
check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
as() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
is "uid 65534 cannot read a 0600 file" "$(as $S open "$M/secret" r)" EACCES
is "uid 65534 cannot write a root file" "$(as $S open "$M/rootdir/pub" w)" EACCES
is "uid 65534 cannot create in a root dir" "$(as $S open "$M/rootdir/new" wc)" EACCES
is "uid 65534 cannot unlink in a root dir" "$(as $S unlink "$M/rootdir/pub")" EACCES
is "uid 65534 cannot rename in a root dir" "$(as $S rename "$M/rootdir/pub" "$M/rootdir/x")" EACCES
is "uid 65534 cannot chmod a root file" "$(as $S chmod "$M/rootdir/pub" 777)" EPERM
is "uid 65534 cannot set trusted.* xattrs" "$(as $S setxattr "$M/open" trusted.x 1)" EPERM
is "refused writes left nothing in branch 0" "$(find "$B0" -mindepth 1 | wc -l)" 0
is "uid 65534 can create in a 0777 lower dir" "$(as $S open "$M/open/mine" wc)" OK
is "the new file is owned by uid 65534" "$(stat -c %u "$B0/open/mine")" 65534
check "umount" umount "$M"
finish
