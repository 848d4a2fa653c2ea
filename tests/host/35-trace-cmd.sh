#!/bin/bash
# trace-cmd workflow, host half (docs/tracing.md): record in a guest with
# bpf-scripts/unionfs-record onto the project share, then decode on the HOST with
# bpf-scripts/unionfs-report (trace-cmd report) and check the unionfs events' fields.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
command -v trace-cmd >/dev/null || skip_all "trace-cmd not installed on the host"
DAT=build/trace/host-35-trace-cmd.dat
rm -f "$DAT"
out=$(qemu-debug/boot -- bpf-scripts/unionfs-record -o "$DAT" -- tests/trace-workload.sh < /dev/null 2>&1)
is "guest: unionfs-record around tests/trace-workload.sh exits 0" "$?" 0 || printf '%s\n' "$out" | tail -n 10
if [[ -s $DAT ]]; then ok "trace.dat is on the host ($(stat -c %s "$DAT") bytes)"; else not_ok "trace.dat is on the host" "$(tail -n 10 <<< "$out")"; fi
rep=$(bpf-scripts/unionfs-report "$DAT" 2>&1)
is "host: unionfs-report exits 0" "$?" 0
for ev in unionfs_lookup unionfs_copyup_start unionfs_copyup_end unionfs_whiteout_create \
	unionfs_whiteout_remove unionfs_opaque_mark unionfs_readdir unionfs_branch_op; do
	if grep -qE " $ev: +dev [0-9]+:[0-9]+ " <<< "$rep"; then ok "host report: $ev decoded"; else not_ok "host report: $ev decoded" "$(head -n 5 <<< "$rep")"; fi
done
chk() {	# chk DESC REGEX
	if grep -qE -- "$2" <<< "$rep"; then ok "host report: $1"; else not_ok "host report: $1" "no line matching: $2"; fi
}
chk "lookup fields (branches, probed, winner)" ' unionfs_lookup: +dev [0-9]+:[0-9]+ //file branches 0\.\.1 probed 2 whskip [01] -> positive bstart 1 bend 1 opaque -1 whiteout -1 err 0 ns [0-9]+$'
chk "copy-up 1 -> 0, write-open, 6 bytes" ' unionfs_copyup_end: +dev [0-9]+:[0-9]+ name file ino [0-9]+ branch 1 -> 0 size 6 copied 6 reason write-open err 0 ns [1-9][0-9]*$'
chk "whiteout .wh.a in branch 0, unlink" ' unionfs_whiteout_create: +dev [0-9]+:[0-9]+ parent dir name \.wh\.a branch 0 reason unlink err 0$'
chk "opaque mark, mkdir-over-whiteout" ' unionfs_opaque_mark: +dev [0-9]+:[0-9]+ parent gone name \.wh\.__dir_opaque branch 0 reason mkdir-over-whiteout err 0$'
chk "readdir merge of dir: 2 branches, 3 entries" ' unionfs_readdir: +dev [0-9]+:[0-9]+ dir dir branches 0\.\.1 read 2 entries 3 duplicates 0 whiteouts 0 cached 0 err 0$'
sum=$(bpf-scripts/unionfs-report "$DAT" --summary 2>&1)
if grep -qE '^[0-9]+:[0-9]+ unionfs_copyup_end write-open +1$' <<< "$sum"; then ok "host report --summary: copy-ups per reason"; else not_ok "host report --summary: copy-ups per reason" "$sum"; fi
filt=$(bpf-scripts/unionfs-report "$DAT" -F 'unionfs/unionfs_copyup_end' 2>&1 | grep -c ': unionfs_')
is "host report -F: only the filtered event" "$filt" 1
finish
