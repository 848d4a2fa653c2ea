#!/bin/bash
# Branch changes at run time against operations in flight (issue 20, core integrity).
#
# A: an operation decides a branch index on one branch table and must use it on that very
# table. A create or a copy-up that decided "index 1 = b0" while a writable bx was at the
# top, and then read its parent's lower directory again from the info rebuilt after
# remount,del=bx, found index 1 = b1: it wrote into a read-only branch. The window is a
# few instructions wide; the test build's debugfs race_delay_us widens it (a sleep where
# such an operation has decided its branch and not yet read the parent's lower directory
# from the info built on that table: create, unlink, copy-up). 200 add=/del= cycles of bx
# at the top race creates, copy-ups (appends to lower files) and unlinks (whiteouts) of
# lower files in a subdirectory, while a walker refreshes it on each new table: the
# read-only branches are never written to, every create, append and unlink that
# succeeded is in b0, and no oops or warning.
#
# B: a directory in use (a cwd) keeps only the dentry info it has now: 20 remount,incgen
# with the cwd refreshed each time leave the number of live dentry infos (debugfs dinfos)
# bounded (it grew by one per generation: each info kept the one it replaced), and a
# branch deleted while the cwd is held in a directory merged with it is let go (its ext4
# instance goes after its umount) once the cwd's dentry has been refreshed.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
require_fault_injection
DELAY=/sys/kernel/debug/unionfs/race_delay_us
dmesg_mark
dbgdir() { echo "/sys/kernel/debug/unionfs/mounts/$(mountpoint -d "$1")"; }

# ---- A: add=/del= of a writable top branch raced with create, copy-up, unlink ----------
# bx (rw) comes and goes at the top: with it, index 1 is b0, without it b1 (ro). Below d
# (in b0, b1 and b2, not in bx) everything is decided "index 1 = b0" with bx and must not
# land in b1, a read-only branch, once bx is gone; without bx, index 0 (b0) becomes bx, which
# has no d (-ESTALE). Read-only b1 and b2, and bx, must never be written.
A=$T/a; mkdir -p "$A"
branch_fs tmpfs "$A" 4
B0=$A/b0 B1=$A/b1 B2=$A/b2 BX=$A/b3 M=$A/m; mkdir -p "$M"
N=400
mkdir "$B0/d" "$B1/d" "$B2/d"
echo x > "$B1/d/b1mark"; echo x > "$BX/xmark"
for ((i = 1; i <= N; i++)); do echo "l$i" > "$B2/d/l$i"; echo "r$i" > "$B2/d/r$i"; done
state() { (cd "$B1" && find . -printf 'b1 %p %y %s\n'; cd "$B2" && find . -printf 'b2 %p %y %s\n'
	cd "$BX" && find . -printf 'bx %p %y %s\n') | LC_ALL=C sort; }
before=$(state)
check "A: union b0=rw:b1=ro:b2=ro" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro:$B2=ro" none "$M"
check "A: race_delay_us exists (test build)" test -w "$DELAY"
echo 20000 > "$DELAY"
stop=$A/stop; log=$A/log; mkdir -p "$log"
# the workers: tight loops (no fork per operation), until $stop exists
cat > "$A/work.py" <<'PY'
import os, sys
role, m, stop, log, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
out = open(log, "a", buffering=1)
i = 0
while not os.path.exists(stop) and (role == "walk" or i < n):
    i += 1
    try:
        if role == "create":	# in d: goes to b0
            fd = os.open("%s/d/c%d" % (m, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"c%d" % i)
            os.close(fd)
            out.write("c%d\n" % i)
        elif role == "append":	# copy-up of a file of b2 to b0
            fd = os.open("%s/d/l%d" % (m, i), os.O_WRONLY | os.O_APPEND)
            os.write(fd, b"more\n")
            os.close(fd)
            out.write("l%d\n" % i)
        elif role == "unlink":	# a whiteout in b0
            os.unlink("%s/d/r%d" % (m, i))
            out.write("r%d\n" % i)
        else:	# refreshes d on each new table
            os.stat("%s/d" % m)
            os.stat("%s/d/." % m)
    except OSError:
        pass
PY
python3 "$A/work.py" create "$M" "$stop" "$log/created" 100000 & p1=$!
python3 "$A/work.py" append "$M" "$stop" "$log/appended" "$N" & p2=$!
python3 "$A/work.py" unlink "$M" "$stop" "$log/unlinked" "$N" & p3=$!
python3 "$A/work.py" walk "$M" "$stop" /dev/null 0 & p4=$!
res=$(timeout -s KILL $(t_limit 150) python3 - "$M" "$BX" <<'PY'
import ctypes, ctypes.util, errno, os, sys, time
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_char_p]
m, bx = sys.argv[1].encode(), sys.argv[2]
bad, busy = [], 0
for i in range(200):
    if libc.mount(None, m, None, 32, ("add=" + bx + "=rw").encode()) != 0:
        bad.append("%d add: %s" % (i, os.strerror(ctypes.get_errno())))
        continue
    for t in range(50):
        if libc.mount(None, m, None, 32, ("del=" + bx).encode()) == 0:
            break
        e = ctypes.get_errno()
        if e != errno.EBUSY:
            bad.append("%d del: %s" % (i, os.strerror(e)))
            break
        busy += 1
        time.sleep(0.01)
    else:
        bad.append("%d del: busy" % i)
        break
print(len(bad), *bad[:3])
PY
)
touch "$stop"
for p in $p1 $p2 $p3 $p4; do timeout -s KILL $(t_limit 30) tail --pid="$p" -f /dev/null; kill -9 "$p" 2> /dev/null; wait "$p" 2> /dev/null; done
echo 0 > "$DELAY"
is "A: 200 add=bx=rw / del=bx cycles" "$res" 0
is "A: the read-only branches (and bx) were never written to" "$(diff <(echo "$before") <(state) | head -5)" ""
nc=$(wc -l < "$log/created" 2> /dev/null || echo 0)
na=$(wc -l < "$log/appended" 2> /dev/null || echo 0)
nu=$(wc -l < "$log/unlinked" 2> /dev/null || echo 0)
if ((nc > 10 && na > 10 && nu > 10)); then
	ok "A: the workers got work done ($nc creates, $na copy-ups, $nu unlinks)"
else
	not_ok "A: the workers got work done ($nc creates, $na copy-ups, $nu unlinks)"
fi
miss=
while read -r f; do
	[[ $(cat "$B0/d/$f" 2> /dev/null) == "$f" ]] || miss+="created $f not in b0; "
done < <(cat "$log/created" 2> /dev/null)
while read -r f; do
	[[ $(cat "$B0/d/$f" 2> /dev/null) == "$f"$'\n'more ]] || miss+="appended $f not in b0; "
done < <(cat "$log/appended" 2> /dev/null)
while read -r f; do
	[[ -e $B0/d/.wh.$f ]] || miss+="no whiteout of $f in b0; "
done < <(cat "$log/unlinked" 2> /dev/null)
is "A: every create, copy-up and whiteout that succeeded is in b0" "${miss:0:300}" ""
gone=
while read -r f; do
	[[ -e $M/d/$f ]] && gone+="$f "
done < <(cat "$log/unlinked" 2> /dev/null)
is "A: the unlinked names stay gone in the union" "${gone:0:200}" ""
check "A: umount" umount "$M"
umount "$B0" "$B1" "$B2" "$BX" 2> /dev/null

# ---- B: a cwd held in a union directory over generation changes and a branch del --------
modprobe loop
L=$T/b; mkdir -p "$L/b0" "$L/b1" "$L/m"
mount -t tmpfs tmpfs "$L/b0"
truncate -s 16M "$L/img"
mkfs.ext4 -q -F "$L/img"
check "B: mount the ext4 image" mount -o loop "$L/img" "$L/b1"
dev=$(awk -v m="$L/b1" '$2 == m { print $1 }' /proc/mounts); dev=${dev#/dev/}
mkdir -p "$L/b0/d" "$L/b1/d/e"; echo in > "$L/b1/d/g"; echo top > "$L/b0/d/t"
check "B: union b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$L/b0=rw:$L/b1=ro" none "$L/m"
dbg=$(dbgdir "$L/m")/dinfos
(cd "$L/m/d" && exec sleep 300) & cwd=$!
sleep 0.3
find "$L/m" > /dev/null; cat "$L/m/d/g" > /dev/null
n0=$(cat "$dbg" 2> /dev/null || echo none)
okgen=0
for ((i = 0; i < 20; i++)); do
	[[ $($S remount "$L/m" incgen) == OK ]] && okgen=$((okgen + 1))
	stat "$L/m/d" > /dev/null; ls "/proc/$cwd/cwd/" > /dev/null
done
is "B: 20 remount,incgen" "$okgen" 20
n1=none
for ((i = 0; i < 50; i++)); do
	n1=$(cat "$dbg" 2> /dev/null || echo none)
	[[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ ]] && ((n1 <= n0 + 2)) && break
	sleep 0.1
done
if [[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ ]] && ((n1 <= n0 + 2)); then
	ok "B: live dentry infos bounded with a cwd held over 20 generations ($n0 before, $n1 after)"
else
	not_ok "B: live dentry infos bounded with a cwd held over 20 generations ($n0 before, $n1 after)"
fi
is "B: the cwd still lists the merged directory" "$(ls "/proc/$cwd/cwd/" | tr '\n' ' ')" "e g t "
check "B: the branch's ext4 instance is there ($dev)" test -e "/sys/fs/ext4/$dev"
is "B: del of the ext4 branch with the cwd held in a directory merged with it" \
	"$($S remount "$L/m" "del=$L/b1")" OK
stat "$L/m/d" > /dev/null; ls "/proc/$cwd/cwd/" > /dev/null
is "B: the cwd lists what is left" "$(ls "/proc/$cwd/cwd/" | tr '\n' ' ')" "t "
check "B: umount of the deleted branch" umount "$L/b1"
gone=
for ((i = 0; i < 50; i++)); do [[ ! -e /sys/fs/ext4/$dev ]] && { gone=1; break; }; sleep 0.1; done
is "B: its ext4 instance goes while the cwd is still held" "${gone:-no}" 1
kill -9 "$cwd" 2> /dev/null; wait "$cwd" 2> /dev/null
check "B: union umount" umount "$L/m"
umount "$L/b0" 2> /dev/null
for ((i = 0; i < 50; i++)); do [[ -z $(losetup -j "$L/img") ]] && break; sleep 0.1; done
is "no oops, BUG or WARNING in the kernel log" "$(dmesg_bad | head -3)" ""
finish
