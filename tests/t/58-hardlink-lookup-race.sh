#!/bin/bash
# Hard links: one union inode per link group during a copy-up (docs/concepts.md "Hard
# links"). A name of a group looked up while another name's copy-up has made the group's
# index entry but not yet rekeyed its union inode to it must get that inode, not a second
# one: POSIX locks taken through the two names must conflict. (It gets it over its lower
# file; the copy-up, once done, moves the name over to the entry.) The test build's
# debugfs race_delay_us holds the copy-up in that window (100 ms) while the test looks the
# other name up; the lookup is started as soon as the index entry shows in the writable
# branch.
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

# A failed publish: the copy-up of one name makes the group's index entry, then fails
# (copyup_rename, once) and removes it. A name looked up while the entry existed (the
# test build holds the copy-up 100 ms after making it) must not have taken it: before,
# its open went to the removed entry and its write was lost. Now it shows the lower
# file, and its own write copies the group up.
for ((i = 0; i < N; i++)); do
	echo o > "$D/b1/f$i.a"; ln "$D/b1/f$i.a" "$D/b1/f$i.b"
done
INJ=/sys/kernel/debug/unionfs/inject
echo 100000 > "$DELAY"
out=$(timeout -s KILL $(t_limit 240) python3 - "$D/m" "$D/b0" $N "$INJ" <<'PY' 2>&1
import errno, os, sys, time
m, b0, n, inj = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ix = b0 + "/.wh..wh.unionfs.index"
seen = inwin = 0
for i in range(n):
    a, b = "%s/f%d.a" % (m, i), "%s/f%d.b" % (m, i)
    os.stat(a)                      # a's union inode, over the lower file
    before = len(os.listdir(ix))
    with open(inj, "w") as f:
        f.write("copyup_rename errno=5 times=1\n")
    pid = os.fork()
    if pid == 0:                    # a's copy-up: makes the entry, fails 100 ms later
        try:
            with open(a, "a") as f:
                f.write("A\n")
            os._exit(1)
        except OSError as e:
            os._exit(0 if e.errno == errno.EIO else 2)
    t0 = time.time()
    while time.time() - t0 < 30 and len(os.listdir(ix)) <= before:
        pass
    if len(os.listdir(ix)) > before:
        seen += 1
    os.stat(b)                      # b's lookup ...
    if len(os.listdir(ix)) > before:
        inwin += 1                  # ... while the entry existed
    try:
        fd = os.open(b, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"B\n")
        os.close(fd)
    except OSError as e:
        print("f%d: b: %s" % (i, e))
    st = os.waitpid(pid, 0)[1]
    if os.WEXITSTATUS(st) != 0:
        print("f%d: a's append did not fail with EIO (%d)" % (i, os.WEXITSTATUS(st)))
print("entry seen %d, b looked up while it existed %d" % (seen, inwin))
PY
)
echo 0 > "$DELAY"; echo "clear all" > "$INJ"
is "failed publish: each write through the other name, each failed copy-up EIO" \
	"$out" "entry seen $N, b looked up while it existed $N"
is "failed publish: both names: one st_ino, nlink 2, the second writer's content" \
	"$(for ((i = 0; i < N; i++)); do [[ $(stat -c %i "$D/m/f$i.a") == $(stat -c %i "$D/m/f$i.b") &&
		$(stat -c %h "$D/m/f$i.a") == 2 && $(cat "$D/m/f$i.a") == $'o\nB' &&
		$(cat "$D/m/f$i.b") == $'o\nB' ]] || echo "f$i"; done)" ""
is "failed publish: one index entry per group, each showing one lower name" \
	"$(for e in "$D/b0/.wh..wh.unionfs.index"/*; do getfattr --absolute-names --only-values \
		-n trusted.unionfs.nlink "$e"; echo; done | sort | uniq -c | awk '{ print $1, $2 }')" \
	"$((3 * N)) 1"
check "umount" umount "$D/m"
is "no oops, WARN or BUG in the kernel log" "$(dmesg_bad)" ""
finish
