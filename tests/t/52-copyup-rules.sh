#!/bin/bash
# Copy-up target rule with one to three writable branches over a read-only bottom (issue 20,
# defect 1; the rule is in docs/concepts.md, "Copy-up with several writable branches"):
# an object is copied to the nearest writable branch at or above its winning branch, a new
# name goes to the nearest writable branch at or above its parent's winning branch, and the
# parent directories missing in that branch are created there with the attributes of their
# winning copy, whatever branch that copy is in.
# Matrix: 1-3 rw branches x object in the ro bottom / a middle rw branch x its parent dir also
# in a higher rw branch / in the target branch / only lower; ops: append, chmod, create,
# mkdir, mv of a file and of a dir inside the parent. Each op is bounded (it used to livelock
# in the kernel, unkillable); afterwards the union shows the right content and metadata and
# the branches hold the copy where the rule puts it. Then moves into a directory that lives
# only in a higher branch (the new copy of that directory must be opaque), and both
# reproducers of the issue verbatim.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
chmod 755 "$T"

HANGS=0
# run DESC CMD... : CMD must return (within 10 s) and succeed. After 3 hangs (each leaves an
# unkillable task spinning in the kernel on the unfixed module) the rest is not run.
run() {
	local desc=$1 rc
	shift
	if ((HANGS >= 3)); then
		not_ok "$desc" "not run: $HANGS earlier commands never returned"
		return 1
	fi
	wd 10 "$@"
	rc=$?
	if ((rc == 124)); then
		HANGS=$((HANGS + 1))
		not_ok "$desc: returns" "$(grep -v '^\[' "$WD_OUT" | head -n 12)"
		return 1
	fi
	if ((rc != 0)); then
		not_ok "$desc" "exit $rc: $(tail -n 5 "$WD_OUT")"
		return 1
	fi
	ok "$desc"
}
pattrs() { stat -c '%a %u %Y' "$1"; }
mode_of() { stat -c '%a' "$1"; }

# case R O PBR: R rw branches b0..b(R-1) over a ro bR; the object lives in branch O; its
# parent directory in the branches listed in PBR (comma separated, O among them).
case_run() {
	local R=$1 O=$2 PBR=$3 M dirs i p t_obj t_new pwin tag b w
	tag="R=$R obj=b$O parent=b{$PBR}"
	rm -rf "$T/c"; mkdir -p "$T/c"
	mkbranches "$T/c" $((R + 1))
	M=$T/c/m; mkdir -p "$M"
	dirs=
	for ((i = 0; i < R; i++)); do dirs+="$T/c/b$i=rw:"; done
	dirs+="$T/c/b$R=ro"
	pwin=${PBR%%,*}
	((O < R)) && t_obj=$O || t_obj=$((R - 1))
	((pwin < R)) && t_new=$pwin || t_new=$((R - 1))
	# one process lays out every parent (fork+exec is slow under TCG): in branch b, mode
	# 0750+b, owner 5+b, mtime 200b-02-03
	python3 - "$T/c" "$O" "${PBR//,/ }" <<-'PY' || { not_ok "$tag: setup"; return; }
	import os, sys, time
	c, o, pbr = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split()]
	for p in ("p_app", "p_chm", "p_new", "p_mkd", "p_mvf", "p_mvd"):
	    for b in pbr:
	        os.mkdir(f"{c}/b{b}/{p}")
	        os.chmod(f"{c}/b{b}/{p}", 0o750 + b)
	        os.chown(f"{c}/b{b}/{p}", 5 + b, 5 + b)
	    with open(f"{c}/b{o}/{p}/f", "w") as f:
	        f.write("orig\n")
	    os.chmod(f"{c}/b{o}/{p}/f", 0o644)
	    if p == "p_mvd":
	        os.mkdir(f"{c}/b{o}/{p}/dd")
	    for b in pbr:
	        t = time.mktime((2000 + b, 2, 3, 4, 5, 6, 0, 0, -1))
	        os.utime(f"{c}/b{b}/{p}", (t, t))
	PY
	check "$tag: mount" mount -i -t unionfs -o dirs="$dirs" none "$M" || return

	run "$tag: append" sh -c 'echo x >> "$1"' _ "$M/p_app/f"
	run "$tag: chmod" chmod 600 "$M/p_chm/f"
	run "$tag: create" sh -c 'echo new > "$1"' _ "$M/p_new/n"
	run "$tag: mkdir" mkdir "$M/p_mkd/nd"
	run "$tag: mv file" mv "$M/p_mvf/f" "$M/p_mvf/g"
	run "$tag: mv dir" mv "$M/p_mvd/dd" "$M/p_mvd/ee"
	# every check in one process (fork+exec is slow under TCG): "ok|not ok<TAB>desc<TAB>diag"
	while IFS=$'\t' read -r st desc diag; do
		if [[ $st == ok ]]; then ok "$tag: $desc"; else not_ok "$tag: $desc" "$diag"; fi
	done < <(python3 - "$T/c" "$R" "$O" "$PBR" "$t_obj" "$t_new" <<-'PY'
	import os, sys, stat
	c, R, O, t_obj, t_new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5]), int(sys.argv[6])
	pbr = [int(x) for x in sys.argv[4].split(",")]
	pwin = pbr[0]
	m = c + "/m"
	def rd(p):
	    try:
	        with open(p) as f:
	            return f.read()
	    except OSError as e:
	        return "ERR " + e.strerror
	def at(p, n=3):
	    try:
	        st = os.stat(p)
	    except OSError as e:
	        return "ERR " + e.strerror
	    return " ".join(str(x) for x in (oct(st.st_mode & 0o7777), st.st_uid, int(st.st_mtime))[:n])
	def ls(p):
	    try:
	        return " ".join(sorted(os.listdir(p)))
	    except OSError as e:
	        return "ERR " + e.strerror
	def isdir(p):
	    return "dir" if os.path.isdir(p) else "not a dir"
	def ck(desc, got, want):
	    if got == want:
	        print(f"ok\t{desc}\t")
	    else:
	        print(f"not ok\t{desc}\tgot {got!r}, expected {want!r}")
	orig = {b: at(f"{c}/b{b}/p_new", 2) for b in pbr}
	ck("append: content through the union", rd(f"{m}/p_app/f"), "orig\nx\n")
	ck(f"append: copy in b{t_obj}", rd(f"{c}/b{t_obj}/p_app/f"), "orig\nx\n")
	ck("chmod: mode through the union", at(f"{m}/p_chm/f", 1), "0o600")
	ck(f"chmod: copy in b{t_obj}", at(f"{c}/b{t_obj}/p_chm/f", 1) + " " + rd(f"{c}/b{t_obj}/p_chm/f"), "0o600 orig\n")
	ck("create: content through the union", rd(f"{m}/p_new/n"), "new\n")
	ck(f"create: new file in b{t_new}", rd(f"{c}/b{t_new}/p_new/n"), "new\n")
	ck("create: directory lists both", ls(f"{m}/p_new"), "f n")
	ck("mkdir: directory through the union", isdir(f"{m}/p_mkd/nd"), "dir")
	ck(f"mkdir: new dir in b{t_new}", isdir(f"{c}/b{t_new}/p_mkd/nd"), "dir")
	ck("mv file: union shows only the new name", ls(f"{m}/p_mvf"), "g")
	ck("mv file: content", rd(f"{m}/p_mvf/g"), "orig\n")
	ck(f"mv file: renamed in b{t_obj}", rd(f"{c}/b{t_obj}/p_mvf/g"), "orig\n")
	ck("mv dir: union shows only the new name", ls(f"{m}/p_mvd"), "ee f")
	ck(f"mv dir: renamed in b{t_obj}", isdir(f"{c}/b{t_obj}/p_mvd/ee"), "dir")
	# parents: a copy-up keeps its parent's times (a create or rename in it changes them);
	# a parent copy the operation created carries its winning copy's attributes
	for p in ("p_app", "p_chm", "p_mvf", "p_mvd"):
	    n = 3 if p in ("p_app", "p_chm") else 2
	    if n == 3:
	        ck(f"{p} attrs through the union", at(f"{m}/{p}"), at(f"{c}/b{pwin}/{p}"))
	    if t_obj not in pbr:
	        ck(f"{p} created in b{t_obj} with the winner's attributes", at(f"{c}/b{t_obj}/{p}", n), at(f"{c}/b{pwin}/{p}", n))
	ck(f"original untouched in b{O}", rd(f"{c}/b{O}/p_app/f") + at(f"{c}/b{O}/p_chm/f", 1),
	   "orig\nx\n0o600" if O < R else "orig\n0o644")
	tmps = [os.path.join(d, f) for d, ds, fs in os.walk(c) for f in fs + ds if f.startswith(".wh..wh.unionfs")]
	ck("no temporary names left", len(tmps), 0)
	PY
	)
	((HANGS)) && umount -l "$M" || umount "$M"
}

for c in "1 1 0,1" "1 1 1" \
	"2 2 0,2" "2 2 1,2" "2 2 2" "2 1 0,1" "2 1 1" \
	"3 3 0,3" "3 3 1,3" "3 3 2,3" "3 3 0,2,3" "3 3 3" \
	"3 1 0,1" "3 1 1" "3 2 0,2" "3 2 1,2" "3 2 2"; do
	# shellcheck disable=SC2086
	case_run $c
done

# Moves into a directory that lives only in a higher branch: the rename happens in the
# source's target branch, the directory is created there, opaque (what lies below it was not
# part of the union's directory and must stay hidden).
mv_into_higher() {	# mv_into_higher R OBJBRANCH KIND
	local R=$1 O=$2 kind=$3 M dirs i t tag land
	tag="mv $kind from b$O into a dir only in b0 (R=$R)"
	rm -rf "$T/c"; mkdir -p "$T/c"
	mkbranches "$T/c" $((R + 1))
	M=$T/c/m; mkdir -p "$M"
	dirs=
	for ((i = 0; i < R; i++)); do dirs+="$T/c/b$i=rw:"; done
	dirs+="$T/c/b$R=ro"
	((O < R)) && t=$O || t=$((R - 1))
	mkdir "$T/c/b0/n"; chmod 0711 "$T/c/b0/n"; echo top > "$T/c/b0/n/top"
	touch -d '2001-01-01' "$T/c/b0/n"
	# a hidden lower "n": whited out in b1 (when b1 is not the ro bottom), present below
	if ((R >= 2)); then
		: > "$T/c/b1/.wh.n"
		mkdir "$T/c/b$R/n"; echo secret > "$T/c/b$R/n/secret"
	fi
	if [[ $kind == file ]]; then echo obj > "$T/c/b$O/d"; else mkdir "$T/c/b$O/d"; fi
	check "$tag: mount" mount -i -t unionfs -o dirs="$dirs" none "$M" || return
	run "$tag: mv" mv "$M/d" "$M/n/d"
	is "$tag: union lists n" "$(names "$M/n" | tr '\n' ' ')" "d top "
	is "$tag: union root no longer has d" "$(test -e "$M/d" && echo there || echo gone)" gone
	if [[ $kind == file ]]; then
		is "$tag: content" "$(cat "$M/n/d" 2>&1)" obj
	else
		is "$tag: is a dir" "$(stat -c %F "$M/n/d" 2>&1)" directory
	fi
	is "$tag: n keeps b0's attributes" "$(pattrs "$M/n")" "$(pattrs "$T/c/b0/n")"
	# a whiteout of n in b1 would hide a copy of n below b1: the rename answers EXDEV and
	# mv copies into b0's n instead
	land=$t
	((R >= 2 && t > 1)) && land=0
	is "$tag: lands in b$land" "$(test -e "$T/c/b$land/n/d" && echo yes)" yes
	if ((land > 0)); then
		is "$tag: n created in b$land with b0's mode and owner, opaque" \
			"$(stat -c '%a %u' "$T/c/b$land/n" 2>&1) $(test -e "$T/c/b$land/n/.wh.__dir_opaque" && echo opaque)" \
			"$(stat -c '%a %u' "$T/c/b0/n") opaque"
	fi
	is "$tag: no temporary names left" "$(find "$T/c" -name '.wh..wh.unionfs*' | wc -l)" 0
	umount "$M" 2>/dev/null || umount -l "$M"
	check "$tag: remount" mount -i -t unionfs -o dirs="$dirs" none "$M" || return
	is "$tag: after remount, union lists n" "$(names "$M/n" | tr '\n' ' ')" "d top "
	umount "$M" 2>/dev/null || umount -l "$M"
}
for c in "2 1 file" "2 1 dir" "2 2 file" "3 2 dir" "3 3 file"; do
	# shellcheck disable=SC2086
	mv_into_higher $c
done

# the reproducers of issue 20, verbatim
rm -rf "$T/r"; mkdir -p "$T/r/A/p" "$T/r/B" "$T/r/C/p" "$T/r/U"; echo orig > "$T/r/C/p/f"
cd "$T/r" || exit 1
check "issue 20 reproducer 1: mount" mount -i -t unionfs -o dirs=A=rw:B=rw:C=ro none U
run "issue 20 reproducer 1: echo x >> U/p/f returns" sh -c 'echo x >> U/p/f'
is "issue 20 reproducer 1: content" "$(cat U/p/f) $(cat B/p/f 2>&1)" $'orig\nx orig\nx'
umount U 2>/dev/null || umount -l U
cd / || exit 1
rm -rf "$T/r"; mkdir -p "$T/r/A/n" "$T/r/B/d" "$T/r/U"
cd "$T/r" || exit 1
check "issue 20 reproducer 2: mount" mount -i -t unionfs -o dirs=A=rw:B=rw none U
run "issue 20 reproducer 2: mv U/d U/n/d returns" mv U/d U/n/d
is "issue 20 reproducer 2: result" "$(ls U; ls U/n)" $'n\nd'
umount U 2>/dev/null || umount -l U
cd / || exit 1
finish
