#!/bin/bash
# Copy-up as phases (prepare, data, meta, publish; docs/concepts.md "Copy-up"):
# - with O_TMPFILE (tmpfs, ext4) no name but the final one ever appears in the target
#   directory, even during a 64 MiB copy (the directory is polled while it runs);
# - a branch fs that answers EOPNOTSUPP to O_TMPFILE gets a named temporary (fallback);
# - tracepoint unionfs_copyup_phase: one event per phase, with the kind of temporary;
# - a fault injected at each phase (sites copyup_create, copyup_data, copyup_attr,
#   copyup_rename), for a file, a directory, a symlink and a fifo, leaves the writable
#   branch byte-for-byte as it was (parent directory times included) and the union listing
#   unchanged; the same operation then succeeds.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
INJ=/sys/kernel/debug/unionfs/inject
TR=/sys/kernel/tracing
EV=$TR/events/unionfs
require_fault_injection
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1
trap 'echo 0 > "$EV/enable" 2>/dev/null; echo "clear all" > "$INJ" 2>/dev/null; _t_cleanup' EXIT
dmesg_mark

# --- O_TMPFILE: nothing but the final name in the target directory ------------------------
for fs in tmpfs ext4; do
	umount_all "$T"; rm -rf "$B0" "$B1" "$T"/img*
	branch_fs $fs "$T" 2
	mkdir "$B0/d" "$B1/d"
	head -c $((64 << 20)) /dev/zero | tr '\0' 'u' > "$B1/d/big"
	sum=$(sha1sum < "$B1/d/big")
	check "$fs: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M" || continue
	# a tight poller (no process per look): every name it ever sees, and how many looks
	rm -f "$T/stop" "$T/stop.ready"
	python3 - "$B0/d" "$T/stop" > "$T/seen" <<'PY' & ppid=$!
import os, sys
d, stop = sys.argv[1:]
seen, n = set(), 0
while not os.path.exists(stop) and n < 10**6:
    seen.update(os.listdir(d))
    n += 1
    if n == 1:
        open(stop + ".ready", "w").close()
print(n)
print(" ".join(sorted(seen)))
PY
	for ((i = 0; i < 100; i++)); do [[ -e $T/stop.ready ]] && break; sleep 0.1; done
	timeout -s KILL $(t_limit 120) sh -c "echo x >> '$M/d/big'"; rc=$?
	touch "$T/stop"
	timeout -s KILL $(t_limit 20) tail --pid=$ppid -f /dev/null; rm -f "$T/stop"
	is "$fs: 64 MiB copy-up succeeds" "$rc" 0
	polls=$(sed -n 1p "$T/seen") names=$(sed -n 2p "$T/seen")
	if ((polls >= 10)); then
		is "$fs: only the final name ever appeared in the target directory ($polls looks)" \
			"$names" "big"
	else
		not_ok "$fs: the poller looked at the directory during the copy" "$polls looks"
	fi
	is "$fs: the copy is complete" "$(head -c $((64 << 20)) "$B0/d/big" | sha1sum) $(tail -c 2 "$B0/d/big")" "$sum x"
	check "$fs: umount" umount "$M"
done

# --- phase events; fallback to a named temporary --------------------------------------------
umount_all "$T"; rm -rf "$B0" "$B1" "$T"/img*
branch_fs tmpfs "$T" 2
echo one > "$B1/f1"; echo two > "$B1/f2"; mkdir "$B1/dir"
check "mount for the phase events" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
D="dev $(stat -c %Hd:%Ld "$M")"
if [[ -d $EV/unionfs_copyup_phase ]]; then
	echo 0 > "$EV/enable"; : > "$TR/trace"; echo 1 > "$EV/unionfs_copyup_phase/enable"
	echo 1 > "$TR/tracing_on"
	echo more >> "$M/f1"
	touch "$M/dir"
	# the branch "has no O_TMPFILE": the first tmpfile hit answers EOPNOTSUPP
	echo "tmpfile errno=95 times=1" > "$INJ"
	echo more >> "$M/f2"; rc=$?
	echo "clear all" > "$INJ"
	echo 0 > "$EV/enable"
	ev=$(sed -n 's/^.* unionfs_copyup_phase: //p' "$TR/trace")
	is "phase events: a regular file, by O_TMPFILE" "$(grep " name f1 " <<< "$ev")" \
		"$D name f1 branch 0 phase prepare temp tmpfile err 0
$D name f1 branch 0 phase data temp tmpfile err 0
$D name f1 branch 0 phase meta temp tmpfile err 0
$D name f1 branch 0 phase publish temp tmpfile err 0"
	is "phase events: a directory, by a named temporary (no data phase)" \
		"$(grep " name dir " <<< "$ev")" \
		"$D name dir branch 0 phase prepare temp named err 0
$D name dir branch 0 phase meta temp named err 0
$D name dir branch 0 phase publish temp named err 0"
	is "fallback: EOPNOTSUPP from O_TMPFILE gives a named temporary, copy-up succeeds" \
		"$rc $(grep " name f2 " <<< "$ev" | awk '{ print $8 $10 }' | tr '\n' ' ')$(cat "$B0/f2" | tr '\n' ' ')" \
		"0 preparenamed datanamed metanamed publishnamed two more "
else
	not_ok "tracepoint unionfs_copyup_phase exists" "no $EV/unionfs_copyup_phase"
fi
is "no temporary name left" "$(ls -A "$B0" | grep -c unionfs)" 0
check "umount" umount "$M"

# --- a fault at each phase leaves the writable branch unchanged -----------------------------
umount_all "$T"; rm -rf "$B0" "$B1" "$T"/img*
branch_fs ext4 "$T" 2	# user.* xattrs
mkdir "$B0/p" "$B1/p"; echo keep > "$B0/p/other"
for site in copyup_create copyup_data copyup_attr copyup_rename; do
	yes "$site" | head -c 300000 > "$B1/p/reg-$site"; setfattr -n user.k -v v "$B1/p/reg-$site"
	mkdir "$B1/p/dir-$site"; echo in > "$B1/p/dir-$site/f"
	ln -s "target-$site" "$B1/p/sym-$site"
	mkfifo "$B1/p/fifo-$site"
done
chmod 640 "$B1"/p/reg-*; touch -d '2001-02-03 04:05:06' "$B1"/p/* "$B0/p" "$B0/p/other"
check "mount ext4 b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
snap() {	# the writable branch byte for byte: names, types, modes, owners, sizes, mtimes
	(cd "$B0" && find . ! -name lost+found -printf '%p %y %m %U %G %s %T@\n' | LC_ALL=C sort)
	(cd "$B0" && find . -type f -exec md5sum {} + | LC_ALL=C sort)
	(cd "$B0" && getfattr -R -d -m - . 2>/dev/null)
}
injected() { awk -v s="$1" '$1 == s { print $7 }' $INJ; }
declare -A OPS=([reg]="chmod 600" [dir]="chmod 700" [sym]="chown -h 3:3" [fifo]="chown 3:3")
ls -A "$M/p" > /dev/null
for site in copyup_create copyup_data copyup_attr copyup_rename; do
	for type in reg dir sym fifo; do
		[[ $site == copyup_data && $type != reg ]] && continue	# no data phase
		f=$M/p/$type-$site
		before=$(snap) uview=$(ls -A "$M/p" | LC_ALL=C sort)
		echo "$site errno=5" > "$INJ"
		out=$(timeout -s KILL $(t_limit 30) ${OPS[$type]} "$f" 2>&1); rc=$?
		n=$(injected $site)
		echo "clear all" > "$INJ"
		if [[ $rc != 0 && $out == *"Input/output error"* && ${n:-0} -ge 1 ]]; then
			ok "$site/$type: EIO reaches userspace"
		else
			not_ok "$site/$type: EIO reaches userspace" "rc $rc injected ${n:-?}: $out"
		fi
		after=$(snap)
		if [[ $after == "$before" ]]; then
			ok "$site/$type: writable branch byte-for-byte unchanged (parent times included)"
		else
			echo "$before" > "$T/before"; echo "$after" > "$T/after"
			not_ok "$site/$type: writable branch byte-for-byte unchanged" \
				"$(diff "$T/before" "$T/after" | head -n 12)"
		fi
		is "$site/$type: union listing unchanged" "$(ls -A "$M/p" | LC_ALL=C sort)" "$uview"
		check "$site/$type: succeeds once cleared" timeout -s KILL $(t_limit 30) ${OPS[$type]} "$f"
	done
done
is "after the retries: a copied file carries the data and xattr" \
	"$(cmp "$B0/p/reg-copyup_data" "$B1/p/reg-copyup_data" && echo same) $(stat -c %a "$B0/p/reg-copyup_data") $(getfattr --only-values -n user.k "$B0/p/reg-copyup_data")" \
	"same 600 v"
is "after the retries: copied symlink, fifo, directory" \
	"$(readlink "$B0/p/sym-copyup_rename") $(stat -c '%F %u' "$B0/p/fifo-copyup_rename") $(stat -c %a "$B0/p/dir-copyup_rename")" \
	"target-copyup_rename fifo 3 700"
is "no temporary name anywhere" "$(find "$B0" "$B1" -name '.wh..wh.unionfs.*')" ""
check "umount" umount "$M"
is "no kernel warnings" "$(dmesg_bad)" ""
finish
