#!/bin/bash
# rename(2) against every row/column of the seed's rename.txt table, checking errno,
# the union's view and the branches; flags; a failure midway leaves the view intact.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
branch_fs tmpfs "$T" 2
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1

mk() {	# mk TYPE CASE NAME
	local c=$2 n=$3
	mkdir -p "$B1/$c"
	case $1 in
	file) echo "content-$n" > "$B1/$c/$n" ;;
	dir) mkdir "$B1/$c/$n" ;;
	child) mkdir "$B1/$c/$n"; echo in > "$B1/$c/$n/in" ;;
	wh) mkdir -p "$B1/$c/$n" "$B0/$c/$n"; echo in > "$B1/$c/$n/in"; touch "$B0/$c/$n/.wh.in" ;;
	none) ;;
	esac
}
# the table: rows = source, columns = none file dir child wh
declare -A want=(
	[file,none]=OK [file,file]=OK [file,dir]=EISDIR [file,child]=EISDIR [file,wh]=EISDIR
	[dir,none]=OK [dir,file]=ENOTDIR [dir,dir]=OK [dir,child]=ENOTEMPTY [dir,wh]=OK
	[child,none]=OK [child,file]=ENOTDIR [child,dir]=OK [child,child]=ENOTEMPTY [child,wh]=OK
	[wh,none]=OK [wh,file]=ENOTDIR [wh,dir]=OK [wh,child]=ENOTEMPTY [wh,wh]=OK
)
for s in file dir child wh; do
	for d in none file dir child wh; do
		mk $s "$s-$d" src; mk $d "$s-$d" dst
	done
done
check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
for s in file dir child wh; do
	for d in none file dir child wh; do
		c=$s-$d
		before=$(cd "$M/$c" && find . | LC_ALL=C sort | tr '\n' ' ')
		got=$($S rename "$M/$c/src" "$M/$c/dst")
		is "rename $s -> $d: errno" "$got" "${want[$s,$d]}"
		after=$(cd "$M/$c" && find . | LC_ALL=C sort | tr '\n' ' ')
		if [[ $got != OK ]]; then
			is "rename $s -> $d: failed rename changed nothing" "$after" "$before"
			continue
		fi
		is "rename $s -> $d: source name gone" "$($S open "$M/$c/src" r)" ENOENT
		is "rename $s -> $d: source whited out in branch 0" "$(test -f "$B0/$c/.wh.src" && echo wh)" wh
		case $s in
		file) is "rename $s -> $d: content moved" "$(cat "$M/$c/dst")" content-src ;;
		child) is "rename $s -> $d: contents under the new name" "$(ls -A "$M/$c/dst")" in
		   is "rename $s -> $d: only the directory copied up, redirected" \
			"$(ls -A "$B0/$c/dst" | wc -l) $(getfattr --absolute-names -n trusted.unionfs.redirect --only-values "$B0/$c/dst" 2>&1)" \
			"0 $c/src" ;;
		*) is "rename $s -> $d: destination empty" "$(ls -A "$M/$c/dst" | wc -l)" 0
		   is "rename $s -> $d: destination redirected, not opaque" \
			"$(test -f "$B0/$c/dst/.wh.__dir_opaque" && echo opaque)$(getfattr --absolute-names -n trusted.unionfs.redirect --only-values "$B0/$c/dst" 2>&1)" \
			"$c/src" ;;
		esac
		is "rename $s -> $d: lower branch untouched" "$(test -e "$B1/$c/src" && echo kept)" kept
	done
done

# a non-empty directory that lives only on the writable branch moves
mkdir -p "$M/own/d"; echo 1 > "$M/own/d/f"
is "rename of a non-empty branch-0-only dir" "$($S rename "$M/own/d" "$M/own/e")" OK
is "its content moved" "$(cat "$M/own/e/f")" 1
# flags
echo a > "$M/fa"; echo b > "$M/fb"
is "RENAME_NOREPLACE onto an existing name" "$($S rename "$M/fa" "$M/fb" noreplace)" EEXIST
is "RENAME_NOREPLACE onto a new name" "$($S rename "$M/fa" "$M/fc" noreplace)" OK
is "RENAME_EXCHANGE refused" "$($S rename "$M/fb" "$M/fc" exchange)" EINVAL
is "RENAME_WHITEOUT refused" "$($S rename "$M/fb" "$M/fd" whiteout)" EINVAL
# a failure midway: the lower rename fails after the source whiteout was prepared
echo x > "$B1/mid"
fault_arm "rename errno=5 times=1"
is "injected rename failure reaches the caller" "$($S rename "$M/mid" "$M/mid2")" EIO
echo "clear all" > /sys/kernel/debug/unionfs/inject
is "after the failure the source is still visible" "$(cat "$M/mid")" x
is "after the failure no whiteout was left" "$(ls -A "$B0" | grep -c '^\.wh\.mid')" 0
is "after the failure the target does not exist" "$($S open "$M/mid2" r)" ENOENT
check "umount" umount "$M"

# the new name's directory hidden at the source's branch: a whiteout in a writable branch
# between ends its merge (udiff seed 3183): the rename happens where the directory shows
R=$T/hid
mkdir -p "$R/m"
branch_fs tmpfs "$R" 4 || not_ok "hid: make branches"
mkdir -p "$R/b0/d" "$R/b2/c/b"; echo e > "$R/b0/d/e"; touch "$R/b1/.wh.d"; echo s > "$R/b2/c/b/b"
check "hid: mount (four rw branches)" mount -i -t unionfs -o "dirs=$R/b0=rw:$R/b1=rw:$R/b2=rw:$R/b3=rw" none "$R/m"
is "hid: rename c/b/b -> d/d (d only in b0, whited out in b1)" "$($S rename "$R/m/c/b/b" "$R/m/d/d")" OK
is "hid: d/d shows the file, c/b/b is gone" "$(cat "$R/m/d/d") $(ls "$R/m/c/b" | wc -l)" "s 0"
is "hid: made in b0" "$(cat "$R/b0/d/d")" s
check "hid: umount" umount "$R/m"
finish
