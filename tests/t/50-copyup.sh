#!/bin/bash
# Copy-up: every trigger, every file type, data (holes kept), mode/owner/times/xattrs
# checked on the branch; 1 GiB sparse file; ENOSPC leaves the original intact and no
# partial file or temporary name anywhere.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
branch_fs ext4 "$T" 2
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1

mkfile() {	# mkfile NAME : a regular file in b1 with data, hole, attributes and xattr
	python3 -c "
f=open('$B1/$1','wb'); f.write(b'head'*1000); f.seek(3<<20); f.write(b'tail'*100)"
	chmod 4751 "$B1/$1"; chown 7:8 "$B1/$1"; touch -d '2002-03-04 05:06:07' "$B1/$1"
	setfattr -n user.k -v "v-$1" "$B1/$1"
}
attrs() { stat -c '%F %a %u %g %s %Y' "$1"; }
for t in wopen trunc0 trunc chmod chown utime setx remx link rename; do mkfile $t; done
mkdir -p "$B1/dir/sub"; chmod 0751 "$B1/dir/sub"; chown 5:6 "$B1/dir/sub"; touch -d '2003-01-01' "$B1/dir/sub"
echo deep > "$B1/dir/sub/f"
ln -s target-of-link "$B1/sym"
mkfifo "$B1/fifo"; mknod "$B1/chr" c 1 3
sig() {	# sig PATH : type, mode, owner, size, mtime and (regular files) a checksum
	stat -c '%F %a %u %g %s %Y' "$1"
	[[ -f $1 && ! -L $1 ]] && sha1sum < "$1" | cut -c1-12
}
for f in wopen trunc0 trunc chmod chown utime setx remx link rename dir/sub/f sym fifo chr; do
	orig[${#orig[@]}]="$f $(sig "$B1/$f" | tr '\n' ' ')"
done
cp -a "$B1/wopen" "$T/ref"

check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
# each trigger
python3 -c "import os; fd=os.open('$M/wopen', os.O_WRONLY); os.close(fd)"
is "open for write copies up (data, holes, attrs, xattr)" \
	"$(attrs "$B0/wopen") $(cmp "$B0/wopen" "$T/ref" && echo same) $(getfattr --only-values -n user.k "$B0/wopen")" \
	"$(attrs "$T/ref") same v-wopen"
is "copy-up keeps holes" "$(stat -c %b "$B0/wopen")" "$(stat -c %b "$B1/wopen")"
: > "$M/trunc0"
is "O_TRUNC copies up an empty file" "$(stat -c "%s %a %u" "$B0/trunc0")" "0 $(stat -c "%a %u" "$B1/trunc0")"
truncate -s 100 "$M/trunc"
is "truncate copies up only what remains" "$(stat -c %s "$B0/trunc") $(head -c 100 "$B1/trunc" | cmp - "$B0/trunc" && echo same)" "100 same"
chmod 600 "$M/chmod"
is "chmod copies up" "$(stat -c '%a %s' "$B0/chmod")" "600 $(stat -c %s "$B1/chmod")"
chown 9:10 "$M/chown"
is "chown copies up" "$(stat -c '%u %g' "$B0/chown")" "9 10"
touch -d '2010-01-01 00:00:00' "$M/utime"
is "utime copies up" "$(stat -c %Y "$B0/utime")" "$(date -d '2010-01-01 00:00:00' +%s)"
setfattr -n user.new -v 1 "$M/setx"
is "setxattr copies up" "$(getfattr --only-values -n user.new "$B0/setx") $(getfattr --only-values -n user.k "$B0/setx")" "1 v-setx"
setfattr -x user.k "$M/remx"
is "removexattr copies up" "$(getfattr -d "$B0/remx" 2>/dev/null | grep -c user.k) $(test -f "$B0/remx" && echo there)" "0 there"
ln "$M/link" "$M/link2"
is "link copies up and links in branch 0" "$(stat -c %h "$B0/link") $(stat -c %i "$B0/link2")" "2 $(stat -c %i "$B0/link")"
is "linked names share the union inode" "$(stat -c %i "$M/link2")" "$(stat -c %i "$M/link")"
mv "$M/rename" "$M/renamed"
is "rename copies up" "$(cat "$B0/renamed" | sha1sum)" "$(cat "$B1/rename" | sha1sum)"
# every file type, parents recreated with their attributes
chown -h 3:3 "$M/sym"; chown 3:3 "$M/fifo" "$M/chr" "$M/dir/sub/f"
is "symlink copied up" "$(readlink "$B0/sym") $(stat -c %u "$B0/sym")" "target-of-link 3"
is "fifo copied up" "$(stat -c '%F %u' "$B0/fifo")" "fifo 3"
is "char device copied up" "$(stat -c '%F %t %T %u' "$B0/chr")" "character special file 1 3 3"
is "parents recreated with attributes" "$(stat -c '%a %u %g %Y' "$B0/dir/sub")" "$(stat -c '%a %u %g %Y' "$B1/dir/sub")"
is "nested file copied up" "$(cat "$B0/dir/sub/f")" deep
# the originals never change
for e in "${orig[@]}"; do
	f=${e%% *}
	is "original $f untouched" "$f $(sig "$B1/$f" | tr '\n' ' ')" "$e"
done
is "no temporary names left in branch 0" "$(find "$B0" -name '.wh..wh.*' | wc -l)" 0
check "umount" umount "$M"

# 1 GiB sparse file
umount_all "$T"; rm -rf "$T/b0" "$T/b1"
branch_fs tmpfs "$T" 2
truncate -s 1G "$B1/big"; printf 'end' | dd of="$B1/big" bs=1 seek=$((1024*1024*1024 - 3)) conv=notrunc status=none
printf 'start' | dd of="$B1/big" conv=notrunc status=none
check "mount tmpfs branches" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
echo -n X >> "$M/big"
is "1 GiB sparse copy-up: size" "$(stat -c %s "$B0/big")" $((1024*1024*1024 + 1))
is "1 GiB sparse copy-up: still sparse" "$(( $(stat -c %b "$B0/big") < 1024 ))" 1
is "1 GiB sparse copy-up: data" "$(head -c 5 "$B0/big")$(tail -c 4 "$B0/big")" "startendX"
check "umount" umount "$M"

# ENOSPC during copy-up
umount_all "$T"; rm -rf "$T/b0" "$T/b1"
mkdir -p "$B0" "$B1"; mount -t tmpfs -o size=1m small "$B0"; mount -t tmpfs tmpb1 "$B1"
head -c 4000000 /dev/urandom > "$B1/big"; sum=$(sha1sum < "$B1/big")
check "mount with a 1 MiB writable branch" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
is "copy-up hits ENOSPC" "$($S open "$M/big" w)" ENOSPC
is "original intact after ENOSPC" "$(sha1sum < "$B1/big")" "$sum"
is "union still shows the original" "$(sha1sum < "$M/big")" "$sum"
is "no partial file or temp name in branch 0" "$(ls -A "$B0" | wc -l)" 0
is "branch 0 space returned" "$(df --output=used "$B0" | tail -1 | tr -d ' ')" 0
check "umount" umount "$M"

# leftovers of a crash mid copy-up (temporaries of an earlier mount) take no name a new
# mount needs: the temporary counter starts at a random point (issue 21 item 11; it used to
# restart at 1 and the copy-ups below failed with EEXIST)
umount_all "$T"; rm -rf "$T/b0" "$T/b1"
mkdir -p "$B0/d" "$B1/d"
for i in $(seq 1 40); do echo "left $i" > "$B0/d/.wh..wh.unionfs.$i"; done
for i in $(seq 1 20); do echo "f$i" > "$B1/d/f$i"; done
dmesg_mark
check "mount over crash leftovers" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
n=0
for i in $(seq 1 20); do sh -c "echo more >> '$M/d/f$i'" 2>/dev/null && n=$((n + 1)); done
is "20 copy-ups in a directory holding leftover temporaries 1..40" "$n" 20
is "the leftovers are not shown" "$(ls -A "$M/d" | grep -c unionfs)" 0
# ... and the union's read of the directory removed them from the branch (issue 21 item 11):
# names outside every live mount's range of temporary numbers, with one log line
is "a readdir removed the 40 leftovers from the branch" "$(ls -A "$B0/d" | grep -c unionfs)" 0
is "one log line for the directory, with the count" \
	"$(dmesg_since_mark | grep -c 'unionfs: branch 0: removed 40 leftover temporaries of an earlier mount from d$')" 1
is "the branch directory keeps the copies" "$(ls -A "$B0/d" | wc -l)" 20
check "umount" umount "$M"

# leftovers in a writable branch root are removed at mount: files, a stashed directory
# (holding whiteouts), a symlink; a name that is not one of ours stays; a read-only branch
# is not touched
for i in $(seq 1 30); do echo "left $i" > "$B0/.wh..wh.unionfs.$i"; done
mkdir "$B0/.wh..wh.unionfs.77"; : > "$B0/.wh..wh.unionfs.77/.wh.x"; : > "$B0/.wh..wh.unionfs.77/.wh.__dir_opaque"
ln -s nowhere "$B0/.wh..wh.unionfs.78"
: > "$B0/.wh..wh.unionfs.abc"; : > "$B1/.wh..wh.unionfs.5"
dmesg_mark
check "mount over leftovers in the branch root" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
is "mount removed the root's leftovers (32), kept the foreign name and the ro branch's" \
	"$(cd "$B0" && ls -A | grep unionfs | tr '\n' ' ')$(ls -A "$B1" | grep -c unionfs)" ".wh..wh.unionfs.abc 1"
is "one log line for the root" "$(dmesg_since_mark | grep -c 'unionfs: branch 0: removed 32 leftover temporaries of an earlier mount from b0$')" 1
check "umount" umount "$M"

# copy-ups (O_TMPFILE files, named-temporary directories) while leftovers keep appearing and
# readdirs keep cleaning them: no copy-up in flight loses its temporary (200 rounds)
umount_all "$T"; rm -rf "$T/b0" "$T/b1"
branch_fs tmpfs "$T" 2
mkdir -p "$B0/c" "$B1/c"
for i in $(seq 1 200); do echo "f$i" > "$B1/c/f$i"; mkdir "$B1/c/d$i"; done
dmesg_mark
check "mount for concurrent cleanup" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
out=$(timeout -s KILL $(t_limit 150) python3 - "$B0/c" "$M/c" <<'PY'
import os, sys, threading
b0, m = sys.argv[1:]
stop = False
reads = 0
def reader():
    global reads
    while not stop:
        os.listdir(m)
        reads += 1
t = threading.Thread(target=reader)
t.start()
fails = []
for i in range(1, 201):
    for k in range(3):
        open(f"{b0}/.wh..wh.unionfs.{i * 3 + k}", "w").close()
    try:
        with open(f"{m}/f{i}", "a") as f:
            f.write("more\n")
        os.chmod(f"{m}/d{i}", 0o700)
    except OSError as e:
        fails.append(f"{i}: {e}")
stop = True
t.join()
print(len(fails), reads, fails[:5])
PY
)
set -- $out
is "200 rounds of copy-ups during cleanups: none failed" "${1:-none}" 0
is "a reader listed the directory during the copy-ups (${2:-0} readdirs)" "$((${2:-0} > 0))" 1
bad=0
for i in $(seq 1 200); do
	[[ $(cat "$B0/c/f$i" 2>/dev/null) == "f$i"$'\n'"more" && $(stat -c %a "$B0/c/d$i") == 700 ]] || bad=$((bad + 1))
done
is "all 200 files and directories copied up complete" "$bad" 0
ls -A "$M/c" > /dev/null
is "no leftover or temporary in the branch after a last readdir" "$(ls -A "$B0/c" | grep -c unionfs)" 0
n=$(dmesg_since_mark | grep -c 'unionfs: branch 0: removed [0-9]* leftover temporar.* from c$')
if ((n >= 2)); then ok "cleanups ran during the copy-ups ($n)"; else not_ok "cleanups ran during the copy-ups" "$n log lines"; fi
check "umount" umount "$M"
is "no kernel warnings" "$(dmesg_bad)" ""
finish
