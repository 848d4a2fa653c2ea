#!/bin/bash
# Host-side: gdb-scripts/unionfs_drgn.py on the live guest kernel (/proc/kcore), one boot.
# The union: an ext4 rw branch (it has O_TMPFILE) over a tmpfs ro branch with a 32 MiB file.
# A copy-up of that file is held in flight by freezing the rw branch right after the copy-up's
# prepare phase (tracepoint unionfs_copyup_phase): the helper must find it on the writer's
# stack with its nameless O_TMPFILE temporary, which no path lookup can see. Then the
# helper's mounts, fanout (a copied-up file, a lower-only one and a name of a link group shown
# through the index, against `stat` of the
# branches) and stale (a lower file removed directly behind the union's back) are checked.
# The vmcore side (crash dump) is checked in 20-kdump.sh. Needs build/vmlinux (make vmlinux)
# and drgn (python3-drgn, installed by make deps).
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2

t0=$(date +%s)
if ! out=$(make -s vmlinux 2>&1); then
	not_ok "make vmlinux" "$(tail -n 8 <<< "$out")"
	finish
fi
check "drgn installed (make deps: python3-drgn)" command -v drgn

W=$(mktemp -d "$PWD/build/check/drgn.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat > "$W/calls.py" <<EOF
exec(open("$PWD/gdb-scripts/unionfs_drgn.py").read())
print("== copyups"); copyups()
print("== fanout big"); fanout("/tmp/d/m/big")
print("== fanout low"); fanout("/tmp/d/m/low", dot="$W/low.dot")
print("== end")
EOF
cat > "$W/guest.sh" <<EOF
W=$W PROJ=$PWD
EOF
cat >> "$W/guest.sh" <<'EOF'
DRGN="drgn -q -s $PROJ/build/vmlinux -s $PROJ/src/unionfs.ko"
TR=/sys/kernel/tracing
modprobe loop
mkdir -p /tmp/d/b0 /tmp/d/b1 /tmp/d/m
truncate -s 256M /tmp/d/img0 && mkfs.ext4 -q -F -O ^has_journal /tmp/d/img0 &&
	mount -o loop /tmp/d/img0 /tmp/d/b0 || exit 3
rmdir /tmp/d/b0/lost+found
head -c $((32 << 20)) /dev/urandom > /tmp/d/b1/big
echo low > /tmp/d/b1/low; echo gone > /tmp/d/b1/gone; echo up > /tmp/d/b1/up
echo g > /tmp/d/b1/g1; ln /tmp/d/b1/g1 /tmp/d/b1/g2	# a link group
mount -i -t unionfs -o dirs=/tmp/d/b0=rw:/tmp/d/b1=ro none /tmp/d/m || exit 3
cat /tmp/d/m/low /tmp/d/m/gone > /dev/null
echo more >> /tmp/d/m/up	# copied up: top in b0, shadowed in b1
stat -c %i /tmp/d/b0/up /tmp/d/b1/up /tmp/d/b1/low > $W/inodes
$DRGN $PROJ/gdb-scripts/unionfs_drgn.py mounts > $W/mounts.out 2>&1; echo $? > $W/mounts.rc
$DRGN $PROJ/gdb-scripts/unionfs_drgn.py fanout /tmp/d/m/up --dot $W/up.dot > $W/fanout.out 2>&1
echo $? > $W/fanout.rc
echo x >> /tmp/d/m/g1; cat /tmp/d/m/g2 > /dev/null	# g2 now shows b0's index entry
$DRGN $PROJ/gdb-scripts/unionfs_drgn.py fanout /tmp/d/m/g2 > $W/group.out 2>&1
# a copy-up held after its prepare phase: the rw branch frozen
echo 0 > $TR/events/enable; : > $TR/trace
echo 1 > $TR/events/unionfs/unionfs_copyup_phase/enable; echo 1 > $TR/tracing_on
(timeout 20 grep -m1 -q 'name big .*phase prepare' $TR/trace_pipe && fsfreeze -f /tmp/d/b0 &&
	touch $W/frozen) &
fz=$!
sleep 0.5
(echo tail >> /tmp/d/m/big; echo $? > $W/append.rc) &
ap=$!
wait $fz
echo 0 > $TR/events/unionfs/unionfs_copyup_phase/enable
[ -e $W/frozen ] && $DRGN $W/calls.py > $W/calls.out 2>&1; echo $? > $W/calls.rc
fsfreeze -u /tmp/d/b0
timeout 60 sh -c "while kill -0 $ap 2>/dev/null; do sleep 0.2; done"
wait $ap
{ head -c $((32 << 20)) /tmp/d/b1/big; echo tail; } | cmp - /tmp/d/b0/big > /dev/null; echo $? > $W/content.rc
rm /tmp/d/b1/gone	# behind the union's back: the cached name is stale now
$DRGN $PROJ/gdb-scripts/unionfs_drgn.py stale > $W/stale.out 2>&1; echo $? > $W/stale.rc
umount /tmp/d/m
EOF
t1=$(date +%s)
qemu-debug/boot -- sh "$W/guest.sh" > "$W/boot.log" 2>&1
brc=$?
is "guest ran to the end ($(($(date +%s) - t1))s)" "$brc" 0
read -r iup0 iup1 ilow < <(tr '\n' ' ' < "$W/inodes" 2>/dev/null)

mo=$(cat "$W/mounts.out" 2>/dev/null)
is "mounts: exits 0" "$(cat "$W/mounts.rc" 2>/dev/null)" 0
check "mounts: the union, its generation and coherency" \
	grep -qE '^union /tmp/d/m  sb 0x[0-9a-f]+  generation 1  coherency reval  markers unionfs$' <<< "$mo"
check "mounts: branch 0 = /tmp/d/b0 rw on ext4" grep -qE '^  \[0\] rw  /tmp/d/b0  id 0  fsidx 0  open [0-9]+  ext4$' <<< "$mo"
check "mounts: branch 1 = /tmp/d/b1 ro on tmpfs" grep -qE '^  \[1\] ro  /tmp/d/b1  id 1  fsidx 1  open [0-9]+  tmpfs$' <<< "$mo"

fo=$(cat "$W/fanout.out" 2>/dev/null)
is "fanout: exits 0" "$(cat "$W/fanout.rc" 2>/dev/null)" 0
check "fanout: a copied-up file: its name and range" \
	grep -qE '^dentry "up" /tmp/d/m/up  regular  generation 1 \(current\)  bstart 0 bend 1 ' <<< "$fo"
check "fanout: the copy in b0 (inode $iup0) wins" \
	grep -qE "^  ├─ \[0\] rw /tmp/d/b0 +ino $iup0 regular  /up  <top>$" <<< "$fo"
check "fanout: the original in b1 (inode $iup1) is shadowed" \
	grep -qE "^  └─ \[1\] ro /tmp/d/b1 +ino $iup1 regular  /up  <shadowed by branch 0>$" <<< "$fo"
check "fanout --dot: a graph with the winning branch in blue" \
	grep -q 'b0 \[label="\[0\] rw /tmp/d/b0\\nino [0-9]* regular  /up\\ntop", color=blue\]' "$W/up.dot"

go=$(cat "$W/group.out" 2>/dev/null)
check "fanout: a lower name of a copied-up link group shows b0's index entry" \
	grep -qE '^  ├─ \[0\] rw /tmp/d/b0 +ino [0-9]+ regular  /\.wh\.\.wh\.unionfs\.index/[0-9a-f-]+  <top, link group: the index entry>$' <<< "$go"
check "fanout: ... over its lower file in b1" \
	grep -qE '^  └─ \[1\] ro /tmp/d/b1 +ino [0-9]+ regular  /g2  <shadowed by branch 0>$' <<< "$go"

co=$(cat "$W/calls.out" 2>/dev/null)
check "the rw branch froze right after the copy-up's prepare phase" test -e "$W/frozen"
is "library use (exec + calls): exits 0" "$(cat "$W/calls.rc" 2>/dev/null)" 0
check "copyups: the frozen copy-up of big, b1 -> b0, with its nameless O_TMPFILE temporary" \
	grep -qE '^pid [0-9]+ [a-z]+: copy-up of "big" branch 1 -> 0, temporary O_TMPFILE \(nameless\) branch ino [0-9]+, [0-9]+ of 33554432 bytes$' <<< "$co"
check "copyups: exactly one in flight" grep -qx '1 copy-up(s) in flight' <<< "$co"
check "fanout (library): a lower-only file in b1 (inode $ilow)" \
	grep -qE "^  └─ \[1\] ro /tmp/d/b1 +ino $ilow regular  /low  <top>$" <<< "$co"
check "fanout (library): nothing in b0 for it" grep -qE '^  ├─ \[0\] rw /tmp/d/b0 +-$' <<< "$co"
is "the copy-up completed after the thaw (append exit status)" "$(cat "$W/append.rc" 2>/dev/null)" 0
is "the copy-up completed after the thaw (content)" "$(cat "$W/content.rc" 2>/dev/null)" 0

so=$(cat "$W/stale.out" 2>/dev/null)
is "stale: exits 0" "$(cat "$W/stale.rc" 2>/dev/null)" 0
check "stale: the name removed directly in b1 is reported" \
	grep -qE '^  /tmp/d/m/gone: branch 1: the branch (name went negative|dentry is unhashed)' <<< "$so"
check "stale: nothing else is" grep -qE '^  [0-9]+ cached dentries, 1 stale$' <<< "$so"
if ((_T_FAILS)); then	# keep what the guest and drgn printed
	rm -rf build/check/drgn-failed && cp -r "$W" build/check/drgn-failed
	echo "# 55-drgn: outputs kept in build/check/drgn-failed" >&2
fi
finish
