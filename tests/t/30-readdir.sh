#!/bin/bash
# Merged readdir: each name once, whiteouts and whited-out names hidden, opaque dirs
# respected; 100,000 entries listed completely with small getdents buffers;
# telldir/seekdir resume at the same entry.
# timeout: 600
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
branch_fs tmpfs "$T" 3
M=$T/m; mkdir -p "$M"

# 100,000 names: b0 has n0..n59999, b1 has n40000..n99999 (20,000 duplicates),
# b0 whites out n99990..n99999 from b1, b2 has n100000.. but b0's dir is opaque? no:
python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
for b, rng in (("b0", range(0, 60000)), ("b1", range(40000, 100000))):
    d = os.path.join(t, b, "big"); os.makedirs(d, exist_ok=True)
    for i in rng:
        open(os.path.join(d, "n%d" % i), "w").close()
for i in range(99990, 100000):
    open(os.path.join(t, "b0", "big", ".wh.n%d" % i), "w").close()
PY
mkdir -p "$T/b0/small" "$T/b1/small" "$T/b2/small"
touch "$T/b0/small/a" "$T/b1/small/a" "$T/b1/small/b" "$T/b2/small/c" "$T/b0/small/.wh.b"
mkdir -p "$T/b0/op" "$T/b2/op"; touch "$T/b0/op/.wh.__dir_opaque" "$T/b0/op/top" "$T/b2/op/hidden"
mkdir -p "$T/b1/single"; touch "$T/b1/single/s1" "$T/b1/single/.wh.s2" "$T/b1/single/s3"

check "mount" mount -i -t unionfs -o "dirs=$T/b0:$T/b1=ro:$T/b2=ro" none "$M"
is "small merged dir" "$(names "$M/small" | tr '\n' ' ')" "a c "
is "opaque dir listing" "$(names "$M/op" | tr '\n' ' ')" "top "
is "single-branch dir hides .wh. names" "$(names "$M/single" | tr '\n' ' ')" "s1 s3 "

for bs in 32768 1024 200; do
	out=$($S getdents "$M/big" $bs | grep -v '^\.\.\?$')
	total=$(wc -l <<< "$out"); uniq=$(sort -u <<< "$out" | wc -l)
	is "big dir, getdents buffer $bs: entry count" "$total" 99990
	is "big dir, getdents buffer $bs: no repeats" "$uniq" 99990
done
is "big dir: no whited-out name listed" "$($S getdents "$M/big" 4096 | grep -c '^n9999[0-9]$')" 0
is "big dir: no .wh. entry listed" "$($S getdents "$M/big" 4096 | grep -c '^\.wh\.')" 0
out=$($S seekdir "$M/big")
is "telldir/seekdir on merged dir" "$out" "entries 99992 seekdir-mismatches 0"
out=$($S seekdir "$M/single")
is "telldir/seekdir on single-branch dir" "$out" "entries 4 seekdir-mismatches 0"

# a merged listing follows changes made through the union on rewind
touch "$M/small/new"; rm "$M/small/a"
is "listing after create+unlink through the union" "$(names "$M/small" | tr '\n' ' ')" "c new "
check "umount" umount "$M"
finish
