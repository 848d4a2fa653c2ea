#!/bin/bash
# Privilege: as uid/gid 65534 (setpriv, no capabilities) through a union b0=rw over b1=ro:
# no read of 0600 files, no write/truncate/unlink/rename/mkdir/create in root-owned dirs, no
# chmod/chown of others' files, no .wh.* names (create, mkdir, rename, link, symlink), no
# trusted.* xattr; every refused attempt leaves both branches exactly as they were (no copy-up,
# whiteout or recreated directory). setuid/setgid are stripped when the user writes (after a
# copy-up and on the writable branch). What the union creates itself (copy-ups, recreated
# parents, whiteouts, opaque markers) is never more accessible than what it stands for.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
chmod 755 "$T"
branch_fs ext4 "$T" 2		# ext4: trusted.* and user.* xattrs on the branches
M=$T/m B0=$T/b0 B1=$T/b1
mkdir -p "$M"
chmod 755 "$B0" "$B1"
dmesg_mark
# b1 (ro): root-owned things, a world-writable sticky dir with a file of the user's, setuid files
echo secret > "$B1/secret"; chmod 600 "$B1/secret"
echo pub > "$B1/pub"; chmod 644 "$B1/pub"
mkdir -p "$B1/rootdir/sub"; echo f > "$B1/rootdir/file"; chmod 755 "$B1/rootdir"
echo other > "$B1/others"; chown 1000:1000 "$B1/others"; chmod 666 "$B1/others"
mkdir -m 1777 "$B1/tmpdir"; mkdir -m 750 "$B1/tmpdir/priv"; echo p > "$B1/tmpdir/priv/p"
echo mine > "$B1/tmpdir/mine"; chown 65534:65534 "$B1/tmpdir/mine"
echo gone > "$B1/tmpdir/tobegone"; chown 65534:65534 "$B1/tmpdir/tobegone"
echo sx > "$B1/tmpdir/sx"; chown 65534:65534 "$B1/tmpdir/sx"
mkdir "$B1/tmpdir/mydir"; chown 65534:65534 "$B1/tmpdir/mydir"; echo x > "$B1/tmpdir/mydir/x"; chown 65534 "$B1/tmpdir/mydir/x"
echo s > "$B1/suid"; chown 65534:65534 "$B1/suid"; chmod 6775 "$B1/suid"
echo w > "$B1/suidroot"; chmod 4777 "$B1/suidroot"
# b0 (rw): an upper root-owned dir and an upper setuid file of the user's
mkdir "$B0/updir"; chmod 755 "$B0/updir"
echo u > "$B0/usuid"; chown 65534:65534 "$B0/usuid"; chmod 4755 "$B0/usuid"
check "mount b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || finish

AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)
u() { "${AS[@]}" python3 "$PWD/$S" "$@" 2>&1 | tail -n 1; }
ush() { "${AS[@]}" sh -c "$1" 2>&1; }
snap() {
	local b
	for b in "$B0" "$B1"; do
		(cd "$b" && find . -mindepth 1 ! -name lost+found -printf '%P %y %m %u %g %s\n' | LC_ALL=C sort)
		(cd "$b" && getfattr -R -d -m - . 2>/dev/null)
	done
}
is "running as 65534 without capabilities" "$(ush 'id -u; id -g; grep CapEff /proc/self/status')" \
	"65534"$'\n'"65534"$'\n'"CapEff:	0000000000000000"

before=$(snap)
is "read of a 0600 root file: EACCES" "$(u open "$M/secret" r)" EACCES
is "write to a 0644 root file: EACCES" "$(u open "$M/pub" w)" EACCES
is "O_TRUNC of a 0644 root file: EACCES" "$(u open "$M/pub" wt)" EACCES
is "truncate(2) of a 0644 root file: EACCES" "$(u truncate "$M/pub" 0)" EACCES
is "create in a root-owned lower dir: EACCES" "$(u open "$M/rootdir/new" wc)" EACCES
is "mkdir in a root-owned lower dir: EACCES" "$(u mkdir "$M/rootdir/nd")" EACCES
is "unlink in a root-owned lower dir: EACCES" "$(u unlink "$M/rootdir/file")" EACCES
is "rmdir in a root-owned lower dir: EACCES" "$(u rmdir "$M/rootdir/sub")" EACCES
is "rename inside a root-owned lower dir: EACCES" "$(u rename "$M/rootdir/file" "$M/rootdir/f2")" EACCES
is "rename out of a root-owned dir into a world-writable one: EACCES" "$(u rename "$M/rootdir/file" "$M/tmpdir/f2")" EACCES
is "rename of the user's file into a root-owned dir: EACCES" "$(u rename "$M/tmpdir/mine" "$M/rootdir/mine")" EACCES
is "link into a root-owned dir: EACCES" "$(u link "$M/tmpdir/mine" "$M/rootdir/l")" EACCES
is "symlink into a root-owned upper dir: EACCES" "$(u symlink x "$M/updir/s")" EACCES
is "create in the root-owned union root: EACCES" "$(u open "$M/new" wc)" EACCES
is "unlink of a root file in the root dir: EACCES" "$(u unlink "$M/pub")" EACCES
is "read inside a 0750 root-owned lower dir: EACCES" "$(u open "$M/tmpdir/priv/p" r)" EACCES
is "chmod of another user's file: EPERM" "$(u chmod "$M/others" 777)" EPERM
is "chown of another user's file: EPERM" "$(u chown "$M/others" 65534 65534)" EPERM
is "chown of the user's own file to another uid: EPERM" "$(u chown "$M/tmpdir/mine" 0 0)" EPERM
is "utimes of a root file to a given time: EPERM" "$(u utime "$M/pub" 978307200)" EPERM
is "user.* xattr on a root 0644 file: EACCES" "$(u setxattr "$M/pub" user.x 1)" EACCES
is "trusted.* xattr on the user's own file: EPERM" "$(u setxattr "$M/tmpdir/mine" trusted.x 1)" EPERM
is "create .wh.x in a world-writable dir: EPERM" "$(u open "$M/tmpdir/.wh.x" wc)" EPERM
is "mkdir .wh.d: EPERM" "$(u mkdir "$M/tmpdir/.wh.d")" EPERM
is "create .wh.__dir_opaque: EPERM" "$(u open "$M/tmpdir/.wh.__dir_opaque" wc)" EPERM
is "rename onto a .wh. name: EPERM" "$(u rename "$M/tmpdir/mine" "$M/tmpdir/.wh.mine")" EPERM
is "link to a .wh. name: EPERM" "$(u link "$M/tmpdir/mine" "$M/tmpdir/.wh.l")" EPERM
is "symlink named .wh.s: EPERM" "$(u symlink x "$M/tmpdir/.wh.s")" EPERM
is "mknod fifo named .wh.p: EPERM" "$(u mknod "$M/tmpdir/.wh.p" fifo)" EPERM
is "refused attempts left both branches exactly as they were" "$(snap)" "$before"

# security.*: the VFS leaves it to the security modules; on Debian's 6.1 (BPF LSM built in)
# an unprivileged user may set security.x on its own tmpfs file. The union must answer exactly
# what the branch filesystem answers for the same user on the same kind of file.
mkdir -p "$T/nat"; mount -t tmpfs nat "$T/nat"; echo mine > "$T/nat/mine"; chown 65534:65534 "$T/nat/mine"
native=$(u setxattr "$T/nat/mine" security.x 1)
umount "$T/nat"
is "security.* xattr on the user's own file: what the branch fs answers ($native)" "$(u setxattr "$M/tmpdir/sx" security.x 1)" "$native"

# allowed operations, and what the union creates on the user's behalf
is "the user may write its own lower file (copy-up)" "$(u open "$M/tmpdir/mine" wa)" OK
is "copy-up keeps owner and mode; the recreated parent keeps 1777 root" \
	"$(stat -c '%u %g %a' "$B0/tmpdir/mine") / $(stat -c '%u %g %a' "$B0/tmpdir")" \
	"$(stat -c '%u %g %a' "$B1/tmpdir/mine") / 0 0 1777"
is "the user may unlink its own lower file: whiteout" "$(u unlink "$M/tmpdir/tobegone") $(test -e "$B0/tmpdir/.wh.tobegone" && echo wh)" "OK wh"
wm=$(stat -c '%a %u' "$B0/tmpdir/.wh.tobegone")
is "the whiteout is root-owned and not writable by others ($wm)" "$(( (8#${wm%% *} & 8#022) == 0 )) ${wm#* }" "1 0"
is "rmdir + mkdir of the user's dir (opaque marker)" "$(ush "rm $M/tmpdir/mydir/x && rmdir $M/tmpdir/mydir && mkdir $M/tmpdir/mydir && echo done")" "done"
om=$(stat -c '%a %u' "$B0/tmpdir/mydir/.wh.__dir_opaque" 2>&1)
is "the opaque marker is root-owned and not writable by others ($om)" "$(( (8#${om%% *} & 8#022) == 0 )) ${om#* }" "1 0"
is "the new dir belongs to the user" "$(stat -c '%u %g' "$B0/tmpdir/mydir")" "65534 65534"
is "the user's write to its setuid/setgid lower file works" "$(ush "echo more >> $M/suid && echo done")" "done"
is "setuid and setgid stripped after the copy-up write (union, branch)" \
	"$(stat -c %a "$M/suid") $(stat -c %a "$B0/suid")" "775 775"
is "lower setuid original unchanged" "$(stat -c %a "$B1/suid")" 6775
is "write to a root 4777 file strips setuid" "$(ush "echo x >> $M/suidroot && echo done") $(stat -c %a "$M/suidroot")" "done 777"
is "write to the user's upper setuid file strips it" "$(ush "echo v >> $M/usuid && echo done") $(stat -c %a "$B0/usuid")" "done 755"
# root's copy-up of a 0600 file must not widen it, even for a moment visible afterwards
echo more >> "$M/secret"
is "root's copy-up of a 0600 file stays 0600 root" "$(stat -c '%a %u' "$B0/secret")" "600 0"
is "and the user still cannot read it" "$(u open "$M/secret" r)" EACCES
# nothing the union made in b0 is more accessible than its lower counterpart
wider=$(cd "$B0" && find . -mindepth 1 ! -name lost+found ! -name '.wh.*' -printf '%P %m\n' | while read -r p m; do
	[[ -e $B1/$p ]] || continue
	lm=$(stat -c %a "$B1/$p")
	(( (8#$m & ~8#$lm & 8#777) != 0 )) && echo "$p: $m over lower $lm"
done)
is "no copied-up or recreated object in b0 has a permission bit its lower original lacks" "$wider" ""
is "no .wh. file in b0 is group/world-writable" "$(find "$B0" -name '.wh.*' -perm /022)" ""
check "umount" umount "$M"
is "dmesg clean" "$(dmesg_bad)" ""
finish
