#!/bin/bash
# Host-side: packaging (issue 24). `make install DESTDIR=scratch` installs the module (into
# /lib/modules/KVER/updates/), unionctl, the mount helper mount.unionfs (only the file, printing
# the dpkg-divert a package would do), unionfs.5 + unionctl.8, the uapi header and the gdb
# helpers (unionfs.ko-gdb.py + unionfs_gdb/ in gdb's auto-load dir; they load there), and
# `make uninstall DESTDIR=scratch` removes them all; install-mount-helper with DESTDIR empty on
# a scratch root (DPKG_ROOT + DPKG_ADMINDIR) diverts a unionfs-fuse helper found there to
# mount.unionfs.fuse, twice is harmless, and uninstall-mount-helper puts it back; the
# installed module's modinfo shows the git version, license GPL and the author; the LICENSE
# file is the GPL-2 text; both man pages render with `man --warnings` silent; the header
# compiles in a C program; and dkms.conf builds the module with a real `dkms build` of the
# tree `make dkms-src` writes, in a scratch DKMS tree (--dkmstree/--sourcetree, module signing
# off: sign_file set to a missing file), so nothing of the system's /var/lib/dkms, /usr/src or
# /lib/modules is touched (checked). Nothing is loaded. Two module builds: ~1 min on an idle
# machine.
# timeout: 600
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2

KVER=$(cat build/kver 2>/dev/null)
[[ -n $KVER ]] || KVER=$(make -s -p -n modules 2>/dev/null | sed -n 's/^KVER := //p' | head -n 1)
mkdir -p build/check
W=$(mktemp -d "$PWD/build/check/install.XXXXXX")
trap 'rm -rf "$W"' EXIT
R=$W/root
want=$(git describe --always --dirty 2>/dev/null || cat VERSION)
sysstate() {
	{ ls -lAR /var/lib/dkms /usr/src /lib/modules/"$KVER"/updates; ls -lA /usr/sbin/mount.unionfs*
	  dpkg-divert --list; } 2>/dev/null | md5sum
}
before=$(sysstate)

t0=$(date +%s)
out=$(make -s install DESTDIR="$R" 2>&1)
rc=$?
if [[ $rc == 0 ]]; then
	ok "make install DESTDIR=... ($(($(date +%s) - t0))s)"
else
	not_ok "make install DESTDIR=... exits 0" "exit $rc: $(tail -n 12 <<< "$out")"
fi
ko=$R/lib/modules/$KVER/updates/unionfs.ko
for f in "$ko" "$R/usr/share/man/man5/unionfs.5" "$R/usr/share/man/man8/unionctl.8" \
	"$R/usr/include/linux/unionfs.h"; do
	check "installed ${f#"$R"}" test -f "$f"
done
check "installed /usr/sbin/unionctl (executable)" test -x "$R/usr/sbin/unionctl"
check "installed /usr/sbin/mount.unionfs (executable, sh -n clean)" bash -c \
	"test -x '$R/usr/sbin/mount.unionfs' && sh -n '$R/usr/sbin/mount.unionfs'"
check "make install DESTDIR=...: prints the dpkg-divert a package would run" \
	grep -q "dpkg-divert --package unionfs --rename --divert /usr/sbin/mount.unionfs.fuse --add /usr/sbin/mount.unionfs" <<< "$out"
check "unionctl runs: --help prints its usage" bash -c "'$R/usr/sbin/unionctl' --help 2>&1 | grep -q -- --list"
is "modinfo version = git describe --always --dirty" "$(modinfo -F version "$ko" 2>&1)" "$want"
is "modinfo license" "$(modinfo -F license "$ko" 2>&1)" "GPL"
is "modinfo author" "$(modinfo -F author "$ko" 2>&1)" "unionfs for modern Linux developers"
check "modinfo vermagic is $KVER" bash -c "modinfo -F vermagic '$ko' | grep -q '^$KVER '"
check "LICENSE is the GPL-2 text (MODULE_LICENSE GPL)" cmp LICENSE /usr/share/common-licenses/GPL-2
# the gdb helpers: in gdb's auto-load dir under the module dir's real path (merged /usr)
gal=./usr/share/gdb/auto-load$(realpath -m "/lib/modules/$KVER/updates")
is "exactly these files installed" "$(cd "$R" && find . -type f | sort | tr '\n' ' ')" \
	"$(printf '%s\n' "./lib/modules/$KVER/updates/unionfs.ko" ./usr/include/linux/unionfs.h \
		./usr/sbin/mount.unionfs ./usr/sbin/unionctl ./usr/share/man/man5/unionfs.5 \
		./usr/share/man/man8/unionctl.8 "$gal/unionfs.ko-gdb.py" \
		"$gal"/unionfs_gdb/{__init__,core,fanout,mounts,stale,symbols}.py | sort | tr '\n' ' ')"
check "the installed unionfs.ko-gdb.py finds its unionfs_gdb package (gdb: help unionfs-fanout)" \
	bash -c "PYTHONDONTWRITEBYTECODE=1 gdb -q -nx -batch -ex 'source $R/$gal/unionfs.ko-gdb.py' \
		-ex 'help unionfs-fanout' 2>&1 | grep -q '^Usage: unionfs-fanout PATH|EXPR'"

for m in man5/unionfs.5 man8/unionctl.8; do
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$R/usr/share/man/$m" 2>&1 >/dev/null)
	is "man --warnings -l $m: no warning" "$warn" ""
done
check "man -M DESTDIR finds unionfs(5)" bash -c \
	"MANWIDTH=80 man -M '$R/usr/share/man' 5 unionfs 2>/dev/null | grep -q 'dirs='"
printf '#include <linux/unionfs.h>\nint main(void) { struct unionfs_query q = { 0 };\n  return (int)q.nbranches + UNIONFS_IOCTL_QUERYFILE * 0 + UNIONFS_MAX_BRANCHES * 0; }\n' > "$W/h.c"
check "the installed header compiles in a C program" \
	gcc -Wall -Werror -I"$R/usr/include" -o "$W/h" "$W/h.c"

# the mount helper's diversion on a scratch root: a unionfs-fuse helper there is kept
S=$W/sysroot
mkdir -p "$S/usr/sbin" "$S/var/lib/dpkg"
printf '#!/bin/bash\nmount.fuse "unionfs#$dirs" "$mpoint" -o ${@%%%%,dirs=*}\n' > "$S/usr/sbin/mount.unionfs"
cp "$S/usr/sbin/mount.unionfs" "$W/fuse-helper"
hs() { DPKG_ROOT=$S DPKG_ADMINDIR=$S/var/lib/dpkg make -s "$@" DESTDIR= 2>&1; }
divlist() { DPKG_ROOT=$S DPKG_ADMINDIR=$S/var/lib/dpkg dpkg-divert --list 2>&1; }
out=$(hs install-mount-helper)
is "install-mount-helper (scratch root): exits 0" "$?" 0
check "scratch root: mount.unionfs is ours" grep -q unionfs-kernel-mount-helper "$S/usr/sbin/mount.unionfs"
check "scratch root: unionfs-fuse's helper is mount.unionfs.fuse" cmp "$W/fuse-helper" "$S/usr/sbin/mount.unionfs.fuse"
is "scratch root: the diversion" "$(divlist)" \
	"local diversion of /usr/sbin/mount.unionfs to /usr/sbin/mount.unionfs.fuse"
out=$(hs install-mount-helper)
is "install-mount-helper again: exits 0" "$?" 0
check "again: unionfs-fuse's helper still mount.unionfs.fuse" cmp "$W/fuse-helper" "$S/usr/sbin/mount.unionfs.fuse"
out=$(hs uninstall-mount-helper)
is "uninstall-mount-helper (scratch root): exits 0" "$?" 0
check "scratch root: unionfs-fuse's helper back as mount.unionfs" cmp "$W/fuse-helper" "$S/usr/sbin/mount.unionfs"
is "scratch root: no diversion, no mount.unionfs.fuse" "$(divlist)$(ls "$S/usr/sbin")" "mount.unionfs"
rm -f "$S/usr/sbin/mount.unionfs"
out=$(hs install-mount-helper)
is "no unionfs-fuse: install-mount-helper exits 0" "$?" 0
out=$(hs uninstall-mount-helper)
is "no unionfs-fuse: uninstall leaves nothing" "$?:$(divlist)$(ls "$S/usr/sbin")" "0:"

# dkms: the tree make dkms-src writes, built by dkms in a scratch tree
if ! command -v dkms > /dev/null; then
	not_ok "dkms installed (make deps installs it)"
	finish
fi
out=$(make -s dkms-src DESTDIR="$W/dk" 2>&1)
rc=$?
if [[ $rc == 0 ]]; then ok "make dkms-src DESTDIR=..."; else not_ok "make dkms-src DESTDIR=... exits 0" "exit $rc: $(tail -n 8 <<< "$out")"; fi
src=$(echo "$W"/dk/usr/src/unionfs-*)
is "dkms source tree named by the version" "$(basename "$src")" "unionfs-$want"
is "its VERSION file" "$(cat "$src/VERSION" 2>&1)" "$want"
check "it has dkms.conf, LICENSE, src/, tracepoints/ and no build products" bash -c \
	"cd '$src' && test -f dkms.conf -a -f LICENSE -a -f src/super.c -a -f tracepoints/unionfs_trace.h && ! find . -name '*.o' -o -name '*.ko' | grep -q ."
mkdir -p "$W/dkmstree"
t0=$(date +%s)
out=$(sign_file=/nonexistent timeout 400 dkms build -m unionfs -v "$want" -k "$KVER" \
	--sourcetree "$W/dk/usr/src" --dkmstree "$W/dkmstree" 2>&1)
rc=$?
is "dkms build -m unionfs -v $want -k $KVER exits 0 ($(($(date +%s) - t0))s)" "$rc" 0
[[ $rc == 0 ]] || not_ok "dkms build output" "$(tail -n 12 <<< "$out"; tail -n 12 "$W"/dkmstree/unionfs/*/build/make.log 2>/dev/null)"
dko=$W/dkmstree/unionfs/$want/$KVER/x86_64/module/unionfs.ko
check "dkms built unionfs.ko" test -f "$dko"
is "dkms module: modinfo version" "$(modinfo -F version "$dko" 2>&1)" "$want"
is "dkms module: same srcversion as make install's" "$(modinfo -F srcversion "$dko" 2>&1)" \
	"$(modinfo -F srcversion "$ko" 2>&1)"
out=$(make -s uninstall DESTDIR="$R" 2>&1)
is "make uninstall DESTDIR=...: exits 0, no file left" "$?:$(cd "$R" && find . -type f)" "0:"
is "system's /var/lib/dkms, /usr/src, /lib/modules/$KVER/updates, mount.unionfs*, diversions untouched" "$(sysstate)" "$before"
finish
