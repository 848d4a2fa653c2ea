#!/bin/bash
# Atomicity of the namespace operations (issue 20, defects 2 and 4).
#
# 1. A failed rmdir/rename/unlink/mkdir leaves the union exactly as it was: every step of each
#    operation is failed in turn with the debugfs fault sites (the N-th hit of each site), and
#    after each failure the full listing (ls -lAR) equals the one before and the errno is the
#    injected one; when the operation succeeds, the union shows its full effect.
# 2. The same on a really full branch (a tmpfs with no free inode left).
# 3. Copy-up is atomic with respect to the namespace: open(O_WRONLY) copying a file up races rm
#    and mv (200+ rounds, plus one 128 MiB copy-up taking seconds); the result is always one a
#    serial order gives, also after drop_caches and a remount.
# timeout: 600
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
INJ=/sys/kernel/debug/unionfs/inject
require_fault_injection
echo "clear all" > $INJ
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1
mkdir -p "$B0" "$B1"
mount -t tmpfs -o size=512m tmp0 "$B0"
mount -t tmpfs -o size=512m tmp1 "$B1"
dmesg_mark

U() { mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"; }
# the union as ls shows it: names, types, modes, links, owners, sizes (no times)
listing() { (cd "$M/${1:-}" && LC_ALL=C ls -lAR --time-style=+ . 2>&1); }
fulldiff() { echo "$1" > "$T/want"; echo "$2" > "$T/got"; diff "$T/want" "$T/got" | head -n 12; }
declare -A BEFORE

# ---------------------------------------------------------------------------------------------
# 1. fault injection at every step: for each operation and each site, fail the site's 1st, 2nd,
# ... hit (once) until the operation no longer reaches it; each attempt on a fresh fixture
# $M/<op>/N (all alike, so the listing before is that of the untouched fixture <op>/0).
# fixtures (in the ro branch, entries deleted through the union first):
#   rmdir:  d {a b}, both deleted               rename: e {a b}, both deleted  (mv e ex)
#   over:   t {x}, n {y}, both deleted (mv -T t n: a directory over one holding whiteouts)
#   unlb:   f in both branches (rm f)           unll:   lower f (rm f)
#   mkwh:   lower dir w {s}, removed (mkdir w over its whiteout)
OPS="rmdir rename over unlb unll mkwh"
SITES="lookup readdir open create whiteout opaque mkdir unlink rmdir rename"
NFIX=60
python3 - "$B0" "$B1" $NFIX <<'PY'
import os, sys
b0, b1, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def mk(path, data=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if data is None:
        os.mkdir(path)
    else:
        open(path, "w").write(data)
for j in range(n + 1):
    for d in ("rmdir/%d/d" % j, "rename/%d/e" % j, "over/%d/t" % j, "over/%d/n" % j,
              "mkwh/%d/w" % j):
        mk(f"{b1}/{d}")
    for f in ("rmdir/%d/d/a", "rmdir/%d/d/b", "rename/%d/e/a", "rename/%d/e/b",
              "over/%d/t/x", "over/%d/n/y", "mkwh/%d/w/s"):
        mk(f"{b1}/{f % j}", "")
    mk(f"{b1}/unlb/{j}/f", "lower\n")
    mk(f"{b0}/unlb/{j}/f", "upper\n")
    mk(f"{b1}/unll/{j}/f", "lower\n")
PY
check "mount" U || finish
rm "$M"/rmdir/*/d/{a,b} "$M"/rename/*/e/{a,b} "$M"/over/*/t/x "$M"/over/*/n/y
rm -r "$M"/mkwh/*/w
declare -A CMD=([rmdir]="rmdir @/d" [rename]="mv @/e @/ex" [over]="mv -T @/t @/n"
	[unlb]="rm @/f" [unll]="rm @/f" [mkwh]="mkdir @/w")
declare -A AFTER	# the listing a success gives, learnt from a run without faults
for op in $OPS; do
	BEFORE[$op]=$(listing "$op/0")
	c=${CMD[$op]}; c=${c//@/$M/$op/1}
	check "$op: works without a fault" $c
	AFTER[$op]=$(listing "$op/1")
done
is "rmdir: d gone" "$(ls -A "$M/rmdir/1")" ""
is "rename: e moved, empty" "$(ls -A "$M/rename/1") $(ls -A "$M/rename/1/ex")" "ex "
is "over: t gone, n empty" "$(ls -A "$M/over/1") $(ls -A "$M/over/1/n")" "n "
is "unlink: f gone" "$(ls -A "$M/unlb/1")$(ls -A "$M/unll/1")" ""
is "mkdir over a whiteout: w empty" "$(ls -A "$M/mkwh/1/w")" ""
bad=0 nfail=0 natt=0 diag=
for op in $OPS; do
	j=1 fails=0
	for s in $SITES; do
		for ((n = 1; n <= 6; n++)); do
			j=$((j + 1))
			((j <= NFIX)) || { not_ok "$op: out of fixtures"; break 2; }
			c=${CMD[$op]}; c=${c//@/$M/$op/$j}
			echo "$s errno=28 interval=$n times=1" > $INJ
			out=$(timeout -s KILL $(t_limit 30) $c 2>&1); rc=$?
			echo "clear $s" > $INJ
			echo 2 > /proc/sys/vm/drop_caches
			got=$(listing "$op/$j")
			natt=$((natt + 1))
			if ((rc != 0)); then
				fails=$((fails + 1))
				if [[ $out != *"No space left on device"* || $got != "${BEFORE[$op]}" ]]; then
					bad=$((bad + 1))
					echo "$got" > "$T/got"; echo "${BEFORE[$op]}" > "$T/want"
					diag+="$op $s/$n: exit $rc: $out"$'\n'"$(diff "$T/want" "$T/got" | head -n 8)"$'\n'
				fi
			else
				if [[ $got != "${AFTER[$op]}" ]]; then
					bad=$((bad + 1))
					diag+="$op $s/$n: succeeded but shows: $got"$'\n'
				fi
				break	# the site is not hit n times: next site
			fi
		done
	done
	nfail=$((nfail + fails))
	((fails > 0)) || not_ok "$op: some injected fault made it fail"
done
if ((bad == 0)); then
	ok "every failed operation left the union listing as it was, every success complete"
else
	not_ok "every failed operation left the union listing as it was, every success complete" \
		"$bad bad: $diag"
fi
echo "# $natt attempts, $nfail failed with the injected ENOSPC"
# everything still holds after a remount (the branches, not caches)
before=$(listing)
umount "$M"; U
is "after remount: same listing" "$(listing)" "$before"
umount "$M"

# ---------------------------------------------------------------------------------------------
# 2. a really full branch: a tmpfs with every inode in use
F=$T/full; mkdir -p "$F/b0" "$F/b1" "$F/m"
mount -t tmpfs -o size=64m,nr_inodes=200 tmpf "$F/b0"
mkdir "$F/b1/d" "$F/b1/e" "$F/b1/e1" "$F/b1/w"
touch "$F/b1/d/a" "$F/b1/d/b" "$F/b1/e/a" "$F/b1/e1/a" "$F/b1/w/s" "$F/b1/l"
echo lower > "$F/b1/f"; echo upper > "$F/b0/f"
check "mount the full-branch union" \
	mount -i -t unionfs -o "dirs=$F/b0:$F/b1=ro" none "$F/m" || finish
rm "$F/m/d/a" "$F/m/d/b" "$F/m/e/a" "$F/m/e/b" "$F/m/e1/a"
rm -r "$F/m/w"
mkdir "$F/b0/.wh..wh.fill"	# invisible in the union
i=0
while touch "$F/b0/.wh..wh.fill/$i" 2>/dev/null && ((i < 1000)); do i=$((i + 1)); done
check_fail "the writable branch is full (no inode left)" ENOSPC touch "$F/b0/.wh..wh.fill/x"
M0=$M; M=$F/m
fullop() {	# fullop DESC CMD GONE...: ENOSPC and the same listing, or success and GONE absent
	local desc=$1 cmd=$2 before after out rc g
	shift 2
	before=$(listing)
	out=$(timeout -s KILL $(t_limit 30) bash -c "$cmd" 2>&1); rc=$?
	echo 3 > /proc/sys/vm/drop_caches
	after=$(listing)
	if ((rc != 0)); then
		if grep -q "No space left on device" <<< "$out" && [[ $after == "$before" ]]; then
			ok "full branch: $desc fails with ENOSPC, union listing unchanged"
		else
			not_ok "full branch: $desc fails with ENOSPC, union listing unchanged" \
				"exit $rc: $out"$'\n'"$(fulldiff "$before" "$after")"
		fi
	else
		for g; do
			if [[ -e $M/$g ]]; then
				not_ok "full branch: $desc succeeded and $g is gone" "$(ls -lA "$M")"
				return
			fi
		done
		ok "full branch: $desc succeeded completely"
	fi
}
fullop "rmdir d" "rmdir $M/d" d
fullop "rename e e2" "mv $M/e $M/e2" e
fullop "rename e1 e3 (one deleted entry)" "mv $M/e1 $M/e3" e1
fullop "unlink f" "rm $M/f" f
fullop "unlink l" "rm $M/l" l
fullop "mkdir w (over a whiteout)" "mkdir $M/w"
is "full branch: w shows none of its lower entries" "$(ls -A "$M/w" 2>/dev/null)" ""
rm -rf "$F/b0/.wh..wh.fill"
before=$(listing)
umount "$F/m"
mount -i -t unionfs -o "dirs=$F/b0:$F/b1=ro" none "$F/m"
is "full branch: same listing after space is freed and a remount" "$(listing)" "$before"
umount "$F/m"
M=$M0

# ---------------------------------------------------------------------------------------------
# 3. copy-up by open(O_WRONLY) racing rm and mv
ROUNDS=400
for ((i = 0; i < ROUNDS; i++)); do
	head -c $((256 << 10)) /dev/urandom > "$B1/r$i"
done
U
out=$(timeout -s KILL $(t_limit 240) python3 - "$M" "$B1" $ROUNDS <<'PY'
import os, sys
m, lower, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def race(path, other):
    pids = []
    for k in (0, 1):
        pid = os.fork()
        if pid == 0:
            try:
                if k == 0:
                    os.close(os.open(path, os.O_WRONLY))	# copy-up
                elif other:
                    os.rename(path, other)
                else:
                    os.unlink(path)
            except OSError as e:
                os._exit(e.errno or 1)	# the errno, for the diagnostics
            os._exit(0)
        pids.append(pid)
    return [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
bad_rm = bad_mv = 0
for i in range(rounds):
    want = open(f"{lower}/r{i}", "rb").read()
    a, b = f"{m}/r{i}", f"{m}/r{i}.mv"
    if i % 2 == 0:
        rc = race(a, None)
        if rc[1] != 0 or os.path.exists(a):
            bad_rm += 1
            print(f"r{i}: rm exit {rc[1]} ({os.strerror(rc[1]) if rc[1] > 0 else ''}), exists after rm: {os.path.exists(a)}")
    else:
        rc = race(a, b)
        ok = rc[1] == 0 and not os.path.exists(a) and os.path.exists(b) and \
            open(b, "rb").read() == want
        if not ok:
            bad_mv += 1
            print(f"r{i}: mv exit {rc[1]} ({os.strerror(rc[1]) if rc[1] > 0 else ''}), old {os.path.exists(a)}, new {os.path.exists(b)}")
print(f"RESULT {bad_rm} {bad_mv}")
PY
)
res=$(grep '^RESULT' <<< "$out")
rr() {	# rr DESC FIELD
	if [[ $(cut -d' ' -f$2 <<< "$res") == 0 ]]; then
		ok "$1"
	else
		not_ok "$1" "$(head -n 10 <<< "$out")"
	fi
}
rr "race rm vs copy-up ($((ROUNDS / 2)) rounds): rm works and the name stays gone" 2
rr "race mv vs copy-up ($((ROUNDS / 2)) rounds): exactly the new name, full content" 3
echo 3 > /proc/sys/vm/drop_caches
umount "$M"; U
is "after drop_caches + remount: no raced old name is back" \
	"$(ls -A "$M" | grep -cE '^r[0-9]+$')" 0
is "after remount: every moved file complete" \
	"$(for ((i = 1; i < ROUNDS; i += 2)); do cmp -s "$M/r$i.mv" "$B1/r$i" || echo "r$i"; done)" ""
umount "$M"
rm -rf "$B0"/* "$B1"/*	# room for the big files

# one big copy-up (seconds) racing rm, and one racing mv
wopen() { : >> "$1"; }	# an open for writing: the copy-up (was undefined: raced nothing)
head -c $((128 << 20)) /dev/zero | tr '\0' 'z' > "$B1/big1"
cp "$B1/big1" "$B1/big2"
U
wopen "$M/big1" & p1=$!
sleep 0.5
timeout -s KILL $(t_limit 120) rm "$M/big1"; rc=$?
wait $p1
is "big copy-up racing rm: rm succeeds" "$rc" 0
is "big copy-up racing rm: the name is gone" "$(ls -A "$M" | grep -cx big1)" 0
wopen "$M/big2" & p1=$!
sleep 0.5
timeout -s KILL $(t_limit 120) mv "$M/big2" "$M/big2.mv"; rc=$?
wait $p1
is "big copy-up racing mv: mv succeeds" "$rc" 0
is "big copy-up racing mv: only the new name" \
	"$(ls -A "$M" | grep -cx big2) $(ls -A "$M" | grep -cx big2.mv)" "0 1"
echo 3 > /proc/sys/vm/drop_caches
umount "$M"; U
is "big: after drop_caches + remount: big1 gone, big2 only as big2.mv" \
	"$(ls -A "$M" | grep -c '^big')" 1
is "big: big2.mv has the full content" "$(cmp "$M/big2.mv" "$B1/big2" 2>&1)" ""
is "no temporary left visible" "$(ls -A "$M" | grep -c '^\.wh\.')" 0
umount "$M"
is "no kernel warning" "$(dmesg_bad)" ""
finish
