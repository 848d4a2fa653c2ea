#!/bin/bash
# del= against operations in flight (review 17, issue 20 defect 9's class): once
# remount,del= has returned 0, nothing is created in, copied into, written to or opened on
# the deleted branch through the union, also by an operation that had chosen that branch
# before (on the old branch table); such an operation either makes del= fail with EBUSY or
# ends on the new table (an open or create is retried by the VFS and lands in the branch
# that is now the target). Was: a create or copy-up held in the race window finished into
# the deleted branch (del= 0, the data invisible in the union); a create blocked in its
# branch's freeze did the same. Checked:
#   - a create and an append (copy-up) held 100 ms in the test build's race window while
#     del= runs: del= 0, the file is in the branch that is now the target, not in the
#     deleted one, with the right content;
#   - an operation writing to the branch (a create blocked on the branch's fsfreeze): del=
#     is refused (EBUSY, one escaped line naming the counts), the union keeps the branch;
#   - a cwd in a directory of the deleted branch: a create there fails and the branch stays
#     untouched; a cwd and a dirfd in a directory merged with it look names up and list on
#     the new table (was: the deleted branch's names and data, until an absolute walk);
#   - a copy-up's data phase (256 MiB) counts: del= of its target is refused until it ends;
#   - an fd kept across the del=: fchmod copies its object up to the new target (not ESTALE);
#   - a cwd removed through the union stays an empty directory after a remount;
#   - 200 rounds of del= raced with a process that creates files and appends to (copies up)
#     lower files as fast as it can: after each del= returned 0, the deleted branch does
#     not change any more, and every file whose create succeeded is in the union or was in
#     the branch when del= returned.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dmesg_mark
DELAY=/sys/kernel/debug/unionfs/race_delay_us
check "race_delay_us exists (test build)" test -w "$DELAY" || finish
A=$T/a X=$T/x B=$T/b M=$T/m
mkdir -p "$A" "$X" "$B" "$M"
for d in "$A" "$X" "$B"; do mount -t tmpfs -o mode=755 t "$d"; done

# d is in x and b: new names in d go to x (the topmost copy of d), a copy-up too
setup() {	# setup X: the union a=rw:X=rw:b=ro
	X=$1
	mkdir -p "$X/d" "$B/d"
	echo orig > "$B/d/f"
	mount -i -t unionfs -o "dirs=$A=rw:$X=rw:$B=ro" none "$M" && stat "$M/d" > /dev/null
}
clean() { umount "$M"; rm -rf "${A:?}"/* "${X:?}"/* "${B:?}"/*; }
# inwin.py M X create|append: the operation (a child) waits in the race window (100 ms),
# del=X runs 30 ms after it started; prints "del=ERR op=ERR" (0: success)
cat > "$T/inwin.py" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
M, X, what = sys.argv[1:4]
open("/sys/kernel/debug/unionfs/race_delay_us", "w").write("100000")
rd, wr = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        if what == "create":
            fd = os.open(M + "/d/new", os.O_WRONLY | os.O_CREAT, 0o644); os.write(fd, b"data\n")
        else:
            fd = os.open(M + "/d/f", os.O_WRONLY | os.O_APPEND); os.write(fd, b"APPENDED\n")
        r = "0"
    except OSError as e:
        r = e.strerror
    os.write(wr, r.encode()); time.sleep(0.3); os._exit(0)
time.sleep(0.03)
e = 0 if libc.mount(b"none", M.encode(), None, 32, ("del=" + X).encode()) == 0 else ctypes.get_errno()
open("/sys/kernel/debug/unionfs/race_delay_us", "w").write("0")
os.close(wr); op = os.read(rd, 200).decode(); os.waitpid(pid, 0)
print("del=%s op=%s" % (os.strerror(e) if e else 0, op))
PY
check "mount a=rw:x=rw:b=ro" setup "$X" || finish
is "a create into x held in the race window, del=x meanwhile: both succeed" \
	"$(python3 "$T/inwin.py" "$M" "$X" create)" "del=0 op=0"
is "it is not in the deleted branch" "$(ls "$X/d")" ""
is "it is in the union: data" "$(cat "$M/d/new" 2>&1)" data
is "in a, the target now" "$(cat "$A/d/new" 2>&1)" data
clean

check "mount again" setup "$X" || finish
is "an append (copy-up into x) held in the race window, del=x meanwhile: both succeed" \
	"$(python3 "$T/inwin.py" "$M" "$X" append)" "del=0 op=0"
is "nothing copied into the deleted branch" "$(ls "$X/d")" ""
is "the union has orig + APPENDED" "$(cat "$M/d/f" 2>&1 | tr '\n' ' ')" "orig APPENDED "
clean

# an operation counted as writing: a create blocked on the branch's freeze (ext4: tmpfs on
# 6.1 cannot freeze)
branch_fs ext4 "$T/e" 1
XE=$T/e/b0
check "mount a=rw:x(ext4)=rw:b=ro" setup "$XE" || finish
check "fsfreeze x" fsfreeze -f "$XE"
( echo frozen > "$M/d/fz" ) 2> "$T/fz.err" & p=$!
sleep 0.5
dmesg_mark
check_fail "del=x while a create into x waits for its thaw: EBUSY" EBUSY \
	mount -i -o "remount,del=$XE" none "$M"
is "one line names the counts" \
	"$(dmesg_since_mark | grep -c "del: branch '$XE' has 0 open files and 1 operations writing to it")" 1
fsfreeze -u "$XE"
wait $p
is "the create ended in x (still a branch): frozen" "$(cat "$XE/d/fz" 2>&1)" frozen
is "x is still a branch" "$(grep -c "dirs=$A=rw:$XE=rw:$B=ro" /proc/mounts)" 1
check "del=x now: 0" mount -i -o "remount,del=$XE" none "$M"
umount "$M"; rm -rf "${A:?}"/* "${B:?}"/*
X=$T/x

# a background job in a cwd (or with a dirfd) says "ready" on FIFO $T/rN once it is there,
# and goes on when "go" comes on $T/gN: the del= falls in between, however slow the kernel
fifos() { local i; for i; do rm -f "$T/r$i" "$T/g$i"; mkfifo "$T/r$i" "$T/g$i"; done; }
ready() { timeout 120 bash -c 'read -r _ < "$1"' _ "$T/r$1"; }
go() { timeout 120 bash -c 'echo > "$1"' _ "$T/g$1"; }
injob() {	# injob N DIR CMD: cd DIR, ready N, wait for go N, run CMD
	cd "$2" || { echo > "$T/r$1"; exit 9; }
	echo > "$T/r$1"; read -r _ < "$T/g$1"; eval "$3"
}

# a cwd in a directory that only the deleted branch has
check "mount again" setup "$X" || finish
mkdir "$X/e"
fifos 1
( injob 1 "$M/e" 'echo g > g' ) 2> "$T/cwd.err" & p=$!
ready 1
check "del=x with a cwd in x's e: 0" mount -i -o "remount,del=$X" none "$M"
go 1
wait $p; rc=$?
isnt() { if [[ $2 != "$3" ]]; then ok "$1"; else not_ok "$1" "got '$2'"; fi; }
isnt "the create in that cwd failed ($(cat "$T/cwd.err"))" "$rc" 0
is "x/e is untouched" "$(ls -A "$X/e")" ""
clean

# a cwd and a dirfd in a directory merged with the deleted branch: names are looked up, and
# the directory is listed, on the new table (was: the deleted branch's names and data)
mkdir -p "$A/d" "$X/d" "$B/d"; echo A > "$A/d/fa"; echo X > "$X/d/fx"; echo B > "$B/d/fb"
check "mount again" setup "$X" || finish
fifos 2 3
( injob 2 "$M/d" 'ls && cat fx; cat fb' ) > "$T/cwd2.out" 2>&1 &
cat > "$T/dirfd.py" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
open(sys.argv[2] + "/r3", "w").write("\n")
open(sys.argv[2] + "/g3").readline()
try:
    os.close(os.open("fx", os.O_RDONLY, dir_fd=fd)); print("fx: opened")
except OSError as e:
    print("fx:", e.strerror)
print(" ".join(sorted(os.listdir(fd))))
PY
python3 "$T/dirfd.py" "$M/d" "$T" > "$T/dirfd.out" 2>&1 &
ready 2; ready 3
check "del=x with a cwd and a dirfd in d (merged with x)" mount -i -o "remount,del=$X" none "$M"
go 2; go 3
wait
is "in the cwd: ls, cat fx, cat fb" "$(sed 's/^cat: //' "$T/cwd2.out" | tr '\n' ' ')" \
	"f fa fb fx: No such file or directory B "
is "through the dirfd: openat fx, listing" "$(tr '\n' ' ' < "$T/dirfd.out")" \
	"fx: No such file or directory f fa fb "
clean

# a copy-up's data phase (a chmod of a 256 MiB lower file): del= of its target is refused
# until the copy is done (the data phase did not count in a first version of the fix: del=
# 0, and the copy went on into the deleted branch)
mkdir -p "$X/d" "$B/d"; head -c 256M /dev/zero > "$B/d/big"
check "mount again" setup "$X" || finish
cat > "$T/delloop.py" <<'PY'
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
M, X = sys.argv[1:3]
busy = 0
def used():
    st = os.statvfs(X)
    return (st.f_blocks - st.f_bfree) * st.f_frsize
u0 = used()
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
t0 = time.time()
# the copy is in its data phase once x holds some of its data (an O_TMPFILE: no name yet)
while used() - u0 < (1 << 20) and time.time() - t0 < 20:
    time.sleep(0.001)
while busy < 6000:
    if libc.mount(b"none", M.encode(), None, 32, ("del=" + X).encode()) == 0:
        break
    if ctypes.get_errno() != errno.EBUSY:
        print("del: " + os.strerror(ctypes.get_errno())); sys.exit(1)
    busy += 1
    time.sleep(0.005)
snap = sorted((n, os.stat(X + "/d/" + n).st_size) for n in os.listdir(X + "/d"))
print("busy %d" % (busy > 0)); print(snap)
PY
coproc DL { exec python3 "$T/delloop.py" "$M" "$X"; }
read -r l <&"${DL[0]}"
( chmod 600 "$M/d/big" ) 2> "$T/big.err" & p=$!
echo go >&"${DL[1]}"
out=$(cat <&"${DL[0]}")
wait $p
why="chmod: $(cat "$T/big.err"); del loop: $out"
is "del= during the copy-up: refused until it was done" "$(head -n 1 <<< "$out")" "busy 1" "$why"
is "the deleted branch did not change after del= returned" \
	"$(python3 -c 'import os,sys; d=sys.argv[1]; print(sorted((n, os.stat(d+"/"+n).st_size) for n in os.listdir(d)))' "$X/d")" \
	"$(tail -n 1 <<< "$out")" "$why"
clean

# an fd kept across del= of the branch its object would be copied up to: fchmod copies it
# up to the target of the new table (was: ESTALE at every try, the fd's name stayed on the
# old table)
mkdir -p "$X/d" "$B/d"; echo orig > "$B/d/f"
check "mount again" setup "$X" || finish
cat > "$T/fdkeep.py" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
sys.stdout.write("open\n"); sys.stdout.flush()
sys.stdin.readline()
try:
    os.fchmod(fd, 0o600); print("fchmod: 0")
except OSError as e:
    print("fchmod: " + e.strerror)
PY
coproc FK { exec python3 "$T/fdkeep.py" "$M/d/f"; }
read -r l <&"${FK[0]}"
check "del=x with an fd open on d/f (in b, read-only)" mount -i -o "remount,del=$X" none "$M"
echo go >&"${FK[1]}"
read -r l <&"${FK[0]}"
is "fchmod 600 of that fd after the del=" "$l" "fchmod: 0"
is "copied up to a, the target now: mode 600" "$(stat -c %a "$A/d/f" 2>&1)" 600
is "nothing in the deleted branch" "$(ls "$X/d")" ""
clean

# a cwd removed through the union, then a remount: the cwd lists as empty and its stat
# works, as on a plain fs (a first version of the fix refreshed removed directories: ESTALE)
mkdir -p "$A/gone"
check "mount again" setup "$X" || finish
fifos 4
( injob 4 "$M/gone" 'ls -A && echo "ls $?" && stat -c %F .' ) > "$T/gone.out" 2>&1 &
ready 4
rmdir "$M/gone"
mount -i -o "remount,incgen" none "$M"
go 4
wait
is "in a cwd removed through the union, after incgen: ls, stat ." \
	"$(tr '\n' ' ' < "$T/gone.out")" "ls 0 directory "
clean

# the race, many times: a writer process against del=
cat > "$T/race.py" <<'PY'
import ctypes, errno, os, random, shutil, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
T, rounds = sys.argv[1], int(sys.argv[2])
A, X, B, M = (os.path.join(T, n) for n in "axbm")
MS_REMOUNT = 32
delay = "/sys/kernel/debug/unionfs/race_delay_us"
bad, busy_total, created_after, errs = [], 0, 0, {}
def mount(src, dst, typ, flags, data):
    r = libc.mount(src, dst.encode(), typ, flags, data)
    return 0 if r == 0 else ctypes.get_errno()
for r in range(rounds):
    for d in (A, X, B):
        for n in os.listdir(d):
            shutil.rmtree(os.path.join(d, n))
    os.makedirs(X + "/d"); os.makedirs(B + "/d")
    for i in range(20):
        open("%s/d/c%d" % (B, i), "w").write("orig\n")
    e = mount(b"none", M, b"unionfs", 0,
              ("dirs=%s=rw:%s=rw:%s=ro" % (A, X, B)).encode())
    if e:
        print("round %d: mount: %s" % (r, os.strerror(e))); sys.exit(1)
    os.stat(M + "/d")
    open(delay, "w").write("2000" if r % 2 else "0")
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        stop = []
        signal.signal(signal.SIGUSR1, lambda *a: stop.append(1))
        out = []
        i = 0
        while not stop:
            if i % 2 and i // 2 < 20:
                name, flags = "c%d" % (i // 2), os.O_WRONLY | os.O_APPEND
            else:
                name, flags = "n%d" % i, os.O_WRONLY | os.O_CREAT
            try:
                fd = os.open("%s/d/%s" % (M, name), flags, 0o644)
                os.write(fd, b"w\n"); os.close(fd)
                out.append("ok " + name)
            except OSError as ex:
                out.append("err %s %s" % (name, errno.errorcode.get(ex.errno, ex.errno)))
            i += 1
        os.write(wr, ("\n".join(out) + "\n").encode()); os._exit(0)
    os.close(wr)
    time.sleep(random.uniform(0.001, 0.03))
    busy = 0
    while True:
        e = mount(b"none", M, None, MS_REMOUNT, ("del=" + X).encode())
        if e != errno.EBUSY or busy >= 2000:
            break
        busy += 1
    busy_total += busy
    if e:
        print("round %d: del: %s after %d EBUSY" % (r, os.strerror(e), busy)); sys.exit(1)
    snap = {n: open(X + "/d/" + n).read() for n in os.listdir(X + "/d")}
    time.sleep(0.01)
    os.kill(pid, signal.SIGUSR1)
    with os.fdopen(rd, "rb") as f:
        res = f.read()
    os.waitpid(pid, 0)
    open(delay, "w").write("0")
    now = {n: open(X + "/d/" + n).read() for n in os.listdir(X + "/d")}
    if now != snap:
        bad.append("round %d: x changed after del: %s" % (r, sorted(set(now.items()) ^ set(snap.items()))[:4]))
    union = set(os.listdir(M + "/d"))
    for line in res.decode().split("\n"):
        if line.startswith("ok "):
            n = line[3:]
            if n not in union and n not in snap:
                bad.append("round %d: %s created but neither in the union nor in x" % (r, n))
            if n in union and n.startswith("n") and n not in snap:
                created_after += 1
        elif line.startswith("err "):
            k = line.split()[2]
            errs[k] = errs.get(k, 0) + 1
    libc.umount2(M.encode(), 0)
print("rounds %d, bad %d, EBUSY retries %d, creates after del %d, errors %s"
      % (rounds, len(bad), busy_total, created_after, errs))
for b in bad[:10]:
    print(b)
PY
# UNIONFS_DEL_ROUNDS: fewer rounds where a round is slow (the debug kernel)
R=${UNIONFS_DEL_ROUNDS:-200}
out=$(python3 "$T/race.py" "$T" "$R" 2>&1)
is "$R rounds: the deleted branch never changed after del= returned, no create lost" \
	"$(printf '%s\n' "$out" | sed -n 's/^rounds \([0-9]*\), bad \([0-9]*\),.*/\1 \2/p')" "$R 0" "$out"
is "no create or append failed" "$(printf '%s\n' "$out" | grep -c "errors {}$")" 1 "$out"
echo 0 > "$DELAY"
is "no oops, warning or KASAN report" "$(dmesg_bad)" ""
finish
