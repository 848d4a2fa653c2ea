#!/bin/bash
# Data integrity with fio verify=crc32c + verify_backlog through the union (ext4 and tmpfs
# branches): job "lower" rewrites files that start on the read-only branch (nrfiles=6,
# openfiles=2, so fio opens - and the union copies up - files in the middle of the workload,
# while a reader keeps the lower originals open); job "new" writes new files (psync); job
# "mmap" new files through ioengine=mmap. Every fio job must end with error 0 and real I/O;
# after a umount + mount, fio --verify_only re-reads everything and must find every block;
# originals on the read-only branch intact; no copy-up temporaries.
# Short: 6 x 384 KiB lower files + 2 x 1 MiB; UNIONFS_SOAK=1: bigger files, rounds for SOAK_SECS.
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
modprobe loop
command -v fio > /dev/null || { not_ok "fio installed (make deps)"; finish; }
M=$T/m B0=$T/b0 B1=$T/b1
FSZ=384k NSZ=1m
((SOAK)) && FSZ=2m NSZ=8m
dmesg_mark

jobfile() {	# jobfile SEED [nobacklog]  (fio 3.33 loops forever with verify_backlog on a
	# multi-file job, so "lower" verifies after its writes and the single-file jobs use
	# verify_backlog; --verify_only ignores corruption when verify_backlog is set: nobacklog)
	local bl=
	[[ ${2:-} == nobacklog ]] && bl="#"
	cat <<-JOB
	[global]
	directory=$M
	ioengine=psync
	bsrange=1k-16k
	verify=crc32c
	verify_fatal=1
	randseed=$1
	[lower]
	rw=randwrite
	nrfiles=6
	filesize=$FSZ
	openfiles=2
	file_service_type=random
	[lowerbl]
	rw=randwrite
	filesize=$FSZ
	${bl}verify_backlog=16
	[new]
	rw=randwrite
	filesize=$NSZ
	bs=4k
	${bl}verify_backlog=32
	[mmap]
	ioengine=mmap
	rw=randwrite
	filesize=$NSZ
	bs=8k
	${bl}verify_backlog=32
	JOB
}
fio_ok() {	# fio_ok JSON : every job error 0 and both writes (or verify reads) happened
	python3 - "$1" "$2" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	bad = []
	for j in d["jobs"]:
	    w, r = j["write"]["io_bytes"], j["read"]["io_bytes"]
	    need_w = sys.argv[2] == "write"
	    if j["error"] != 0 or (need_w and w == 0) or r == 0:
	        bad.append("%s: error %d write %d read %d" % (j["jobname"], j["error"], w, r))
	    print("%s w=%d r=%d" % (j["jobname"], w, r), file=sys.stderr)
	print("\n".join(bad))
	sys.exit(1 if bad else 0)
	PY
}

for fs in ext4 tmpfs; do
	branch_fs $fs "$T" 2 || { not_ok "$fs: branches"; continue; }
	mkdir -p "$M"
	start=$(date +%s) round=0
	while :; do
		seed=$((SRANDOM % 1000000 + 1))
		# fio's default names: JOB.0.FILENUM; the "lower" job's files start in b1 (ro)
		for f in lower.0.{0,1,2,3,4,5} lowerbl.0.0; do head -c "$(numfmt --from=iec ${FSZ^^})" /dev/urandom > "$B1/$f"; done
		sums=$(cd "$B1" && sha1sum lower*.0.*)
		check "$fs round $round: mount b0=rw:b1=ro" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || break
		jobfile $seed > "$T/job.fio"
		# a reader holding the lower originals open across their copy-up
		# (opened before fio starts, read after it ended: must give the copies' bytes)
		rm -f "$T/fio.done"
		(
			fds=()
			for f in lower.0.{0,1,2,3,4,5} lowerbl.0.0; do exec {fd}< "$M/$f"; fds+=("$fd"); done
			touch "$T/reader.ready"
			while [[ ! -e $T/fio.done ]]; do sleep 0.2; done
			i=0
			for f in lower.0.{0,1,2,3,4,5} lowerbl.0.0; do echo "$(sha1sum <&"${fds[$i]}" | cut -d' ' -f1)  $f"; i=$((i + 1)); done
		) > "$T/reader.out" &
		rpid=$!
		while [[ ! -e $T/reader.ready ]]; do sleep 0.1; done
		out=$(cd "$T" && fio --output-format=json --output="$T/out.json" "$T/job.fio" 2>&1); rc=$?
		touch "$T/fio.done"
		wait $rpid
		rm -f "$T/reader.ready"
		# they follow the copy-ups (issue 21 item 12): what they read is what the union has now
		is "$fs round $round: descriptors opened before the copy-ups read the copies" \
			"$(cat "$T/reader.out")" "$(cd "$M" && sha1sum lower.0.{0,1,2,3,4,5} lowerbl.0.0)"
		is "$fs round $round: ... which fio changed (the originals are not what they read)" \
			"$([[ $(cat "$T/reader.out") != "$sums" ]] && echo changed)" changed
		res=$(fio_ok "$T/out.json" write 2>"$T/io.txt")
		if [[ $rc == 0 && -z $res ]]; then
			ok "$fs round $round: fio crc32c verify+backlog, seed $seed: $(tr '\n' ' ' < "$T/io.txt")"
		else
			not_ok "$fs round $round: fio verify, seed $seed (exit $rc)" "$res"$'\n'"$out"$'\n'"$(head -c 1500 "$T/out.json")"
		fi
		is "$fs round $round: read-only originals intact" "$(cd "$B1" && sha1sum lower*.0.*)" "$sums"
		is "$fs round $round: all lower files copied up" "$(ls "$B0" | grep -c '^lower.*\.0\.')" 7
		is "$fs round $round: no copy-up temporaries" "$(find "$B0" "$B1" -name '.wh..wh.unionfs.*')" ""
		no_hazards "$M" "$fs round $round"
		check "$fs round $round: umount" umount "$M"
		check "$fs round $round: remount" mount -i -t unionfs -o "dirs=$B0=rw:$B1=ro" none "$M" || break
		# after umount/mount, every block written must still verify
		jobfile $seed nobacklog > "$T/job2.fio"
		out=$(cd "$T" && fio --output-format=json --output="$T/out2.json" --verify_only "$T/job2.fio" 2>&1); rc=$?
		res=$(fio_ok "$T/out2.json" read 2>"$T/io.txt")
		if [[ $rc == 0 && -z $res ]]; then
			ok "$fs round $round: fio --verify_only after remount: $(tr '\n' ' ' < "$T/io.txt")"
		else
			not_ok "$fs round $round: fio --verify_only after remount (exit $rc)" "$res"$'\n'"$out"
		fi
		check "$fs round $round: umount" umount "$M"
		rm -rf "${B0:?}"/* "${B1:?}"/*
		round=$((round + 1))
		soak_more "$start" || break
	done
	umount_all "$T"; rm -rf "$B0" "$B1" "$T"/img*
done
is "dmesg clean" "$(dmesg_bad)" ""
finish
