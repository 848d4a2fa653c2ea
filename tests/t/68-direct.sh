#!/bin/bash
# Direct modification of branches while mounted: each kind of change made in a branch
# after the union cached the object is seen through the union, counted in debugfs and
# traced (unionfs_hazard), with one pr_notice per mount; nothing oopses.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
branch_fs tmpfs "$T" 2
M=$T/m; mkdir -p "$M"
B0=$T/b0 B1=$T/b1
TR=/sys/kernel/tracing
hz() { awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/unionfs/mounts/*/hazards | tail -1; }

echo a > "$B1/f"; echo b > "$B1/g"; echo c > "$B0/h"; mkdir "$B1/d"; echo x > "$B1/d/x"
echo w > "$B1/wh"
check "mount" mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$M"
cat "$M/f" "$M/g" "$M/h" "$M/d/x" "$M/wh" > /dev/null; ls "$M" "$M/d" > /dev/null
cat "$M/new" 2>/dev/null	# a cached negative entry
echo > $TR/trace; echo 1 > $TR/events/unionfs/unionfs_hazard/enable
dmesg_mark

echo NEW > "$B1/new"
is "file created in a branch appears" "$(cat "$M/new")" NEW
rm "$B1/g"
is "file removed in a branch disappears" "$(cat "$M/g" 2>&1 | grep -c 'No such file')" 1
echo REWRITTEN > "$B1/f"
is "file rewritten in a branch is read fresh" "$(cat "$M/f")" REWRITTEN
truncate -s 0 "$B0/h"
is "file truncated in a branch: size" "$(stat -c %s "$M/h")" 0
chmod 600 "$B1/f"
is "chmod in a branch seen" "$(stat -c %a "$M/f")" 600
mv "$B1/d" "$B1/d2"
is "dir renamed in a branch: old name gone" "$(ls "$M" | grep -cx d)" 0
is "dir renamed in a branch: new name there" "$(cat "$M/d2/x")" x
mkdir "$B1/nd"
is "mkdir in a branch seen" "$(stat -c %F "$M/nd")" directory
rmdir "$B1/nd"
is "rmdir in a branch seen" "$(ls "$M" | grep -cx nd)" 0
touch "$B0/.wh.wh"
is "whiteout added by hand hides the name" "$(ls "$M" | grep -cx wh)" 0
rm "$B0/.wh.wh"
is "whiteout removed by hand shows it again" "$(cat "$M/wh")" w
# replace a file by another object under the same name
mv "$B1/f" "$B1/f.old"; echo OTHER > "$B1/f"
is "file replaced in a branch" "$(cat "$M/f")" OTHER
# O_APPEND after a direct rewrite appends at the real end
echo 1 > "$M/app"; exec 5>> "$M/app"
echo 1234567890 > "$B0/app"
echo end >&5; exec 5>&-
is "O_APPEND after a direct rewrite lands at the real end" "$(cat "$M/app" | tr '\n' ' ')" "1234567890 end "

total=$(( $(hz vanished) + $(hz replaced) + $(hz dir_changed) ))
is "direct changes were counted" "$(( total >= 5 ))" 1
is "hazard events traced" "$(( $(grep -c 'unionfs_hazard:' $TR/trace) >= 5 ))" 1
is "hazard event names the kind" "$(grep -m1 -o 'kind [a-z_]*' $TR/trace | grep -c kind)" 1
is "one pr_notice per mount" "$(dmesg_since_mark | grep -c 'unionfs: .*modified directly')" 1
echo 0 > $TR/events/unionfs/unionfs_hazard/enable
check "umount" umount "$M"
finish
