#!/bin/bash
# OCI image layers (markers=oci): ".wh..wh..opq" is an opaque marker, ".wh.NAME" a
# whiteout (the same as the union's own), so a stack of unpacked layers mounts as the
# image's file system; the union then writes ".wh..wh..opq" itself, so its writable
# branch is again a valid layer. Without the option the OCI marker is ignored (hidden).
# The option is fixed at mount time; a bad value is refused with a warning.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir

L1=$T/l1 L2=$T/l2 UP=$T/up M=$T/m
mkdir -p "$L1" "$L2" "$UP" "$M"
# layer 1 (base): /etc/{a,b} /usr/x /opt/keep /srv/y
mkdir -p "$L1/etc" "$L1/usr" "$L1/opt" "$L1/srv"
echo a > "$L1/etc/a"; echo b > "$L1/etc/b"; echo x > "$L1/usr/x"
echo k > "$L1/opt/keep"; echo y > "$L1/srv/y"
# layer 2: /etc made opaque (OCI) with a new c, usr/x and /opt deleted,
# /srv made opaque the unionfs way
mkdir -p "$L2/etc" "$L2/usr" "$L2/srv"
touch "$L2/etc/.wh..wh..opq"; echo c > "$L2/etc/c"
touch "$L2/usr/.wh.x" "$L2/.wh.opt" "$L2/srv/.wh.__dir_opaque"

check "mount 2 OCI layers + upper, markers=oci" \
	mount -i -t unionfs -o "markers=oci,dirs=$UP=rw:$L2=ro:$L1=ro" none "$M"
is "oci: .wh..wh..opq hides the lower layer's entries" "$(names "$M/etc" | tr '\n' ' ')" "c "
is "oci: lower name not found below the marker" "$($S open "$M/etc/a" r)" ENOENT
is "oci: file whiteout" "$(names "$M/usr" | wc -l)" 0
is "oci: directory whiteout" "$($S open "$M/opt" r)" ENOENT
is "oci: the unionfs marker is honoured too" "$(names "$M/srv" | wc -l)" 0
is "oci: /proc/mounts shows markers=oci" \
	"$(awk -v m="$M" '$2 == m { print $4 }' /proc/mounts | grep -o 'markers=[a-z]*')" markers=oci
# the union writes the OCI marker
rm -rf "$M/etc"
mkdir "$M/etc"
is "oci: mkdir over a whited-out dir: empty" "$(names "$M/etc" | wc -l)" 0
is "oci: its marker is .wh..wh..opq" \
	"$(cd "$UP/etc" && ls -A | tr '\n' ' ')" ".wh..wh..opq "
echo new > "$M/etc/n"
is "oci: markers never listed" "$(ls -A "$M" "$M/etc" | grep -c '^\.wh\.')" 0
dmesg_mark
is "remount,markers=unionfs refused" "$($S remount "$M" markers=unionfs)" EINVAL
is "one pr_warn line for the refused remount" \
	"$(dmesg_since_mark | grep -c 'remount: markers=unionfs: the markers are chosen at mount time (now oci)')" 1
is "remount keeping markers=oci" "$($S remount "$M" markers=oci)" OK
check "umount" umount "$M"

# the upper is a layer again: stacked under a new upper, etc still shows only n
UP2=$T/up2; mkdir -p "$UP2"
check "mount the upper as a layer" \
	mount -i -t unionfs -o "markers=oci,dirs=$UP2=rw:$UP=ro:$L2=ro:$L1=ro" none "$M"
is "oci: the union's own marker stacks as a layer" "$(names "$M/etc" | tr '\n' ' ')" "n "
check "umount" umount "$M"

# default markers: the OCI marker is ignored, and never shown
check "mount without markers=oci" mount -i -t unionfs -o "dirs=$UP2=rw:$L2=ro:$L1=ro" none "$M"
is "default: .wh..wh..opq is not a marker" "$(names "$M/etc" | tr '\n' ' ')" "a b c "
is "default: .wh.__dir_opaque still is" "$(names "$M/srv" | wc -l)" 0
is "default: no markers= in /proc/mounts" \
	"$(awk -v m="$M" '$2 == m { print $4 }' /proc/mounts | grep -c markers=)" 0
rm -rf "$M/etc"; mkdir "$M/etc"
is "default: the union writes .wh.__dir_opaque" "$(cd "$UP2/etc" && ls -A | tr '\n' ' ')" ".wh.__dir_opaque "
check "umount" umount "$M"

dmesg_mark
is "markers=bogus refused" "$($S mount none "$M" unionfs "markers=bogus,dirs=$UP2=rw:$L1=ro")" EINVAL
is "one escaped pr_warn line for markers=bogus" \
	"$(dmesg_since_mark | grep -c "mount: unknown markers 'bogus' (use unionfs or oci)")" 1
is "nothing mounted after the refusal" "$(awk -v m="$M" '$2 == m' /proc/mounts | wc -l)" 0
finish
