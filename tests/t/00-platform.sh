#!/bin/bash
# The pipeline itself: kernel, module load/unload, guest tools, modules for peers.
. "$(dirname "$0")/../lib.sh"
require_guest

check "unionfs module is loaded" grep -qw '^unionfs' /proc/modules
check "unionfs is in /proc/filesystems" grep -qw unionfs /proc/filesystems
r=$(uname -r)
if [[ $r == 6.1.0-*-amd64 ]]; then ok "running Debian's 6.1 amd64 kernel ($r)"
elif [[ $r == 6.1.*-ufsdebug ]]; then ok "running the project's debug build of 6.1 ($r)"
else not_ok "running Debian's 6.1 amd64 kernel or the debug build" "uname -r: $r"; fi
check "rmmod unionfs" rmmod unionfs
check_fail "unionfs gone from /proc/filesystems" - grep -qw unionfs /proc/filesystems
check "insmod $UNIONFS_KO again" insmod "$UNIONFS_KO"
check "unionfs back in /proc/filesystems" grep -qw unionfs /proc/filesystems

for m in overlay fuse loop dm-flakey ext4; do
	check "modprobe $m" modprobe "$m"
done
check "tracefs is mounted" test -d /sys/kernel/tracing/events
check "debugfs is mounted" mountpoint -q /sys/kernel/debug
check "/tmp is a writable tmpfs" bash -c 'stat -f -c %T /tmp | grep -q tmpfs && touch /tmp/.w'
check "project share is writable" bash -c 'touch build/.guest-write && rm build/.guest-write'
check "bpftrace runs" bpftrace --version
# trace-cmd --version exits 255 by design: check its output, then that it sees tracefs
check "trace-cmd runs" bash -c 'trace-cmd --version 2>&1 | grep -q "trace-cmd version" &&
	trace-cmd list -e | grep -q sched_switch'
check "python3 runs" python3 -c 'import os; print(os.uname().release)'
# tests read command output with bash's <(...) and mapfile: /dev/fd must exist
is "bash process substitution works (/dev/fd)" "$(n=0; while read -r _; do n=$((n + 1)); done < <(printf 'a\nb\n'); echo $n)" 2
bad=$(dmesg | grep -E '(^|[^A-Za-z_])BUG[: ]|WARNING:|Oops')
is "dmesg has no BUG/WARNING/Oops" "$bad" ""
finish
