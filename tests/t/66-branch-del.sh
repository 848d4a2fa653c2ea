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
# unmounted, not leaked).
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
finish
