#!/bin/bash
# Copy-up by clone (issue 25): where the ro and the rw branch are directories of one file
# system that shares extents (xfs with reflink=1), a copy-up clones the file's extents instead
# of copying its bytes: the space used does not grow by the file's size, the copy's extents
# are shared (filefrag), the content is the original's plus the change. A clone refused
# (injected fault "copyup_clone") or impossible (branches on two file systems, tmpfs) falls
# back to the copy: same content, the space grows. Times are printed (a benchmark measures
# them, a test does not assert them).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
modprobe loop
modprobe xfs 2>/dev/null
mk_tmpdir
dmesg_mark
check "mkfs.xfs available (make deps: xfsprogs)" command -v mkfs.xfs || finish

X=$T/x M=$T/m
mkdir -p "$X" "$M"
truncate -s 400M "$T/xfs.img"
check "mkfs.xfs -m reflink=1" mkfs.xfs -q -m reflink=1 "$T/xfs.img" || finish
check "mount the xfs image" mount -o loop "$T/xfs.img" "$X" || finish
mkdir -p "$X/up" "$X/lo"
used() { sync; df -k --output=used "$X" | tail -n 1; }	# KiB used on the xfs
head -c $((64 << 20)) /dev/urandom > "$X/lo/big"
head -c $((32 << 20)) /dev/urandom > "$X/lo/fb"
head -c $((1 << 20)) /dev/urandom > "$X/lo/small"
cp "$X/lo/big" "$T/big.orig"	# on the guest's tmpfs /tmp: the judge of the content
check "mount dirs=up=rw:lo=ro (one xfs)" mount -i -t unionfs -o "dirs=$X/up=rw:$X/lo=ro" none "$M" ||
	finish

TR=/sys/kernel/tracing
if [[ -d $TR/events/unionfs ]]; then
	echo > $TR/trace
	# op is an enum field: the filter takes the number the format file gives "clone"
	clone=$(tr_enum unionfs_branch_op clone)
	check "tracepoint unionfs_branch_op: filter op == $clone (clone) accepted" \
		bash -c "echo 'op == $clone' > $TR/events/unionfs/unionfs_branch_op/filter"
	echo 1 > $TR/events/unionfs/unionfs_branch_op/enable
fi

u0=$(used); t0=$(date +%s%N)
echo tail >> "$M/big"; rc=$?
t1=$(date +%s%N); u1=$(used)
is "append to a 64 MiB lower file (copy-up) succeeds" "$rc" 0
echo tail >> "$T/big.orig"
check "the copy is the original plus the append" cmp "$T/big.orig" "$X/up/big"
check "... and the union shows it" cmp "$T/big.orig" "$M/big"
check "the lower file is untouched" cmp -n $((64 << 20)) "$T/big.orig" "$X/lo/big"
grew=$((u1 - u0))
echo "# space used by the cloned copy-up: $grew KiB (a copy: 65536 KiB)"
((grew < 4096)) && ok "the copy-up cloned the extents (used space grew < 4 MiB)" ||
	not_ok "the copy-up cloned the extents (used space grew < 4 MiB)" "grew $grew KiB"
check "filefrag: the copy's extents are shared with the original" \
	bash -c "filefrag -v '$X/up/big' | grep -q shared"
if [[ -d $TR/events/unionfs ]]; then
	is "tracepoint unionfs_branch_op: one clone on branch 0, err 0" \
		"$(grep -c 'clone branch 0 name .* err 0' $TR/trace)" 1
	is "tracepoint unionfs_branch_op: the filter let only clones through" \
		"$(grep unionfs_branch_op: $TR/trace | grep -vc ' clone branch ')" 0
	echo 0 > $TR/events/unionfs/unionfs_branch_op/enable
	echo 0 > $TR/events/unionfs/unionfs_branch_op/filter
else
	skip "tracepoint unionfs_branch_op" "no tracefs"
fi
t2=$(date +%s%N); echo tail >> "$M/small"; t3=$(date +%s%N)
echo "# copy-up time: 64 MiB $(((t1 - t0) / 1000000)) ms, 1 MiB $(((t3 - t2) / 1000000)) ms (not asserted)"

# a clone refused: the copy-up copies (fault injection build only)
if fault_injection_built; then
	cp "$X/lo/fb" "$T/fb.orig"; echo tail >> "$T/fb.orig"
	fault_arm "copyup_clone errno=95 times=1"
	u0=$(used)
	echo tail >> "$M/fb"; rc=$?
	u1=$(used)
	echo "clear all" > /sys/kernel/debug/unionfs/inject
	is "clone refused (EOPNOTSUPP injected): the append still succeeds" "$rc" 0
	check "... the copy is complete" cmp "$T/fb.orig" "$X/up/fb"
	(((u1 - u0) > 30000)) && ok "... by copying (used space grew by the size: $((u1 - u0)) KiB)" ||
		not_ok "... by copying (used space grew by the size)" "grew $((u1 - u0)) KiB"
else
	require_fault_injection
fi
check "umount" umount "$M"

# branches on two file systems (tmpfs lower): no clone, a copy
mkdir -p "$T/tl"; mount -t tmpfs -o size=64m tl "$T/tl"
head -c $((8 << 20)) /dev/urandom > "$T/tl/f"; cp "$T/tl/f" "$T/f.orig"; echo x >> "$T/f.orig"
check "mount dirs=xfs=rw:tmpfs=ro" mount -i -t unionfs -o "dirs=$X/up=rw:$T/tl=ro" none "$M"
echo x >> "$M/f"
check "across file systems: the copy-up copies (content)" cmp "$T/f.orig" "$X/up/f"
check "umount" umount "$M"
umount "$T/tl"
umount "$X"
is "no oops, WARN or BUG in the kernel log" "$(dmesg_bad)" ""
finish
