#!/bin/bash
# bench/profile-guest.sh CASE... : perf profiles of unionfs workloads (in the guest; host side:
# bench/profile). For each CASE it builds the data on tmpfs, mounts unionfs (and overlayfs for
# the same case, for comparison), runs the timed loop under `perf record -a -g` and writes
# build/bench/profile/CASE-PEER.txt (perf report --no-children, top symbols) plus the loop time.
# CASEs: w1-cold w1-warm w2-hit-N w2-miss-N w2-warm-N (N branches) w3-cold-SIZE w3-warm-SIZE w6
# w5-chmod (chmod -R over 2000 lower files), w7-untar w7-rm (tar -xf / rm -rf of build/bench/src-kernel-mm.tar's tree, 2 tmpfs branches)
set -uo pipefail
export LC_ALL=C
. bench/guest-lib.sh
D=$PWD/build/bench; P=$D/profile; BH=$D/bhelper; B=/tmp/prof
mkdir -p "$P" $B
modprobe overlay
mount -t tmpfs -o size=90% prof $B
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
mnt() {	# mnt PEER UPPER LOWER...
	local peer=$1 up=$2 l ul= ol=
	shift 2
	for l; do ul+=":$l=ro" ol+=":$l"; done
	mkdir -p $B/m
	case $peer in
	unionfs) mount -i -t unionfs -o "dirs=$up=rw$ul" none $B/m ;;
	overlayfs) rm -rf $B/work; mkdir -p $B/work
		mount -t overlay -o "lowerdir=${ol#:},upperdir=$up,workdir=$B/work" overlay $B/m ;;
	esac
}
prof() {	# prof NAME CMD...: perf around CMD, report to $P/NAME.txt
	local name=$1
	shift
	perf record -q -a -g -o $B/perf.data -- "$@" > $B/out.txt 2>/dev/null
	{
		echo "# $name: $* -> $(cat $B/out.txt)"
		perf report -i $B/perf.data --no-children --stdio --percent-limit 0.7 -g none \
			--sort sym 2>/dev/null | grep -v '^$' | head -n 60
		# perf files the module's symbols under [kernel.kallsyms]: sum them by name instead
		perf report -i $B/perf.data --no-children --stdio --sort sym -g none 2>/dev/null |
			awk '$3 ~ /^(unionfs_|ovl_)/ { s[substr($3, 1, index($3, "_"))] += $1 }
			     END { for (k in s) printf "# self time in %s* functions: %.2f%%\n", k, s[k] }'
		echo "# callers of the top unionfs symbols"
		perf report -i $B/perf.data --no-children --stdio --percent-limit 3 -g caller,0.5,callee \
			--sort sym 2>/dev/null | grep -v '^$' | head -n 120
	} > "$P/$name.txt"
	echo "profile: $name: $(cat $B/out.txt)"
}
for c; do
	rm -rf $B/t; mkdir -p $B/t
	case $c in
	w1-*)
		mkdir -p $B/t/b0 $B/t/b1
		(cd $B/t/b1 && sed 's|/[^/]*$||' $D/tree.list | sort -u | xargs mkdir -p && xargs touch < $D/tree.list)
		for peer in unionfs overlayfs; do
			drop; mnt $peer $B/t/b0 $B/t/b1
			if [[ $c == w1-warm ]]; then
				$BH stat $B/m $D/tree.list > /dev/null
				prof $c-$peer bash -c "for i in 1 2 3; do $BH stat $B/m $D/tree.list; done | paste -sd' '"
			else
				prof $c-$peer $BH stat $B/m $D/tree.list
			fi
			umount $B/m
		done ;;
	w2-*)	# the 1000-name sample of bench/guest.sh (W2_FILES)
		awk '(NR - 1) % 5 == 0' $D/tree2.list > $B/w2.list
		n=${c##*-} kind=${c#w2-}; kind=${kind%-*}
		w2_branches $B/t "$n" $B/w2.list
		for peer in unionfs overlayfs; do
			drop; mnt $peer $B/t/b0 "${LOWS[@]}"
			case $kind in
			hit) prof $c-$peer $BH stat $B/m $B/w2.list ;;
			miss) prof $c-$peer $BH stat $B/m $B/w2.list .missing ;;
			warm) $BH stat $B/m $B/w2.list > /dev/null	# 5 warm passes, for enough samples
				prof $c-$peer bash -c "for i in 1 2 3 4 5; do $BH stat $B/m $B/w2.list; done | paste -sd' '" ;;
			esac
			umount $B/m
		done ;;
	w6)
		for peer in unionfs overlayfs; do
			rm -rf $B/t; mkdir -p $B/t/b0/churn $B/t/b1/churn
			mnt $peer $B/t/b0 $B/t/b1
			prof $c-$peer $BH churn $B/m/churn 400 1200 1
			umount $B/m
		done ;;
	w5-chmod)	# chmod -R g+w over 2000 lower files in 100 dirs: a metadata copy-up each
		mkdir -p $B/t/b1/meta
		(cd $B/t/b1/meta && seq -f 'd%g' 0 99 | xargs mkdir &&
			for ((i = 0; i < 100; i++)); do (cd d$i && seq -f 'f%g' 1 20 | xargs touch); done)
		for peer in unionfs overlayfs; do
			rm -rf $B/t/b0; mkdir -p $B/t/b0
			drop; mnt $peer $B/t/b0 $B/t/b1
			prof $c-$peer bash -c "TIMEFORMAT=%R; { time chmod -R g+w $B/m/meta; } 2>&1"
			umount $B/m
		done ;;
	w7-untar|w7-rm)
		cp $D/src-kernel-mm.tar $B/src.tar
		for peer in unionfs overlayfs; do
			rm -rf $B/t; mkdir -p $B/t/b0 $B/t/b1
			mnt $peer $B/t/b0 $B/t/b1
			if [[ $c == w7-untar ]]; then
				prof $c-$peer bash -c "TIMEFORMAT=%R; { time tar -xf $B/src.tar -C $B/m; } 2>&1"
			else
				tar -xf $B/src.tar -C $B/m
				prof $c-$peer bash -c "TIMEFORMAT=%R; { time rm -rf $B/m/linux-source-6.1; } 2>&1"
			fi
			umount $B/m
		done
		rm -f $B/src.tar ;;
	w3-*)
		size=${c##*-}
		mkdir -p $B/t/b0/dir $B/t/b1/dir
		(cd $B/t/b1/dir && seq -f 'entry-%06g' 1 $size | xargs touch)
		(cd $B/t/b0/dir && seq -f 'entry-%06g' $((size / 2 + 1)) $size | xargs touch)
		for peer in unionfs overlayfs; do
			drop; mnt $peer $B/t/b0 $B/t/b1
			[[ $c == w3-warm-* ]] && $BH readdir $B/m/dir > /dev/null
			prof $c-$peer $BH readdir $B/m/dir
			umount $B/m
		done ;;
	esac
done
umount $B
