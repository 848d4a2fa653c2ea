#!/bin/bash
# Fuzzing bad input (tests/tools/ufuzz.py, seeded, seeds printed): random and mutated mount
# option strings, remount command strings on a live union, ioctl numbers and arguments on
# union files and dirs, and writes to debugfs inject/crash_at. Every case must succeed or fail
# with an errno from the allowed set; after each batch dmesg has no oops/WARN/BUG and the
# union still works. On a sample of each string kind, every rejected input logged exactly one
# "unionfs:" line. Short: 1500 mount, 1000 remount, 3000 ioctl, 2000 debugfs cases;
# UNIONFS_SOAK=1: 10x that per round, rounds for SOAK_SECS.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
require_fault_injection
mk_tmpdir
FZ="python3 $PWD/tests/tools/ufuzz.py"
mkdir -p "$T"/b{0,1,2,3}/sub "$T/mnt" "$T/u" "$T/u2"
echo data > "$T/file"; echo hello > "$T/b1/hello"; echo f > "$T/b0/f"
K=1
((SOAK)) && K=10
dmesg_mark

sample() {	# sample KIND ARGS... : the pr_warn-per-error check
	local kind=$1 out rc
	shift
	out=$($FZ sample "$kind" "$@" 2>&1); rc=$?
	if [[ $rc == 0 ]]; then ok "sample of $kind strings (seed $1): $(head -n 1 <<< "$out")"
	else not_ok "sample of $kind strings (seed $1): every rejected input logs exactly one unionfs: line" "$out"; fi
}
summary() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('%d cases, %d ok, errnos %s' % (d['cases'], d['ok'], ' '.join('%s=%d' % kv for kv in sorted(d['errors'].items()))))" <<< "$1"; }
batch() {	# batch DESC CMD... : one fuzz batch; JSON summary on success, bad cases on failure
	local desc=$1 out rc
	shift
	wd 600 $FZ "$@"
	rc=$? out=$(tail -n 1 "$WD_OUT")
	if [[ $rc == 0 ]]; then ok "$desc: $(summary "$out")"
	else not_ok "$desc (exit $rc)" "$(tail -n 12 "$WD_OUT")"; fi
	is "$desc: dmesg clean" "$(dmesg_bad)" ""
	total=$((total + $(python3 -c "import json,sys; print(json.loads(sys.stdin.read())['cases'])" <<< "$out" 2>/dev/null || echo 0)))
}
union_works() {	# union_works MNT : readdir, read, create+unlink, debugfs table readable
	ls "$1" > /dev/null && cat "$1/hello" > /dev/null && touch "$1/.fz" && rm "$1/.fz" &&
		cat /sys/kernel/debug/unionfs/mounts/*/branches > /dev/null
}
# after the remount fuzz the union has whatever branches its valid commands left (add, del,
# mode, ro): it must show what /proc/mounts says: "hello" from the first branch holding one,
# create+unlink working when branch 0 is rw and the mount is not ro, EROFS otherwise
union_as_mounted() {	# union_as_mounted MNT
	local m=$1 opts dirs b want= got br0 rc
	opts=$(awk -v m="$m" '$2 == m && $3 == "unionfs" { print $4 }' /proc/mounts)
	dirs=$(sed -n 's/.*dirs=\([^,]*\).*/\1/p' <<< "$opts")
	ls "$m" > /dev/null || return 1
	IFS=: read -ra br <<< "$dirs"
	for b in "${br[@]}"; do [[ -e ${b%=*}/hello ]] && { want=$(cat "${b%=*}/hello"); break; }; done
	got=$(cat "$m/hello" 2>/dev/null)
	[[ $got == "$want" ]] || { echo "hello: '$got', expected '$want' (dirs=$dirs)"; return 1; }
	br0=${br[0]}
	touch "$m/.fz" 2>/dev/null && rm "$m/.fz"; rc=$?
	if [[ ,$opts, == *,ro,* || $br0 == *=ro ]]; then
		[[ $rc != 0 && ! -e $m/.fz ]] || { echo "create worked on a read-only union ($opts)"; return 1; }
	else
		[[ $rc == 0 ]] || { echo "create+unlink failed ($opts)"; return 1; }
	fi
	cat /sys/kernel/debug/unionfs/mounts/*/branches > /dev/null
}
start=$(date +%s) round=0 total=0
while :; do
	s=$((SRANDOM % 1000000))
	batch "round $round: mount options, seed $s" mount $s $((1500 * K)) "$T"
	is "round $round: no union left mounted by the mount fuzz" "$(grep -c " $T/mnt " /proc/mounts)" 0

	check "round $round: mount the remount target" mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro" none "$T/u"
	s=$((SRANDOM % 1000000))
	batch "round $round: remount commands, seed $s" remount $s $((1000 * K)) "$T" "$T/u"
	check "round $round: union works as /proc/mounts says after the remount fuzz" union_as_mounted "$T/u"
	check "round $round: umount after the remount fuzz" umount "$T/u"

	check "round $round: mount the ioctl target" mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro" none "$T/u2"
	s=$((SRANDOM % 1000000))
	batch "round $round: ioctls, seed $s" ioctl $s $((3000 * K)) "$T/u2/f"
	check "round $round: union works after the ioctl fuzz" union_works "$T/u2"
	is "round $round: QUERYFILE still right after the fuzz" "$("$PWD/build/unionctl" "$T/u2" --query "$T/u2/hello" | head -n 1)" \
		"$T/u2/hello: 1 of 2 branches (generation $(awk '/^generation/ { print $2 }' /sys/kernel/debug/unionfs/mounts/*/branches))"

	s=$((SRANDOM % 1000000))
	batch "round $round: debugfs inject/crash_at writes, seed $s" debugfs $s $((2000 * K))
	is "round $round: no site left armed" "$(awk '!/^#/ && $2 != 0' /sys/kernel/debug/unionfs/inject)" ""
	is "round $round: crash_at disarmed" "$(cat /sys/kernel/debug/unionfs/crash_at)" none
	check "round $round: union works after the debugfs fuzz" union_works "$T/u2"
	check "round $round: umount" umount "$T/u2"
	round=$((round + 1))
	soak_more "$start" || break
done

# one unionfs: warning per rejected input, checked case by case on a sample
s=$((SRANDOM % 1000000))
sample mount $s 60 "$T"
mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro" none "$T/u"
sample remount $s 60 "$T" "$T/u"
umount "$T/u"
sample debugfs $s 60
echo "# fuzz: $total cases in $round rounds"
is "dmesg clean" "$(dmesg_bad)" ""
finish
