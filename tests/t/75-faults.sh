#!/bin/bash
# Fault injection (/sys/kernel/debug/unionfs/inject): for EVERY site, arm it, run one union
# operation that reaches it, and check that the injected errno reaches userspace, that the
# site really fired (its "injected" counter), that nothing is lost or half-done (both branches
# byte-for-byte as before: original intact, no partial copy, no stray whiteout, no temporary
# ".wh..wh.unionfs.*"), that the union still shows the same names, and that the operation
# works once the site is cleared. Plus: input validation (EINVAL) and a clean dmesg.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
branch_fs ext4 "$T" 2	# ext4: user.* xattrs (tmpfs in 6.1 has none)
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1
INJ=/sys/kernel/debug/unionfs/inject
CRASH=/sys/kernel/debug/unionfs/crash_at
require_fault_injection

# --- interface: validation ------------------------------------------------------------------
for bad in "nosuchsite errno=5" "lookup" "lookup errno=0" "lookup errno=5000" \
	"lookup errno=5 probability=101" "lookup errno=5 bogus=1" "lookup errno=5 times" \
	"clear nosuchsite" "clear"; do
	check_fail "inject rejects '$bad' (EINVAL)" EINVAL bash -c "echo '$bad' > $INJ"
done
dmesg_mark
check_fail "inject rejects a misspelt site name (EINVAL)" EINVAL bash -c "echo 'lookups errno=5' > $INJ"
is "inject: one warning line naming the unknown site" \
	"$(dmesg_since_mark | grep -c "unionfs: debugfs inject: unknown site 'lookups'$")" 1
is "inject: the misspelt name armed nothing" "$(awk '!/^#/ && $2 != 0' $INJ)" ""
dmesg_mark
check_fail "crash_at rejects an unknown site (EINVAL)" EINVAL bash -c "echo nosuchsite > $CRASH"
is "crash_at: one warning line naming the unknown site" \
	"$(dmesg_since_mark | grep -c "unionfs: debugfs crash_at: unknown site 'nosuchsite'$")" 1
dmesg_mark
check_fail "crash_at rejects an empty name (EINVAL)" EINVAL bash -c "echo > $CRASH"
is "crash_at: one warning line for the empty name" "$(dmesg_since_mark | grep -c "unionfs: debugfs crash_at: unknown site ''$")" 1
check "crash_at accepts 'none' with blanks around it" bash -c "echo '  none ' > $CRASH"
dmesg_mark
check_fail "inject: a command over 256 bytes is refused (EINVAL)" EINVAL \
	bash -c "printf '%0300d' 0 > $INJ"
is "inject: one warning line for the long command" "$(dmesg_since_mark | grep -c 'unionfs: debugfs: command of 300 bytes')" 1
is "fault_injection parameter says Y" "$(cat /sys/module/unionfs/parameters/fault_injection)" Y
is "modinfo: fault_injection: yes" "$(modinfo -F fault_injection "$UNIONFS_KO")" yes
check_fail "fault_injection parameter is read-only" - bash -c "echo N > /sys/module/unionfs/parameters/fault_injection"
is "crash_at reads 'none' when disarmed" "$(cat $CRASH)" "none"
check "inject accepts all keys" sh -c "echo 'lookup errno=5 probability=50 interval=3 times=2' > $INJ"
is "inject table shows the armed site" "$(awk '$1 == "lookup" { print $2, $3, $4, $5 }' $INJ)" "5 50 3 2"
check "clear all" sh -c "echo 'clear all' > $INJ"
is "all sites disarmed after 'clear all'" "$(awk '!/^#/ && $2 != 0' $INJ)" ""
sites=$(awk '!/^#/ { print $1 }' $INJ | sort | tr '\n' ' ')

# --- fixtures --------------------------------------------------------------------------------
# b0 (rw): f0 (file), sl (symlink to f0), d0 (empty dir), xf (file with user.k, user.g)
# b1 (ro): both (also in b0, different data), lo* (lower-only files), ldir (lower-only dir),
#          rd/ (dir with entries, never listed before its test)
echo upper > "$B0/f0"; ln -s f0 "$B0/sl"; mkdir "$B0/d0"; echo x > "$B0/xf"; setfattr -n user.k -v v "$B0/xf"
setfattr -n user.g -v g "$B0/xf"	# for getxattr (removexattr's retry removes user.k)
echo top > "$B0/both"; echo bottom > "$B1/both"
for n in lk op cc cd ca cr wh; do
	yes "lower-$n" | head -c 320000 > "$B1/lo$n"	# 320 KB: data to copy
	chmod 640 "$B1/lo$n"; touch -d '2001-02-03 04:05:06' "$B1/lo$n"
done
mkdir "$B1/ldir" "$B1/rd"; touch "$B1/rd/a" "$B1/rd/b"
mkdir -p "$B1/mvd/sub"; echo m > "$B1/mvd/m"; echo s > "$B1/mvd/sub/s"	# a redirected rename
check "mount b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M" || finish
# rmdir of a lower-only dir leaves .wh.ldir in b0; mkdir over it then needs an opaque marker
check "rmdir lower-only dir (whiteout for the opaque case)" rmdir "$M/ldir"

snap() {	# both branches: names, types, modes, sizes, mtimes, xattrs, data checksums
	local b
	for b in "$B0" "$B1"; do
		(cd "$b" && find . -mindepth 1 ! -name lost+found -printf '%P %y %m %s %T@\n' | LC_ALL=C sort)
		(cd "$b" && find . -type f -exec md5sum {} + | LC_ALL=C sort)
		(cd "$b" && getfattr -R -d -m - . 2>/dev/null)
	done
}
stray() { find "$B0" "$B1" -name '.wh..wh.unionfs.*'; }
injected() { awk -v s="$1" '$1 == s { print $7 }' $INJ; }

declare -A E=(	# errno each site injects: several values, so the number itself is checked
	[lookup]=EIO [readdir]=EIO [open]=EACCES [create]=ENOSPC [mkdir]=ENOSPC [mknod]=EIO
	[symlink]=EIO [link]=EMLINK [unlink]=EBUSY [rmdir]=EBUSY [rename]=EIO [setattr]=EPERM
	[setxattr]=ENOSPC [removexattr]=EIO [copyup_create]=ENOSPC [copyup_data]=EIO
	[copyup_attr]=EPERM [copyup_rename]=EIO [whiteout]=ENOSPC [opaque]=EIO)
E[tmpfile]=ENOSPC
E+=([lookup_locked]=EIO [getattr]=EIO [get_link]=EACCES [getxattr]=EIO [listxattr]=EPERM
	[read]=EIO [write]=ENOSPC [fsync]=EIO [fallocate]=ENOSPC [statfs]=EIO)
declare -A ENUM=([EPERM]=1 [EIO]=5 [EACCES]=13 [EBUSY]=16 [ENOSPC]=28 [EMLINK]=31)
declare -A EMSG=([EPERM]="Operation not permitted" [EIO]="Input/output error"
	[EACCES]="Permission denied" [EBUSY]="Device or resource busy"
	[ENOSPC]="No space left on device" [EMLINK]="Too many links")
errnum() { echo "${ENUM[$1]}"; }
errmsg() { echo "${EMSG[$1]}"; }

declare -A OP=(	# the union operation that reaches the site; UNDO restores after the retry
	[lookup]="stat $M/lolk"
	[readdir]="ls $M/rd"
	[open]="cat $M/f0"
	[create]="touch $M/newf"
	[mkdir]="mkdir $M/newd"
	[mknod]="mkfifo $M/newp"
	[symlink]="ln -s target $M/newl"
	[link]="ln $M/f0 $M/f0link"
	[unlink]="rm $M/f0"
	[rmdir]="rmdir $M/d0"
	[rename]="mv $M/xf $M/xf2"
	[setattr]="chmod 600 $M/f0"
	[setxattr]="setfattr -n user.new -v 1 $M/xf"
	[removexattr]="setfattr -x user.k $M/xf"
	[copyup_create]="sh -c 'echo more >> $M/locc'"
	[copyup_data]="chmod 600 $M/locd"
	[copyup_attr]="truncate -s 100 $M/loca"
	[copyup_rename]="touch $M/locr"
	[whiteout]="rm $M/lowh"
	[opaque]="mkdir $M/ldir")
# O_TMPFILE (a file with no name: the branches must stay the same even when it succeeds)
OP[tmpfile]="python3 -c 'import os; os.close(os.open(\"$M\", os.O_TMPFILE | os.O_WRONLY, 0o600))'"
# the calls on branch objects that are not namespace changes (lower.c wrappers)
PY="python3 -c 'import os; fd = os.open(\"$M/f0\", os.O_RDWR | os.O_APPEND)"
OP+=([lookup_locked]="touch $M/newf" [getattr]="stat $M/f0" [get_link]="readlink -v $M/sl"
	[getxattr]="getfattr -n user.g $M/xf" [listxattr]="getfattr -d $M/xf" [read]="cat $M/f0"
	[write]="$PY; os.write(fd, b\"x\")'" [fsync]="$PY; os.fsync(fd)'"
	[fallocate]="fallocate -n -l 65536 $M/f0" [statfs]="stat -f $M")
declare -A UNDO=(
	[create]="rm $M/newf" [mkdir]="rmdir $M/newd" [mknod]="rm $M/newp"
	[symlink]="rm $M/newl" [link]="rm $M/f0link" [unlink]="sh -c 'echo upper > $M/f0'"
	[rmdir]="mkdir $M/d0" [rename]="mv $M/xf2 $M/xf" [lookup_locked]="rm $M/newf"
	[write]="sh -c 'echo upper > $M/f0'")

LIMIT=20
bounded() {	# bounded CMD: run CMD (eval) with output in $out; 124 if still running after LIMIT s
	local i
	eval "$1" > "$T/out" 2>&1 &
	bpid=$!
	for ((i = 0; i < LIMIT * 10; i++)); do
		if ! kill -0 $bpid 2>/dev/null; then
			wait $bpid; local rc=$?
			out=$(<"$T/out")
			return $rc
		fi
		sleep 0.1
	done
	out=$(<"$T/out")
	return 124
}

dmesg_mark
tested=
for site in lookup readdir open create mkdir mknod symlink link unlink rmdir rename setattr \
	setxattr removexattr copyup_create copyup_data copyup_attr copyup_rename whiteout opaque \
	tmpfile lookup_locked getattr get_link getxattr listxattr read write fsync fallocate \
	statfs; do
	e=${E[$site]} op=${OP[$site]}
	tested+="$site "
	before=$(snap) uview=$(ls -A "$M" | LC_ALL=C sort)
	echo "$site errno=$(errnum "$e")" > $INJ || { not_ok "$site: arm"; continue; }
	bounded "$op"; rc=$?
	n=$(injected "$site")
	if [[ $rc == 124 ]]; then
		not_ok "$site: operation returns (hung >${LIMIT}s: $op)" "$(cat /proc/$bpid/stack 2>/dev/null)"
		echo "clear all" > $INJ
		break
	fi
	echo "clear $site" > $INJ
	msg=$(errmsg "$e")
	if [[ $rc != 0 ]] && grep -qiF -- "$msg" <<< "$out" && [[ ${n:-0} -ge 1 ]]; then
		ok "$site: $e reaches userspace ($op)"
	else
		not_ok "$site: $e reaches userspace ($op)" "exit $rc, injected=${n:-?}: $out"
	fi
	after=$(snap)
	if [[ $after == "$before" ]]; then
		ok "$site: branches unchanged (original intact, no partial copy or whiteout)"
	else
		not_ok "$site: branches unchanged" "$(diff <(echo "$before") <(echo "$after") | head -n 12)"
	fi
	is "$site: no temporary .wh..wh.unionfs.* left" "$(stray)" ""
	is "$site: union shows the same names" "$(ls -A "$M" | LC_ALL=C sort)" "$uview"
	# disarmed, the same operation works (the failure left no poisoned cache behind)
	bounded "$op"; rc=$?
	if [[ $rc == 124 ]]; then
		not_ok "$site: retry returns (hung >${LIMIT}s: $op)" "$(cat /proc/$bpid/stack 2>/dev/null)"
		break
	elif [[ $rc == 0 ]]; then
		ok "$site: succeeds once cleared"
	else
		not_ok "$site: succeeds once cleared" "$out"
	fi
	[[ -n ${UNDO[$site]:-} ]] && eval "${UNDO[$site]}"
done
# --- directory rename with a redirect (docs/concepts.md "Directory rename"): a fault at each
# step that changes a branch (the redirect marker, the whiteout of the old name, the branch
# rename) leaves it all or nothing: the old name with its contents, no new name, no redirect
# left on the directory, no whiteout of the old name, the lower branch untouched
rdx() { python3 -c 'import os,sys
try: print(os.getxattr(sys.argv[1], "trusted.unionfs.redirect").decode())
except OSError as e: print("none")' "$1"; }
lsnap() { (cd "$B1" && find mvd -printf '%P %y %m %s %T@\n' | LC_ALL=C sort; find mvd -type f -exec md5sum {} +); }
l0=$(lsnap)
for site in redirect whiteout rename; do
	[[ $site == redirect ]] && tested+="redirect "	# (the other two: in the loop above too)
	uview=$(ls -A "$M" | LC_ALL=C sort)
	echo "$site errno=5 times=1" > $INJ || { not_ok "dir rename, $site: arm"; continue; }
	bounded "python3 tests/sys.py rename $M/mvd $M/mvd2"; rc=$?
	n=$(injected "$site")
	echo "clear $site" > $INJ
	is "dir rename, fault at $site: EIO, injected" "$rc:$out:$(( ${n:-0} >= 1 ))" "1:EIO:1"
	is "dir rename, fault at $site: old name with its contents" \
		"$(names "$M/mvd" | tr '\n' ' ')$(cat "$M/mvd/m" "$M/mvd/sub/s" 2>&1 | tr '\n' ' ')" "m sub m s "
	is "dir rename, fault at $site: no new name" "$(python3 tests/sys.py open "$M/mvd2" r)" ENOENT
	is "dir rename, fault at $site: no redirect left, no whiteout, no temporary" \
		"$(rdx "$B0/mvd")|$(test -e "$B0/.wh.mvd" && echo wh)|$(test -e "$B0/mvd2" && echo mvd2)|$(stray)" "none|||"
	is "dir rename, fault at $site: union shows the same names" "$(ls -A "$M" | LC_ALL=C sort)" "$uview"
	is "dir rename, fault at $site: lower branch untouched" "$(lsnap)" "$l0"
done
is "dir rename after the faults: succeeds" "$(python3 tests/sys.py rename "$M/mvd" "$M/mvd2")" OK
is "dir rename after the faults: contents under the new name, redirect set" \
	"$(cat "$M/mvd2/m" "$M/mvd2/sub/s" | tr '\n' ' ')$(rdx "$B0/mvd2") $(test -e "$B0/.wh.mvd" && echo wh)" "m s mvd wh"
check "dir rename after the faults: rename back" python3 tests/sys.py rename "$M/mvd2" "$M/mvd"

# sites whose fault the operation absorbs (it falls back), tested where the fallback is
tested+="copyup_clone "	# a refused clone is a copy: tests/t/54-reflink.sh
tested+="index "	# a lookup of a link group's name: tests/t/59-index-identity.sh
is "every site of the inject table was tested" "$(tr " " "\n" <<< "$tested" | grep . | sort | tr "\n" " ")" "$sites"

# after the retries: copied-up files carry the lower data and attributes
is "copy-up after a failed copy-up: data intact" \
	"$(cmp "$B1/locd" "$B0/locd" && echo same) $(stat -c %a "$B0/locd")" "same 600"
is "whiteout after a failed whiteout: name hidden, lower intact" \
	"$(test -e "$M/lowh" || echo gone) $(test -f "$B0/.wh.lowh" && echo wh) $(stat -c %s "$B1/lowh")" \
	"gone wh 320000"
is "opaque after a failed opaque mark: new dir is opaque" \
	"$(test -f "$B0/ldir/.wh.__dir_opaque" && echo opaque)" "opaque"

# probability/interval/times semantics on one site
echo "open errno=5 interval=2 times=1" > $INJ
r=""; for i in 1 2 3 4; do cat "$M/f0" >/dev/null 2>&1 && r+=o || r+=x; done
echo "clear open" > $INJ
is "interval=2 times=1: only the 2nd open fails" "$r" "oxoo"
echo "open errno=5 probability=0" > $INJ
r=""; for i in 1 2 3; do cat "$M/f0" >/dev/null 2>&1 && r+=o || r+=x; done
echo "clear all" > $INJ
is "probability=0 never fails" "$r" "ooo"

check "umount" umount "$M"
bad=$(dmesg_since_mark | grep -E '(^|[^A-Za-z_])BUG[: ]|WARNING:|Oops|[Cc]all [Tt]race')
is "dmesg clean" "$bad" ""
finish
