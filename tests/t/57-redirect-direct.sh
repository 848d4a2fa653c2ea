#!/bin/bash
# Directory redirects (trusted.unionfs.redirect, docs/concepts.md "Directory rename") against
# branches changed directly while mounted (docs/direct-modification.md): the lower target of
# a redirected directory renamed away, deleted (while the union caches the directory),
# replaced by a file; malformed redirects set by hand on a branch directory (absolute, with
# '..', empty, longer than PATH_MAX, not NUL-clean, a '.wh.' name); redirect chains that come
# back to their start (A -> B -> A over three branches, a redirect to its own parent). Each
# time: no oops, no hang, the directory shows at least its upper copy, what was written
# through the union stays readable, and the module says so (hazard counter "redirect", the
# unionfs_redirect event "missing", a unionfs_hazard event, a kernel log line).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
branch_fs tmpfs "$T" 2
M=$T/m B0=$T/b0 B1=$T/b1
mkdir -p "$M"
S=$PWD/tests/sys.py	# absolute: a check below runs from a cwd inside the union
TR=/sys/kernel/tracing
hz() { local n; n=$(awk -v k="$1" '$1 == k { print $2 }' "/sys/fs/unionfs/$(stat -c '%Hd:%Ld' "$M")/hazards"); echo "${n:-0}"; }
setrd() { python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.unionfs.redirect", sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))' "$1" "$2"; }

for d in t1 t2 t3 t4 tgt; do mkdir -p "$B1/$d/sub"; echo "$d" > "$B1/$d/x"; done
echo s2 > "$B1/t2/sub/s2"
check "mount" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || finish
dmesg_mark
echo > "$TR/trace" 2>/dev/null
for e in unionfs_redirect unionfs_hazard; do
	[[ -d $TR/events/unionfs/$e ]] && echo 1 > "$TR/events/unionfs/$e/enable"
done

# --- the redirect target renamed away in the lower branch (the union looks again later)
is "t1: rename through the union" "$($S rename "$M/t1" "$M/r1")" OK
echo mine1 > "$M/r1/new"
mv "$B1/t1" "$B1/t1.moved"
echo 2 > /proc/sys/vm/drop_caches
is "t1 renamed away: the directory shows its upper copy" "$(timeout $(t_limit 20) ls "$M/r1" 2>&1 | tr '\n' ' ')" "new "
is "t1 renamed away: data written through the union" "$(cat "$M/r1/new" 2>&1)" mine1
is "t1 renamed away: still writable" "$( (echo more >> "$M/r1/new" && cat "$M/r1/new") 2>&1 | tr '\n' ' ')" "mine1 more "

# --- the target deleted while the union caches the directory (and its lower vector); the
# target is a subdirectory, so no lower directory of the union directory's parent changes
is "t2/sub: rename through the union" "$($S rename "$M/t2/sub" "$M/r2")" OK
echo mine2 > "$M/r2/new"
ls "$M/r2" > /dev/null
(cd "$M/r2" && exec sleep 60) & cwdpid=$!
sleep 0.2
rm -rf "$B1/t2/sub"
is "t2 deleted while cached: listing" "$(timeout $(t_limit 20) ls "$M/r2" 2>&1 | tr '\n' ' ')" "new "
is "t2 deleted while cached: data written through the union" "$(cat "$M/r2/new" 2>&1)" mine2
is "t2 deleted while cached: create inside" "$( (echo c > "$M/r2/c" && cat "$M/r2/c") 2>&1)" c
is "t2 deleted while cached: create via the cwd inside" "$( (echo d > /proc/$cwdpid/cwd/d && cat "$M/r2/d") 2>&1)" d
is "t2 deleted while cached: mkdir inside" "$($S mkdir "$M/r2/nd")" OK
kill -9 $cwdpid; wait $cwdpid 2>/dev/null
is "t2: the new names landed in the writable branch" "$(cd "$B0/r2" && ls | tr '\n' ' ')" "c d nd new "

# --- the target replaced by a file
is "t3: rename through the union" "$($S rename "$M/t3" "$M/r3")" OK
echo mine3 > "$M/r3/new"
rm -rf "$B1/t3"; echo file > "$B1/t3"
echo 2 > /proc/sys/vm/drop_caches
is "t3 replaced by a file: listing" "$(timeout $(t_limit 20) ls "$M/r3" 2>&1 | tr '\n' ' ')" "new "
is "t3 replaced by a file: data written through the union" "$(cat "$M/r3/new" 2>&1)" mine3
is "t3 replaced by a file: the old name stays hidden" "$($S open "$M/t3" r)" ENOENT

if [[ -r $TR/trace ]]; then
	is "tracepoint: redirect missing" "$(grep -c 'unionfs_redirect:.*redirect t[13] missing' "$TR/trace" | grep -c '^[1-9]')" 1
	is "tracepoint: hazard traced for a missing target" "$(grep -c 'unionfs_hazard:.*kind redirect' "$TR/trace" | grep -c '^[1-9]')" 1
fi
is "hazard counter: missing targets counted" "$(( $(hz redirect) >= 3 ))" 1

# --- malformed redirects set by hand on a branch directory (never looked up before)
long=$(printf 'a%.0s' $(seq 5000))
i=0
for v in '/t4' 't4/../t4' '..' 't4/' 't4//sub' '.wh.t4' 't4\x00sub' "$long"; do
	i=$((i + 1))
	mkdir "$B0/bad$i"; echo own$i > "$B0/bad$i/own"
	setrd "$B0/bad$i" "$v" 2>/dev/null || { skip "bad$i: value '${v:0:20}'" "setxattr refused"; continue; }
	is "bad redirect '${v:0:20}': the upper copy shows" "$(timeout $(t_limit 20) ls "$M/bad$i" 2>&1 | tr '\n' ' ')" "own "
	is "bad redirect '${v:0:20}': its file reads" "$(cat "$M/bad$i/own" 2>&1)" own$i
	is "bad redirect '${v:0:20}': create inside" "$($S mkdir "$M/bad$i/n")" OK
done
# empty: setxattr of an empty value
mkdir "$B0/bad0"; echo own0 > "$B0/bad0/own"
setfattr -n trusted.unionfs.redirect -v '""' "$B0/bad0" 2>/dev/null || python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.unionfs.redirect", b"")' "$B0/bad0"
is "bad redirect (empty): the upper copy shows" "$(timeout $(t_limit 20) ls "$M/bad0" 2>&1 | tr '\n' ' ')" "own "
is "bad redirect: hazard counted" "$(( $(hz redirect) >= 3 + 8 ))" 1
is "bad redirect: logged (escaped)" "$(dmesg_since_mark | grep -c 'invalid redirect' | grep -c '^[1-9]')" 1
is "a hazard notice in the log" "$(dmesg_since_mark | grep -c 'modified directly')" 1
is "no oops, WARN or BUG" "$(dmesg_bad)" ""
umount "$M"

# --- chains that come back: A -> B -> A over three branches, and a redirect to its parent
mkdir -p "$T/3"; branch_fs tmpfs "$T/3" 3
C0=$T/3/b0 C1=$T/3/b1 C2=$T/3/b2
mkdir -p "$C0/A" "$C1/B" "$C2/A" "$C0/S/sub" "$C1/S/sub/sub"
echo 0 > "$C0/A/a0"; echo 1 > "$C1/B/b1"; echo 2 > "$C2/A/a2"
echo s1 > "$C1/S/s1"; echo ss > "$C1/S/sub/ss"
check "3 branches: mount" mount -i -t unionfs -o "dirs=$C0=rw:$C1=rw:$C2=ro" none "$M"
setrd "$C0/A" B; setrd "$C1/B" A; setrd "$C0/S/sub" S
is "A -> B -> A: merged, bounded" "$(timeout $(t_limit 20) ls "$M/A" 2>&1 | tr '\n' ' ')" "a0 a2 b1 "
is "A -> B -> A: lower file reads" "$(cat "$M/A/a2" 2>&1)" 2
is "redirect to its parent: bounded walk" "$(timeout $(t_limit 30) find "$M/S" 2>&1 | sed "s|$M/||" | LC_ALL=C sort | tr '\n' ' ')" \
	"S S/s1 S/sub S/sub/s1 S/sub/sub S/sub/sub/ss S/sub/sub/sub "
echo w > "$M/S/sub/w"
is "redirect to its parent: write lands in the upper copy" "$(cat "$C0/S/sub/w" 2>&1)" w
umount "$M"
is "no oops, WARN or BUG (chains)" "$(dmesg_bad)" ""
finish
