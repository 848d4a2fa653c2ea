# tests/lib.sh: helpers for tests/t/*.sh (in the guest) and tests/host/*.sh (on the host).
#
# A test file is a bash script:
#     . "$(dirname "$0")/../lib.sh"
#     require_guest                      # tests/t/ files: refuse to run outside the guest
#     mk_tmpdir                          # $T = fresh dir under /tmp, cleaned up at exit
#     mkbranches "$T" 3                  # $T/b0 $T/b1 $T/b2
#     check "mount works" mount -i -t unionfs -o dirs="$T/b0=rw:$T/b1=ro" none "$T/m"
#     is "file content" "$(cat "$T/m/f")" "hello"
#     check_fail "rmdir non-empty" ENOTEMPTY rmdir "$T/m/d"
#
# Results:  ok DESC | not_ok DESC [DIAG] | check DESC CMD... | check_fail DESC ERR CMD... |
#           is DESC GOT EXPECTED | skip DESC REASON | skip_all REASON (exits the file)
#   check_fail passes iff CMD fails and (ERR empty or "-", or its output mentions ERR);
#   ERR is an errno name (ENOENT, EROFS, ...) or a message fragment ("No such file").
# Helpers:  require_guest | mk_tmpdir | mkbranches DIR N | umount_all DIR |
#           dmesg_mark | dmesg_since_mark | finish
#
# Each result is one line appended to $UNIONFS_TAP_OUT ("ok|not ok<TAB>desc", diagnostics as
# "#<TAB>text") and tests/run numbers and prints them. Run a file directly (bash tests/t/x.sh)
# and the results are printed as TAP to stdout instead.

# The module the guest loaded (src/unionfs.ko, or the debug kernel's build: boot --kernel debug).
UNIONFS_KO=$(sed -n 's/.*unionfs_module=\([^ ]*\).*/\1/p' /proc/cmdline 2>/dev/null)
UNIONFS_KO=${UNIONFS_KO:-src/unionfs.ko}
_T_FILE=$(basename "$0")
_T_FAILS=0
_T_N=0
_t_emit() {	# _t_emit STATUS DESC [DIAG]
	local status=$1 desc=${2//$'\n'/ } diag=${3:-}
	[[ $status == "not ok" ]] && _T_FAILS=$((_T_FAILS + 1))
	if [[ -n ${UNIONFS_TAP_OUT:-} ]]; then
		printf '%s\t%s\n' "$status" "$desc" >> "$UNIONFS_TAP_OUT"
		[[ -n $diag ]] && printf '%s\n' "$diag" | head -n 15 | sed 's/^/#\t/' >> "$UNIONFS_TAP_OUT"
	else
		_T_N=$((_T_N + 1))
		echo "$status $_T_N - $_T_FILE: $desc"
		[[ -n $diag ]] && printf '%s\n' "$diag" | head -n 15 | sed 's/^/#   /'
	fi
	return 0
}

ok() { _t_emit "ok" "$1"; }
not_ok() { _t_emit "not ok" "$1" "${2:-}"; }
skip() { _t_emit "ok" "$1 # SKIP ${2:-}"; }

skip_all() {
	_t_emit "ok" "all tests # SKIP $*"
	exit 0
}

check() {	# check DESC CMD... : pass iff CMD exits 0
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [[ $rc == 0 ]]; then
		ok "$desc"
	else
		not_ok "$desc" "\$ $*"$'\n'"exit $rc: $(tail -n 8 <<< "$out")"
	fi
	return $rc
}

_t_errmsg() {
	case $1 in
	EPERM) echo "Operation not permitted";;
	ENOENT) echo "No such file or directory";;
	EIO) echo "Input/output error";;
	EBADF) echo "Bad file descriptor";;
	EACCES) echo "Permission denied";;
	EBUSY) echo "busy";;
	EEXIST) echo "File exists";;
	EXDEV) echo "Invalid cross-device link";;
	ENODEV) echo "No such device";;
	ENOTDIR) echo "Not a directory";;
	EISDIR) echo "Is a directory";;
	EINVAL) echo "Invalid argument";;
	ENOSPC) echo "No space left on device";;
	EROFS) echo "Read-only file system";;
	ENAMETOOLONG) echo "File name too long";;
	ENOTEMPTY) echo "Directory not empty";;
	ELOOP) echo "Too many levels of symbolic links";;
	ENODATA) echo "No data available";;
	EOPNOTSUPP|ENOTSUP) echo "Operation not supported";;
	ESTALE) echo "Stale file handle";;
	*) echo "$1";;
	esac
}

check_fail() {	# check_fail DESC ERR CMD... : pass iff CMD fails (and mentions ERR)
	local desc=$1 err=$2 out rc msg
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if [[ $rc == 0 ]]; then
		not_ok "$desc" "\$ $*"$'\n'"succeeded, expected failure${err:+ ($err)}"
		return 1
	fi
	if [[ -n $err && $err != - ]]; then
		msg=$(_t_errmsg "$err")
		if ! grep -qiF -- "$msg" <<< "$out"; then
			not_ok "$desc" "\$ $*"$'\n'"failed (exit $rc) but without '$msg': $(tail -n 5 <<< "$out")"
			return 1
		fi
	fi
	ok "$desc"
}

is() {	# is DESC GOT EXPECTED [DIAG] : DIAG (what led to GOT) is shown when it fails
	if [[ "$2" == "$3" ]]; then
		ok "$1"
	else
		not_ok "$1" "got:      '$2'"$'\n'"expected: '$3'${4:+$'\n'$4}"
		return 1
	fi
}

t_limit() {	# t_limit SECONDS : a watchdog limit, scaled like the file limits on the debug kernel
	local n=$1
	[[ $(uname -r) == *-ufsdebug ]] && n=$((n * ${UNIONFS_DEBUG_TIMEOUT_SCALE:-6}))
	echo "$n"
}

require_guest() {
	if ! grep -qw 'unionfs_guest=1' /proc/cmdline 2>/dev/null; then
		echo "$_T_FILE: not in the unionfs debug guest (no unionfs_guest=1 in /proc/cmdline);" \
			"run it with: qemu-debug/boot -- tests/run" >&2
		exit 2
	fi
}

umount_all() {	# umount_all DIR : unmount everything mounted at or below DIR, deepest first
	local dir m
	dir=$(readlink -f "$1") || return 0
	for m in $(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	return 0
}

mk_tmpdir() {	# sets T to a fresh directory under /tmp; unmounted and removed at exit
	T=$(mktemp -d "/tmp/unionfs-test.${_T_FILE%.sh}.XXXXXX")
	trap '_t_cleanup' EXIT
}
_t_cleanup() {
	[[ -n ${T:-} && -d $T ]] && { umount_all "$T"; rm -rf "$T"; }
}

mkbranches() {	# mkbranches DIR N : DIR/b0 .. DIR/b(N-1)
	local i
	for ((i = 0; i < $2; i++)); do mkdir -p "$1/b$i"; done
}

_T_MARK=
dmesg_mark() {	# remember "now" in the kernel log
	_T_MARK="unionfs-test-mark-$$-$RANDOM$RANDOM"
	echo "$_T_MARK" > /dev/kmsg
}
dmesg_since_mark() {	# kernel log lines after the last dmesg_mark
	dmesg | awk -v m="$_T_MARK" 'f { print } index($0, m) { f = 1 }'
}

finish() {	# optional last line of a test file: exit status = did anything fail
	exit $((_T_FAILS > 0))
}
