# bench/guest-lib.sh: sourced by the guest halves of the benchmarks.
# bench_tree DIR FILES: two tmpfs branches DIR/b0 DIR/b1 (and DIR/m) holding FILES empty
# files in 20 directories present in both branches, half of the files in each branch.
bench_tree() {
	local d=$1 files=$2 nd=20 per i
	per=$((files / nd / 2))
	mkdir -p "$d/b0" "$d/b1" "$d/m"
	mount -t tmpfs -o size=512m t0 "$d/b0"; mount -t tmpfs -o size=512m t1 "$d/b1"
	for ((i = 0; i < nd; i++)); do
		mkdir -p "$d/b0/d$i" "$d/b1/d$i"
		(cd "$d/b0/d$i" && seq -f 'f%g' 1 $per | xargs touch)
		(cd "$d/b1/d$i" && seq -f 'g%g' 1 $per | xargs touch)
	done
}

now() { date +%s%N; }
# bench_pass DIR: one stat of every file below DIR (and a readdir of every dir); prints ms
bench_pass() {
	local t0
	t0=$(now)
	find "$1" -printf '%s\n' > /dev/null
	echo $((($(now) - t0) / 1000000))
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# w2_branches DIR N LIST: N branches DIR/b0..b(N-1) each holding every directory of
# build/bench/tree2.list, the files of LIST (relative names) in the lowest one. Sets LOWS to
# the branches below b0 (for the mount's lower layers).
w2_branches() {
	local d=$1 n=$2 list=$3 i tl=$PWD/build/bench/tree2.list	# (not $PWD after the cd below)
	LOWS=()
	for ((i = 0; i < n; i++)); do
		mkdir -p "$d/b$i"; (cd "$d/b$i" && sed 's|/[^/]*$||' "$tl" | sort -u | xargs mkdir -p)
		((i)) && LOWS+=("$d/b$i")
	done
	(cd "$d/b$((n - 1))" && xargs touch < "$list")
}
