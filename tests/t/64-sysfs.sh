#!/bin/bash
# The stable status interface /sys/fs/unionfs/MAJ:MIN/ (issue 24 item 5): one directory per
# union, named like its st_dev; branches (INDEX MODE PATH, escaped), generation, coherency,
# markers, hazards; read-only; follows add=/del=/mode=; gone at umount and with the module.
# unionctl --list reads it.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
B0=$T/b0 B1=$T/b1 B2="$T/b 2"$'\n'"x" M=$T/m
mkdir -p "$B0" "$B1" "$B2" "$M"
devdir() { awk -v m="$1" '$5 == m { d = $3 } END { print "/sys/fs/unionfs/" d }' /proc/self/mountinfo; }

dmesg_mark
check "mount" mount -i -t unionfs -o "coherency=notify,markers=oci,dirs=$B0=rw:$B1=ro" none "$M"
D=$(devdir "$M")
check "the union's directory is /sys/fs/unionfs/MAJ:MIN of its st_dev" test -d "$D"
is "files" "$(ls "$D" | tr '\n' ' ')" "branches coherency generation hazards markers "
is "branches" "$(cat "$D/branches")" "0 rw $B0"$'\n'"1 ro $B1"
is "coherency" "$(cat "$D/coherency")" notify
is "markers" "$(cat "$D/markers")" oci
g0=$(cat "$D/generation")
is "generation == QUERYFILE's" "$g0" "$(build/unionctl "$M" --query "$M" | sed -n 's/.*(generation \([0-9]*\)).*/\1/p')"
is "hazards: one line per kind, all 0" "$(awk '{ n++; s += $2 } END { print (n > 5), s }' "$D/hazards")" "1 0"
is "mode 0444, root cannot write" "$(stat -c %a "$D/generation" "$D/branches" | sort -u) $($S open "$D/generation" w)" "444 EACCES"
# follows branch changes; escaped names
# (remount commands were queued newline-separated: a newline in a path split the command)
is "add= a branch whose name has a space and a newline" "$($S remount "$M" "add=$B1:$B2=ro")" OK
is "branches after add=: the name escaped as in /proc/mounts" "$(sed -n 2p "$D/branches")" "1 ro $T/b\\0402\\012x"
is "generation bumped" "$(cat "$D/generation")" $((g0 + 1))
is "unionctl --list: one line a branch (tab, newline, backslash escaped)" \
	"$(build/unionctl "$M" --list | sed 1d | awk '{ print $1, $2 }' | tr '\n' ' ')" "0 rw 1 ro 2 ro "
is "unionctl --list --json: the exact name, read from sysfs" \
	"$(build/unionctl "$M" --list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["branches"][1]["path"] == sys.argv[1])' "$B2")" True
is "mode= shows" "$($S remount "$M" "mode=$B1=rw") $(sed -n 3p "$D/branches")" "OK 2 rw $B1"
is "del= shows" "$($S remount "$M" "del=$B2") $(wc -l < "$D/branches")" "OK 2"
# a direct change is counted
ls "$M" > /dev/null; echo direct > "$B1/direct"; ls "$M" > /dev/null; rm "$B1/direct"; ls "$M" > /dev/null
is "hazards count direct changes (notify)" "$(awk '{ s += $2 } END { print (s > 0) }' "$D/hazards")" 1
is "the notice points at this union's sysfs hazards, not debugfs" \
	"$(dmesg_since_mark | grep -c "modified directly .*Counts: $D/hazards\$")" 1
is "unionctl --list --json: the hazard counts of sysfs" \
	"$(build/unionctl "$M" --list --json | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["hazards"].values()))')" \
	"$(awk '{ s += $2 } END { print s }' "$D/hazards")"
# two unions: two directories
M2=$T/m2; mkdir -p "$M2" "$T/c0"
check "second union" mount -i -t unionfs -o "dirs=$T/c0" none "$M2"
D2=$(devdir "$M2")
is "second union: its own directory, defaults" "$(cat "$D2/coherency" "$D2/markers" | tr '\n' ' ')" "reval unionfs "
check "umount second" umount "$M2"
check "its directory is gone" test ! -e "$D2"
# a reader holding the file open across umount
exec 7< "$D/generation"
check "umount" umount "$M"
check "directory gone at umount" test ! -e "$D"
is "a read through a descriptor opened before umount: nothing read" "$(cat <&7 2>/dev/null | wc -c)" 0
exec 7<&-
check "rmmod" rmmod unionfs
check "/sys/fs/unionfs gone with the module" test ! -e /sys/fs/unionfs
check "insmod again" insmod "$UNIONFS_KO"
finish
