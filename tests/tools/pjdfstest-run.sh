#!/bin/bash
# tests/tools/pjdfstest-run.sh: run pjdfstest (https://github.com/pjd/pjdfstest, built on the
# host, never part of this repository) in the guest on unionfs, overlayfs and plain tmpfs, and
# compare the failing .t files.
#
#   qemu-debug/boot -- tests/tools/pjdfstest-run.sh [--fs LIST] [--out DIR] [--jobs N]
#                          [--exclude FILE,...] PJDFSTEST [DIR|FILE...]
#   tests/tools/pjdfstest-run.sh --compare [--out DIR]          (host or guest: the table only)
#   make pjdfstest PJDFSTEST=/path/to/pjdfstest [PJD_FS=LIST] [PJD_TESTS="chmod rename"]
#
# --failing-only: the file systems other than unionfs run only the selected .t files that fail on
# unionfs (a baseline for a long suite under TCG). --jobs N (default 2): N prove processes, each
# on every Nth file, each from its own directory on the mount.
# PJDFSTEST is the pjdfstest source tree with the pjdfstest binary built in it (autoreconf -ifs
# && ./configure && make pjdfstest). DIRs are test directories relative to its tests/
# (chmod, rename, ...; default: all). LIST is a comma list of unionfs, overlay, tmpfs (default:
# all three). Each file system gets fresh tmpfs branches:
#   unionfs  mount -i -t unionfs -o dirs=UPPER=rw:LOWER=ro (UPPER, LOWER: two tmpfs mounts)
#   overlay  mount -t overlay -o lowerdir=LOWER,upperdir=UPPER,workdir=WORK (UPPER+WORK on one
#            tmpfs, LOWER on another)
#   tmpfs    a plain tmpfs
# and `prove -r -v` runs the .t files as root from a cwd on the mount (pjdfstest's rule).
# Results accumulate in DIR (default build/pjdfstest-results/ of the project): FS.log (prove's
# output, appended), FS.tsv ("file<TAB>failed<TAB>planned<TAB>wstat" per .t file run, a
# re-run replaces its lines), so the three file systems and the test directories can be run in
# separate guest boots and compared at the end. The comparison prints, per .t file, the ones
# that fail on unionfs but not on overlayfs, then a per-directory count of failing files and
# failing subtests for each file system.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

here=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
out=$here/build/pjdfstest-results
fses=unionfs,overlay,tmpfs
compare_only=0
failing_only=0
jobs=2
exclude=
while (($#)); do
	case $1 in
	--fs) fses=$2; shift 2;;
	--out) out=$2; shift 2;;
	--compare) compare_only=1; shift;;
	--jobs) jobs=$2; shift 2;;
	--exclude) exclude=$2; shift 2;;
	--failing-only) failing_only=1; shift;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0;;
	*) break;;
	esac
done

compare() {	# the unionfs-vs-overlay table from $out/*.tsv
	local fs f
	for fs in unionfs overlay tmpfs; do
		[[ -f $out/$fs.tsv ]] || echo "# no results for $fs in $out"
	done
	echo "# .t files failing on unionfs but not on overlay (failed/planned subtests):"
	awk -F'\t' '
		FNR == 1 { fs = FILENAME; sub(/.*\//, "", fs); sub(/\.tsv$/, "", fs) }
		{ bad = ($2 > 0 || $4 != 0); res[fs, $1] = bad; cnt[fs, $1] = $2 "/" $3 "" ($4 != 0 ? " wstat " $4 : "")
		  files[$1] = 1 }
		END {
			n = 0
			for (f in files) if (res["unionfs", f] && !res["overlay", f]) {
				printf "  %-22s unionfs %s  overlay %s  tmpfs %s\n", f, cnt["unionfs", f],
					(("overlay", f) in cnt) ? cnt["overlay", f] : "-",
					(("tmpfs", f) in cnt) ? cnt["tmpfs", f] : "-" | "sort"
				n++
			}
			close("sort")
			if (!n) print "  (none)"
			print "# .t files failing on overlay but not on unionfs:"
			n = 0
			for (f in files) if (res["overlay", f] && (("unionfs", f) in res) && !res["unionfs", f]) {
				printf "  %-22s overlay %s\n", f, cnt["overlay", f] | "sort"; n++
			}
			close("sort")
			if (!n) print "  (none)"
		}' "$out"/*.tsv 2>/dev/null
	echo "# per directory: failing .t files / files run (failing subtests / planned)"
	printf '  %-16s %-24s %-24s %-24s\n' dir unionfs overlay tmpfs
	awk -F'\t' '
		FNR == 1 { fs = FILENAME; sub(/.*\//, "", fs); sub(/\.tsv$/, "", fs) }
		{ d = $1; sub(/\/[^\/]*$/, "", d); dirs[d] = 1; run[fs, d]++; pl[fs, d] += $3
		  if ($2 > 0 || $4 != 0) bad[fs, d]++; sf[fs, d] += $2
		  run[fs, "TOTAL"]++; pl[fs, "TOTAL"] += $3; sf[fs, "TOTAL"] += $2
		  if ($2 > 0 || $4 != 0) bad[fs, "TOTAL"]++ }
		END {
			for (d in dirs) {
				line = sprintf("  %-16s", d)
				for (i = 1; i <= 3; i++) {
					fs = (i == 1) ? "unionfs" : (i == 2) ? "overlay" : "tmpfs"
					c = ((fs, d) in run) ? sprintf("%d/%d (%d/%d)", bad[fs, d], run[fs, d], sf[fs, d], pl[fs, d]) : "-"
					line = line sprintf(" %-24s", c)
				}
				print line | "sort"
			}
			close("sort")
			line = sprintf("  %-16s", "TOTAL")
			for (i = 1; i <= 3; i++) {
				fs = (i == 1) ? "unionfs" : (i == 2) ? "overlay" : "tmpfs"
				c = ((fs, "TOTAL") in run) ? sprintf("%d/%d (%d/%d)", bad[fs, "TOTAL"], run[fs, "TOTAL"], sf[fs, "TOTAL"], pl[fs, "TOTAL"]) : "-"
				line = line sprintf(" %-24s", c)
			}
			print line
		}' "$out"/*.tsv 2>/dev/null
}

if ((compare_only)); then
	compare
	exit 0
fi

if ! grep -qw 'unionfs_guest=1' /proc/cmdline 2>/dev/null; then
	echo "pjdfstest-run.sh: refusing to run outside the unionfs debug guest" \
		"(qemu-debug/boot -- $0 ...)" >&2
	exit 2
fi
if (($# < 1)); then
	echo "usage: $0 [--fs LIST] [--out DIR] PJDFSTEST [DIR...]" >&2
	exit 2
fi
pjd=$(readlink -f "$1")
shift
if [[ ! -x $pjd/pjdfstest || ! -d $pjd/tests ]]; then
	echo "pjdfstest-run.sh: $pjd has no built pjdfstest binary and tests/ (make pjdfstest in it)" >&2
	exit 2
fi
command -v prove >/dev/null || { echo "pjdfstest-run.sh: no prove (perl) in the guest" >&2; exit 2; }
dirs=("$@")
((${#dirs[@]})) || dirs=($(cd "$pjd/tests" && ls -d */ | tr -d /))
files=()	# the .t files, relative to tests/, in prove -r order
for d in "${dirs[@]}"; do
	d=${d%/}
	if [[ -d $pjd/tests/$d ]]; then
		files+=($(cd "$pjd/tests" && find "$d" -name '*.t' | LC_ALL=C sort))
	elif [[ -f $pjd/tests/$d ]]; then
		files+=("$d")
	else
		echo "pjdfstest-run.sh: no test directory or file $pjd/tests/$d" >&2
		exit 2
	fi
done
for x in ${exclude//,/ }; do
	for i in "${!files[@]}"; do [[ ${files[i]} == "$x" ]] && unset 'files[i]'; done
done
files=("${files[@]}")
((${#files[@]})) || { echo "pjdfstest-run.sh: no .t files selected" >&2; exit 2; }
mkdir -p "$out"
echo "# pjdfstest $(git --git-dir="$pjd/.git" rev-parse HEAD 2>/dev/null || cat "$pjd/.commit" 2>/dev/null || echo '(commit unknown)')"
echo "# module $(git -C "$here" describe --always --dirty 2>/dev/null), kernel $(uname -r), dirs: ${dirs[*]}"

base=/tmp/pjd
run_fs() {	# run_fs FS: mount, prove, record
	local fs=$1 mnt=$base/$fs/mnt rc t0 log tsv tmp
	umount -R "$base/$fs" 2>/dev/null
	rm -rf "${base:?}/$fs"
	mkdir -p "$base/$fs"/{u,l,mnt}
	mount -t tmpfs -o mode=0755 pjd-upper "$base/$fs/u" || return 1
	mount -t tmpfs -o mode=0755 pjd-lower "$base/$fs/l" || return 1
	mkdir -p "$base/$fs/u/upper" "$base/$fs/u/work" "$base/$fs/l/lower"
	case $fs in
	unionfs) mount -i -t unionfs -o "dirs=$base/$fs/u/upper=rw:$base/$fs/l/lower=ro" none "$mnt";;
	overlay) mount -t overlay -o "lowerdir=$base/$fs/l/lower,upperdir=$base/$fs/u/upper,workdir=$base/$fs/u/work" \
			overlay "$mnt";;
	tmpfs) mount -t tmpfs -o mode=0755 pjd-tmpfs "$mnt";;
	*) echo "pjdfstest-run.sh: unknown file system $fs" >&2; return 1;;
	esac || { echo "pjdfstest-run.sh: mounting $fs failed" >&2; return 1; }
	chmod 0755 "$mnt"
	log=$out/$fs.log
	tmp=$(mktemp)
	echo "# $fs: $(df -PT "$mnt" | tail -n 1 | awk '{ print $2 }') at $mnt, ${#files[@]} .t files, $jobs jobs"
	t0=$(date +%s)
	# JOBS prove processes, each on every JOBS-th file, each from its own directory on the mount
	local j pids=()
	for ((j = 0; j < jobs; j++)); do
		local part=()
		for i in "${!files[@]}"; do ((i % jobs == j)) && part+=("$pjd/tests/${files[i]}"); done
		((${#part[@]})) || continue
		mkdir -p "$mnt/w$j" && chmod 0755 "$mnt/w$j"
		# on the project share: a guest killed by BOOT_TIMEOUT leaves what ran
		(cd "$mnt/w$j" && prove -v "${part[@]}" > "$out/.$fs.part$j" 2>&1) &
		pids+=($!)
	done
	rc=0
	for j in "${pids[@]}"; do wait "$j" || rc=$?; done
	{
		echo "### $(date -u '+%F %T') $fs: ${dirs[*]}${exclude:+ (excluding $exclude)}"
		cat "$out/.$fs.part"*
	} > "$tmp"
	rm -f "$out/.$fs.part"*
	cat "$tmp" >> "$log"
	# per .t file: failed subtests, planned, wait status (from prove's -v output and summary)
	tsv=$(awk -v root="$pjd/tests/" '
		function flush() {
			if (cur == "") return
			if (ran != plan) ws = ws ? ws : "plan"
			r[cur] = nf "\t" (plan ? plan : ran) "\t" ws; order[++n] = cur; cur = ""
		}
		/^Test Summary Report/ { flush(); summary = 1; next }
		/^\/.*\.t \.\.+ / { flush(); summary = 0; cur = $1; sub(root, "", cur); nf = ran = plan = ws = 0; next }
		!summary && cur != "" && /^1\.\.[0-9]+/ { plan = substr($1, 4) + 0 }
		!summary && cur != "" && /^not ok [0-9]/ && !/# TODO/ { nf++ }
		!summary && cur != "" && /^(not )?ok [0-9]/ { ran++ }
		summary && /^\/.*\.t \(Wstat: / { f = $1; sub(root, "", f); w = $3; sub(/\)$/, "", w)
			if (w != 0 && (f in r)) { split(r[f], a, "\t"); r[f] = a[1] "\t" a[2] "\t" w } }
		END { flush(); for (i = 1; i <= n; i++) print order[i] "\t" r[order[i]] }
	' "$tmp")
	rm -f "$tmp"
	# replace this run's files in FS.tsv
	if [[ -f $out/$fs.tsv ]]; then
		# (no process substitution: the guest has no /dev/fd)
		printf '%s\n' "$tsv" | awk -F'\t' 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' - \
			"$out/$fs.tsv" > "$out/$fs.tsv.new"
	else
		: > "$out/$fs.tsv.new"
	fi
	printf '%s\n' "$tsv" | grep -v '^$' >> "$out/$fs.tsv.new"
	sort -o "$out/$fs.tsv" "$out/$fs.tsv.new" && rm -f "$out/$fs.tsv.new"
	echo "# $fs: prove exit $rc, $(($(date +%s) - t0)) s, failing files:" \
		"$(printf '%s\n' "$tsv" | awk -F'\t' '$2 > 0 || $4 != 0 { printf "%s(%s/%s) ", $1, $2, $3 }')"
	cd / && umount "$mnt" && umount "$base/$fs/u" "$base/$fs/l"
	return 0
}

IFS=, read -r -a fslist <<< "$fses"
all=("${files[@]}")
for fs in "${fslist[@]}"; do
	if ((failing_only)) && [[ $fs != unionfs ]]; then
		# only the selected files that fail on unionfs (its results so far)
		printf '%s\n' "${all[@]}" > "$out/.selected"
		files=($(awk -F'\t' 'NR == FNR { sel[$1] = 1; next } ($2 > 0 || $4 != 0) && ($1 in sel) { print $1 }' \
			"$out/.selected" "$out/unionfs.tsv" 2>/dev/null))
		rm -f "$out/.selected"
		((${#files[@]})) || { echo "# $fs: no file fails on unionfs, nothing to run"; continue; }
	fi
	run_fs "$fs" || echo "# $fs: setup failed"
done
compare
