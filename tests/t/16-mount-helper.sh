#!/bin/bash
# fstab, systemd and `mount -t unionfs` beside Debian's unionfs-fuse (issue 24): unionfs-fuse
# installs /usr/sbin/mount.unionfs (a FUSE helper), which mount(8) runs for every mount of
# type unionfs that is not `mount -i`. `make install-mount-helper` (part of make install)
# diverts it to mount.unionfs.fuse with dpkg-divert and installs src/mount-helper/mount.unionfs,
# which mounts the kernel module for its options and hands unionfs-fuse syntax to the FUSE
# helper. In a private mount namespace with an overlay on /usr/sbin (the guest's / is
# read-only) holding unionfs-fuse's real helper (build/unionfs-fuse/, from the .deb; or the
# same 6 lines below) and a mount.fuse that only logs, and a scratch dpkg database
# (DPKG_ADMINDIR), it checks: before the install a kernel-style fstab line runs the FUSE
# helper; after it an fstab line mounts the kernel union with its generic flags, a FUSE-style
# line reaches the FUSE helper (and mount.fuse) unchanged, umount, the command line systemd
# runs for a .mount unit, remount through the helper, the helper's errors and exit codes,
# modprobe when the module is not loaded, and that uninstall puts unionfs-fuse's helper back.
. "$(dirname "$0")/../lib.sh"
require_guest
if [[ -z ${_UNIONFS_T16_NS:-} ]]; then
	_UNIONFS_T16_NS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
mk_tmpdir
trap 'umount -l /usr/sbin 2> /dev/null; _t_cleanup' EXIT
mkbranches "$T" 2
mkdir -p "$T/m" "$T/m2" "$T/up" "$T/work" "$T/admin" "$T/bin"
echo lower > "$T/b1/f"
printf '#!/bin/sh\nexit 0\n' > "$T/b1/x"
chmod 755 "$T/b1/x"
SB=/usr/sbin
H=$SB/mount.unionfs
PROJ=$PWD

fusedeb=build/unionfs-fuse/usr/sbin/mount.unionfs	# dpkg-deb -x of unionfs-fuse_1.0-1+b1
if [[ -f $fusedeb ]]; then
	cp "$fusedeb" "$T/fuse-helper"
else	# the same 6 lines
	cat > "$T/fuse-helper" <<-'EOF'
	#!/bin/bash

	label=$1
	mpoint=$2
	shift 3
	dirs=${@##*,dirs=}
	dirs=${dirs/,/:}
	mount.fuse "unionfs#$dirs" "$mpoint" -o ${@%%,dirs=*} 

	EOF
fi
chmod 755 "$T/fuse-helper"

if ! mount -t overlay overlay -o "lowerdir=$SB,upperdir=$T/up,workdir=$T/work" "$SB"; then
	not_ok "overlay on /usr/sbin"
	finish
fi
# (rm first: never write through a symlink of the lower /usr/sbin, e.g. fuse3's mount.fuse)
rm -f "$H" "$SB/mount.fuse"
cp "$T/fuse-helper" "$H"
# the FUSE side: mount.fuse logs how it was called (the guest has no fuse)
printf '#!/bin/sh\necho "$*" >> %s/fuse.log\nexit 0\n' "$T" > "$SB/mount.fuse"
chmod 755 "$SB/mount.fuse"
export DPKG_ADMINDIR=$T/admin

type_of() { awk -v m="$1" '$2 == m { t = $3 } END { print t }' /proc/mounts; }
opts_of() { awk -v m="$1" '$2 == m { o = $4 } END { print o }' /proc/mounts; }
fuselog() { cat "$T/fuse.log" 2>/dev/null; }
fstab_kernel="none $T/m unionfs dirs=$T/b0=rw:$T/b1=ro,nosuid,nodev,noexec 0 0"
echo "$fstab_kernel" > "$T/fstab"

# without our helper: unionfs-fuse's runs
out=$(mount --fstab "$T/fstab" "$T/m" 2>&1)
is "without the helper: the fstab line goes to unionfs-fuse's helper (mount.fuse)" \
	"$(fuselog)" "unionfs#$T/b0=rw:$T/b1=ro $T/m -o rw,nosuid,nodev,noexec"
is "without the helper: no kernel union" "$(type_of "$T/m")" ""
rm -f "$T/fuse.log"

out=$(cd "$PROJ" && make -s install-mount-helper 2>&1)
is "make install-mount-helper (DESTDIR empty, DPKG_ADMINDIR scratch) exits 0" "$?" 0
[[ -n $out ]] && echo "# $out"
check "$H is ours" grep -q unionfs-kernel-mount-helper "$H"
check "unionfs-fuse's helper kept as $H.fuse" cmp "$T/fuse-helper" "$H.fuse"
is "dpkg-divert: a local diversion" "$(dpkg-divert --listpackage "$H")" LOCAL
is "dpkg-divert --truename" "$(dpkg-divert --truename "$H")" "$H.fuse"
out=$(cd "$PROJ" && make -s install-mount-helper 2>&1)
is "install again: exits 0" "$?" 0
check "install again: unionfs-fuse's helper still $H.fuse" cmp "$T/fuse-helper" "$H.fuse"

# (1) fstab, kernel syntax
out=$(mount --fstab "$T/fstab" "$T/m" 2>&1)
is "fstab line: mount --fstab exits 0" "$?" 0
[[ -n $out ]] && echo "# $out"
is "fstab line: type unionfs in /proc/mounts" "$(type_of "$T/m")" unionfs
o=$(opts_of "$T/m")
for f in nosuid nodev noexec "dirs=$T/b0=rw:$T/b1=ro"; do
	check "fstab line: $f in /proc/mounts" grep -qx -- "$f" <<< "${o//,/$'\n'}"
done
is "fstab line: the union shows the lower file" "$(cat "$T/m/f" 2>&1)" lower
check_fail "fstab line: noexec applies" EACCES "$T/m/x"
is "fstab line: unionfs-fuse's helper not run" "$(fuselog)" ""
# (3) umount
check "umount" umount "$T/m"
is "umount: gone from /proc/mounts" "$(type_of "$T/m")" ""

# (2) unionfs-fuse syntax goes to unionfs-fuse's helper, unchanged
echo "unionfs $T/m2 unionfs allow_other,dirs=$T/b0=RW:$T/b1=RO 0 0" > "$T/fstab2"
out=$(mount --fstab "$T/fstab2" "$T/m2" 2>&1)
is "FUSE-style fstab line: exit status of the FUSE helper" "$?" 0
is "FUSE-style fstab line: mount.fuse called by unionfs-fuse's helper" "$(fuselog)" \
	"unionfs#$T/b0=RW:$T/b1=RO $T/m2 -o rw,allow_other"
is "FUSE-style fstab line: no kernel union" "$(type_of "$T/m2")" ""
rm -f "$T/fuse.log"
mount -t unionfs -o "fuse,dirs=$T/b0:$T/b1" unionfs "$T/m2" > /dev/null 2>&1
is "option fuse: to the FUSE helper, without 'fuse'" "$(fuselog)" "unionfs#$T/b0:$T/b1 $T/m2 -o rw"
rm -f "$T/fuse.log"
mount -t unionfs -o "nofuse,dirs=$T/b0=rw:$T/b1=ro,cow" none "$T/m2" > /dev/null 2>&1
is "option nofuse: the kernel (which refuses cow)" "$(fuselog)" ""
is "option nofuse: not mounted" "$(type_of "$T/m2")" ""

# (4) what systemd runs for a .mount unit: mount WHAT WHERE -t TYPE -o OPTIONS
out=$(mount none "$T/m" -t unionfs -o "dirs=$T/b0=rw:$T/b1=ro,nosuid,noatime,x-systemd.device-timeout=5s,coherency=notify" 2>&1)
is "systemd-style mount: exits 0" "$?" 0
[[ -n $out ]] && echo "# $out"
is "systemd-style mount: type unionfs" "$(type_of "$T/m")" unionfs
o=$(opts_of "$T/m")
check "systemd-style mount: nosuid,noatime,coherency=notify, no x-systemd" bash -c \
	"grep -q nosuid <<< '$o' && grep -q noatime <<< '$o' && grep -q coherency=notify <<< '$o' && ! grep -q x-systemd <<< '$o'"
check "remount through the helper (mount -o remount,incgen)" mount -o remount,incgen "$T/m"
out=$(mount -o remount,ro "$T/m" 2>&1)
is "remount,ro through the helper: exits 0" "$?" 0
check "remount,ro: ro in /proc/mounts" grep -qx ro <<< "$(opts_of "$T/m" | tr , '\n')"
check "umount the systemd-style mount" umount "$T/m"
check "mount -v passes -v through" bash -c "mount -v -t unionfs -o dirs=$T/b0:$T/b1=ro none $T/m 2>&1 | grep -q 'mounted on'"
check "umount" umount "$T/m"

# errors and exit codes
out=$(mount -t unionfs -o "dirs=$T/nonexistent" none "$T/m" 2>&1)
is "a kernel mount error: exit 32" "$?" 32
out=$("$H" none 2>&1)
is "helper usage error: exit 1" "$?" 1
check "helper usage error: a usage line" grep -q usage: <<< "$out"
cp "$H" "$T/bin/mount.unionfs"
out=$("$T/bin/mount.unionfs" none "$T/m" -o "dirs=$T/b0=RW" 2>&1)
is "FUSE syntax without unionfs-fuse: exit 32" "$?" 32
check "FUSE syntax without unionfs-fuse: says so" grep -q "unionfs-fuse's mount helper $T/bin/mount.unionfs.fuse is not installed" <<< "$out"

# module not loaded: the helper runs modprobe unionfs (here one that insmods the test module)
if rmmod unionfs 2>/dev/null; then
	printf '#!/bin/sh\necho "$*" >> %s/modprobe.log\nexec insmod %s\n' "$T" "$PROJ/$UNIONFS_KO" > "$T/bin/modprobe"
	chmod 755 "$T/bin/modprobe"
	# the helper called directly: mount(8) does not hand this PATH on to its helpers
	out=$(PATH=$T/bin:$PATH "$H" none "$T/m" -o "dirs=$T/b0=rw:$T/b1=ro" 2>&1)
	is "module not loaded: the helper mounts" "$?:$(type_of "$T/m")" 0:unionfs
	is "module not loaded: modprobe unionfs was run" "$(cat "$T/modprobe.log" 2>&1)" unionfs
	umount "$T/m" 2>/dev/null
	grep -qw unionfs /proc/filesystems || insmod "$UNIONFS_KO"
else
	skip "module not loaded: modprobe" "rmmod unionfs failed"
fi

# (5) uninstall restores unionfs-fuse's helper
out=$(cd "$PROJ" && make -s uninstall-mount-helper 2>&1)
is "make uninstall-mount-helper exits 0" "$?" 0
check "uninstall: $H is unionfs-fuse's again" cmp "$T/fuse-helper" "$H"
check "uninstall: no $H.fuse" test ! -e "$H.fuse"
is "uninstall: no diversion" "$(dpkg-divert --listpackage "$H")" ""
rm -f "$T/fuse.log"
mount --fstab "$T/fstab" "$T/m" > /dev/null 2>&1
is "after uninstall: the fstab line goes to unionfs-fuse's helper again" "$(type_of "$T/m"):$(fuselog | cut -d' ' -f2)" ":$T/m"
finish
