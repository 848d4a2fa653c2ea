#!/bin/bash
# Tracepoints (TRACE_SYSTEM unionfs): for every event a workload that must produce it, and
# checks of its fields (branch indexes, reason, errno, counters) read from tracefs.
# Errors are forced with the module's own fault injection (/sys/kernel/debug/unionfs/inject).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir

TR=/sys/kernel/tracing
EV=$TR/events/unionfs
INJ=/sys/kernel/debug/unionfs/inject
[[ -d $EV ]] || skip_all "no $EV (tracefs not mounted or module without tracepoints)"
require_fault_injection

ALL_EVENTS="unionfs_lookup unionfs_copyup_start unionfs_copyup_end unionfs_whiteout_create
unionfs_whiteout_remove unionfs_opaque_mark unionfs_branch_op unionfs_revalidate
unionfs_gen_bump unionfs_readdir unionfs_hazard"

tr_reset() {	# tr_reset EVENT... : only these unionfs events on, empty buffer
	local e
	echo 0 > "$EV/enable"
	echo 0 > "$TR/tracing_on"
	: > "$TR/trace"
	for e; do echo 1 > "$EV/$e/enable"; done
	echo 1 > "$TR/tracing_on"
}
tr_stop() { echo 0 > "$EV/enable"; }
# tr_get EVENT : that event's lines, without the task/cpu/timestamp prefix and without the
# duration field ("ns N", it varies)
tr_get() { sed -n "s/^.* $1: //p" "$TR/trace" | sed -E 's/ ns [0-9]+$//'; }
# has DESC EVENT LINE : the trace holds exactly this event line (after tr_get's trimming)
has() {
	local got
	got=$(tr_get "$2")
	if grep -qxF -- "$3" <<< "$got"; then
		ok "$1"
	else
		not_ok "$1" "expected line: $3"$'\n'"$2 lines:"$'\n'"$(head -n 10 <<< "$got")"
	fi
}
# has_re DESC EVENT ERE : some line of that event matches the extended regex
has_re() {
	if tr_get "$2" | grep -qE -- "$3"; then
		ok "$1"
	else
		not_ok "$1" "expected a line matching: $3"$'\n'"$2 lines:"$'\n'"$(tr_get "$2" | head -n 10)"
	fi
}
inject() { echo "$*" > "$INJ"; }
uninject() { echo "clear all" > "$INJ"; }
trap 'echo 0 > "$EV/enable"; echo "clear all" > "$INJ" 2>/dev/null; _t_cleanup' EXIT

# every event is registered, every event carries dev
for e in $ALL_EVENTS; do
	if [[ -r $EV/$e/format ]] && grep -q 'field:dev_t dev;' "$EV/$e/format"; then
		ok "$e registered, carries dev"
	else
		not_ok "$e registered, carries dev" "$(cat "$EV/$e/format" 2>&1 | head -n 12)"
	fi
done
# enum fields (tracepoints/unionfs_trace_enums.h): one byte each, every value exported by
# number (a value missing its TRACE_DEFINE_ENUM would show its C name in the print format,
# which trace-cmd and perf could not read), each printed by its name
for ef in unionfs_branch_op:op unionfs_revalidate:result unionfs_revalidate:why \
	unionfs_gen_bump:cause unionfs_copyup_start:reason unionfs_copyup_end:reason \
	unionfs_whiteout_create:reason unionfs_whiteout_remove:reason \
	unionfs_opaque_mark:reason; do
	e=${ef%%:*} fld=${ef#*:}
	is "$e: $fld is a u8 field" "$(grep -c "field:u8 $fld;" "$EV/$e/format")" 1
done
for e in unionfs_branch_op unionfs_revalidate unionfs_gen_bump unionfs_copyup_phase \
	unionfs_copyup_start unionfs_copyup_end unionfs_whiteout_create unionfs_whiteout_remove \
	unionfs_opaque_mark; do
	is "$e: no enum value left unexported in the print format" \
		"$(grep '^print fmt' "$EV/$e/format" | grep -oE 'UNIONFS_[A-Z_]+' | head -n 3)" ""
done
is "branch_op: 32 ops, numbered 0..31 in the print format" \
	"$(grep '^print fmt' "$EV/unionfs_branch_op/format" | grep -oE '\{ [0-9]+, "[a-z_]+" \}' |
		grep -oE '^\{ [0-9]+' | tr -d '{ ' | tr '\n' ' ')" "$(seq -s ' ' 0 31) "
is "revalidate: 19 reasons, 6 results" \
	"$(grep '^print fmt' "$EV/unionfs_revalidate/format" | grep -oE '\{ [0-9]+, "[a-z-]+" \}' |
		wc -l)" 25

# union: b0 (rw) over b1 (ro) over b2 (ro), all tmpfs
mkdir -p "$T/m"
branch_fs tmpfs "$T" 3 || skip_all "cannot make tmpfs branches"
B0=$T/b0 B1=$T/b1 B2=$T/b2 M=$T/m
echo one > "$B1/f1"                       # lower-only file
printf '%05000d' 0 > "$B2/big"            # 5000 bytes in b2
for n in w-open trunc chm xat lnk ren cfail; do echo "$n" > "$B1/$n"; done
echo hidden > "$B2/gone"; touch "$B1/.wh.gone"  # whiteout in b1 hides b2's file
mkdir -p "$B0/od" "$B1/od" "$B2/od"; touch "$B1/od/.wh.__dir_opaque"
mkdir -p "$B0/d" "$B1/d"
echo 0 > "$B0/d/x"; touch "$B0/d/.wh.y"; echo 1 > "$B1/d/x"; echo 1 > "$B1/d/y"; echo 1 > "$B1/d/z"
for n in rmf rmf2 whfail; do echo "$n" > "$B1/$n"; done
mkdir -p "$B1/rmd" "$B1/mkover" "$B1/oover"
echo x > "$B1/again"
sleep 0.2	# branch dirs' ctimes out of the whiteout knowledge's trust window (whskip below)
check "mount 3-branch union" mount -i -t unionfs -o "dirs=$B0:$B1=ro:$B2=ro" none "$M" ||
	skip_all "mount failed"
DEV=$(stat -c '%Hd:%Ld' "$M")
D="dev $DEV"

# ---- unionfs_lookup -------------------------------------------------------------------
tr_reset unionfs_lookup
stat "$M/f1" >/dev/null
stat "$M/big" >/dev/null
stat "$M/nothere" >/dev/null 2>&1
stat "$M/gone" >/dev/null 2>&1
stat "$M/od" >/dev/null
stat "$M/d" >/dev/null
inject lookup errno=5 times=1
stat "$M/errname" >/dev/null 2>&1
uninject
tr_stop
has "lookup: lower file wins in b1, probed 2" unionfs_lookup \
	"$D //f1 branches 0..2 probed 2 whskip 0 -> positive bstart 1 bend 1 opaque -1 whiteout -1 err 0"
has "lookup: file only in b2, probed all 3" unionfs_lookup \
	"$D //big branches 0..2 probed 3 whskip 0 -> positive bstart 2 bend 2 opaque -1 whiteout -1 err 0"
has "lookup: negative, probed 3, no .wh. probe in b2 (whiteout-free, read-only: whskip 1)" unionfs_lookup \
	"$D //nothere branches 0..2 probed 3 whskip 1 -> negative bstart -1 bend -1 opaque -1 whiteout -1 err 0"
has "lookup: whiteout in b1 hides name (whiteout 1)" unionfs_lookup \
	"$D //gone branches 0..2 probed 2 whskip 0 -> negative bstart -1 bend -1 opaque -1 whiteout 1 err 0"
has "lookup: opaque dir in b1 stops at 1 (opaque 1)" unionfs_lookup \
	"$D //od branches 0..2 probed 2 whskip 0 -> positive bstart 0 bend 1 opaque 1 whiteout -1 err 0"
has "lookup: merged dir 0..1, b2 known whiteout-free (whskip 1)" unionfs_lookup \
	"$D //d branches 0..2 probed 3 whskip 1 -> positive bstart 0 bend 1 opaque -1 whiteout -1 err 0"
has "lookup: injected EIO -> err -5, probed 1" unionfs_lookup \
	"$D //errname branches 0..2 probed 1 whskip 0 -> error bstart -1 bend -1 opaque -1 whiteout -1 err -5"
ns=$(sed -n 's/^.* unionfs_lookup: .* \/\/big .* ns \([0-9]*\)$/\1/p' "$TR/trace" | head -n1)
if [[ -n $ns ]] && ((ns > 0)); then ok "lookup: duration ns > 0 ($ns)"; else not_ok "lookup: duration ns > 0" "ns='$ns'"; fi

# ---- unionfs_copyup_start / unionfs_copyup_end ----------------------------------------
# a copy-up gives the object a new number (docs/concepts.md "Inode numbers"): copyup_start
# carries the one before, copyup_end the one after
declare -A ino0
for f in w-open trunc chm xat lnk ren big; do ino0[$f]=$(stat -c %i "$M/$f"); done
tr_reset unionfs_copyup_start unionfs_copyup_end
echo more >> "$M/w-open"
$S truncate "$M/trunc" 2 >/dev/null
chmod 600 "$M/chm"
$S setxattr "$M/xat" trusted.k v >/dev/null
ln "$M/lnk" "$M/lnk2"
mv "$M/ren" "$M/ren2"
: >> "$M/big"
inject copyup_data errno=5 times=1
r=$($S open "$M/cfail" wa)
uninject
tr_stop
is "copyup: injected copyup_data EIO fails the open" "$r" EIO
# name size copied reason: truncate(2) to 2 bytes copies only those 2 bytes
for x in "w-open 7 7 write-open" "trunc 6 2 truncate" "chm 4 4 setattr" "xat 4 4 xattr" \
	"lnk 4 4 link" "ren 4 4 rename" "big 5000 5000 write-open"; do
	set -- $x
	from=1; [[ $1 == big ]] && from=2
	ino=$(stat -c %i "$M/$1" 2>/dev/null || stat -c %i "$M/${1}2")
	has "copyup_start: $1 reason $4, $from -> 0" unionfs_copyup_start \
		"$D name $1 ino ${ino0[$1]} branch $from -> 0 size $2 copied 0 reason $4 err 0"
	has "copyup_end: $1 reason $4, copied $3, err 0" unionfs_copyup_end \
		"$D name $1 ino $ino branch $from -> 0 size $2 copied $3 reason $4 err 0"
done
if tr_get unionfs_copyup_end | grep -qE "^$D name cfail ino [0-9]+ branch 1 -> 0 size 6 copied [0-9]+ reason write-open err -5$"; then
	ok "copyup_end: injected failure has err -5"
else
	not_ok "copyup_end: injected failure has err -5" "$(tr_get unionfs_copyup_end | grep cfail)"
fi
ns=$(sed -n 's/^.* unionfs_copyup_end: .* name big .* ns \([0-9]*\)$/\1/p' "$TR/trace")
if [[ -n $ns ]] && ((ns > 0)); then ok "copyup_end: duration ns > 0 ($ns)"; else not_ok "copyup_end: duration ns > 0" "ns='$ns'"; fi
is "copyup: start/end pairs balance" "$(tr_get unionfs_copyup_start | wc -l)" "$(tr_get unionfs_copyup_end | wc -l)"

# ---- unionfs_whiteout_create / unionfs_whiteout_remove / unionfs_opaque_mark ----------
tr_reset unionfs_whiteout_create unionfs_whiteout_remove unionfs_opaque_mark
rm "$M/rmf"
rmdir "$M/rmd"
mv "$M/rmf2" "$M/rmf2-moved"
rm "$M/again"; echo new > "$M/again"      # create over a whiteout
rm -r "$M/mkover"; mkdir "$M/mkover"      # mkdir over a whiteout
mkdir "$M/newdir"; mv "$M/newdir" "$M/newdir2"   # directory rename marks it opaque
inject whiteout errno=28 times=1
r=$($S unlink "$M/whfail")
uninject
is "whiteout: injected ENOSPC fails the unlink" "$r" ENOSPC
inject opaque errno=5 times=1
r=$($S mkdir "$M/rmd")
uninject
is "opaque: injected EIO fails mkdir over a whiteout" "$r" EIO
tr_stop
has "whiteout_create: unlink, branch 0" unionfs_whiteout_create "$D parent / name .wh.rmf branch 0 reason unlink err 0"
has "whiteout_create: rmdir, branch 0" unionfs_whiteout_create "$D parent / name .wh.rmd branch 0 reason rmdir err 0"
has "whiteout_create: rename, branch 0" unionfs_whiteout_create "$D parent / name .wh.rmf2 branch 0 reason rename err 0"
has "whiteout_create: injected errno -28" unionfs_whiteout_create "$D parent / name .wh.whfail branch 0 reason unlink err -28"
has "whiteout_remove: create-over-whiteout" unionfs_whiteout_remove "$D parent / name .wh.again branch 0 reason create-over-whiteout err 0"
has "whiteout_remove: mkdir-over-whiteout" unionfs_whiteout_remove "$D parent / name .wh.mkover branch 0 reason mkdir-over-whiteout err 0"
has "opaque_mark: mkdir-over-whiteout" unionfs_opaque_mark "$D parent mkover name .wh.__dir_opaque branch 0 reason mkdir-over-whiteout err 0"
has "opaque_mark: rename of a directory" unionfs_opaque_mark "$D parent newdir name .wh.__dir_opaque branch 0 reason rename err 0"
has "opaque_mark: injected errno -5" unionfs_opaque_mark "$D parent rmd name .wh.__dir_opaque branch 0 reason mkdir-over-whiteout err -5"
is "union still shows the whited-out names as gone" "$(ls "$M" | grep -cxE 'rmf|rmd|rmf2|whfail')" 1

# ---- unionfs_branch_op ----------------------------------------------------------------
tr_reset unionfs_branch_op
echo n > "$M/bop"
mkdir "$M/bopd"
cat "$M/f1" >/dev/null
echo more >> "$M/bop"	# calls on open branch files: traced with their branch's index
inject create errno=13 times=1
r=$($S open "$M/bopfail" wc)
uninject
tr_stop
is "branch_op: injected EACCES fails create" "$r" EACCES
has "branch_op: create on branch 0" unionfs_branch_op "$D create branch 0 name bop err 0"
has "branch_op: mkdir on branch 0" unionfs_branch_op "$D mkdir branch 0 name bopd err 0"
has "branch_op: open of lower file on branch 1" unionfs_branch_op "$D open branch 1 name f1 err 0"
has "branch_op: injected errno -13" unionfs_branch_op "$D create branch 0 name bopfail err -13"
has "branch_op: read of the open lower file on branch 1" unionfs_branch_op "$D read branch 1 name f1 err 0"
has "branch_op: write of the open upper file on branch 0" unionfs_branch_op "$D write branch 0 name bop err 0"

# ---- unionfs_readdir ------------------------------------------------------------------
tr_reset unionfs_readdir
names "$M/d" > /dev/null
names "$M/od" > /dev/null
names "$M/d" > /dev/null          # unchanged: served from the inode's cache
mkdir -p "$B0/solo"; touch "$B0/solo/a" "$B0/solo/b" "$B0/solo/.wh.c"
names "$M/solo" > /dev/null       # one branch: passthrough
touch "$M/d/fresh"                # a change through the union: the next listing is rebuilt
inject readdir errno=5 times=1
r=$(ls "$M/d" 2>&1)
uninject
tr_stop
# d: b0 {x, .wh.y}  b1 {x, y, z}  -> x z; x duplicate; y hidden by b0's whiteout
has "readdir: merged dir: 2 entries, 1 duplicate, 1 whiteout hidden" unionfs_readdir \
	"$D dir d branches 0..1 read 2 entries 2 duplicates 1 whiteouts 1 cached 0 err 0"
has "readdir: opaque dir reads branches 0..1" unionfs_readdir \
	"$D dir od branches 0..1 read 2 entries 0 duplicates 0 whiteouts 0 cached 0 err 0"
has "readdir: unchanged dir served from cache (read 0 branches)" unionfs_readdir \
	"$D dir d branches 0..1 read 0 entries 2 duplicates 1 whiteouts 1 cached 1 err 0"
has "readdir: single-branch dir read straight through" unionfs_readdir \
	"$D dir solo branches 0..0 read 1 entries 2 duplicates 0 whiteouts 1 cached 0 err 0"
has_re "readdir: injected errno -5" unionfs_readdir \
	"^$D dir d branches 0\.\.1 read [0-9]+ entries [0-9]+ duplicates [0-9]+ whiteouts [0-9]+ cached 0 err -5$"

# ---- unionfs_revalidate ---------------------------------------------------------------
echo v > "$B1/stale"
stat "$M/stale" >/dev/null
tr_reset unionfs_revalidate
rm "$B1/stale"                       # removed behind the union's back
stat "$M/stale" >/dev/null 2>&1
tr_stop
# the parent's lower directory changed: the cached name is dropped and looked up again
has_re "revalidate: lower removed behind the union -> dropped dir-changed" unionfs_revalidate \
	"^$D name stale gen ([0-9]+) sbgen \1 result dropped why dir-changed$"
echo v > "$B1/neg"
stat "$M/neg" >/dev/null
tr_reset unionfs_revalidate unionfs_lookup
rm "$M/neg"; echo again > "$M/neg"
tr_stop
# an unlink drops the union dentry (so the branch object is freed at once): the re-create
# looks the name up afresh and finds the whiteout the unlink left
has_re "revalidate: re-create after unlink -> a fresh lookup finds the whiteout" unionfs_lookup \
	"^$D //neg branches [0-9]+\.\.[0-9]+ probed [0-9]+ whskip [0-9]+ -> negative bstart -1 bend -1 opaque -1 whiteout [0-9]+ err 0$"
is "revalidate: no negative union dentry with branches is left to revalidate" \
	"$(tr_get unionfs_revalidate | grep -c negative-with-branches)" 0

echo v > "$B1/same"
stat "$M/same" >/dev/null
tr_reset unionfs_revalidate
stat "$M/same" >/dev/null
tr_stop
has_re "revalidate: unchanged name -> valid unchanged" unionfs_revalidate \
	"^$D name same gen ([0-9]+) sbgen \1 result valid why unchanged$"
tr_reset unionfs_revalidate
exec 7< "$M/same"                 # in use: the generation bump cannot just free it
mount -i -o remount,incgen "$M"
stat "$M/same" >/dev/null
exec 7<&-
tr_stop
has_re "revalidate: root rebuilt in place on a generation bump" unionfs_revalidate \
	"^$D name / gen ([0-9]+) sbgen [0-9]+ result rebuilt why incgen$"
# an object in use is not dropped: looked up again and refreshed in place
has_re "revalidate: older generation -> refreshed generation" unionfs_revalidate \
	"^$D name same gen ([0-9]+) sbgen [0-9]+ result refreshed why generation$"

# ---- unionfs_hazard -------------------------------------------------------------------
echo v > "$B1/hz"
stat "$M/hz" >/dev/null
tr_reset unionfs_hazard
rm "$B1/hz"                          # behind the union's back
stat "$M/hz" >/dev/null 2>&1
tr_stop
has "hazard: lower removed, seen at revalidation (reval)" unionfs_hazard \
	"$D kind vanished branch 1 name hz what removed or renamed in the branch"
mkdir -p "$T/nb0" "$T/nb1" "$T/mn"; echo v > "$T/nb1/hz2"
mount -i -t unionfs -o "dirs=$T/nb0:$T/nb1=ro,coherency=notify" none "$T/mn"
NDEV=$(stat -c '%Hd:%Ld' "$T/mn")
stat "$T/mn/hz2" >/dev/null
tr_reset unionfs_hazard
rm "$T/nb1/hz2"                      # seen as it happens with coherency=notify
tr_stop
has_re "hazard: coherency=notify reports the removal at once, with its path" unionfs_hazard \
	"^dev $NDEV kind removed branch 1 name .*/nb1/hz2 what removed from the branch$"
if grep -E "unionfs_hazard: dev $NDEV kind removed" "$TR/trace" | grep -q '^ *rm-'; then
	ok "hazard: the event is recorded in the context of the process that made the change (rm)"
else
	not_ok "hazard: the event is recorded in the context of the process that made the change (rm)" "$(grep unionfs_hazard "$TR/trace")"
fi
umount "$T/mn"

# ---- unionfs_gen_bump -----------------------------------------------------------------
f=$EV/unionfs_gen_bump/format
if grep -q 'old_gen' "$f" && grep -q 'new_gen' "$f" && grep -q 'cause' "$f"; then
	ok "gen_bump: fields old_gen new_gen cause"
else
	not_ok "gen_bump: fields old_gen new_gen cause" "$(cat "$f")"
fi
tr_reset unionfs_gen_bump
mount -i -o remount,incgen "$M"
tr_stop
has_re "gen_bump: fires on remount,incgen with cause incgen" unionfs_gen_bump \
	"^$D generation ([0-9]+) -> [0-9]+ cause incgen$"

# ---- two unions are told apart by dev -------------------------------------------------
mkdir -p "$T/m2"
mount -i -t unionfs -o "dirs=$B0:$B1=ro" none "$T/m2"
DEV2=$(stat -c '%Hd:%Ld' "$T/m2")
tr_reset unionfs_lookup
# the event's dev is the kernel dev_t: major << 20 | minor
echo "dev == $(( $(stat -c '%Hd' "$T/m2") << 20 | $(stat -c '%Ld' "$T/m2") ))" > "$EV/unionfs_lookup/filter"
stat "$M/f1x" "$T/m2/f1y" >/dev/null 2>&1
tr_stop
echo 0 > "$EV/unionfs_lookup/filter"
is "two unions: distinct dev" "$([[ $DEV != "$DEV2" ]] && echo distinct)" distinct
is "dev filter keeps only the second union's events" "$(tr_get unionfs_lookup | awk '{print $2, $3}')" "$DEV2 //f1y"
umount "$T/m2"

: > "$TR/trace"
check "umount" umount "$M"
finish
