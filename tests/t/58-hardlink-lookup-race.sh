#!/bin/bash
# Hard links: one union inode per link group during a copy-up (docs/concepts.md "Hard
# links"). A name of a group looked up while another name's copy-up has made the group's
# index entry but not yet rekeyed its union inode to it must get that inode, not a second
# one: POSIX locks taken through the two names must conflict. The test build's debugfs
# race_delay_us holds the copy-up in that window (100 ms) while the test looks the other
# name up; the lookup is started as soon as the index entry shows in the writable branch.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
dmesg_mark
DELAY=/sys/kernel/debug/unionfs/race_delay_us
D=$T/lr
mkdir -p "$D/m"
branch_fs tmpfs "$D" 2 || not_ok "make branches"
N=20
for ((i = 0; i < N; i++)); do
	echo o > "$D/b1/g$i.a"; ln "$D/b1/g$i.a" "$D/b1/g$i.b"
done
check "mount" mount -i -t unionfs -o "dirs=$D/b0=rw:$D/b1=ro" none "$D/m"
check "race_delay_us exists (test build)" test -w "$DELAY"
# held_through A FB: does a lock taken through name A (this process) refuse one taken
# through FB, the other name's open file, in another process? And one st_ino?
cat > "$T/lk.py" <<'PY'
import fcntl, os
def held_through(a, fb):
    fa = os.open(a, os.O_RDWR)
    fcntl.lockf(fa, fcntl.LOCK_EX)
    pid = os.fork()
    if pid == 0:
        try:
            fcntl.lockf(fb, fcntl.LOCK_SH | fcntl.LOCK_NB)
            os._exit(1)             # not refused: another union inode
        except OSError:
            os._exit(0)
    st = os.waitpid(pid, 0)[1]
    same = os.fstat(fb).st_ino == os.fstat(fa).st_ino
    os.close(fa)
    return not os.WEXITSTATUS(st), same
PY
echo 100000 > "$DELAY"
out=$(timeout -s KILL $(t_limit 240) python3 - "$D/m" "$D/b0" $N "$T" <<'PY' 2>&1
import os, sys, time
sys.path.insert(0, sys.argv[4])
import lk
m, b0, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ix = b0 + "/.wh..wh.unionfs.index"
split = early = 0
for i in range(n):
    a, b = "%s/g%d.a" % (m, i), "%s/g%d.b" % (m, i)
    os.stat(a)                      # a's union inode, over the lower file
    pid = os.fork()
    if pid == 0:                    # the copy-up of a
        with open(a, "a") as f:
            f.write("A\n")
        os._exit(0)
    t0 = time.time()
    while time.time() - t0 < 30:
        try:
            if len(os.listdir(ix)) > i:
                break
        except OSError:
            pass
    os.stat(b)                      # b's first lookup: finds the index entry
    if os.waitpid(pid, 0)[1]:
        print("g%d: the append failed" % i)
    fb = os.open(b, os.O_RDONLY)
    held, _ = lk.held_through(a, fb)
    os.close(fb)
    if not held:
        split += 1
        print("g%d: a lock through g%d.a does not hold through g%d.b" % (i, i, i))
print("split %d" % split)
PY
)
echo 0 > "$DELAY"
is "a lock through one name holds through the other (of $N groups)" "$(tail -n 1 <<< "$out")" "split 0"
is "both names: one st_ino, one content" \
	"$(for ((i = 0; i < N; i++)); do [[ $(stat -c %i "$D/m/g$i.a") == $(stat -c %i "$D/m/g$i.b") &&
		$(cat "$D/m/g$i.b") == $'o\nA' ]] || echo "g$i"; done)" ""

# The other order: a name of the group looked up first (it finds no index entry), that
# gets its union inode only after the copy-up of the other name published the entry and
# rekeyed its inode (the test build holds such a lookup 300 ms before unionfs_iget). The
# late lookup must look for the entry again and take the group's inode, not make a
# second one over the lower file.
for ((i = 0; i < N; i++)); do
	echo o > "$D/b1/h$i.a"; ln "$D/b1/h$i.a" "$D/b1/h$i.b"
done
echo 100000 > "$DELAY"
out=$(timeout -s KILL $(t_limit 240) python3 - "$D/m" $N "$T" <<'PY' 2>&1
import os, sys, time
sys.path.insert(0, sys.argv[3])
import lk
m, n = sys.argv[1], int(sys.argv[2])
split = 0
for i in range(n):
    a, b = "%s/h%d.a" % (m, i), "%s/h%d.b" % (m, i)
    os.stat(a)                      # a's union inode, over the lower file
    pid = os.fork()
    if pid == 0:                    # the copy-up of a: publish at >= 100 ms
        with open(a, "a") as f:
            f.write("A\n")
        os._exit(0)
    time.sleep(0.03)
    # the open's lookup finds no entry and gets its inode at >= 330 ms; the open
    # file keeps that inode (a later walk would look the name up again)
    fb = os.open(b, os.O_RDONLY)
    if os.waitpid(pid, 0)[1]:
        print("h%d: the append failed" % i)
    held, same = lk.held_through(a, fb)
    os.close(fb)
    if not same:
        print("h%d: the open files' st_ino differ" % i)
    if not held:
        split += 1
        print("h%d: a lock through h%d.a does not hold through h%d.b" % (i, i, i))
print("split %d" % split)
PY
)
echo 0 > "$DELAY"
is "late lookup: a lock through one name holds through the other (of $N groups)" \
	"$out" "split 0"
is "late lookup: both names: one st_ino, one content" \
	"$(for ((i = 0; i < N; i++)); do [[ $(stat -c %i "$D/m/h$i.a") == $(stat -c %i "$D/m/h$i.b") &&
		$(cat "$D/m/h$i.b") == $'o\nA' ]] || echo "h$i"; done)" ""
check "umount" umount "$D/m"
is "no oops, WARN or BUG in the kernel log" "$(dmesg_bad)" ""
finish
