#!/bin/bash
# bench/guest.sh: guest half of bench/run (`make bench`). Runs in the debug guest (booted by
# bench/run with a big --mem), appends CSV rows to $OUT:
#     workload,fs,peer,param,run,seconds,mbps,note
# No sync inside a timed section (under TCG a sync of the ext4 loop costs ~1 s and would
# swamp the differences): times are page-cache times, the same for every peer.
# seconds is the time of the measured operation only (bench/bhelper or fio or `date` around one
# command); mbps is set for throughput workloads; a peer that cannot express a workload gets one
# row with empty seconds and note "n/a: reason".
# Inputs (environment, set by bench/run): BENCH (workload numbers, e.g. 1,2,3), RUNS, FSES
# (tmpfs,ext4), PEERS (native,unionfs,overlayfs,unionfs-fuse,fuse-overlayfs,mergerfs), DATA
# (build/bench: bhelper, tree lists, tarball), OUT, sizes (see the defaults below).
set -uo pipefail
export LC_ALL=C
BENCH=${BENCH:-1,2,3,4,5,6,7} RUNS=${RUNS:-3} FSES=${FSES:-tmpfs,ext4}
PEERS=${PEERS:-native,unionfs,overlayfs,unionfs-fuse,fuse-overlayfs,mergerfs}
DATA=${DATA:?} OUT=${OUT:?}
W2_NS=${W2_NS:-1 2 4 8 16 32 64 128}
W2_FUSE_MAX=${W2_FUSE_MAX:-2}		# FUSE peers in the branch-scaling curve up to this N,
FUSE_RUNS=${FUSE_RUNS:-1}		# runs for the FUSE peers (10-40x slower than the kernel ones
					# under TCG: one run each keeps make bench within ~40 min)
W3_SIZES=${W3_SIZES:-10000 100000}
W4_MB=${W4_MB:-256} W4_RAND_SECS=${W4_RAND_SECS:-3}
W5_MB=${W5_MB:-1024} W5_META=${W5_META:-2000}	# (10k: +5 min of FUSE chmod)
W6_FILES=${W6_FILES:-400} W6_TX=${W6_TX:-1200}
EXT4_MB=${EXT4_MB:-4096}
W1_FILES=${W1_FILES:-20000}
W2_FILES=${W2_FILES:-1000}		# every (5000/W2_FILES)th name of tree2.list (all 19 dirs)
BH=$DATA/bhelper
B=/tmp/bench
has() { [[ ,$1, == *,$2,* ]]; }

log() { echo "bench: $*" >&2; }
row() {	# row W FS PEER PARAM RUN SECONDS [MBPS] [NOTE]
	echo "$1,$2,$3,$4,$5,$6,${7:-},${8:-}" >> "$OUT"
}
na() {	# na W FS PEER PARAM REASON
	row "$1" "$2" "$3" "$4" 0 "" "" "n/a: $5"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.6f", b - a }'; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

modprobe fuse && modprobe overlay && modprobe loop && modprobe ext4 || { log "modprobe failed"; exit 1; }
mkdir -p $B

# ---- file systems holding the branches -----------------------------------------------------
fs_up() {	# fs_up FS -> mounts $B/FS
	mkdir -p $B/$1
	case $1 in
	tmpfs) mount -t tmpfs -o size=90% bench $B/tmpfs ;;
	ext4)	# image on its own tmpfs (RAM): ext4 code paths without a slow disk; discard
		# gives freed blocks back to the tmpfs (the workloads write GiBs in total)
		mkdir -p $B/img && mount -t tmpfs -o size=90% img $B/img &&
		truncate -s ${EXT4_MB}M $B/img/ext4.img &&
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 -N 600000 $B/img/ext4.img &&
			mount -o loop,discard $B/img/ext4.img $B/ext4 ;;
	xfs)	# the same, with reflink: copy-up by clone (FSES=xfs, e.g. BENCH=5)
		modprobe xfs && mkdir -p $B/img && mount -t tmpfs -o size=90% img $B/img &&
		truncate -s ${EXT4_MB}M $B/img/xfs.img &&
		mkfs.xfs -q -m reflink=1 $B/img/xfs.img &&
			mount -o loop,discard $B/img/xfs.img $B/xfs ;;
	esac
}
fs_down() {
	umount $B/$1 && rmdir $B/$1
	[[ $1 == ext4 || $1 == xfs ]] && umount $B/img
}

# ---- union flavours --------------------------------------------------------------------------
# mount_peer PEER MNT UPPER WORK LOWER... : UPPER is the writable top branch (overlay upperdir),
# LOWERs read-only, highest first. WORK: overlay workdir (same fs as UPPER). native: no mount.
fuse_wait_gone() { local i; for ((i = 0; i < 50; i++)); do pgrep -x "$1" > /dev/null || return 0; sleep 0.1; done; }
mount_peer() {
	local peer=$1 mnt=$2 up=$3 work=$4 l ul= ol= fl=
	shift 4
	mkdir -p "$mnt"
	for l; do ul+=":$l=ro" ol+=":$l" fl+=":$l=RO"; done
	ol=${ol#:}
	case $peer in
	unionfs) mount -i -t unionfs -o "dirs=$up=rw$ul" none "$mnt" ;;
	overlayfs)
		rm -rf "$work" && mkdir -p "$work"
		mount -t overlay -o "lowerdir=$ol,upperdir=$up,workdir=$work" overlay "$mnt" ;;
	unionfs-fuse) unionfs -o cow "$up=RW$fl" "$mnt" ;;
	fuse-overlayfs)
		rm -rf "$work" && mkdir -p "$work"
		# (it warns "unknown argument ignored: lazytime" on every mount)
		fuse-overlayfs -o "lowerdir=$ol,upperdir=$up,workdir=$work" "$mnt" 2>> $B/fuse-overlayfs.err ;;
	mergerfs) mergerfs -o category.create=ff "$up=RW$fl" "$mnt" ;;
	esac
}
umount_peer() {	# umount_peer PEER MNT
	case $1 in
	native) ;;
	unionfs-fuse|fuse-overlayfs|mergerfs)
		fusermount3 -u "$2" || umount -l "$2"
		fuse_wait_gone "${1/unionfs-fuse/unionfs}" ;;
	*) umount "$2" ;;
	esac
}
# peer_cannot W PEER NLAYERS -> prints a reason and succeeds if PEER cannot express it
peer_cannot() {
	case $1:$2 in
	w2:overlayfs|w2:fuse-overlayfs) (($3 < 2)) && echo "needs a lower layer besides the upper: N>=2" ;;
	w5c:mergerfs) echo "no copy-on-write: a write goes to the branch holding the file" ;;
	w5m:mergerfs) echo "no copy-up: chmod/chown change the lower branch in place" ;;
	esac
}

for_peers() { local p; for p in ${PEERS//,/ }; do echo "$p"; done; }
is_fuse() { [[ $1 == unionfs-fuse || $1 == fuse-overlayfs || $1 == mergerfs ]]; }
runs_of() { if is_fuse $1; then echo $FUSE_RUNS; else echo $RUNS; fi; }

# ---- data --------------------------------------------------------------------------------------
mktree() {	# mktree DIR LIST: empty files named by LIST (dirs created)
	mkdir -p "$1"
	(cd "$1" && sed 's|/[^/]*$||' "$2" | sort -u | xargs mkdir -p && xargs touch < "$2")
}
mkdirs_of() {	# mkdirs_of DIR LIST: only the directories of LIST
	mkdir -p "$1"
	(cd "$1" && sed 's|/[^/]*$||' "$2" | sort -u | xargs mkdir -p)
}

# ---- W1: lookup/stat of a ~20k-file source tree, 2 branches, cold and warm -------------------
w1() {
	local fs=$1 d=$B/$1/w1 peer r m out
	local list=$B/w1.list
	head -n $W1_FILES $DATA/tree.list > $list
	log "w1 $fs: tree of $(wc -l < $list) files"
	mktree $d/b1 $list; mkdir -p $d/b0
	for peer in $(for_peers); do
		for ((r = 1; r <= $(runs_of $peer); r++)); do
			m=$d/m; [[ $peer == native ]] && m=$d/b1
			drop
			mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w1 $fs $peer cold "mount failed"; break; }
			out=$($BH stat $m $list) && row w1 $fs $peer cold $r "${out%% *}"
			out=$($BH stat $m $list) && row w1 $fs $peer warm $r "${out%% *}"
			umount_peer $peer $d/m
		done
	done
	rm -rf $d
}

# ---- W2: lookup scaling over N branches: hits in the lowest branch, misses ---------------------
w2() {
	local fs=$1 d=$B/$1/w2 n i peer r m out why lows maxn=0
	local list=$B/w2.list
	awk -v k=$((5000 / W2_FILES)) '(NR - 1) % k == 0' $DATA/tree2.list | head -n $W2_FILES > $list
	for n in $W2_NS; do ((n > maxn)) && maxn=$n; done
	log "w2 $fs: $maxn branches with the directory skeleton, files in the lowest"
	for ((i = 0; i < maxn; i++)); do mkdirs_of $d/b$i $list; done
	for n in $W2_NS; do
		(cd $d/b$((n - 1)) && xargs touch < $list)
		lows=(); for ((i = 1; i < n; i++)); do lows+=($d/b$i); done
		for peer in $(for_peers); do
			why=$(peer_cannot w2 $peer $n)
			if [[ -z $why ]] && is_fuse $peer && ((n > W2_FUSE_MAX)); then
				why="not run: FUSE peers only up to N=$W2_FUSE_MAX (TCG time budget, W2_FUSE_MAX)"
			fi
			[[ $peer == native && $n -gt 1 ]] && continue
			if [[ -n $why ]]; then
				na w2 $fs $peer "hit-cold/$n" "$why"; continue
			fi
			for ((r = 1; r <= $(runs_of $peer); r++)); do
				m=$d/m; [[ $peer == native ]] && m=$d/b0
				drop
				mount_peer $peer $d/m $d/b0 $d/work "${lows[@]}" ||
					{ na w2 $fs $peer "hit-cold/$n" "mount failed"; break; }
				out=$($BH stat $m $list) && row w2 $fs $peer "hit-cold/$n" $r "${out%% *}" "" "found/missing ${out#* }"
				out=$($BH stat $m $list) && row w2 $fs $peer "hit-warm/$n" $r "${out%% *}" "" "found/missing ${out#* }"
				out=$($BH stat $m $list .missing) && row w2 $fs $peer "miss-cold/$n" $r "${out%% *}" "" "found/missing ${out#* }"
				out=$($BH stat $m $list .missing) && row w2 $fs $peer "miss-warm/$n" $r "${out%% *}" "" "found/missing ${out#* }"
				umount_peer $peer $d/m
			done
		done
		(cd $d/b$((n - 1)) && xargs rm -f < $list)
	done
	rm -rf $d
}

# ---- W3: readdir of merged directories (duplicates across branches) --------------------------
w3() {
	local fs=$1 d=$B/$1/w3 size peer r m out
	for size in $W3_SIZES; do
		log "w3 $fs: $size entries"
		# b1 (lower) holds all names, b0 (upper) the second half again: size/2 duplicates
		mkdir -p $d/b0/dir $d/b1/dir
		(cd $d/b1/dir && seq -f 'entry-%06g' 1 $size | xargs touch)
		(cd $d/b0/dir && seq -f 'entry-%06g' $((size / 2 + 1)) $size | xargs touch)
		for peer in $(for_peers); do
			for ((r = 1; r <= $(runs_of $peer); r++)); do
				m=$d/m; [[ $peer == native ]] && m=$d/b1
				drop
				mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w3 $fs $peer "cold/$size" "mount failed"; break; }
				out=$($BH readdir $m/dir) && row w3 $fs $peer "cold/$size" $r "${out%% *}" "" "entries=${out#* }"
				out=$($BH readdir $m/dir) && row w3 $fs $peer "warm/$size" $r "${out%% *}" "" "entries=${out#* }"
				umount_peer $peer $d/m
			done
		done
		rm -rf $d
	done
}

# ---- W4: sequential and random read of a large lower file (fio) --------------------------------
fio_bw() {	# fio_bw FILE RW BS [RUNTIME]: prints "seconds MB/s"
	local extra=() j
	[[ -n ${4:-} ]] && extra=(--time_based --runtime="$4")
	j=$(fio --name=r --filename="$1" --rw="$2" --bs="$3" --size=${W4_MB}M --ioengine=psync \
		--invalidate=0 --norandommap --randrepeat=1 "${extra[@]}" --output-format=json 2>/dev/null) || return 1
	python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]
print("%.6f %.2f" % (j["runtime"] / 1000.0, j["io_bytes"] / 1048576.0 / (j["runtime"] / 1000.0)))' <<< "$j"
}
w4() {
	local fs=$1 d=$B/$1/w4 peer r m out
	log "w4 $fs: ${W4_MB} MiB file"
	mkdir -p $d/b0 $d/b1
	head -c ${W4_MB}M /dev/urandom > $d/b1/big
	for peer in $(for_peers); do
		for ((r = 1; r <= $(runs_of $peer); r++)); do
			m=$d/m; [[ $peer == native ]] && m=$d/b1
			mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w4 $fs $peer seq-1M "mount failed"; break; }
			cat $m/big > /dev/null	# page cache warm: measure the union's data path, not the disk
			out=$(fio_bw $m/big read 1M) && row w4 $fs $peer seq-1M $r ${out% *} ${out#* }
			out=$(fio_bw $m/big randread 4k $W4_RAND_SECS) && row w4 $fs $peer rand-4k $r ${out% *} ${out#* }
			umount_peer $peer $d/m
		done
	done
	rm -rf $d
}

# ---- W5: copy-up of a big lower file; chmod -R / chown -R over lower files -------------------
w5() {
	local fs=$1 d=$B/$1/w5 peer r m t0 why
	log "w5 $fs: ${W5_MB} MiB file, $W5_META small files"
	mkdir -p $d/b0 $d/b1/meta
	head -c ${W5_MB}M /dev/urandom > $d/b1/big
	(cd $d/b1/meta && seq -f 'd%g' 0 99 | xargs mkdir &&
		for ((i = 0; i < 100; i++)); do (cd d$i && seq -f 'f%g' 1 $((W5_META / 100)) | xargs touch); done)
	for peer in $(for_peers); do
		why=$(peer_cannot w5c $peer 2)
		if [[ -n $why ]]; then
			na w5 $fs $peer copyup-write "$why"
		else
			for ((r = 1; r <= $(runs_of $peer); r++)); do
				rm -rf $d/b0 && mkdir -p $d/b0; sync
				if [[ $peer == native ]]; then	# the reference: cp of the same file on the branch fs
					t0=$(now); cp $d/b1/big $d/b0/big
					row w5 $fs native copyup-write $r "$(elapsed $t0)" "" "cp on the branch fs"
					continue
				fi
				mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w5 $fs $peer copyup-write "mount failed"; break; }
				t0=$(now)
				dd if=/dev/zero of=$d/m/big bs=4k count=1 conv=notrunc status=none
				row w5 $fs $peer copyup-write $r "$(elapsed $t0)"
				[[ -f $d/b0/big ]] || log "w5: $peer did not copy up into the upper branch"
				umount_peer $peer $d/m
			done
		fi
		for op in chmod chown; do
			why=$(peer_cannot w5m $peer 2)
			[[ -n $why ]] && { na w5 $fs $peer "$op-R/$W5_META" "$why"; continue; }
			for ((r = 1; r <= $(runs_of $peer); r++)); do
				rm -rf $d/b0 && mkdir -p $d/b0; sync
				m=$d/m
				if [[ $peer == native ]]; then
					rm -rf $d/nat && cp -a $d/b1/meta $d/nat; m=$d; mv $d/nat $d/meta-native; m=$d/meta-native
				else
					mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w5 $fs $peer "$op-R/$W5_META" "mount failed"; break; }
					m=$d/m/meta
				fi
				drop
				t0=$(now)
				if [[ $op == chmod ]]; then chmod -R g+w $m; else chown -R 1:1 $m; fi
				row w5 $fs $peer "$op-R/$W5_META" $r "$(elapsed $t0)"
				if [[ $peer == native ]]; then rm -rf $d/meta-native; else umount_peer $peer $d/m; fi
			done
		done
	done
	rm -rf $d
}

# ---- W6: small-file churn (postmark-like, bhelper churn) -------------------------------------
w6() {
	local fs=$1 d=$B/$1/w6 peer r m out
	log "w6 $fs: $W6_FILES files, $W6_TX transactions"
	for peer in $(for_peers); do
		for ((r = 1; r <= $(runs_of $peer); r++)); do
			rm -rf $d && mkdir -p $d/b0/churn $d/b1/churn
			m=$d/m; [[ $peer == native ]] && m=$d/b0
			mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w6 $fs $peer churn "mount failed"; break; }
			out=$($BH churn $m/churn $W6_FILES $W6_TX $r)
			[[ -n $out ]] && row w6 $fs $peer churn $r "${out%% *}" "" "ops=$(cut -d' ' -f2 <<< "$out") errors=$(cut -d' ' -f3 <<< "$out")"
			umount_peer $peer $d/m
		done
	done
	rm -rf $d
}

# ---- W7: untar a source tarball into the union, find, rm -rf ----------------------------------
w7() {
	local fs=$1 d=$B/$1/w7 peer r m t0
	log "w7 $fs: untar/find/rm"
	cp $DATA/src-kernel-mm.tar $B/src.tar
	for peer in $(for_peers); do
		for ((r = 1; r <= $(runs_of $peer); r++)); do
			rm -rf $d && mkdir -p $d/b0 $d/b1 && echo lower > $d/b1/README
			m=$d/m; [[ $peer == native ]] && m=$d/b0
			mount_peer $peer $d/m $d/b0 $d/work $d/b1 || { na w7 $fs $peer untar "mount failed"; break; }
			drop
			t0=$(now); tar -xf $B/src.tar -C $m; row w7 $fs $peer untar $r "$(elapsed $t0)"
			t0=$(now); find $m -printf '%s\n' > /dev/null; row w7 $fs $peer find $r "$(elapsed $t0)"
			t0=$(now); rm -rf $m/linux-source-6.1; row w7 $fs $peer rm-rf $r "$(elapsed $t0)"
			umount_peer $peer $d/m
		done
	done
	rm -f $B/src.tar
	rm -rf $d
}

log "guest: $(nproc) CPUs, $(free -m | awk '/Mem:/ { print $2 }') MiB, kernel $(uname -r); BENCH=$BENCH RUNS=$RUNS FSES=$FSES PEERS=$PEERS"
for fs in ${FSES//,/ }; do
	fs_up $fs || { log "cannot set up $fs"; continue; }
	for w in ${BENCH//,/ }; do
		case $w in
		1|2|3|4|5|6|7) log "== w$w on $fs"; t=$(now); w$w $fs; log "== w$w on $fs took $(elapsed $t) s" ;;
		*) ;;
		esac
	done
	fs_down $fs
done
log "done"
