#!/bin/bash
# Host-side: `unionctl --fsck [--repair] DIR...` on branch directories of a union that is not
# mounted (issue 24 item 4; the module cleans its own temporaries too): it reports leftover
# copy-up temporaries (.wh..wh.unionfs.N, files or directory trees; other names of that reserved
# family, e.g. .wh..wh.unionfs.index, are not), whiteouts beside the name
# they hide, whiteouts that hide nothing below and link-group index entries no name uses,
# never opaque markers, valid whiteouts, index entries in use,
# directory redirects that are not valid or lead nowhere (reported only),
# symlinked directories or other file systems; --repair removes exactly the findings. Exit
# status as fsck(8): 0 clean, 1 all repaired, 4 findings left.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
# timeout: 60

make -s "$PWD/build/unionctl" >/dev/null 2>&1 || { not_ok "make build/unionctl"; finish; }
U=$PWD/build/unionctl
mkdir -p build/check
W=$(mktemp -d "$PWD/build/check/fsck.XXXXXX")
trap 'rm -rf "$W"' EXIT
B0=$W/b0 B1=$W/b1
mkdir -p "$B0/d" "$B0/e" "$B0/f" "$B0/.wh..wh.unionfs.9/sub" "$B1/d" "$B1/f"
touch "$B0/.wh..wh.unionfs.123" "$B0/.wh..wh.unionfs.9/sub/x"
touch "$B1/d/x" "$B0/d/.wh.x"			# a whiteout that hides x: valid
touch "$B0/d/.wh.gone"				# hides nothing
echo keep > "$B0/d/y"; touch "$B0/d/.wh.y"	# beside its name
touch "$B0/e/.wh.__dir_opaque" "$B0/e/.wh..wh..opq"	# markers
mkdir -p "$W/elsewhere"; touch "$W/elsewhere/.wh.nothing"
ln -s "$W/elsewhere" "$B0/link"			# not followed
touch "$B0/f/.wh..wh.unionfs.5" "$B1/f/.wh.z"	# a lower branch's own findings
# reserved names of the family that are not temporaries (the module's cleaner removes only
# .wh..wh.unionfs.<digits>): kept
mkdir -p "$B0/.wh..wh.unionfs.index"; touch "$B0/.wh..wh.unionfs.index/k" "$B0/.wh..wh.unionfs.12x"
# link-group index entries (trusted.unionfs.nlink: lower names shown through the entry): only
# one with no other link and a count of 0 is unused; one without the xattr is not judged
IXD=$B0/.wh..wh.unionfs.index
touch "$IXD/unused" "$IXD/linked" "$IXD/lower2"
setfattr -n trusted.unionfs.nlink -v 0 "$IXD/unused"
setfattr -n trusted.unionfs.nlink -v 0 "$IXD/linked"; ln "$IXD/linked" "$B0/name-of-linked"
setfattr -n trusted.unionfs.nlink -v 2 "$IXD/lower2"

out=$("$U" --fsck "$B0" "$B1"); rc=$?
is "report: exit 4 (findings left)" "$rc" 4
is "report: the findings" "$(grep -v '^[0-9]' <<< "$out" | awk '{print $1, $2}' | sed "s|$W/||" | sort | tr '\n' ';')" \
"leftover-temporary b0/.wh..wh.unionfs.123;leftover-temporary b0/.wh..wh.unionfs.9;leftover-temporary b0/f/.wh..wh.unionfs.5;unused-index-entry b0/.wh..wh.unionfs.index/unused;whiteout-beside-name b0/d/.wh.y;whiteout-hides-nothing b0/d/.wh.gone;whiteout-hides-nothing b1/f/.wh.z;"
is "report: summary line" "$(tail -n 1 <<< "$out")" "7 findings, 7 left"
is "report only: nothing removed" "$(find "$W" | wc -l)" 31
out=$("$U" --fsck --repair "$B0" "$B1"); rc=$?
is "repair: exit 1 (all repaired)" "$rc" 1
is "repair: one 'removed' line per finding" "$(grep -c '^removed ' <<< "$out")" 7
is "repair: what is left" "$(cd "$W" && find b0 b1 elsewhere | sort | tr '\n' ' ')" \
"b0 b0/.wh..wh.unionfs.12x b0/.wh..wh.unionfs.index b0/.wh..wh.unionfs.index/k b0/.wh..wh.unionfs.index/linked b0/.wh..wh.unionfs.index/lower2 b0/d b0/d/.wh.x b0/d/y b0/e b0/e/.wh..wh..opq b0/e/.wh.__dir_opaque b0/f b0/link b0/name-of-linked b1 b1/d b1/d/x b1/f elsewhere elsewhere/.wh.nothing "
is "repair: the name beside the whiteout is kept" "$(cat "$B0/d/y")" keep
out=$("$U" --fsck "$B0" "$B1"); rc=$?
is "clean: exit 0" "$rc:$(tail -n 1 <<< "$out")" "0:0 findings, 0 left"
# directory redirects (trusted.unionfs.redirect, docs/concepts.md "Directory rename"): a value
# the module rejects is bad-redirect (in any branch), one naming no directory in a branch below
# is dangling-redirect (not judged in the last branch: nothing is below it); both are reported
# only, --repair leaves them (exit 4). A valid redirect to a lower directory is no finding.
# (on /dev/shm, a tmpfs: trusted xattrs, which the guest's 9p share of build/ does not have,
# and values longer than an ext4 block, which /tmp on ext4 refuses)
R=$(mktemp -d /dev/shm/unionctl-fsck-rd.XXXXXX)
trap 'rm -rf "$W" "$R"' EXIT
R0=$R/r0 R1=$R/r1
mkdir -p "$R0/ok" "$R0/dang" "$R0/tofile" "$R0/bad1" "$R0/bad2" "$R0/bad3" "$R0/bad4" "$R0/bad5" \
	"$R0/bad6" "$R0/sub/deep" "$R1/lower/x" "$R1/own" "$R1/lbad"
touch "$R1/afile"
setrd() { python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.unionfs.redirect", sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1"))' "$1" "$2"; }
setrd "$R0/ok" lower/x; setrd "$R0/dang" gone; setrd "$R0/tofile" afile
setrd "$R0/bad1" /lower; setrd "$R0/bad2" lower/../lower; setrd "$R0/bad3" ''
setrd "$R0/bad4" 'lower\x00x'; setrd "$R0/bad5" .wh.lower; setrd "$R0/bad6" "$(printf 'a%.0s' $(seq 5000))"
setrd "$R0/sub/deep" sub/gone; setrd "$R1/own" nowhere; setrd "$R1/lbad" /x
out=$("$U" --fsck "$R0" "$R1"); rc=$?
is "redirects: exit 4 (findings left)" "$rc" 4
is "redirects: the findings" "$(grep -v '^[0-9]' <<< "$out" | awk '{print $1, $2}' | sed "s|$R/||" | sort | tr '\n' ';')" \
"bad-redirect r0/bad1;bad-redirect r0/bad2;bad-redirect r0/bad3;bad-redirect r0/bad4;bad-redirect r0/bad5;bad-redirect r0/bad6;bad-redirect r1/lbad;dangling-redirect r0/dang;dangling-redirect r0/sub/deep;dangling-redirect r0/tofile;"
out=$("$U" --fsck --repair "$R0" "$R1"); rc=$?
is "redirects: --repair reports only (exit 4)" "$rc:$(tail -n 1 <<< "$out"):$(grep -c '^removed ' <<< "$out")" "4:10 findings, 10 left:0"
is "redirects: --repair left every xattr" \
	"$(python3 -c 'import os,sys; print(sum(1 for d in sys.argv[1:] if "trusted.unionfs.redirect" in os.listxattr(d)))' "$R0"/* "$R0/sub/deep" "$R1/own" "$R1/lbad")" 12
rm -rf "$R"
# a redirect through a directory renamed in a branch between (review 21): z -> A/d, where b1's
# A carries the redirect oldA and b2 has oldA/d: the module finds b2's copy (A's redirect sends
# the branches below b1 on), so it is no finding; z2 -> A/e, with no oldA/e, is dangling
R=$(mktemp -d /dev/shm/unionctl-fsck-rd.XXXXXX)
mkdir -p "$R/r0/z" "$R/r0/z2" "$R/r1/A" "$R/r2/oldA/d"
setrd "$R/r0/z" A/d; setrd "$R/r0/z2" A/e; setrd "$R/r1/A" oldA
out=$("$U" --fsck "$R/r0" "$R/r1" "$R/r2"); rc=$?
is "redirect through a renamed directory: only z2 is dangling" \
	"$rc:$(grep -v '^[0-9]' <<< "$out" | awk '{print $1, $2}' | sed "s|$R/||" | sort | tr '\n' ';')" \
	"4:dangling-redirect r0/z2;"
rm -rf "$R"
"$U" --fsck "$W/nothere" >/dev/null 2>&1
is "a missing directory: exit 8" "$?" 8
"$U" --fsck >/dev/null 2>&1
is "no directory: usage, exit 2" "$?" 2
"$U" --repair "$B0" >/dev/null 2>&1
is "--repair without --fsck: usage, exit 2" "$?" 2
finish
