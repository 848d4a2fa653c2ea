#!/bin/bash
# Host-side: crash consistency of what the union syncs (three guest boots, ~60 s).
# An ext4 image (build/check/crash.*/disk.img) is the union's rw branch, attached with
# qemu-debug/boot --disk (virtio, cache=writeback: the guest's flushes reach the file), over a
# ro tmpfs branch. The guest mounts ext4 with commit=300 and the VM's periodic writeback off,
# so that nothing reaches the disk unless the union syncs it, makes its changes, syncs them
# and then cuts its own power: `echo b > /proc/sysrq-trigger` resets at once, with no sync,
# no unmount, no journal commit (QEMU runs with -no-reboot and exits). The next boot mounts
# the image (journal replay) and checks every name and byte.
#   boot 1: write+fsync of a new file (and of its directory); copy-up (append) + fsync of
#           the file only; rename + fsync of the (merged) directory; unlink of a lower file
#           (whiteout) + fsync of the directory.
#   boot 2: checks boot 1; then the same kinds of change with no fsync, and syncfs on the
#           union (sync -f).
#   boot 3: checks boot 2; and once a deliberately wrong checksum, which the checker must
#           report (the negative control: this test sees lost data).
# timeout: 600
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
for t in mkfs.ext4 sha256sum; do
	command -v $t > /dev/null || skip_all "$t not installed"
done
mkdir -p build/check
W=$(mktemp -d "$PWD/build/check/crash.XXXXXX")
trap 'rm -rf "$W"' EXIT
export BOOT_TIMEOUT=${BOOT_TIMEOUT:-300}

# data, made on the host: the expected checksums come from these files
for f in L1 L2 L3 A B C D E F; do head -c $((40000 + RANDOM)) /dev/urandom > "$W/$f"; done
sum() { cat "$@" | sha256sum | cut -d' ' -f1; }

truncate -s 64M "$W/disk.img"
mkfs.ext4 -q -F -J size=4 -E lazy_itable_init=0,lazy_journal_init=0 "$W/disk.img" ||
	{ not_ok "mkfs.ext4 of the image"; finish; }

# common guest part: the disk, the ro branch (same content every boot), the union
cat > "$W/common.sh" <<EOF
W=$W
EOF
cat >> "$W/common.sh" <<'EOF'
set -u
modprobe virtio_blk 2>/dev/null; modprobe ext4 2>/dev/null
for i in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.2; done
echo 0 > /proc/sys/vm/dirty_writeback_centisecs
echo 360000 > /proc/sys/vm/dirty_expire_centisecs
C=/tmp/crash; RW=$C/rw; RO=$C/ro; M=$C/m
mkdir -p $RW $RO $M
mount -t ext4 -o commit=300 /dev/vda $RW || { echo "T:not ok	mount the ext4 image"; exit 3; }
mount -t tmpfs tmpfs $RO
mkdir $RO/d
cp $W/L1 $RO/low1; cp $W/L2 $RO/low2; cp $W/L3 $RO/d/low3
echo gone > $RO/gone; echo gone2 > $RO/gone2; echo stays > $RO/d/stays
mount -i -t unionfs -o dirs=$RW=rw:$RO=ro none $M || { echo "T:not ok	mount the union"; exit 3; }
# wf DST SRC [a]: write (append with a) SRC's bytes to DST and fsync DST; no dir fsync
wf() { python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | (os.O_APPEND if len(sys.argv) > 3 else os.O_TRUNC), 0o644)
os.write(fd, open(sys.argv[2], "rb").read()); os.fsync(fd); os.close(fd)' "$@"; }
# w DST SRC [a]: the same without fsync
w() { if [ $# -gt 2 ]; then cat "$2" >> "$1"; else cat "$2" > "$1"; fi; }
fsyncdir() { python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY); os.fsync(fd); os.close(fd)' "$1"; }
res() { echo "T:$1	$2"; }
# has PATH SHA DESC / gone PATH DESC: checks, printed as T: lines for the host
has() {
	if [ ! -f "$1" ]; then res "not ok" "$3: $1 missing"; return; fi
	s=$(sha256sum < "$1" | cut -d' ' -f1)
	if [ "$s" = "$2" ]; then res ok "$3"; else res "not ok" "$3: $1 checksum $s, expected $2"; fi
}
gone() { if [ -e "$1" ] || [ -L "$1" ]; then res "not ok" "$2: $1 exists"; else res ok "$2"; fi; }
crash() { echo READY; echo b > /proc/sysrq-trigger; sleep 60; }
EOF

cat > "$W/boot1.sh" <<'EOF'
. "$(dirname "$0")/common.sh"
wf $M/new1 $W/A && fsyncdir $M
wf $M/low1 $W/B a				# copy-up of low1, fsync of the file only
wf $M/d/low3 $W/C a				# copy-up of low3 and of its parent d
wf $M/ren_src $W/D && mv $M/ren_src $M/ren_dst && fsyncdir $M
rm $M/gone && fsyncdir $M			# whiteout .wh.gone in the rw branch
w $M/nosync $W/E				# no sync: may be lost
crash
EOF

cat > "$W/boot2.sh" <<'EOF'
. "$(dirname "$0")/common.sh"
L1=$1 A=$2 L1B=$3 L3C=$4 D=$5
has $M/new1 $A "boot 1: new file written and fsynced"
has $M/low1 $L1B "boot 1: copied-up file (append + fsync of the file) has old + new data"
has $RW/low1 $L1B "boot 1: the copy-up's name is in the rw branch"
has $M/d/low3 $L3C "boot 1: copy-up in a copied-up parent directory, fsync of the file"
has $M/ren_dst $D "boot 1: renamed file under its new name (dir fsynced)"
gone $M/ren_src "boot 1: renamed file's old name gone"
gone $M/gone "boot 1: unlinked lower file stays deleted"
if [ -f $RW/.wh.gone ]; then res ok "boot 1: its whiteout is in the rw branch"; else res "not ok" "boot 1: whiteout .wh.gone missing in the rw branch"; fi
has $M/d/stays $(echo stays | sha256sum | cut -d' ' -f1) "boot 1: untouched lower file still seen"
[ -f $M/nosync ] && echo "# boot 1: the unsynced file survived (allowed either way)" || echo "# boot 1: the unsynced file was lost (allowed)"
# set 2: no fsync at all, then syncfs on the union
w $M/s2new $W/E
w $M/low2 $W/F a				# copy-up of low2
w $M/s2a $W/A && mv $M/s2a $M/s2b
rm $M/gone2
mkdir $M/s2dir && w $M/s2dir/f $W/B
sync -f $M || echo "T:not ok	sync -f on the union failed"
crash
EOF

cat > "$W/boot3.sh" <<'EOF'
. "$(dirname "$0")/common.sh"
A=$1 B=$2 E=$3 L2F=$4
has $M/s2new $E "boot 2: new file, syncfs on the union"
has $M/low2 $L2F "boot 2: copied-up file, syncfs on the union"
has $M/s2b $A "boot 2: renamed file, syncfs on the union"
gone $M/s2a "boot 2: renamed file's old name gone"
gone $M/gone2 "boot 2: unlinked lower file stays deleted"
has $M/s2dir/f $B "boot 2: file in a new directory, syncfs on the union"
has $M/new1 $A "boot 1's new file still there"
# negative control: a wrong expectation must be reported as a mismatch
out=$(has $M/new1 $B "control")
case $out in "T:not ok	control: $M/new1 checksum "*) res ok "control: the checker reports a wrong checksum";;
*) res "not ok" "control: the checker did not report a wrong checksum ($out)";; esac
umount $M && umount $RW && res ok "union and ext4 branch unmount cleanly"
EOF

# run one boot; T: lines become results, the rest is kept for diagnostics
boot() {	# boot N ARGS...
	local n=$1 out rc line
	shift
	out=$(qemu-debug/boot --disk "$W/disk.img" -- sh "$W/boot$n.sh" "$@" 2>&1)
	rc=$?
	out=${out//$'\r'/}
	while IFS= read -r line; do
		case $line in
		"T:ok	"*) ok "${line#T:ok	}";;
		"T:not ok	"*) not_ok "${line#T:not ok	}";;
		"# boot"*) echo "$line";;
		esac
	done <<< "$out"
	BOOT_OUT=$out BOOT_RC=$rc
}

boot 1
if grep -q '^READY' <<< "$BOOT_OUT"; then
	ok "boot 1: changes made and synced, then reset by sysrq-b (exit $BOOT_RC)"
else
	not_ok "boot 1: changes made and synced, then reset by sysrq-b" "$(tail -n 15 <<< "$BOOT_OUT")"
fi
boot 2 "$(sum "$W/L1")" "$(sum "$W/A")" "$(sum "$W/L1" "$W/B")" "$(sum "$W/L3" "$W/C")" "$(sum "$W/D")"
if grep -q '^READY' <<< "$BOOT_OUT"; then
	ok "boot 2: set 2 made, syncfs, reset by sysrq-b"
else
	not_ok "boot 2: set 2 made, syncfs, reset by sysrq-b" "$(tail -n 15 <<< "$BOOT_OUT")"
fi
boot 3 "$(sum "$W/A")" "$(sum "$W/B")" "$(sum "$W/E")" "$(sum "$W/L2" "$W/F")"
is "boot 3: exits 0" "$BOOT_RC" 0
if fsck.ext4 -fn "$W/disk.img" > "$W/fsck.out" 2>&1; then
	ok "fsck.ext4 -fn of the image after the crashes: clean"
else
	not_ok "fsck.ext4 -fn of the image after the crashes: clean" "$(tail -n 10 "$W/fsck.out")"
fi
finish
