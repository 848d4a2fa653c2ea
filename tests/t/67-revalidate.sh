#!/bin/bash
# Revalidation keeps what is in use: a tmpfs mounted inside the union survives a change in
# the union's root, a generation bump (remount,incgen) and a direct change in a branch
# (coherency=reval and notify), and stays usable; a busy directory (a process's cwd) is not
# looked up again on every walk after a change in its parent (a dentry refreshed in place
# records its new state); a warm walk of an unchanged tree does no branch lookup. The
# union's own changes are never reported as direct modifications: 4 workers create,
# rename, remove and copy up through the union only (coherency=notify and reval) and the
# hazard counters stay 0, dmesg has no "modified directly" and no "branch -1" (a walk that
# found a name just before the rename worker replaced it revalidated the unhashed victim
# after: "replaced", seen with one vCPU under load; the diagnostics name it); one direct
# change made afterwards is still detected. Two direct changes within one clock tick are
# both seen, by a cached listing and by a cached missing name. One process's consecutive
# walks each see a direct change made between them (the walk memo, 3 branches).
# timeout: 420
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
TR=/sys/kernel/tracing
OPS=${REVAL_OPS:-250}
hzfile() { echo "/sys/kernel/debug/unionfs/mounts/$(stat -c '%Hd:%Ld' "$1")/hazards"; }
hzsum() { awk '{ s += $2 } END { print s + 0 }' "$(hzfile "$1")"; }
mounted() { awk -v d="$1" '$2 == d { n++ } END { print n + 0 }' /proc/mounts; }
tr_on() { echo 0 > $TR/tracing_on; echo > $TR/trace; for e; do echo 1 > "$TR/events/unionfs/$e/enable"; done; echo 1 > $TR/tracing_on; }
# (tracing_on back to 1 afterwards: the next test files expect the default)
tr_off() { echo 0 > $TR/tracing_on; echo 0 > $TR/events/unionfs/enable; echo 1 > $TR/tracing_on; }
tr_count() { grep -c " $1: dev $2 " $TR/trace; }

# ---- mounts inside the union survive revalidation ---------------------------------------
mountpoints() {	# mountpoints MODE
	local mode=$1 d=$T/mp-$1 M B0 B1
	mkdir -p "$d"; branch_fs tmpfs "$d" 2
	M=$d/m B0=$d/b0 B1=$d/b1; mkdir -p "$M"
	mkdir -p "$B1/a/b" "$B1/c" "$B0/a" "$B1/e/f"; echo lower > "$B1/lf"
	check "$mode: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=$mode" none "$M" || return
	check "$mode: tmpfs on U/a/b" mount -t tmpfs inner1 "$M/a/b"
	check "$mode: tmpfs on U/c" mount -t tmpfs inner2 "$M/c"
	check "$mode: tmpfs on U/e/f" mount -t tmpfs inner3 "$M/e/f"
	echo one > "$M/a/b/file"; echo two > "$M/c/file"; echo three > "$M/e/f/file"
	touch "$M/newfile"			# a change in the union's root, through the union
	stat "$M/a/b" "$M/c" "$M/e/f" > /dev/null
	is "$mode: U/a/b still mounted after touch in the root" "$(mounted "$M/a/b")" 1
	is "$mode: U/c still mounted after touch in the root" "$(mounted "$M/c")" 1
	is "$mode: U/a/b usable after touch in the root" "$(cat "$M/a/b/file" 2>&1)" one
	check "$mode: remount,incgen" mount -i -o remount,incgen "$M"
	stat "$M/a/b" "$M/c" "$M/e/f" > /dev/null
	is "$mode: U/c still mounted after remount,incgen" "$(mounted "$M/c")" 1
	is "$mode: U/a/b still mounted after remount,incgen" "$(mounted "$M/a/b")" 1
	is "$mode: U/c usable after remount,incgen" "$(cat "$M/c/file" 2>&1)" two
	# direct changes in the branches: in the parent of a mount and of its parent
	touch "$B1/direct1" "$B1/a/direct2"; mkdir "$B0/e"	# e now also in b0 (merged)
	stat "$M/a/b" "$M/c" "$M/e/f" > /dev/null; ls "$M" "$M/a" "$M/e" > /dev/null
	is "$mode: U/a/b still mounted after a direct change" "$(mounted "$M/a/b")" 1
	is "$mode: U/c still mounted after a direct change" "$(mounted "$M/c")" 1
	is "$mode: U/e/f still mounted after its parent got a new branch" "$(mounted "$M/e/f")" 1
	is "$mode: U/e/f usable" "$(cat "$M/e/f/file" 2>&1)" three
	is "$mode: the direct change is seen" "$(ls "$M/a" | tr '\n' ' ')" "b direct2 "
	echo four > "$M/a/b/new"
	is "$mode: a file written in the inner mount lands in the tmpfs, not a branch" \
		"$(cat "$M/a/b/new" 2>&1):$(ls "$B0/a" "$B1/a/b" 2>/dev/null | grep -c new)" "four:0"
	umount "$M/a/b" "$M/c" "$M/e/f"
	check "$mode: umount" umount "$M"
}
for mode in reval notify; do mountpoints $mode; done

# ---- a busy directory is not looked up again on every walk -------------------------------
busy() {	# busy MODE
	local mode=$1 d=$T/busy-$1 M B0 B1 pid n dev
	mkdir -p "$d"; branch_fs tmpfs "$d" 2
	M=$d/m B0=$d/b0 B1=$d/b1; mkdir -p "$M"
	mkdir -p "$B1/d/s1/s2" "$B1/t/u"; echo x > "$B1/d/s1/x"; echo y > "$B1/t/u/y"
	check "$mode: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=$mode" none "$M" || return
	dev=$(stat -c '%Hd:%Ld' "$M")
	(cd "$M/d" && exec sleep 120) &
	pid=$!
	sleep 0.3
	find "$M" > /dev/null
	touch "$M/newfile"			# a change in its parent, through the union
	[[ $mode == none ]] || touch "$B1/direct"	# and one behind its back
	tr_on unionfs_lookup
	for i in $(seq 10); do stat "$M/d" > /dev/null; done
	tr_off
	n=$(tr_count unionfs_lookup "$dev")
	is "$mode: 10 stats of a busy directory after a change in its parent: at most 1 lookup" \
		"$(( n <= 1 ))" 1
	echo "# $mode: $n lookups"
	find "$M" > /dev/null
	tr_on unionfs_lookup unionfs_revalidate
	find "$M" > /dev/null
	tr_off
	is "$mode: a warm walk of an unchanged tree does no branch lookup" \
		"$(tr_count unionfs_lookup "$dev")" 0
	is "$mode: the busy directory still resolves" "$(cat "$M/d/s1/x")" x
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	check "$mode: umount" umount "$M"
}
for mode in reval notify none; do busy $mode; done

# ---- no false hazards from the union's own changes ----------------------------------------
cat > "$T/worker.py" <<'PY'
import errno, os, random, sys
kind, M, w, nops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(w * 7919 + 17)
dirs = ["d0", "d1", "d2", "d3"]
ok = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EXDEV, errno.ENOTDIR, errno.EISDIR,
      errno.ESTALE}
done = 0

def p(*a):
    return os.path.join(M, *a)

def look():
    """walks that revalidate cached names (siblings of what the others change)"""
    d = rnd.choice(dirs)
    try:
        for n in os.listdir(p(d))[:8]:
            try:
                os.lstat(p(d, n))
            except OSError:
                pass
    except OSError:
        pass

for i in range(nops):
    d, d2 = rnd.choice(dirs), rnd.choice(dirs)
    try:
        if kind == "create":
            with open(p(d, "c%d_%d" % (w, i % 40)), "w") as f:
                f.write("x" * rnd.randrange(100))
            if i % 5 == 0:
                os.mkdir(p(d, "cd%d_%d" % (w, i)))
        elif kind == "rename":
            a = p(d, "r%d_%d" % (w, i % 20))
            with open(a, "w") as f:
                f.write("r")
            os.rename(a, p(d2, "r%d_%d" % (w, (i + 7) % 20)))
            if i % 4 == 0:
                x = p(d, "rd%d_%d" % (w, i % 10))
                os.makedirs(x, exist_ok=True)
                os.rename(x, p(d2, "rd%d_%d" % (w, (i + 3) % 10)))
        elif kind == "remove":
            f = p(d, "x%d_%d" % (w, i % 30))
            open(f, "w").close()
            os.unlink(f)
            if i % 3 == 0:
                x = p(d, "xd%d_%d" % (w, i % 10))
                os.mkdir(x)
                open(os.path.join(x, "in"), "w").close()
                os.unlink(os.path.join(x, "in"))
                os.rmdir(x)
            if i < 40:	# lower names: whiteouts, lower dirs with whiteout cleaning
                n = p(dirs[i % 4], "L%d" % i)
                if os.path.isdir(n):
                    for c in os.listdir(n):
                        os.unlink(os.path.join(n, c))
                    os.rmdir(n)
                elif os.path.exists(n):
                    os.unlink(n)
        elif kind == "copyup":
            n = p(dirs[i % 4], "U%d" % (i % 60))
            if os.path.isdir(n):
                with open(os.path.join(n, "new%d" % i), "w") as f:
                    f.write("c")
            else:
                with open(n, "a") as f:
                    f.write("a%d\n" % i)
            if i % 7 == 0:
                os.chmod(n, 0o755)
        done += 1
    except OSError as e:
        if e.errno not in ok:
            print("worker %s %d op %d: %s" % (kind, w, i, e), file=sys.stderr)
            sys.exit(1)
    look()
print(done)
PY

own_changes() {	# own_changes MODE
	local mode=$1 d=$T/own-$1 M B0 B1 B2 pids=() i k rc=0 hz b
	mkdir -p "$d"; branch_fs tmpfs "$d" 3
	M=$d/m B0=$d/b0 B1=$d/b1 B2=$d/b2; mkdir -p "$M"
	for i in 0 1 2 3; do mkdir -p "$B0/d$i" "$B1/d$i" "$B2/d$i"; done
	for i in $(seq 0 39); do
		if ((i % 2)); then mkdir -p "$B2/d$((i % 4))/L$i"; echo l > "$B2/d$((i % 4))/L$i/f"
		else echo l > "$B1/d$((i % 4))/L$i"; fi
	done
	for i in $(seq 0 59); do
		if ((i % 3 == 0)); then mkdir -p "$B2/d$((i % 4))/U$i"; echo u > "$B2/d$((i % 4))/U$i/f"
		else b=B$((1 + i % 2)); echo u > "${!b}/d$((i % 4))/U$i"; fi
	done
	dmesg_mark
	check "$mode: mount 3 branches" mount -i -t unionfs \
		-o "dirs=$B0:$B1=ro:$B2=ro,coherency=$mode" none "$M" || return
	find "$M" > /dev/null
	i=0
	for k in create rename remove copyup; do
		timeout -s KILL $(t_limit 150) python3 "$T/worker.py" $k "$M" $i "$OPS" > "$d/w$i.out" 2>&1 &
		pids+=($!); i=$((i + 1))
	done
	for i in 0 1 2 3; do wait "${pids[$i]}" || rc=1; done
	is "$mode: 4 workers ran $OPS ops each through the union" "$rc" 0 ||
		echo "# $(cat "$d"/w*.out | tail -n 5)"
	echo "# $mode: ops done per worker: $(cat "$d"/w*.out | tr '\n' ' ')"
	find "$M" > /dev/null; ls -lR "$M" > /dev/null
	hz=$(hzsum "$M")
	if ((hz == 0)); then
		ok "$mode: no hazard counted for the union's own changes"
	else
		not_ok "$mode: no hazard counted for the union's own changes" \
			"$hz: $(tr '\n' ' ' < "$(hzfile "$M")")"
	fi
	is "$mode: no 'modified directly' in dmesg" "$(dmesg_since_mark | grep -c 'modified directly')" 0 ||
		not_ok "$mode: (what dmesg said)" "$(dmesg_since_mark | grep -B2 -A2 'modified directly' | head -n 12)"
	is "$mode: no 'branch -1' in dmesg" "$(dmesg_since_mark | grep -c 'branch -1')" 0
	# positive control: one direct change is still detected, with its branch
	echo hi > "$B1/d1/ctl"
	stat "$M/d1/ctl" > /dev/null 2>&1
	rm "$B1/d1/ctl"
	stat "$M/d1/ctl" > /dev/null 2>&1
	is "$mode: a direct change of a branch is detected" "$(( $(hzsum "$M") >= 1 ))" 1
	is "$mode: ...and reported once, naming branch 1" \
		"$(dmesg_since_mark | grep 'modified directly' | grep -c "branch 1[,)]")" 1
	is "$mode: dmesg clean" "$(dmesg_bad | head -n 3)" ""
	check "$mode: umount" umount "$M"
}
own_changes notify
own_changes reval

# ---- two direct changes within one clock tick ---------------------------------------------
# A ctime is tick-coarse: a listing cached, or a name looked up, in the tick of a direct
# change must not stand for "unchanged" when a second change comes in the same tick.
same_tick() {	# same_tick MODE
	local mode=$1 d=$T/tick-$1 M B0 B1 out
	mkdir -p "$d"; branch_fs tmpfs "$d" 2
	M=$d/m B0=$d/b0 B1=$d/b1; mkdir -p "$M" "$B1/l" "$B1/n" "$B0/s" "$B1/s"
	check "$mode: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=$mode" none "$M" || return
	out=$(timeout -s KILL $(t_limit 150) python3 - "$M" "$B0" "$B1" <<'PY'
import os, sys, time
m, b0, b1 = sys.argv[1:]
miss_ls = miss_name = miss_shadow = moved = 0
for i in range(300):
    open(f"{b1}/l/a{i}", "w").close()       # a direct change
    os.listdir(f"{m}/l")                    # a listing cached in its tick
    open(f"{b1}/l/b{i}", "w").close()       # a second change, often in the same tick
    if f"b{i}" not in os.listdir(f"{m}/l"):
        miss_ls += 1
    open(f"{b1}/n/a{i}", "w").close()
    try:
        os.stat(f"{m}/n/b{i}")              # a negative name cached in the tick
    except FileNotFoundError:
        pass
    open(f"{b1}/n/b{i}", "w").close()
    try:
        os.stat(f"{m}/n/b{i}")
    except FileNotFoundError:
        miss_name += 1
    with open(f"{b1}/s/f{i}", "w") as f:
        f.write("lower")                    # a file below its parent's first branch
    os.stat(f"{m}/s/f{i}")                  # looked up in the tick
    with open(f"{b0}/s/f{i}", "w") as f:
        f.write("upper")                    # shadowed above, often in the same tick
    with open(f"{m}/s/f{i}") as f:
        miss_shadow += f.read() != "upper"
    with open(f"{b0}/s/r{i}", "w") as f:
        f.write("r")                        # a file in its parent's first branch
    os.stat(f"{m}/s/r{i}")                  # looked up in the tick
    if i % 10 == 0:
        time.sleep(0.05)                    # and again, out of it
        os.stat(f"{m}/s/r{i}")
    os.rename(f"{b0}/s/r{i}", f"{b0}/s/q{i}")
    moved += os.path.exists(f"{m}/s/r{i}") or not os.path.exists(f"{m}/s/q{i}")
print(miss_ls, miss_name, miss_shadow, moved)
PY
)
	set -- $out
	is "$mode: a listing read in the tick of a direct change shows a second one (300 rounds)" \
		"${1-$out}" 0
	is "$mode: a name found missing in the tick of a direct change shows when made (300 rounds)" \
		"${2-$out}" 0
	is "$mode: a lower file looked up in the tick of a direct change shows the copy made above" \
		"${3-$out}" 0
	is "$mode: a file renamed in its branch after a lookup in the tick of a change shows renamed" \
		"${4-$out}" 0
	check "$mode: umount" umount "$M"
}
same_tick reval
same_tick notify

# ---- the walk memo: one process, walk after walk, each sees what changed before it ----------
# A directory in all three branches (one permission-cache entry for all): its fingerprint is
# computed once per walk, by the permission check, and reused by the lookup of the next
# component (inode.c, unionfs_dir_snap_walk). Consecutive walks of one process must each see
# a direct change made between them: a new name, a name shadowed above, a whiteout, a mode
# change that closes the directory in one branch (the permission cache). The walks start in
# p (its cwd): nothing else is checked between two of p's checks. The sleeps (40 ms) take
# the ctimes out of the "recent" window (4 ticks at HZ=250 = 16 ms), so that revalidation
# compares fingerprints, which the trace shows ("dir-changed").
walk_memo() {	# walk_memo MODE
	local mode=$1 d=$T/memo-$1 M out dev
	mkdir -p "$d"; branch_fs tmpfs "$d" 3
	M=$d/m; mkdir -p "$M" "$d/b0/p" "$d/b1/p" "$d/b2/p"
	check "$mode: memo: mount (p in 3 branches)" \
		mount -i -t unionfs -o "dirs=$d/b0:$d/b1=ro:$d/b2=ro,coherency=$mode" none "$M" || return
	dev=$(stat -c '%Hd:%Ld' "$M")
	tr_on unionfs_revalidate
	out=$(timeout -s KILL $(t_limit 150) python3 - "$M" "$d/b0" "$d/b1" "$d/b2" <<'PY'
import os, sys, time
m, b0, b1, b2 = sys.argv[1:]
new = shadow = wh = perm = 0
os.chdir(f"{m}/p")                          # walks from p: its check, then the name
for i in range(120):
    time.sleep(0.04)                        # out of the tick: the fingerprints are trusted
    try:
        os.stat(f"n{i}")                    # a missing name, cached
    except FileNotFoundError:
        pass
    with open(f"{b2}/p/n{i}", "w") as f:    # made in the lowest branch
        f.write("2")
    new += not os.path.exists(f"n{i}")
    time.sleep(0.04)
    try:
        with open(f"n{i}") as f:            # found in b2, cached
            f.read()
    except OSError:
        pass                                # (counted above)
    with open(f"{b1}/p/n{i}", "w") as f:    # shadowed from the middle branch
        f.write("1")
    try:
        with open(f"n{i}") as f:
            shadow += f.read() != "1"
    except OSError:
        shadow += 1
    time.sleep(0.04)
    os.path.exists(f"n{i}")
    os.mknod(f"{b0}/p/.wh.n{i}")            # whited out above
    wh += os.path.exists(f"n{i}")
    if i % 12 == 0:
        time.sleep(0.04)
        os.seteuid(1000)
        os.path.exists("x")                 # uid 1000 walks through p: allowed
        os.seteuid(0)
        os.chmod(f"{b2}/p", 0o700)          # closed in b2 (root's): EACCES for uid 1000
        os.seteuid(1000)
        try:
            os.stat("x")
            perm += 1
        except PermissionError:
            pass
        except FileNotFoundError:
            perm += 1
        os.seteuid(0)
        os.chmod(f"{b2}/p", 0o755)
print(new, shadow, wh, perm)
PY
)
	set -- $out
	is "$mode: memo: a name made in the lowest branch between two walks shows (120)" "${1-$out}" 0
	is "$mode: memo: a name shadowed from the middle branch between two walks shows (120)" "${2-$out}" 0
	is "$mode: memo: a whiteout made between two walks hides the name (120)" "${3-$out}" 0
	is "$mode: memo: a branch directory closed between two walks denies at once (10)" "${4-$out}" 0
	# (notify: a direct change bumps the sequence, then the fingerprint decides)
	is "$mode: memo: revalidation compared fingerprints (>= 120 'dir-changed' of n*)" \
		"$(( $(grep " unionfs_revalidate: dev $dev name n[0-9]* .*why dir-changed" $TR/trace | wc -l) >= 120 ))" 1
	tr_off
	check "$mode: memo: umount" umount "$M"
}

# overlayfs with the union as its lower layer revalidates the union's dentries itself
# (ovl_revalidate_real) with no permission check of the union's in its walk: a memo left by
# the process's previous walk of the union must not stand for it (review 20: with the memo
# used there, the overlay showed the shadowed lower file about once in 64 rounds, when the
# two walks' nameidata had the same address).
walk_memo_overlay() {
	local d=$T/memo-ovl M O out
	mkdir -p "$d"; branch_fs tmpfs "$d" 2
	M=$d/m O=$d/o; mkdir -p "$M" "$O" "$d/b1/a" "$d/b0/a"
	check "overlay: memo: mount the union" \
		mount -i -t unionfs -o "dirs=$d/b0:$d/b1=ro" none "$M" || return
	mkdir -p "$d/ovl"; mount -t tmpfs ovl "$d/ovl"; mkdir -p "$d/ovl/up/a" "$d/ovl/w"
	check "overlay: memo: overlayfs on it (lowerdir = the union, a merged)" \
		mount -t overlay -o "lowerdir=$M,upperdir=$d/ovl/up,workdir=$d/ovl/w" ovl "$O" || return
	out=$(timeout -s KILL $(t_limit 200) python3 - "$M" "$O" "$d/b0" "$d/b1" <<'PY'
import os, sys, time
m, o, b0, b1 = sys.argv[1:]
import errno
stale = 0
errs = {}
for i in range(400):
    with open(f"{b1}/a/f{i}", "w") as f:
        f.write("1")
    time.sleep(0.03)                        # out of the tick
    os.stat(f"{o}/a/f{i}")                  # the overlay caches it, over the union's b1 file
    try:
        os.stat(f"{m}/a/zz")                # a walk of the union's a: its check (the memo)
    except FileNotFoundError:
        pass
    with open(f"{b0}/a/f{i}", "w") as f:    # shadowed in the union's top branch
        f.write("00")
    try:
        stale += os.stat(f"{o}/a/f{i}").st_size == 1
    except OSError as e:                    # overlayfs: its lower changed under it
        k = errno.errorcode.get(e.errno, str(e.errno))
        errs[k] = errs.get(k, 0) + 1
print(stale, ",".join(f"{k}:{v}" for k, v in errs.items()) or "none")
PY
)
	set -- $out
	is "overlay: memo: the union's lower file, shadowed, never shows through the overlay (400; overlayfs errors: ${2-})" \
		"${1-$out}" 0
	umount "$O"; umount "$d/ovl"
	check "overlay: memo: umount" umount "$M"
}
walk_memo reval
walk_memo notify
walk_memo_overlay
finish
