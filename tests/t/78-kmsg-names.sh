#!/bin/bash
# Names in kernel messages (issue 21, item 4): a user-controlled string printed by the module
# (file name, whiteout name, process name, mount option value, remount argument, debugfs
# command) is escaped, so a newline in it cannot forge a kernel log line and a CR or ESC
# cannot rewrite the console. Each message the module prints with such a string is triggered
# with a name like "x\nFORGED-<where> ..." and then the kernel log as the console and syslog
# show it (klogctl: one "[time] " prefix per line of a record) must have no line starting with
# FORGED, the message must be there with the name escaped ("\n"), and no unionfs line may hold
# a raw control character.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
NL=$'\n' CR=$'\r' ESC=$'\033'

# the kernel log as the console shows it (syslog READ_ALL: each line of a record prefixed)
klog() {
	python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(1 << 22)
n = libc.klogctl(3, buf, len(buf))
sys.stdout.buffer.write(buf.raw[:max(n, 0)])'
}
klog_since_mark() { klog | awk -v m="$_T_MARK" 'f { print } index($0, m) { f = 1 }'; }
# lines of the log since the mark whose text (after "<lvl>[time] ") starts with FORGED
forged() { klog_since_mark | sed -E 's/^(<[0-9]+>)?(\[ *[0-9.]+\] )?//' | grep -a '^FORGED'; }
# has_msg DESC REGEX: a unionfs line since the mark matches REGEX (grep -E on the raw log)
has_msg() {
	local n
	n=$(klog_since_mark | grep -a 'unionfs: ' | grep -acE "$2")
	if ((n >= 1)); then ok "$1"; else not_ok "$1" "$(klog_since_mark | grep -a 'unionfs: ' | tail -n 5)"; fi
}
no_forged() {	# no_forged DESC
	local f
	f=$(forged)
	if [[ -z $f ]]; then ok "$1: no forged log line"; else not_ok "$1: no forged log line" "$f"; fi
}

fresh() {	# fresh NAME: branches $T/NAME/b0 (rw), b1 (ro) on tmpfs, union at $M (not mounted)
	mkdir -p "$T/$1"
	branch_fs tmpfs "$T/$1" 2
	B0=$T/$1/b0 B1=$T/$1/b1 M=$T/$1/m
	mkdir -p "$M"
}

# --- 1. mount option values and keys -------------------------------------------------------------
fresh opt
dmesg_mark
check_fail "mount: bad branch mode with a newline refused" - \
	mount -i -t unionfs -o "dirs=$B0=rw:$B1=x${NL}FORGED-mode ${CR}${ESC}[2J" none "$M"
has_msg "mount: bad branch mode reported, escaped" "unknown branch mode 'x\\\\nFORGED-mode "
no_forged "mount: bad branch mode"
dmesg_mark
check_fail "mount: unknown option key with a newline refused" - \
	mount -i -t unionfs -o "dirs=$B0:$B1=ro,zz${NL}FORGED-key" none "$M"
has_msg "mount: unknown option reported, escaped" "unknown option 'zz\\\\nFORGED-key'"
no_forged "mount: unknown option"
dmesg_mark
check_fail "mount: branch path with a newline that does not exist refused" - \
	mount -i -t unionfs -o "dirs=$B0:$T/nope${NL}FORGED-path=ro" none "$M"
has_msg "mount: lookup failure reported, escaped" "nope\\\\nFORGED-path'"
no_forged "mount: branch path"

# --- 2. remount commands (a newline separates the module's remount commands: the checks of the
# escaping use CR and ESC; a newline must still forge nothing) -------------------------------------
check "remount: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
dmesg_mark
is "remount: del of a name with CR/ESC refused" "$($S remount "$M" "del=$T/q${CR}${ESC}[2K-del")" ENOENT
has_msg "remount: del reported, escaped" "q\\\\r\\\\e\\[2K-del' is not a branch"
is "remount: del of a name with a newline refused" "$($S remount "$M" "del=$T/q${NL}FORGED-del")" ENOENT
no_forged "remount: del"
dmesg_mark
is "remount: mode with CR/ESC refused" "$($S remount "$M" "mode=$B1=r${CR}${ESC}[2K-mode")" EINVAL
has_msg "remount: mode reported, escaped" "unknown branch mode 'r\\\\r\\\\e\\[2K-mode'"
is "remount: mode with a newline refused" "$($S remount "$M" "mode=$B1=r${NL}FORGED-rmode")" EINVAL
no_forged "remount: mode"
umount "$M"

# --- 3. lookup: a "whiteout" that is not a regular file --------------------------------------------
fresh wh
name="w${CR}${ESC}[1A${NL}FORGED-whiteout"
mkdir "$B0/.wh.$name"
echo lower > "$B1/$name"
check "whiteout: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
dmesg_mark
check_fail "whiteout: a directory .wh.NAME makes the lookup fail" EIO cat "$M/$name"
has_msg "whiteout: reported, escaped" "whiteout '\\.wh\\.w\\\\r\\\\e\\[1A\\\\nFORGED-whiteout' is not a regular file"
no_forged "whiteout: not a regular file"
umount "$M"

# --- 4. direct modification of a branch (reval): the hazard notice names the file -------------------
fresh hz
name="h${NL}FORGED-hazard"
check "hazard(reval): mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
cat "$M/$name" 2>/dev/null	# a cached negative entry
dmesg_mark
echo new > "$B1/$name"
is "hazard(reval): file created in a branch appears" "$(cat "$M/$name")" new
has_msg "hazard(reval): notice printed with the name escaped" "modified directly .*'h\\\\nFORGED-hazard'"
no_forged "hazard(reval)"
umount "$M"

# --- 5. direct modification (coherency=notify): the notice names the file and the process --------
fresh nt
check "hazard(notify): mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro,coherency=notify" none "$M"
ls "$M" > /dev/null
dmesg_mark
python3 - "$B1" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"c\nFORGED-comm", 0, 0, 0)	# PR_SET_NAME: 15 bytes at most
open(os.path.join(sys.argv[1], "n\nFORGED-notify"), "w").close()
PY
has_msg "hazard(notify): notice printed with the name and the process escaped" \
	"modified directly .*'n\\\\nFORGED-notify'.* by c\\\\nFORGED-comm\\["
no_forged "hazard(notify)"
umount "$M"

# --- 6. copy-up giving up (ESTALE) on a file the branch keeps open for writing --------------------
fresh cu
name="c${NL}FORGED-copyup"
echo lower > "$B1/$name"
check "copyup: mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
cat "$M/$name" > /dev/null
exec 7>> "$B1/$name"	# a writer on the branch file: the copy-up cannot trust it
dmesg_mark
is "copyup: refused with ESTALE while the branch file is open for writing" "$($S truncate "$M/$name" 1)" ESTALE
exec 7>&-
has_msg "copyup: give-up warning printed with the name escaped" "copy-up of 'c\\\\nFORGED-copyup' from branch 1"
no_forged "copyup: ESTALE"
umount "$M"

# --- 7. debugfs commands (test builds: fault injection) -----------------------------------------
if fault_injection_built; then
	# one write(2) each (a shell's printf writes line by line: each line a command)
	dbgw() { python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.write(fd, sys.argv[2].encode())' "$@"; }
	D=/sys/kernel/debug/unionfs
	dmesg_mark
	check_fail "debugfs inject: unknown site with a newline refused" EINVAL \
		dbgw $D/inject "x${NL}FORGED-inject errno=5"
	check_fail "debugfs inject: bad value with ESC and a newline refused" EINVAL \
		dbgw $D/inject "lookup errno=5	probability=1${ESC}${NL}FORGED-val"
	check_fail "debugfs inject: unknown key with a newline refused" EINVAL \
		dbgw $D/inject "lookup errno=5 k${NL}FORGED-key=1"
	check_fail "debugfs crash_at: unknown site with a newline refused" EINVAL \
		dbgw $D/crash_at "y${NL}FORGED-crash"
	is "debugfs: crash_at still disarmed" "$(cat $D/crash_at)" none
	has_msg "debugfs inject: unknown site reported, escaped" "unknown site 'x\\\\nFORGED-inject'"
	has_msg "debugfs inject: bad value reported, escaped" "bad value '1\\\\e\\\\nFORGED-val' for probability"
	has_msg "debugfs inject: unknown key reported, escaped" "unknown key 'k\\\\nFORGED-key'"
	has_msg "debugfs crash_at: unknown site reported, escaped" "crash_at: unknown site 'y\\\\nFORGED-crash'"
	is "debugfs: one warning line per rejected write" \
		"$(klog_since_mark | grep -ac 'unionfs: debugfs')" 4
	no_forged "debugfs"
else
	not_ok "debugfs commands with newlines" "$FI_MSG"
fi

# --- the whole log: no forged line, no unionfs line with a raw control character ---------------------
is "whole log: no line starts with FORGED" \
	"$(klog | sed -E 's/^(<[0-9]+>)?(\[ *[0-9.]+\] )?//' | grep -a '^FORGED' | cat -v)" ""
is "whole log: no unionfs line holds a raw control character" \
	"$(klog | grep -a 'unionfs: ' | grep -aP '[\x00-\x08\x0b-\x1f\x7f]' | cat -v)" ""
finish
