#!/bin/bash
# Leaks, last file of the suite (the guest boots with slub_debug=FZPU): unmount every union,
# then the module's slab cache (unionfs_inode_cache, the only kmem_cache in src/) must be empty
# (objects counted from /sys/kernel/slab before the cache is destroyed), rmmod must succeed and
# the kernel must not report "still has objects" / leaked objects, slub_debug must have found
# no corruption. The module is loaded again afterwards so later runs in this guest still work.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
dmesg_mark
CACHE=unionfs_inode_cache
grep -q 'slub_debug' /proc/cmdline || not_ok "guest booted with slub_debug (tests/check and make soak pass slub_debug=FZPU)"
for m in $(awk '$3 == "unionfs" { print $2 }' /proc/mounts | sort -r); do umount "$m" 2>/dev/null || umount -l "$m"; done
is "no union mounted" "$(awk '$3 == "unionfs"' /proc/mounts)" ""
is "debugfs lists no mounts" "$(ls /sys/kernel/debug/unionfs/mounts 2>/dev/null)" ""
[[ -d /sys/kernel/slab/$CACHE ]] || not_ok "/sys/kernel/slab/$CACHE exists (module loaded, cache not merged)"
# evicted inodes are freed through a workqueue and RCU: give them a moment
n=
for i in $(seq 1 50); do
	sync; echo 3 > /proc/sys/vm/drop_caches
	n=$(cut -d' ' -f1 < /sys/kernel/slab/$CACHE/objects 2>/dev/null)
	[[ $n == 0 ]] && break
	sleep 0.2
done
is "$CACHE has no objects left after all unions are gone (objects: $n)" "$n" 0
total=$(cut -d' ' -f1 < /sys/kernel/slab/$CACHE/total_objects 2>/dev/null)
echo "# $CACHE: objects $n, total_objects (slots in its slabs) $total"
# every free object of the cache passes the slub_debug checks (poison, red zones)
if [[ -w /sys/kernel/slab/$CACHE/validate ]]; then
	echo 1 > /sys/kernel/slab/$CACHE/validate
	is "slub validate of $CACHE reports nothing" "$(dmesg_since_mark | grep -iE 'BUG|corrupt|poison|redzone')" ""
fi
check "rmmod unionfs" rmmod unionfs
is "module gone" "$(grep -c '^unionfs ' /proc/modules)" 0
is "no 'still has objects' / leaked object reports" \
	"$(dmesg_since_mark | grep -iE 'still has objects|Objects remaining|leak')" ""
is "dmesg clean (no BUG/WARN/Oops/slab corruption) since the start of this file" "$(dmesg_bad)" ""
check "module loads again" insmod "$UNIONFS_KO"
finish
