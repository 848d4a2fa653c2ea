#!/bin/bash
# Faults from real filesystems under the union (75-faults covers each injection site once):
#  1. ENOSPC: the writable branch is a tiny tmpfs (blocks and inodes): write, create, mkdir,
#     the whiteout of an unlink, copy-up by rename and of a nested file (parents); each error
#     reaches the caller, the lower originals are intact, no partial or temporary file.
#  2. EIO: the read-only branch is ext4 on dm-flakey; switched to "down", reads, lookups of
#     uncached names and copy-ups fail with EIO, nothing appears in the writable branch;
#     back "up" everything reads as before.
#  3. read-only underneath: the branch filesystems remounted ro behind the union's back: writes
#     give EROFS, nothing changes; remounted rw, the same operations work.
#  4. fault storm: all injection sites armed at once with a probability while concurrent
#     workers run; only the injected errno or clean namespace errnos come back; afterwards the
#     union view equals the prediction from the branches, no temporaries, open_files is 0.
# After each part: union umount, then the branch filesystems umount (no leaked references).
# UNIONFS_SOAK=1: the storm runs for longer, in rounds, for SOAK_SECS.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
M=$T/m B0=$T/b0 B1=$T/b1 B2=$T/b2
INJ=/sys/kernel/debug/unionfs/inject
mkdir -p "$M" "$B0" "$B1"
dmesg_mark
stray() { find "$@" -name '.wh..wh.unionfs.*' 2>/dev/null; }
tree() { (cd "$1" && find . -mindepth 1 ! -name lost+found -printf '%P %y %s\n' | LC_ALL=C sort; find . -type f -exec md5sum {} + | LC_ALL=C sort); }
sy_start
errno_of() { sy - "$@"; }

# ---- 1. ENOSPC ------------------------------------------------------------------------------
mount -t tmpfs -o size=512k,nr_inodes=40 tiny "$B0"; mount -t tmpfs lower "$B1"
head -c 300000 /dev/urandom > "$B1/big1"; head -c 300000 /dev/urandom > "$B1/big2"
mkdir -p "$B1/deep/er"; echo nested > "$B1/deep/er/f"
for i in $(seq 1 60); do echo "$i" > "$B1/lo$i"; done
lower_before=$(tree "$B1")
check "enospc: mount tiny b0 (512k, 40 inodes) over b1" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
is "enospc: copy-up of a 300k file works" "$(errno_of open "$M/big1" wa)" OK
is "enospc: second 300k copy-up: ENOSPC" "$(errno_of open "$M/big2" wa)" ENOSPC
is "enospc: no partial copy of big2" "$(ls "$B0" | grep -c big2) $(stray "$B0")" "0 "
is "enospc: union still shows the original big2" "$(cmp "$M/big2" "$B1/big2" && echo same)" same
out=$(dd if=/dev/zero of="$M/fill" bs=64k count=100 2>&1); rc=$?
is "enospc: writing a new file until full: ENOSPC reaches dd" "$rc $(grep -c 'No space left' <<< "$out")" "1 1"
is "enospc: union size of the partial new file == branch size" "$(stat -c %s "$M/fill")" "$(stat -c %s "$B0/fill")"
rm -f "$M/fill"
# now exhaust inodes
n=0; while [[ $(errno_of open "$M/new$n" wc) == OK ]]; do n=$((n + 1)); ((n > 100)) && break; done
is "enospc: creating files until the inodes run out ends in ENOSPC" "$(errno_of open "$M/new$n" wc)" ENOSPC
is "enospc: mkdir without inodes: ENOSPC" "$(errno_of mkdir "$M/newdir")" ENOSPC
is "enospc: unlink of a lower file needs a whiteout: ENOSPC" "$(errno_of unlink "$M/lo1")" ENOSPC
is "enospc: the lower file is still visible" "$(cat "$M/lo1")" 1
is "enospc: rename of a lower file (copy-up): ENOSPC" "$(errno_of rename "$M/lo2" "$M/lo2x")" ENOSPC
is "enospc: source still there, target absent" "$(cat "$M/lo2") $(test -e "$M/lo2x" || echo absent)" "2 absent"
is "enospc: copy-up of a nested file (parents): ENOSPC" "$(errno_of open "$M/deep/er/f" wa)" ENOSPC
is "enospc: no copy-up temporaries" "$(stray "$B0")" ""
is "enospc: lower branch unchanged" "$(tree "$B1")" "$lower_before"
rm -f "$M"/new*
is "enospc: after freeing inodes the unlink works (whiteout)" "$(errno_of unlink "$M/lo1") $(test -e "$M/lo1" || echo gone)" "OK gone"
is "enospc: and the nested copy-up" "$(errno_of open "$M/deep/er/f" wa) $(cat "$B0/deep/er/f")" "OK nested"
check "enospc: umount union" umount "$M"
check "enospc: umount the branch filesystems (no references left)" umount "$B0" "$B1"

# ---- 2. EIO from dm-flakey under the read-only branch ----------------------------------------
if modprobe dm-flakey 2>/dev/null && command -v dmsetup > /dev/null; then
	truncate -s 64M "$T/flk.img"
	mkfs.ext4 -q -F -O ^has_journal "$T/flk.img"
	loop=$(losetup -f --show "$T/flk.img")
	sz=$(blockdev --getsz "$loop")
	dm=unionfs-flk-$$
	# no udev in the guest: no /dev/mapper link; devtmpfs has /dev/dm-N
	dmsetup create $dm --table "0 $sz flakey $loop 0 3600 0" &&
		flk=/dev/$(dmsetup info -c --noheadings -o blkdevname $dm)
	mount "$flk" "$B1" && rmdir "$B1/lost+found"
	for i in 1 2 3 4 5 6; do head -c 200000 /dev/urandom > "$B1/f$i"; done
	mkdir -p "$B1/dir"; for i in 1 2 3; do echo "$i" > "$B1/dir/e$i"; done
	lower_sums=$(cd "$B1" && md5sum f* dir/*)
	umount "$B1"; mount -o ro "$flk" "$B1"
	mount -t tmpfs upper "$B0"
	check "eio: mount b0=tmpfs over b1=ext4 on dm-flakey (ro)" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
	cat "$M/f1" > /dev/null; stat "$M/dir" > /dev/null
	# the lower device goes away: every I/O fails
	dmsetup suspend $dm && dmsetup reload $dm --table "0 $sz flakey $loop 0 0 3600" && dmsetup resume $dm
	sync; echo 3 > /proc/sys/vm/drop_caches
	is "eio: read of a lower file: EIO" "$(cat "$M/f2" 2>&1 > /dev/null | grep -c 'Input/output error')" 1
	is "eio: copy-up of a lower file: EIO" "$(errno_of open "$M/f3" wa)" EIO
	is "eio: no partial copy in b0" "$(ls -A "$B0") $(stray "$B0")" " "
	is "eio: open in an uncached lower dir: EIO" "$(errno_of open "$M/dir/e2" r)" EIO
	is "eio: rename of a lower file (copy-up): EIO" "$(errno_of rename "$M/f4" "$M/f4x")" EIO
	is "eio: nothing appeared in b0" "$(ls -A "$B0") $(stray "$B0")" " "
	dmsetup suspend $dm && dmsetup reload $dm --table "0 $sz flakey $loop 0 3600 0" && dmsetup resume $dm
	echo 3 > /proc/sys/vm/drop_caches
	is "eio: device back: lower files read as written" "$(cd "$M" && md5sum f* dir/* 2>&1)" "$lower_sums"
	is "eio: device back: copy-up works" "$(errno_of open "$M/f3" wa) $(cmp "$M/f3" "$B1/f3" && echo same)" "OK same"
	check "eio: umount union" umount "$M"
	check "eio: umount the flakey ext4 and tmpfs (no references left)" umount "$B1" "$B0"
	check "eio: dmsetup remove" dmsetup remove $dm
	losetup -d "$loop"; rm -f "$T/flk.img"
else
	not_ok "eio: dm-flakey and dmsetup available in the guest"
fi

# ---- 3. branch filesystems made read-only underneath ------------------------------------------
mount -t tmpfs up "$B0"; mount -t tmpfs lo "$B1"
echo top > "$B0/top"; echo low > "$B1/low"; mkdir "$B1/ld"; echo x > "$B1/ld/x"
check "ro-under: mount b0=rw:b1=rw" mount -i -t unionfs -o "dirs=$B0=rw:$B1=rw" none "$M"
before0=$(tree "$B0") before1=$(tree "$B1")
mount -o remount,ro "$B0"
is "ro-under: b0 ro: write to an upper file: EROFS" "$(errno_of open "$M/top" wa)" EROFS
is "ro-under: b0 ro: create: EROFS" "$(errno_of open "$M/new" wc)" EROFS
is "ro-under: b0 ro: unlink of an upper file: EROFS" "$(errno_of unlink "$M/top")" EROFS
is "ro-under: b0 ro: mkdir: EROFS" "$(errno_of mkdir "$M/nd")" EROFS
mount -o remount,ro "$B1"
is "ro-under: b1 ro too: write to a b1 file: EROFS" "$(errno_of open "$M/low" wa)" EROFS
is "ro-under: b1 ro too: unlink of a b1 file: EROFS" "$(errno_of unlink "$M/low")" EROFS
is "ro-under: b1 ro too: rename within b1: EROFS" "$(errno_of rename "$M/ld/x" "$M/ld/y")" EROFS
is "ro-under: branches unchanged" "$(tree "$B0"; tree "$B1")" "$before0"$'\n'"$before1"
mount -o remount,rw "$B0"; mount -o remount,rw "$B1"
is "ro-under: rw again: create, unlink, rename work" \
	"$(errno_of open "$M/new" wc) $(errno_of unlink "$M/low") $(errno_of rename "$M/ld/x" "$M/ld/y")" "OK OK OK"
check "ro-under: umount union" umount "$M"
check "ro-under: umount branch filesystems" umount "$B0" "$B1"

# ---- 4. fault storm: every injection site armed at once ------------------------------------
if [[ -w $INJ ]]; then
	sites=$(awk '!/^#/ { print $1 }' $INJ)
	PROB=4 SECS=15 NW=3
	((SOAK)) && SECS=60
	UC="python3 $PWD/tests/tools/uconc.py"
	start=$(date +%s) round=0 totinj=0
	while :; do
		umount_all "$T"; rm -rf "$B0" "$B1" "$B2"; branch_fs tmpfs "$T" 3
		mkdir -p "$B0"/d{0,1,2,3} "$B2"/d{0,1,2,3}
		$UC populate "$B1" 3 8
		check "storm $round: mount" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro:$B2=ro" none "$M" || break
		for s in $sites; do echo "$s errno=5 probability=$PROB" > $INJ; done
		pids=() seeds=()
		for ((w = 0; w < NW; w++)); do
			seeds+=($((SRANDOM % 100000)))
			UCONC_EXTRA_ERRNO=EIO $UC overlap "$M" $w "${seeds[w]}" $SECS > "$T/st$w.json" 2> "$T/err$w" &
			pids+=($!)
		done
		fails=
		for ((w = 0; w < NW; w++)); do
			wait "${pids[w]}" || fails+="worker $w (seed ${seeds[w]}): $(cat "$T/err$w")"$'\n'
		done
		inj=$(awk '!/^#/ { s += $7 } END { print s + 0 }' $INJ)
		hit=$(awk '!/^#/ && $7 > 0 { printf "%s=%d ", $1, $7 }' $INJ)
		echo "clear all" > $INJ
		totinj=$((totinj + inj))
		is "storm $round: $NW workers ${SECS}s, all sites at ${PROB}% EIO ($inj injected: $hit; seeds ${seeds[*]}): only EIO or clean errnos" "$fails" ""
		((inj > 0)) || not_ok "storm $round: faults were injected"
		out=$($UC predict "$M" "$B0" "$B1" "$B2"); rc=$?
		if ((rc == 0)); then ok "storm $round: union view == prediction from branches ($(head -n 1 <<< "$out"))"
		else not_ok "storm $round: union view == prediction from branches" "$out"; fi
		is "storm $round: no copy-up temporaries" "$(stray "$B0")" ""
		is "storm $round: open_files 0 on every branch" \
			"$(awk '!/^#/ && NF == 5 && $4 != 0' /sys/kernel/debug/unionfs/mounts/*/branches)" ""
		check "storm $round: umount union" umount "$M"
		check "storm $round: umount branches" umount "$B0" "$B1" "$B2"
		round=$((round + 1))
		soak_more "$start" || break
	done
	echo "# storm: $totinj faults injected in $round rounds"
else
	not_ok "storm: $INJ present" "$FI_MSG"
fi
is "dmesg clean" "$(dmesg_bad)" ""
finish
