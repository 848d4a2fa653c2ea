# tests/unionfs-lib.sh: union-specific helpers, sourced after tests/lib.sh.
#   S                 path of tests/sys.py (raw syscalls, prints OK or the errno name)
#   branch_fs FS DIR N   make DIR/b0..b(N-1) on FS: "tmpfs" (one tmpfs per branch) or
#                     "ext4" (one loop-mounted ext4 image per branch)
#   umount_union MNT  umount and check nothing is left mounted there
S=tests/sys.py
# One python for many sys.py calls (each ~1 s less than a new python3):
#   sy_start          start "sys.py batch" as a coprocess of this shell (once per file)
#   sy WHO OP ARGS... one call in a child as WHO ("-": as is, UID or UID:G1,G2: no
#                     capabilities); prints its last line (OK or the errno name). Works in
#                     $(...), not in a background job (the coprocess is this shell's).
#   shq ARGS...       ARGS as one line of single-quoted shell words (for a batch's shlex)
shq() { local a q=; for a; do q+="'${a//\'/\'\\\'\'}' "; done; printf '%s\n' "$q"; }
sy_start() { coproc SYB { exec python3 "$S" batch 2>&1; }; }
sy() {
	local a
	shq "$@" >&"${SYB[1]}" && IFS= read -r a <&"${SYB[0]}" || a="sy: the batch died"
	echo "$a"
}

# Fault injection (/sys/kernel/debug/unionfs/inject, crash_at) exists only in a module built
# with FAULT_INJECTION=1 (make check and the other test targets build it so). A test that needs
# it FAILS, with the reason, on a module built without it: it must not pass by skipping.
#   fault_injection_built         true iff the loaded module has it
#   require_fault_injection       one "not ok" with the reason and exit, unless it has it
#   fault_arm "SITE errno=N ..."  arm a site; one "not ok" with the reason if it cannot
FI_PARAM=/sys/module/unionfs/parameters/fault_injection
FI_MSG="the loaded unionfs.ko ($UNIONFS_KO) was built without fault injection; this test needs /sys/kernel/debug/unionfs/inject: build with 'make FAULT_INJECTION=1' (make check does)"
fault_injection_built() { [[ $(cat $FI_PARAM 2>/dev/null) == Y && -w /sys/kernel/debug/unionfs/inject ]]; }
require_fault_injection() {
	fault_injection_built && return 0
	not_ok "fault injection built in" "$FI_MSG"$'\n'"$FI_PARAM: $(cat $FI_PARAM 2>&1)"
	exit 1
}
fault_arm() {
	if ! fault_injection_built; then
		not_ok "arm fault '$*'" "$FI_MSG"
		return 1
	fi
	echo "$*" > /sys/kernel/debug/unionfs/inject
}

branch_fs() {
	local fs=$1 dir=$2 n=$3 i
	for ((i = 0; i < n; i++)); do
		mkdir -p "$dir/b$i"
		case $fs in
		tmpfs) mount -t tmpfs -o size=256m "tmp$i" "$dir/b$i" ;;
		ext4)
			modprobe loop	# a file run alone has no loop devices yet
			truncate -s 128M "$dir/img$i"
			mkfs.ext4 -q -F -O ^has_journal "$dir/img$i" || return 1
			mount -o loop "$dir/img$i" "$dir/b$i" || return 1
			rmdir "$dir/b$i/lost+found" 2>/dev/null
			;;
		esac
	done
}

# names in a directory, sorted, one per line (ls -A without the tool's own rules)
names() { ls -A1 "$1" | LC_ALL=C sort; }
# tr_enum EVENT NAME: the number of NAME in an enum field of a unionfs event (its format
# file prints the field by name: __print_symbolic(REC->op, { 26, "clone" }, ...)); filters
# take the number: echo "op == $(tr_enum unionfs_branch_op clone)" > .../filter
tr_enum() {
	grep -oE "\{ [0-9]+, \"$2\" \}" "/sys/kernel/tracing/events/unionfs/$1/format" |
		head -n 1 | grep -oE '[0-9]+'
}

# Length of the reliability tests (tests/t/9x-*.sh): short by default (make check); long with
# UNIONFS_SOAK=1 (make soak), where each file repeats its workload with fresh seeds until
# UNIONFS_SOAK_SECS (default 360) have passed. soak_more START: true while another round fits.
SOAK=${UNIONFS_SOAK:-0}
SOAK_SECS=${UNIONFS_SOAK_SECS:-360}
soak_more() { ((SOAK)) && (($(date +%s) - $1 < SOAK_SECS)); }
# no_hazards MNT DESC: only the union wrote since MNT was mounted, so its direct-modification
# counters (/sys/fs/unionfs/MAJ:MIN/hazards) are all 0 and no "modified directly" notice was
# logged since the last dmesg_mark (issue 20, defect 7: the union's own changes are never
# reported, branch -1 never appears).
no_hazards() {
	local f nz
	f=/sys/fs/unionfs/$(stat -c '%Hd:%Ld' "$1")/hazards
	if [[ ! -r $f ]]; then
		not_ok "$2: no hazard counted while only the union wrote" "no $f"
		return
	fi
	nz=$(awk '$2 != 0' "$f")$(dmesg_since_mark | grep -E 'modified directly|branch -1')
	is "$2: no hazard counted while only the union wrote" "$nz" ""
}
# dmesg lines that must never appear (oops, WARN, BUG, KASAN, slab corruption)
dmesg_bad() { dmesg_since_mark | grep -E '(^|[^A-Za-z_])BUG[: ]|WARNING:|Oops|general protection|KASAN|slab.*corrupt|[Cc]all [Tt]race|still has objects'; }
# wd SECS CMD...: run CMD with a deadline, its output in $WD_OUT (a file); on expiry append the
# kernel stacks of CMD's processes and the blocked-task dump (sysrq w) to $WD_OUT, SIGKILL
# them and return 124 without waiting (a task stuck in D state would block a plain timeout).
WD_OUT=/tmp/unionfs-wd.$$
wd() {
	local secs=$1 pid i p
	shift
	"$@" > "$WD_OUT" 2>&1 &
	pid=$!
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 $pid 2>/dev/null || { wait $pid; return; }
		sleep 0.1
	done
	{
		echo "wd: still running after ${secs}s: $*"
		for p in $pid $(pgrep -P $pid) $(pgrep -g "$(ps -o pgid= $pid | tr -d ' ')" 2>/dev/null); do
			echo "--- pid $p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null) state $(awk '{print $3}' /proc/$p/stat 2>/dev/null)"
			cat /proc/$p/stack 2>/dev/null
		done
		echo w > /proc/sysrq-trigger
		dmesg | tail -n 60
	} >> "$WD_OUT" 2>&1
	kill -9 $pid $(pgrep -P $pid) 2>/dev/null
	return 124
}
