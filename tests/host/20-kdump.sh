#!/bin/bash
# Host-side: kdump of a crash injected inside copy-up, opened in crash and drgn (~35 s boot + ~15 s
# crash + ~10 s drgn).
# --kdump leaves a vmcore in build/vmcore/<ts>/ after the guest panics at `crash_at
# copyup_data`; qemu-debug/crash (trixie's crash 8.0.6, make crash) shows the panic, a
# backtrace through the copy-up code, all tasks, and the union walk names the branches and
# the in-flight copy-up's temporary, and marks a link group's index entry and a redirected
# directory's lower copy.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
[[ -n ${UNIONFS_SKIP_KDUMP:-} ]] && skip_all "UNIONFS_SKIP_KDUMP set"
if [[ $(modinfo -F fault_injection src/unionfs.ko 2>/dev/null) != yes ]]; then
	not_ok "kdump: src/unionfs.ko has crash_at" "built without fault injection: make FAULT_INJECTION=1 (make check does)"
	finish
fi

W=$(mktemp -d "$PWD/build/check/kdump.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat > "$W/guest.sh" <<'EOF'
mkdir -p /tmp/k/b0 /tmp/k/b1 /tmp/k/m
echo top > /tmp/k/b0/both; echo bottom > /tmp/k/b1/both
yes lowerdata | head -c 100000 > /tmp/k/b1/lower
mkdir -p /tmp/k/b1/deep/rd; echo in > /tmp/k/b1/deep/rd/f
echo g > /tmp/k/b1/ga; ln /tmp/k/b1/ga /tmp/k/b1/gb
mount -i -t unionfs -o dirs=/tmp/k/b0:/tmp/k/b1=ro none /tmp/k/m || exit 3
cat /tmp/k/m/both /tmp/k/m/lower > /dev/null
# a redirected directory (its lower copy is b1/deep/rd) and a link group (gb shows the entry)
mv /tmp/k/m/deep/rd /tmp/k/m/rd2 && ls /tmp/k/m/rd2 > /dev/null || exit 5
echo more >> /tmp/k/m/ga && cat /tmp/k/m/gb > /dev/null || exit 5
# copy-ups write into a nameless O_TMPFILE where the branch has one: make the branch answer
# EOPNOTSUPP once, so the named temporary (which the crash helper finds by name) is in flight
echo "tmpfile errno=95 times=1" > /sys/kernel/debug/unionfs/inject || exit 4
echo copyup_data > /sys/kernel/debug/unionfs/crash_at || exit 4
echo more >> /tmp/k/m/lower	# open for write: copy-up of "lower" into b0 -> panic
sleep 60
EOF
t0=$(date +%s)
out=$(qemu-debug/boot --kdump -- sh "$W/guest.sh" 2>&1); rc=$?
t=$(($(date +%s) - t0))
if [[ $rc != 0 ]]; then ok "kdump: boot exits non-zero ($rc, ${t}s)"; else not_ok "kdump: boot exits non-zero" "exit 0"; fi
vm=$(sed -n 's/^vmcore: //p' <<< "$out" | tr -d '\r')
if [[ -z $vm || ! -s $vm ]]; then
	not_ok "kdump: vmcore saved" "$(tail -n 15 <<< "$out")"
	finish
fi
ok "kdump: vmcore saved ($vm, $(du -m "$vm" | cut -f1) MB)"
check "kdump: vmcore is a kdump-compressed file" bash -c "head -c 8 '$vm' | grep -q KDUMP"
check "kdump: dmesg saved with the panic" grep -q "Kernel panic.*crash_at copyup_data" "$(dirname "$vm")/dmesg"
check "kdump: the loaded unionfs.ko is kept next to the vmcore" test -s "$(dirname "$vm")/unionfs.ko"

t0=$(date +%s)
if ! mk=$(make -s crash vmlinux 2>&1); then
	not_ok "make crash vmlinux" "$(tail -n 8 <<< "$mk")"
	finish
fi
co=$(timeout 240 qemu-debug/crash "$(dirname "$vm")" < qemu-debug/crash.d/walk.crash 2>&1); crc=$?
t=$(($(date +%s) - t0))
[[ -n ${UNIONFS_KEEP_CRASH_OUT:-} ]] && printf '%s\n' "$co" > "$UNIONFS_KEEP_CRASH_OUT"
is "crash: runs the command file and exits 0 (${t}s)" "$crc" 0
check "crash: version >= 8.0.4" bash -c "build/crash/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
	--library-path build/crash/root/usr/lib/x86_64-linux-gnu build/crash/root/usr/bin/crash --version |
	awk '/^crash /{ split(\$2, v, \".\"); exit !(v[1] > 8 || (v[1] == 8 && (v[2] > 0 || v[3] >= 4))) }'"
check "crash: module symbols loaded (mod -s)" grep -qE '^ffff[0-9a-f]+ +unionfs .*unionfs\.ko' <<< "$co"
check "crash: sys shows the panic" grep -q 'PANIC: "Kernel panic - not syncing: unionfs: crash_at copyup_data"' <<< "$co"
bt=$(sed -n '/^PID: .*COMMAND/,/ORIG_RAX/p' <<< "$co")
check "crash: bt goes through the copy-up code" bash -c 'grep -q "unionfs_copyup_one" <<< "$0" && grep -q "unionfs_copyup_dentry" <<< "$0" && grep -q "unionfs_open" <<< "$0"' "$bt"
n=$(grep -cE '^[ >]+[0-9]+ +[0-9]+ +[0-9]+ +ffff' <<< "$co")
if ((n >= 30)); then ok "crash: ps lists all tasks ($n)"; else not_ok "crash: ps lists all tasks" "$n tasks"; fi
check "crash: unionfs_mounts finds the union" grep -qE '^union sb 0x[0-9a-f]+ .*branches 2' <<< "$co"
check "crash: unionfs_mounts names branch 0 = /tmp/k/b0 rw" grep -qE '^  branch 0: /tmp/k/b0 +rw' <<< "$co"
check "crash: unionfs_mounts names branch 1 = /tmp/k/b1 ro" grep -qE '^  branch 1: /tmp/k/b1 +ro' <<< "$co"
check "crash: fan-out of \"lower\" shows it in b1 only" \
	grep -qE '^  \[1\] ro /tmp/k/b1 +dentry 0x[0-9a-f]+ "lower" ino' <<< "$co"
check "crash: fan-out marks gb's index entry (link group)" \
	grep -qE '^  \[0\] rw /tmp/k/b0 +dentry 0x[0-9a-f]+ "[0-9a-f-]+" ino [0-9]+ mode [0-7]+  link group: the index entry$' <<< "$co"
check "crash: fan-out marks rd2's lower dir b1/deep/rd (redirect)" \
	grep -qE '^  \[1\] ro /tmp/k/b1 +dentry 0x[0-9a-f]+ "rd" ino [0-9]+ mode [0-7]+  redirect: not under the parent.s branch dir$' <<< "$co"
check "crash: in-flight copy-up temporary found in b0" \
	grep -qE 'in-flight copy-up temporary "\.wh\.\.wh\.unionfs\.[0-9]+" in "b0"' <<< "$co"
# the same vmcore through drgn (gdb-scripts/unionfs_drgn.py; the live side: 55-drgn.sh)
dk=$(dirname "$vm")/unionfs.ko
do=$(timeout 240 drgn -q -c "$vm" -s build/vmlinux -s "$dk" gdb-scripts/unionfs_drgn.py mounts 2>&1)
is "drgn on the vmcore: mounts exits 0" "$?" 0
check "drgn: mounts names the union and both branches" bash -c \
	'grep -qE "^union /tmp/k/m  sb 0x" <<< "$0" && grep -qE "^  \[0\] rw  /tmp/k/b0 " <<< "$0" &&
	grep -qE "^  \[1\] ro  /tmp/k/b1 " <<< "$0"' "$do"
do=$(timeout 240 drgn -q -c "$vm" -s build/vmlinux -s "$dk" gdb-scripts/unionfs_drgn.py copyups 2>&1)
check "drgn: copyups finds the crashed copy-up of \"lower\" (b1 -> b0) and its named temporary" \
	grep -qE '^pid [0-9]+ [a-z]+: copy-up of "lower" branch 1 -> 0, temporary named \.wh\.\.wh\.unionfs\.[0-9]+, [0-9]+ of 100000 bytes$' <<< "$do"
if grep -q "gdb request failed" <<< "$co"; then
	not_ok "crash: no failed gdb requests" "$(grep "gdb request failed" <<< "$co" | head -n 3)"
else
	ok "crash: no failed gdb requests"
fi
finish
