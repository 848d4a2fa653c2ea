#!/bin/bash
# Lookup by priority on tmpfs and ext4 branches: duplicate elimination, whiteouts,
# opaque directories, directory merging, file-over-directory, .wh. names refused,
# negative dentries turning positive, stable inode numbers, hard links.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop

for fs in tmpfs ext4; do
	D=$T/$fs
	mkdir -p "$D/m"
	branch_fs $fs "$D" 3 || { not_ok "$fs: make branches"; continue; }
	B0=$D/b0 B1=$D/b1 B2=$D/b2 M=$D/m
	# b0 (rw) over b1 (ro) over b2 (ro)
	echo top > "$B0/dup"; echo mid > "$B1/dup"; echo low > "$B2/dup"
	echo only2 > "$B2/low"
	echo hidden > "$B2/wh1"; touch "$B1/.wh.wh1"
	echo hidden > "$B1/wh0"; touch "$B0/.wh.wh0"
	mkdir -p "$B0/d" "$B1/d" "$B2/d"
	echo 0 > "$B0/d/a"; echo 1 > "$B1/d/b"; echo 2 > "$B2/d/c"
	mkdir -p "$B0/od" "$B1/od" "$B2/od"; touch "$B1/od/.wh.__dir_opaque"
	echo 0 > "$B0/od/x"; echo 1 > "$B1/od/y"; echo 2 > "$B2/od/z"
	echo file > "$B0/fod"; mkdir -p "$B1/fod"; echo 1 > "$B1/fod/inner"
	mkdir -p "$B0/dof"; echo f > "$B1/dof"; echo 1 > "$B0/dof/i"
	echo x > "$B1/.wh.sneaky"   # a whiteout for a name nobody has
	mkdir -p "$B2/deep/er/est"; echo bottom > "$B2/deep/er/est/f"
	ln "$B2/low" "$B2/low-link"

	check "$fs: mount 3 branches" mount -i -t unionfs -o "dirs=$B0:$B1=ro:$B2=ro" none "$M" || continue
	is "$fs: highest priority copy wins" "$(cat "$M/dup")" top
	is "$fs: lower-only file visible" "$(cat "$M/low")" only2
	is "$fs: whiteout in b1 hides b2 file" "$($S open "$M/wh1" r)" ENOENT
	is "$fs: whiteout in b0 hides b1 file" "$($S open "$M/wh0" r)" ENOENT
	is "$fs: directories merge" "$(names "$M/d" | tr '\n' ' ')" "a b c "
	is "$fs: merged dir files readable" "$(cat "$M/d/a" "$M/d/b" "$M/d/c" | tr -d '\n')" 012
	is "$fs: opaque dir hides lower branches" "$(names "$M/od" | tr '\n' ' ')" "x y "
	is "$fs: opaque: lower name not found" "$($S open "$M/od/z" r)" ENOENT
	is "$fs: file above a directory hides it" "$(stat -c %F "$M/fod")" "regular file"
	is "$fs: dir above a file wins" "$(stat -c %F "$M/dof")" directory
	is "$fs: deep lower path" "$(cat "$M/deep/er/est/f")" bottom
	is "$fs: .wh. names cannot be looked up" "$($S open "$M/.wh.sneaky" r)" EPERM
	is "$fs: .wh. names cannot be created" "$($S open "$M/.wh.new" wc)" EPERM
	is "$fs: whiteouts never listed" "$(names "$M" | grep -c '^\.wh\.')" 0
	is "$fs: whited-out names not listed" "$(names "$M" | grep -cx 'wh[01]')" 0

	# negative lookups are cached and turn positive when created through the union
	is "$fs: negative lookup" "$($S open "$M/later" r)" ENOENT
	echo now > "$M/later"
	is "$fs: negative dentry turned positive" "$(cat "$M/later")" now
	is "$fs: created on branch 0" "$(cat "$B0/later")" now

	# inode numbers: stable across lookups, unique, hard links share one
	i1=$(stat -c %i "$M/low"); echo 3 > /proc/sys/vm/drop_caches; i2=$(stat -c %i "$M/low")
	is "$fs: inode number stable across cache drops" "$i1" "$i2"
	is "$fs: hard links in one branch share the union inode" "$(stat -c %i "$M/low-link")" "$i1"
	n=$(find "$M" -xdev | wc -l); u=$(find "$M" -xdev -printf '%i\n' | sort -u | wc -l)
	hl=1
	is "$fs: inode numbers unique (one shared hard link)" "$u" "$((n - hl))"
	is "$fs: stat st_dev is the union's" "$(stat -c %d "$M/low")" "$(stat -c %d "$M")"
	check "$fs: umount" umount "$M"
	umount_all "$D"
done
finish
