#!/bin/bash
# Branches do not pin the mounts the user named (issue 20, defect 9). The union holds each
# branch through a private clone of its mount, as overlayfs holds its layers: after a
# successful remount,del= the branch's file system unmounts at once (no "target is busy"),
# for coherency none, reval and notify, with union dentries still in use (a cwd in a
# directory of another branch, a cwd in a directory merged with the deleted branch, a mount
# point on a merged directory); unused cached names and inodes built on the old table are
# dropped at the del. While a file of the branch is open, del is refused (EBUSY) and the
# union is unchanged. A branch on a loop device: its user mount can go while the union
# still serves it, and the loop device is released when the union lets go (the clone is
# unmounted, not leaked). With the union still mounted, a deleted branch is let go at once:
# the root's replaced dentry info (which held every old branch root) goes with its last
# user, so the ext4 instance of a deleted loop branch disappears after its umount; 1,000
# remount,incgen with a walker leave the number of live dentry infos (debugfs dinfos)
# bounded; 200 del=/add= cycles raced with stat, readdir and open in the root give only
# correct results and no oops or warning.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"
dirs() { awk -v m="$1" '$2 == m { print $4 }' /proc/mounts | tr ',' '\n' | sed -n 's/^dirs=//p'; }
pids=()
stop_sleepers() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	pids=()
}

for coh in none reval notify; do
	D=$T/$coh; mkdir -p "$D"
	branch_fs tmpfs "$D" 3
	B0=$D/b0 B1=$D/b1 B2=$D/b2 M=$D/m; mkdir -p "$M"
	echo f1 > "$B1/f1"; mkdir -p "$B1/d1/sub" "$B1/sd" "$B2/sd" "$B2/onlyb2" "$B1/mp" "$B2/mp"
	for i in 1 2 3 4 5; do echo "$i" > "$B1/d1/sub/x$i"; done
	echo s1 > "$B1/sd/s1"; echo s2 > "$B2/sd/s2"; echo g > "$B2/g"; echo hidden > "$B2/f1"
	check "$coh: mount b0=rw:b1=ro:b2=ro" \
		mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro:$B2=ro,coherency=$coh" none "$M"
	# walk, stat and read everything, so that the union caches dentries and inodes of b1
	find "$M" > /dev/null; find "$M" -type f -exec cat {} + > /dev/null; ls -laR "$M" > /dev/null
	is "$coh: f1 read from b1" "$(cat "$M/f1")" f1
	mkdir -p "$M/sd/dirmade"	# a copy-up of the merged dir into b0
	# in-use union dentries: a cwd in a directory of b2 only, a cwd in a directory merged
	# with b1, a mount point on a merged directory
	(cd "$M/onlyb2" && exec sleep 300) & pids+=($!)
	(cd "$M/sd" && exec sleep 300) & pids+=($!)
	check "$coh: tmpfs mounted on a merged union directory" mount -t tmpfs tmpfs "$M/mp"
	sleep 0.2
	before=$(dirs "$M")

	# a file of b1 open: refused, nothing changed
	exec 7< "$M/d1/sub/x3"
	is "$coh: del with a file of the branch open: EBUSY" "$($S remount "$M" "del=$B1")" EBUSY
	is "$coh: branches unchanged after the refused del" "$(dirs "$M")" "$before"
	is "$coh: the open file still reads" "$(cat <&7)" 3
	is "$coh: union still reads b1 after the refused del" "$(cat "$M/d1/sub/x1")" 1
	exec 7<&-
	sleep 0.2

	is "$coh: del of b1" "$($S remount "$M" "del=$B1")" OK
	is "$coh: branches after del" "$(dirs "$M")" "$B0=rw:$B2=ro"
	check "$coh: umount of the deleted branch succeeds at once" umount "$B1"
	if mountpoint -q "$B1"; then umount -l "$B1"; fi

	# the union still works
	is "$coh: f1 now from b2" "$(cat "$M/f1")" hidden
	check_fail "$coh: b1-only directory gone" ENOENT stat "$M/d1"
	is "$coh: merged dir lists b0 and b2 only" "$(ls "$M/sd" | tr '\n' ' ')" "dirmade s2 "
	is "$coh: root readdir" "$(ls "$M" | tr '\n' ' ')" "f1 g mp onlyb2 sd "
	check "$coh: create after del" sh -c "echo new > '$M/new' && test \"\$(cat '$M/new')\" = new"
	check "$coh: cwd in a b2 directory still usable" ls "/proc/${pids[0]}/cwd/"
	check "$coh: stat through the mount point's parent" stat "$M/mp/."
	check "$coh: mount point still mounted" mountpoint -q "$M/mp"
	stop_sleepers
	check "$coh: umount the mount point" umount "$M/mp"
	check "$coh: umount the union" umount "$M"
	umount "$B0" "$B2" 2>/dev/null
done
stop_sleepers

# ---- a loop-device branch: the union's clone keeps it usable, and lets it go ------------
modprobe loop
L=$T/loop; mkdir -p "$L/b0" "$L/b1" "$L/m"
truncate -s 16M "$L/img"
mkfs.ext4 -q -F "$L/img"
check "loop: mount the ext4 image (autoclear loop)" mount -o loop "$L/img" "$L/b1"
dev=$(awk -v m="$L/b1" '$2 == m { print $1 }' /proc/mounts)
echo data > "$L/b1/f"; mkdir "$L/b1/d"; echo in > "$L/b1/d/g"
check "loop: mount the union" mount -i -t unionfs -o "dirs=$L/b0=rw:$L/b1=ro" none "$L/m"
is "loop: reads the loop branch" "$(cat "$L/m/f")" data
check "loop: umount of the branch's own mount while the union uses it" umount "$L/b1"
is "loop: the union still reads the branch" "$(cat "$L/m/d/g")" in
check "loop: and copies up from it" sh -c "echo more >> '$L/m/f'"
is "loop: the copy" "$(cat "$L/b0/f")" $'data\nmore'
check "loop: the loop device is still attached" test -n "$(losetup -j "$L/img")"
check "loop: umount the union" umount "$L/m"
gone=
for i in $(seq 50); do [[ -z $(losetup -j "$L/img") ]] && { gone=1; break; }; sleep 0.1; done
is "loop: the loop device ($dev) is released with the union's last reference" "${gone:-no}" 1
# and the same through del= with the union still mounted: no leak of the clone either
check "loop: mount the image again" mount -o loop "$L/img" "$L/b1"
check "loop: union again" mount -i -t unionfs -o "dirs=$L/b0=rw:$L/b1=ro" none "$L/m"
find "$L/m" > /dev/null; cat "$L/m/d/g" > /dev/null
is "loop: del of the loop branch" "$($S remount "$L/m" "del=$L/b1")" OK
check "loop: umount of the deleted branch at once" umount "$L/b1"
check "loop: union umount" umount "$L/m"
gone=
for i in $(seq 50); do [[ -z $(losetup -j "$L/img") ]] && { gone=1; break; }; sleep 0.1; done
is "loop: after del and union umount the loop device is released" "${gone:-no}" 1
# ---- del= lets the branch's superblock go while the union stays mounted -----------------
# (the root's replaced dentry info held every old branch root until the union's umount)
dmesg_mark=$(dmesg | wc -l)
check "pin: mount the image again" mount -o loop "$L/img" "$L/b1"
dev=$(awk -v m="$L/b1" '$2 == m { print $1 }' /proc/mounts); dev=${dev#/dev/}
check "pin: union" mount -i -t unionfs -o "dirs=$L/b0=rw:$L/b1=ro" none "$L/m"
check "pin: stat through the union" stat "$L/m/d" "$L/m/d/g"
check "pin: open and close a file of the branch" sh -c "exec 8< '$L/m/d/g'; read x <&8; exec 8<&-"
check "pin: readdir of the root and of a branch directory" ls -la "$L/m" "$L/m/d"
check "pin: the branch's ext4 instance is there ($dev)" test -e "/sys/fs/ext4/$dev"
is "pin: del of the loop branch" "$($S remount "$L/m" "del=$L/b1")" OK
check "pin: umount of the deleted branch" umount "$L/b1"
gone=
for i in $(seq 50); do [[ ! -e /sys/fs/ext4/$dev ]] && { gone=1; break; }; sleep 0.1; done
is "pin: its ext4 instance goes while the union is still mounted" "${gone:-no}" 1
gone=
for i in $(seq 50); do [[ -z $(losetup -j "$L/img") ]] && { gone=1; break; }; sleep 0.1; done
is "pin: and its loop device is released" "${gone:-no}" 1
is "pin: the union still serves its other branch" "$(ls "$L/m" | tr '\n' ' ')" "f "
check "pin: union umount" umount "$L/m"

# ---- 1,000 generation changes do not accumulate dentry infos -----------------------------
G=$T/gen; mkdir -p "$G"
branch_fs tmpfs "$G" 2
mkdir -p "$G/m" "$G/b1/d/e"; echo x > "$G/b1/d/e/f"; echo y > "$G/b0/top"
check "gen: union" mount -i -t unionfs -o "dirs=$G/b0=rw:$G/b1=ro" none "$G/m"
dbg=/sys/kernel/debug/unionfs/mounts/$(mountpoint -d "$G/m")/dinfos
find "$G/m" > /dev/null
n0=$(cat "$dbg" 2>/dev/null || echo none)
# (the walker keeps no directory in use: a cwd held over generation changes and a branch
# del is tests/t/63-branch-race.sh's part B)
(cd / && while :; do ls "$G/m" "$G/m/d" > /dev/null 2>&1; cat "$G/m/top" > /dev/null 2>&1
	stat "$G/m/d/e/f" "$G/m" > /dev/null 2>&1; done) &
walker=$!
ok_gen=$(timeout -s KILL $(t_limit 150) python3 - "$G/m" <<'PY'
import ctypes, ctypes.util, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_char_p]
n = 0
for i in range(1000):
    if libc.mount(None, sys.argv[1].encode(), None, 32, b"incgen") == 0:
        n += 1
print(n)
PY
)
kill -9 $walker 2>/dev/null; wait $walker 2>/dev/null
is "gen: 1,000 remount,incgen with a walker" "$ok_gen" 1000
find "$G/m" > /dev/null; stat "$G/m/d/e/f" > /dev/null
n1=$(cat "$dbg" 2>/dev/null || echo none)
if [[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ ]] && (( n1 <= n0 + 20 )); then
	ok "gen: live dentry infos stay bounded ($n0 before, $n1 after)"
else
	not_ok "gen: live dentry infos stay bounded ($n0 before, $n1 after)"
fi
check "gen: umount" umount "$G/m"
umount "$G/b0" "$G/b1" 2>/dev/null

# ---- del=/add= of a branch raced with stat, readdir and open in the union root ----------
R=$T/race; mkdir -p "$R"
branch_fs tmpfs "$R" 2
mkdir -p "$R/m"
for i in 1 2 3; do echo "w$i" > "$R/b0/w$i"; echo "r$i" > "$R/b1/r$i"; done
mkdir "$R/b1/rd"
check "race: union" mount -i -t unionfs -o "dirs=$R/b0=rw:$R/b1=ro" none "$R/m"
bad=$R/bad; : > "$bad"
worker() {
	local i
	while :; do
		for i in 1 2 3; do
			[[ $(cat "$R/m/w$i" 2>&1) == "w$i" ]] || echo "w$i: $(cat "$R/m/w$i" 2>&1)" >> "$bad"
			stat "$R/m/w$i" > /dev/null 2>&1 || echo "stat w$i" >> "$bad"
			out=$(cat "$R/m/r$i" 2>&1)
			[[ $out == "r$i" || $out == *"No such file"* ]] || echo "r$i: $out" >> "$bad"
		done
		out=$(ls "$R/m" 2>&1 | tr '\n' ' ')
		[[ $out == *"w1 w2 w3 "* ]] || echo "ls: $out" >> "$bad"
		stat "$R/m/rd" "$R/m/." > /dev/null 2>&1
	done
}
worker & w1=$!
worker & w2=$!
fails=$(timeout -s KILL $(t_limit 150) python3 - "$R/m" "$R/b1" <<'PY'
import ctypes, ctypes.util, errno, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_ulong, ctypes.c_char_p]
m, b = sys.argv[1].encode(), sys.argv[2]
bad, busy = [], 0
for i in range(200):
    if libc.mount(None, m, None, 32, ("del=" + b).encode()) != 0:
        e = ctypes.get_errno()
        if e == errno.EBUSY:
            busy += 1   # a reader has a file of the branch open: refused
            continue
        bad.append("%d del: %s" % (i, os.strerror(e)))
        continue
    if libc.mount(None, m, None, 32, ("add=:" + b + "=ro").encode()) != 0:
        bad.append("%d add: %s" % (i, os.strerror(ctypes.get_errno())))
if busy > 150:
    bad.append("%d of 200 del refused as busy" % busy)
print(len(bad), *bad[:3])
PY
)
kill -9 $w1 $w2 2>/dev/null; wait $w1 $w2 2>/dev/null
is "race: 200 del=/add= cycles (a del refused EBUSY while a reader has a file of the branch open)" "$fails" 0
is "race: readers saw only correct results" "$(head -5 "$bad")" ""
is "race: the union ends with both branches" "$(ls "$R/m" | tr '\n' ' ')" "r1 r2 r3 rd w1 w2 w3 "
check "race: umount" umount "$R/m"
umount "$R/b0" "$R/b1" 2>/dev/null
is "no oops, BUG or WARNING in the kernel log" \
	"$(dmesg | tail -n +$((dmesg_mark + 1)) | grep -E 'BUG|WARNING|Oops|KASAN|general protection' | head -3)" ""
finish
