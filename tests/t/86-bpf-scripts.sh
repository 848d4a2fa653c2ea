#!/bin/bash
# bpf-scripts/*.bt: each script runs during a workload that it must see, bounded (SIGINT
# after the workload, or its own SECONDS argument), and its output is checked for the
# expected keys and values. Outputs are kept in build/test-out/86-bpf-scripts/.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
command -v bpftrace >/dev/null || skip_all "bpftrace not installed"
[[ -d /sys/kernel/tracing/events/unionfs ]] || skip_all "no unionfs tracepoints"

OUT=build/test-out/86-bpf-scripts
rm -rf "$OUT"; mkdir -p "$OUT"
BT_PID=

# bt_start SCRIPT READY_REGEX [ARGS...] : start bpf-scripts/SCRIPT.bt in the background
# (output in $OUT/SCRIPT.out) and wait until its BEGIN line shows (probes attached)
bt_start() {
	local name=$1 ready=$2 i
	shift 2
	BT_OUT=$OUT/$name.out
	timeout -s INT 120 bpftrace "bpf-scripts/$name.bt" "$@" > "$BT_OUT" 2>&1 &
	BT_PID=$!
	for ((i = 0; i < 600; i++)); do
		grep -qE "$ready" "$BT_OUT" && return 0
		kill -0 "$BT_PID" 2>/dev/null || break
		sleep 0.1
	done
	not_ok "$name: started (attached within 60 s)" "$(tail -n 8 "$BT_OUT")"
	kill -INT "$BT_PID" 2>/dev/null; wait "$BT_PID"
	return 1
}
# bt_stop : SIGINT, wait for the END output; returns bpftrace's status. The SIGINT is sent
# again every 5 s while bpftrace runs: one was once lost in make check (bpftrace printed its
# maps only when timeout's own SIGINT came, 120 s later: exit 124).
bt_stop() {
	local i
	for ((i = 0; i < 600; i++)); do
		((i % 50)) || kill -INT "$BT_PID" 2>/dev/null
		kill -0 "$BT_PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$BT_PID"
}
# bt_wait : wait for a script that ends by itself (SECONDS argument)
bt_wait() { wait "$BT_PID"; }
# has NAME REGEX DESC : an output line matches the extended regex
has() {
	if grep -qE -- "$2" "$BT_OUT"; then ok "$1: $3"; else not_ok "$1: $3" "no line matching: $2"$'\n'"$(head -n 30 "$BT_OUT")"; fi
}

mkdir -p "$T/m"
branch_fs tmpfs "$T" 3 || skip_all "cannot make branches"
B0=$T/b0 B1=$T/b1 B2=$T/b2 M=$T/m
# fan-out: 10 names in b0, 10 in b2, 1 hidden by a whiteout in b1
mkdir -p "$B0/fan" "$B1/fan" "$B2/fan"
for i in $(seq 10); do echo "$i" > "$B0/fan/top$i"; echo "$i" > "$B2/fan/low$i"; done
echo h > "$B2/fan/hid"; touch "$B1/fan/.wh.hid"
# copy-up: 3 sizes in b1
mkdir -p "$B1/cu"
head -c 100 /dev/zero > "$B1/cu/small"; head -c 10000 /dev/zero > "$B1/cu/medium"
head -c 200000 /dev/zero > "$B1/cu/large"; echo m > "$B1/cu/mode"
# whiteouts
mkdir -p "$B1/wh/dir1" "$B1/wh/redo"; echo 1 > "$B1/wh/f1"; echo 2 > "$B1/wh/f2"
# revalidation: 5 lower files that will vanish behind the union's back
mkdir -p "$B1/rv"; for i in 1 2 3 4 5; do echo "$i" > "$B1/rv/gone$i"; done
# readdir: b0 {a b .wh.c} over b1 {a c d}: emits a b d, 1 duplicate (a), 1 whiteout (c)
mkdir -p "$B0/rd" "$B1/rd"; touch "$B0/rd/a" "$B0/rd/b" "$B0/rd/.wh.c" "$B1/rd/a" "$B1/rd/c" "$B1/rd/d"
mkdir -p "$B1/top"; for i in $(seq 20); do echo "$i" > "$B1/top/f$i"; done

check "mount 3-branch union" mount -i -t unionfs -o "dirs=$B0:$B1=ro:$B2=ro" none "$M" ||
	skip_all "mount failed"
MAJ=$(stat -c %Hd "$M") MIN=$(stat -c %Ld "$M")

# ---- enum names: each script's table (BEGIN) is the event's own (its format file) ------
# names_bt SCRIPT MAP: "N name" per line of @MAP[N] = "name"; names_fmt EVENT FIELD: the same from
# the event's print format (__print_symbolic of REC->FIELD)
names_bt() { grep -oE "@$2\[[0-9]+\] = \"[a-z_-]+\"" "bpf-scripts/$1" |
	sed -E 's/.*\[([0-9]+)\] = "(.*)"/\1 \2/' | sort -n; }
names_fmt() { grep '^print fmt' "/sys/kernel/tracing/events/unionfs/$1/format" |
	grep -oE "__print_symbolic\(REC->$2, [^)]*\)" | grep -oE '\{ [0-9]+, "[a-z_-]+" \}' |
	sed -E 's/\{ ([0-9]+), "(.*)" \}/\1 \2/' | sort -n; }
for t in unionfs-revalidate.bt:result_name:unionfs_revalidate:result \
	unionfs-revalidate.bt:why_name:unionfs_revalidate:why \
	unionfs-copyup-latency.bt:reason_name:unionfs_copyup_end:reason \
	unionfs-whiteouts.bt:reason_name:unionfs_whiteout_create:reason; do
	IFS=: read -r sc map ev fld <<< "$t"
	want=$(names_fmt "$ev" "$fld")
	if [[ -n $want && $(names_bt "$sc" "$map") == "$want" ]]; then
		ok "$sc: @$map is $ev's $fld ($(wc -l <<< "$want") names)"
	else
		not_ok "$sc: @$map is $ev's $fld" "$(diff <(names_bt "$sc" "$map") <(echo "$want"))"
	fi
done

# ---- unionfs-fanout.bt --------------------------------------------------------------
if bt_start unionfs-fanout '^Tracing'; then
	for i in $(seq 10); do stat "$M/fan/top$i" "$M/fan/low$i" > /dev/null; done
	stat "$M/fan/hid" "$M/fan/none1" "$M/fan/none2" > /dev/null 2>&1
	bt_stop; is "fanout: exit status" "$?" 0
	has fanout "^@winner\[$MAJ, $MIN, 0\]: 1[0-9]$" "10+ lookups won by branch 0"
	has fanout "^@winner\[$MAJ, $MIN, 2\]: 10$" "10 lookups won by branch 2"
	has fanout "^@winner\[$MAJ, $MIN, -1\]: 3$" "3 negative lookups (winner -1)"
	has fanout "^@hidden_by_whiteout\[$MAJ, $MIN, 1\]: 1$" "1 name hidden by a whiteout in branch 1"
	has fanout "^@result\[$MAJ, $MIN, negative\]: 3$" "3 negative results"
	has fanout "^@result\[$MAJ, $MIN, positive\]: 2[01]$" "20-21 positive results, one line"
	has fanout "^@probed\[$MAJ, $MIN\]:" "probed histogram per mount"
	has fanout "^\[3, 4\) +1[2-9] " "12+ lookups probed all 3 branches"
	has fanout "^@lookup_us\[$MAJ, $MIN\]:" "latency histogram per mount"
fi

# ---- unionfs-copyup-latency.bt ------------------------------------------------------
if bt_start unionfs-copyup-latency '^Tracing'; then
	for f in small medium large; do echo x >> "$M/cu/$f"; done
	chmod 600 "$M/cu/mode"
	bt_stop; is "copyup-latency: exit status" "$?" 0
	has copyup-latency "^@copyups\[write-open\]: 3$" "3 write-open copy-ups"
	has copyup-latency "^@copyups\[setattr\]: 1$" "1 setattr copy-up"
	has copyup-latency "^@copyups\[parent\]: 1$" "1 parent-directory copy-up (cu)"
	is "copyup-latency: one map line per size class" "$(grep -c '^@copyup_us\[a: <4K\]' "$BT_OUT")" 1
	has copyup-latency "^@bytes\[write-open\]: 210100$" "bytes copied for write-open = 100+10000+200000"
	has copyup-latency "^@copyup_us\[a: <4K\]:" "size class <4K"
	has copyup-latency "^@copyup_us\[b: 4K-64K\]:" "size class 4K-64K"
	has copyup-latency "^@copyup_us\[c: 64K-1M\]:" "size class 64K-1M"
	has copyup-latency "^@slowest\[large, write-open, 200000, 1, 0\]: [0-9]+$" "slowest list has large (200000 bytes, 1 -> 0)"
	is "copyup-latency: no failures reported" "$(grep -c '^@failed' "$BT_OUT")" 0
fi

# ---- unionfs-whiteouts.bt -----------------------------------------------------------
if bt_start unionfs-whiteouts '^TIME'; then
	rm "$M/wh/f1" "$M/wh/f2"
	rmdir "$M/wh/dir1"
	rmdir "$M/wh/redo"; mkdir "$M/wh/redo"
	bt_stop; is "whiteouts: exit status" "$?" 0
	has whiteouts " rm +[0-9]+ +whiteout +0 +unlink +0 +wh/\.wh\.f1$" "live line: rm whiteout wh/.wh.f1 in branch 0"
	has whiteouts "^@where\[0, wh, whiteout_create\]: 4$" "where: 4 whiteouts in directory wh of branch 0"
	has whiteouts "^@where\[0, redo, opaque_mark\]: 1$" "where: redo marked opaque in branch 0"
	has whiteouts "^@whiteout_create\[rm, 0, unlink\]: 2$" "rm made 2 whiteouts in branch 0"
	has whiteouts "^@whiteout_create\[rmdir, 0, rmdir\]: 2$" "rmdir made 2 whiteouts in branch 0"
	has whiteouts "^@whiteout_remove\[mkdir, 0, mkdir-over-whiteout\]: 1$" "mkdir removed 1 whiteout"
	has whiteouts "^@opaque_mark\[mkdir, 0, mkdir-over-whiteout\]: 1$" "mkdir marked 1 dir opaque"
	has whiteouts "^@per_branch\[0, whiteout_create\]: 4$" "4 whiteouts in branch 0"
fi

# ---- unionfs-revalidate.bt (bounded by its SECONDS argument) ------------------------
for i in 1 2 3 4 5; do stat "$M/rv/gone$i" > /dev/null; done
if bt_start unionfs-revalidate '^Tracing' 6; then
	rm "$B1"/rv/gone*                       # behind the union's back
	for i in 1 2 3 4 5; do stat "$M/rv/gone$i" > /dev/null 2>&1; done
	bt_wait; is "revalidate: exits by itself after 6 s, status 0" "$?" 0
	is "revalidate: 6 per-second lines" "$(grep -c ' revalidations: ' "$BT_OUT")" 6
	is "revalidate: per-second lines add up to 5" \
		"$(awk '/ revalidations: / { n += $3 } END { print n + 0 }' "$BT_OUT")" 5
	has revalidate "^@total\[dropped, dir-changed\]: 5$" "total: 5 dropped dir-changed"
	has revalidate "^@objects\[gone3, dropped, dir-changed, 1, 1\]: 1$" "objects: gone3 (gen 1, sb gen 1)"
	has revalidate "^@valid_total\[unchanged\]: [0-9]+$" "valid revalidations counted apart (rv itself)"
fi

# ---- unionfs-readdir.bt -------------------------------------------------------------
if bt_start unionfs-readdir '^Tracing'; then
	for i in 1 2; do python3 -c 'import os, sys; print(sorted(os.listdir(sys.argv[1])))' "$M/rd" > /dev/null; done
	bt_stop; is "readdir: exit status" "$?" 0
	has readdir "^@merges\[$MAJ, $MIN, rd\]: 1$" "1 merge of rd"
	has readdir "^@cached\[$MAJ, $MIN, rd\]: 1$" "1 listing of rd served from the cache"
	has readdir "^@entries\[$MAJ, $MIN, rd\]: 6$" "6 entries emitted (3 per listing)"
	has readdir "^@duplicates\[$MAJ, $MIN, rd\]: 2$" "2 duplicates dropped"
	has readdir "^@whiteouts\[$MAJ, $MIN, rd\]: 2$" "2 names hidden by whiteouts"
	has readdir "^@branches_read\[$MAJ, $MIN, rd\]: 2$" "2 branch reads (the cached listing reads none)"
fi

# ---- unionfs-top.bt -----------------------------------------------------------------
if bt_start unionfs-top '^TIME'; then
	for i in $(seq 20); do stat "$M/top/f$i" > /dev/null; done
	stat "$M/top/nope" > /dev/null 2>&1
	echo y >> "$M/top/f1"
	sleep 2.2                              # let the per-second line cover the workload
	bt_stop; is "top: exit status" "$?" 0
	has top "^TIME +LOOKUP +NEG +COPYUP +WHOUT +OPAQUE +REVAL +RDDIR +BROPS +ERR$" "header"
	has top "^[0-9]{2}:[0-9]{2}:[0-9]{2} +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+$" "per-second lines"
	has top "^@total\[lookup\]: 2[1-9]$" "total lookups: 21+ (20 files, 1 miss, top dir)"
	has top "^@total\[negative\]: 1$" "total negative lookups: 1"
	has top "^@total\[copyup\]: 2$" "total copy-ups: 2 (dir top for its child, then f1)"
	has top "^@total\[branch_op\]: [1-9][0-9]*$" "branch ops counted"
fi

check "umount" umount "$M"
finish
