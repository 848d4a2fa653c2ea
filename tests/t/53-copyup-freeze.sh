#!/bin/bash
# fsfreeze of the writable branch during copy-ups and other modifying operations (issue 20,
# defect 3). The rw branch is ext4 on a loop image, the ro branch holds a large file (ext4 on
# dm-delay, below).
# A copy-up used to take the branch's freeze protection twice (mnt_want_write around the
# whole copy-up, file_start_write per chunk): a freeze arriving between the two deadlocked
# the copy-up (D state) and the freeze. Now: the freeze completes within seconds at every
# point (before the data, during the data), the copy-up waits while frozen and completes
# after the thaw with the right content; create, unlink with whiteout, rename, chmod (with
# copy-up) and mkdir through the union across 200 freeze/thaw cycles never hang.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
WEDGED=0
# a deadlocked freeze holds the branch's s_umount: only lazy unmounts are safe then
cleanup53() {
	if ((WEDGED)); then
		for m in $(awk -v d="$T" 'index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r); do
			umount -l "$m" 2>/dev/null
		done
	else
		umount "$M" 2>/dev/null
		umount "$B1" 2>/dev/null
		[[ -n $DM ]] && dmsetup remove "$DM"
		[[ -n ${L1:-} ]] && losetup -d "$L1"
		_t_cleanup
	fi
}
trap cleanup53 EXIT

B0=$T/b0 B1=$T/b1 M=$T/m
mkdir -p "$B0" "$B1" "$M"
truncate -s 512M "$T/img0"
mkfs.ext4 -q -F -O ^has_journal "$T/img0"
mount -o loop,discard "$T/img0" "$B0" || skip_all "no ext4 loop mount"
rmdir "$B0/lost+found" 2>/dev/null
# The ro branch is ext4 on a dm-delay device (20 ms per read) with a cold page cache, so a
# copy-up's data phase lasts seconds and the "during" freezes land in it on any machine. A
# kernel without dm-delay gets tmpfs: the copy-up may then end before a freeze (reported as
# a skip of that case, never as a pass).
DM=
if modprobe dm-delay 2>/dev/null && command -v dmsetup > /dev/null; then
	truncate -s 160M "$T/img1"
	mkfs.ext4 -q -F -O ^has_journal "$T/img1"
	L1=$(losetup -f --show "$T/img1")
	DM=unionfs53-$$
	# no udev in the guest: make the node ourselves
	dmsetup create --noudevsync "$DM" --table "0 $(blockdev --getsz "$L1") delay $L1 0 20 $L1 0 0" &&
		dmsetup mknodes "$DM" && mount "/dev/mapper/$DM" "$B1" || DM=
	rmdir "$B1/lost+found" 2>/dev/null
fi
[[ -n $DM ]] || mount -t tmpfs -o size=200m tmp1 "$B1"
cold() {	# drop the ro branch's cached pages: the next copy-up reads the delayed device
	sync; echo 3 > /proc/sys/vm/drop_caches
}
MIB=32
# distinct content per MiB, so a misplaced chunk changes the checksum
python3 -c "
import sys
with open('$B1/big', 'wb') as f:
    for i in range($MIB):
        f.write((b'%07d\n' % i) * (1 << 17))"
WANT=$({ cat "$B1/big"; echo appended; } | sha1sum | cut -c1-40)
check "mount" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || exit 1

freeze() {	# freeze DESC : fsfreeze -f on the rw branch must finish within 30 s
	if wd 30 fsfreeze -f "$B0"; then
		ok "$1: freeze completes"
		return 0
	fi
	not_ok "$1: freeze completes" "$(grep -v '^\[' "$WD_OUT" | head -n 14)"
	WEDGED=1
	return 1
}
waitpid() {	# waitpid PID SECS : true if PID ended within SECS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
# bytes in the copy so far: the named temporary's size or, for an O_TMPFILE temporary (no
# name), how much the branch's used space grew since copy_case started (ext4 counts delayed
# allocations as used)
used0() { df --output=used -B1 "$B0" | tail -n 1 | tr -d ' '; }
tmpsize() {
	local s
	s=$(find "$B0" -name '.wh..wh.unionfs*' -printf '%s\n' 2>/dev/null | head -n 1)
	[[ -n $s ]] || s=$(($(used0) - BASE))
	((s > 0)) && echo "$s"
}

# copy_case DESC WHEN : WHEN = "before" (freeze, then start) or a byte count (start, freeze
# once the temporary copy holds that much)
copy_case() {
	local desc=$1 when=$2 pid i t0 sz
	rm -f "$B0/big"
	cold
	BASE=$(used0)
	if [[ $when == before ]]; then
		freeze "$desc" || return 1
		sh -c 'echo appended >> "$1"' _ "$M/big" &
		pid=$!
		sleep 2
	else
		t0=$(date +%s%N)
		sh -c 'echo appended >> "$1"' _ "$M/big" &
		pid=$!
		for ((i = 0; i < 600; i++)); do
			sz=$(tmpsize)
			[[ -n $sz ]] && ((sz >= when)) && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.05
		done
		if ! kill -0 $pid 2>/dev/null; then
			skip "$desc" "the copy-up finished before the freeze ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
			wait $pid
			return 0
		fi
		freeze "$desc" || { kill -9 $pid; return 1; }
		if [[ -z $DM ]] && ! kill -0 $pid 2>/dev/null; then
			skip "$desc: the copy-up waits while frozen" "no dm-delay: it ended before the freeze completed"
			check "$desc: thaw" fsfreeze -u "$B0"
			wait $pid
			umount "$M" && rm -f "$B0/big" && mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M"
			return 0
		fi
		sleep 1
	fi
	is "$desc: the copy-up waits while frozen" "$(kill -0 $pid 2>/dev/null && echo waiting)" waiting
	check "$desc: thaw" fsfreeze -u "$B0"
	if waitpid $pid 60; then
		wait $pid
		is "$desc: copy-up and append complete after the thaw" "$?" 0
	else
		not_ok "$desc: copy-up completes after the thaw" \
			"$(cat /proc/$pid/stack 2>/dev/null; ps -o pid,stat,wchan:30,cmd --ppid $pid 2>/dev/null)"
		kill -9 $pid
		WEDGED=1
		return 1
	fi
	is "$desc: content = original + appended" "$(sha1sum < "$M/big" | cut -c1-40)" "$WANT"
	is "$desc: no temporary left" "$(find "$B0" -name '.wh..wh.unionfs*' | wc -l)" 0
	# the next case copies up again
	umount "$M" && rm -f "$B0/big" && mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M"
}

# how long one copy-up takes here (the "during" points are placed in it)
cold
t0=$(date +%s%N)
sh -c 'echo appended >> "$1"' _ "$M/big"
echo "# copy-up of $MIB MiB: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
is "unfrozen copy-up content" "$(sha1sum < "$M/big" | cut -c1-40)" "$WANT"
umount "$M"; rm -f "$B0/big"; mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M"

copy_case "freeze before the copy-up" before &&
copy_case "freeze at the first MiB" $((1 << 20)) &&
copy_case "freeze at half" $(((MIB << 20) / 2))
if ((WEDGED)); then
	not_ok "modifying operations across freezes" "not run: the branch is wedged"
	finish
fi

# other modifying operations across freeze/thaw cycles
mkdir "$B1/ld"
ops() {	# a worker: create, rename, unlink, setattr with copy-up, write, unlink with whiteout, mkdir
	local n=0
	while [[ ! -e $T/stop ]]; do
		echo "new $n" > "$M/new$n"
		mv "$M/new$n" "$M/mv$n"
		rm "$M/mv$n"
		echo "lower $n" > "$B1/cu$n"
		chmod 600 "$M/cu$n"
		sh -c 'echo a >> "$1"' _ "$M/cu$n"
		rm "$M/cu$n"
		mkdir "$M/ld/d$n"
		rmdir "$M/ld/d$n"
		n=$((n + 1))
		echo $n > "$T/progress"
	done 2> "$T/ops.err"
}
ops &
wpid=$!
# 200 cycles in one background loop (fork+exec is slow under TCG), bounded as a whole
( for ((c = 0; c < 200; c++)); do fsfreeze -f "$B0" && fsfreeze -u "$B0" || exit 1; done ) &
fpid=$!
if waitpid $fpid 150; then
	wait $fpid
	is "200 freeze/thaw cycles during create/unlink/rename/chmod/mkdir complete" "$?" 0
else
	not_ok "200 freeze/thaw cycles during create/unlink/rename/chmod/mkdir complete within 150 s" \
		"$(for p in $fpid $(pgrep -P $fpid) $wpid $(pgrep -P $wpid); do echo "pid $p"; cat /proc/$p/stack; done 2>/dev/null | head -n 14)"
	kill -9 $fpid $(pgrep -P $fpid) 2>/dev/null
	WEDGED=1
	touch "$T/stop"
	finish
fi
touch "$T/stop"
if waitpid $wpid 30; then
	ok "the operations worker ends after the last thaw ($(cat "$T/progress" 2>/dev/null) rounds)"
else
	not_ok "the operations worker ends after the last thaw" \
		"$(for p in $wpid $(pgrep -P $wpid); do cat /proc/$p/stack; done 2>/dev/null)"
	kill -9 $wpid $(pgrep -P $wpid) 2>/dev/null
	WEDGED=1
	finish
fi
[[ $(cat "$T/progress" 2>/dev/null) -gt 0 ]] && ok "operations made progress" || not_ok "operations made progress"
is "operations reported no error" "$(head -n 5 "$T/ops.err")" ""

# each operation started while frozen completes after the thaw
echo x > "$B1/w_unlink"; echo y > "$B1/w_mv"; echo z > "$B1/w_chmod"
freeze "ops while frozen" || finish
sh -c 'echo c > "$1"' _ "$M/w_create" & p1=$!
rm "$M/w_unlink" & p2=$!
mv "$M/w_mv" "$M/w_mv2" & p3=$!
chmod 640 "$M/w_chmod" & p4=$!
mkdir "$M/w_dir" & p5=$!
sleep 2
check "ops while frozen: thaw" fsfreeze -u "$B0"
for p in $p1 $p2 $p3 $p4 $p5; do
	if ! waitpid $p 30; then
		not_ok "ops while frozen: pid $p completes after the thaw" "$(cat /proc/$p/stack 2>/dev/null)"
		kill -9 $p; WEDGED=1
	fi
done
is "ops while frozen: results" \
	"$(cat "$M/w_create"; test -e "$M/w_unlink" || echo unlinked; cat "$M/w_mv2"; stat -c %a "$M/w_chmod"; stat -c %F "$M/w_dir")" \
	$'c\nunlinked\ny\n640\ndirectory'
is "ops while frozen: whiteout and copies in the rw branch" \
	"$(test -e "$B0/.wh.w_unlink" && echo wh; cat "$B0/w_mv2"; stat -c %a "$B0/w_chmod")" $'wh\ny\n640'
check "umount" umount "$M"
finish
