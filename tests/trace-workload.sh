#!/bin/bash
# tests/trace-workload.sh: a small union workload that fires every kind of unionfs event
# (lookup, copy-up, whiteout, opaque mark, readdir, revalidate, branch ops), for recording
# with bpf-scripts/unionfs-record (tests/t/87-trace-cmd.sh, tests/host/35-trace-cmd.sh).
# Guest only. Builds b0 (rw) over b1 (ro) under $1 (default: a fresh dir in /tmp).
set -e
D=${1:-$(mktemp -d /tmp/trace-workload.XXXXXX)}
mkdir -p "$D/b0/dir" "$D/b1/dir" "$D/b1/gone" "$D/m"
echo lower > "$D/b1/file"; echo a > "$D/b1/dir/a"; echo b > "$D/b1/dir/b"; echo c > "$D/b0/dir/c"
mount -i -t unionfs -o "dirs=$D/b0:$D/b1=ro" none "$D/m"
cat "$D/m/file" > /dev/null                 # lookup, open on branch 1
ls "$D/m/dir" > /dev/null                   # readdir merge of 2 branches (c + a b)
echo more >> "$D/m/file"                    # copy-up 1 -> 0, reason write-open
rm "$D/m/dir/a"                             # whiteout .wh.a, reason unlink
rmdir "$D/m/gone"; mkdir "$D/m/gone"        # whiteout (rmdir), opaque mark, whiteout removal
stat "$D/m/nothere" > /dev/null 2>&1 || true  # negative lookup
umount "$D/m"
rm -rf "$D"
