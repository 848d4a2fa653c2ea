#!/bin/sh
# src/mount-helper/install.sh install|uninstall: mount.unionfs (the helper beside this script)
# as SBINDIR/mount.unionfs, keeping Debian's unionfs-fuse helper of that path as
# SBINDIR/mount.unionfs.fuse with a local dpkg diversion (make install / make uninstall).
#
#   DESTDIR set:   a staging tree: install/remove only the file, print what a package's
#                  maintainer scripts would do with dpkg-divert.
#   DESTDIR empty: the system: `dpkg-divert --local --rename --divert SBINDIR/mount.unionfs.fuse
#                  --add SBINDIR/mount.unionfs` then the helper; uninstall removes the helper
#                  and `dpkg-divert --rename --remove` puts unionfs-fuse's back. DPKG_ROOT and
#                  DPKG_ADMINDIR (dpkg-divert's own variables) select another root / dpkg
#                  database (tests/host/45-install.sh, tests/t/16-mount-helper.sh).
# SBINDIR defaults to /usr/sbin. Without dpkg-divert the FUSE helper is renamed by hand.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sbin=${SBINDIR:-/usr/sbin}
h=$sbin/mount.unionfs
fuse=$h.fuse
marker=unionfs-kernel-mount-helper
ours() { grep -qs "$marker" "$1"; }
diverted() { [ -n "$(dpkg-divert --listpackage "$h" 2>/dev/null)" ]; }
root=${DPKG_ROOT:-}
root=${root%/}
havedpkg=
command -v dpkg-divert > /dev/null 2>&1 && havedpkg=1

case ${1:-} in
install)
	if [ -n "${DESTDIR:-}" ]; then
		install -D -m 755 "$here/mount.unionfs" "$DESTDIR$h"
		echo "install: $DESTDIR$h without a diversion (DESTDIR); a package's preinst would first" \
			"keep unionfs-fuse's helper with: dpkg-divert --package unionfs --rename" \
			"--divert $fuse --add $h (postrm on remove: dpkg-divert --package unionfs" \
			"--rename --remove $h)"
		exit 0
	fi
	if [ -n "$havedpkg" ]; then
		if ! diverted; then
			# a helper of ours without a diversion (copied by hand) is not unionfs-fuse's
			if ours "$root$h"; then rm -f "$root$h"; fi
			dpkg-divert --local --rename --divert "$fuse" --add "$h"
		elif [ "$(dpkg-divert --truename "$h")" != "$fuse" ]; then
			echo "install: $h is already diverted to $(dpkg-divert --truename "$h"), not $fuse" >&2
			exit 1
		fi
	elif [ -e "$root$h" ] && ! ours "$root$h"; then
		mv "$root$h" "$root$fuse"
		echo "install: no dpkg-divert: moved $h to $fuse by hand"
	fi
	install -D -m 755 "$here/mount.unionfs" "$root$h"
	;;
uninstall)
	if [ -n "${DESTDIR:-}" ]; then
		if ours "$DESTDIR$h"; then rm -f "$DESTDIR$h"; fi
		exit 0
	fi
	if ours "$root$h"; then rm -f "$root$h"; fi
	if [ -n "$havedpkg" ] && diverted; then
		dpkg-divert --local --rename --remove "$h"
	elif [ -e "$root$fuse" ] && [ ! -e "$root$h" ]; then
		mv "$root$fuse" "$root$h"
	fi
	;;
*)
	echo "usage: $0 install|uninstall" >&2
	exit 1
	;;
esac
