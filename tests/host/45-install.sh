#!/bin/bash
# Host-side: packaging (issue 24). `make install DESTDIR=scratch` installs the module (into
# /lib/modules/KVER/updates/), unionctl, unionfs.5 + unionctl.8 and the uapi header; the
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
sysstate() { ls -lAR /var/lib/dkms /usr/src /lib/modules/"$KVER"/updates 2>/dev/null | md5sum; }
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
check "unionctl runs: --help prints its usage" bash -c "'$R/usr/sbin/unionctl' --help 2>&1 | grep -q -- --list"
is "modinfo version = git describe --always --dirty" "$(modinfo -F version "$ko" 2>&1)" "$want"
is "modinfo license" "$(modinfo -F license "$ko" 2>&1)" "GPL"
is "modinfo author" "$(modinfo -F author "$ko" 2>&1)" "unionfs for modern Linux developers"
check "modinfo vermagic is $KVER" bash -c "modinfo -F vermagic '$ko' | grep -q '^$KVER '"
check "LICENSE is the GPL-2 text (MODULE_LICENSE GPL)" cmp LICENSE /usr/share/common-licenses/GPL-2
is "exactly these files installed" "$(cd "$R" && find . -type f | sort | tr '\n' ' ')" \
	"./lib/modules/$KVER/updates/unionfs.ko ./usr/include/linux/unionfs.h ./usr/sbin/unionctl ./usr/share/man/man5/unionfs.5 ./usr/share/man/man8/unionctl.8 "

for m in man5/unionfs.5 man8/unionctl.8; do
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$R/usr/share/man/$m" 2>&1 >/dev/null)
	is "man --warnings -l $m: no warning" "$warn" ""
done
check "man -M DESTDIR finds unionfs(5)" bash -c \
	"MANWIDTH=80 man -M '$R/usr/share/man' 5 unionfs 2>/dev/null | grep -q 'dirs='"
printf '#include <linux/unionfs.h>\nint main(void) { struct unionfs_query q = { 0 };\n  return (int)q.nbranches + UNIONFS_IOCTL_QUERYFILE * 0 + UNIONFS_MAX_BRANCHES * 0; }\n' > "$W/h.c"
check "the installed header compiles in a C program" \
	gcc -Wall -Werror -I"$R/usr/include" -o "$W/h" "$W/h.c"

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
is "system's /var/lib/dkms, /usr/src, /lib/modules/$KVER/updates untouched" "$(sysstate)" "$before"
finish
