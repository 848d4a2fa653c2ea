# tests/unionfs-lib.sh: union-specific helpers, sourced after tests/lib.sh.
#   S                 path of tests/sys.py (raw syscalls, prints OK or the errno name)
#   branch_fs FS DIR N   make DIR/b0..b(N-1) on FS: "tmpfs" (one tmpfs per branch) or
#                     "ext4" (one loop-mounted ext4 image per branch)
#   umount_union MNT  umount and check nothing is left mounted there
S=tests/sys.py

branch_fs() {
	local fs=$1 dir=$2 n=$3 i
	for ((i = 0; i < n; i++)); do
		mkdir -p "$dir/b$i"
		case $fs in
		tmpfs) mount -t tmpfs -o size=256m "tmp$i" "$dir/b$i" ;;
		ext4)
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
