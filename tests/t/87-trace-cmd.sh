#!/bin/bash
# trace-cmd workflow, guest half: bpf-scripts/unionfs-record records tests/trace-workload.sh
# (unionfs events + one syscall event) into build/trace/87-trace-cmd.dat on the project
# share; `trace-cmd report` decodes it here. The host half is tests/host/35-trace-cmd.sh.
. "$(dirname "$0")/../lib.sh"
require_guest
command -v trace-cmd >/dev/null || skip_all "trace-cmd not installed"
DAT=build/trace/87-trace-cmd.dat
rm -f "$DAT"
out=$(timeout -s INT 120 bpf-scripts/unionfs-record -o "$DAT" -e syscalls:sys_enter_unlinkat \
	-- tests/trace-workload.sh 2>&1)
is "unionfs-record exits 0" "$?" 0 || printf '%s\n' "$out" | tail -n 5
is "unionfs-record prints the trace.dat path" "$(tail -n 1 <<< "$out")" "unionfs-record: $DAT"
if [[ -s $DAT ]]; then ok "trace.dat written on the share ($(stat -c %s "$DAT") bytes)"; else not_ok "trace.dat written on the share" "$out"; fi
rep=$(trace-cmd report -i "$DAT" 2>&1)
for ev in unionfs_lookup unionfs_copyup_start unionfs_copyup_end unionfs_whiteout_create \
	unionfs_whiteout_remove unionfs_opaque_mark unionfs_readdir unionfs_branch_op; do
	n=$(grep -cE " $ev: +dev " <<< "$rep")
	if ((n > 0)); then ok "report: $ev decoded ($n)"; else not_ok "report: $ev decoded" "$(head -n 5 <<< "$rep")"; fi
done
if grep -qE ' unionfs_copyup_end: +dev [0-9]+:[0-9]+ name file ino [0-9]+ branch 1 -> 0 size 6 copied 6 reason write-open err 0 ns [1-9][0-9]*$' <<< "$rep"; then
	ok "report: copy-up of 'file' decoded with all fields"
else
	not_ok "report: copy-up of 'file' decoded with all fields" "$(grep copyup <<< "$rep")"
fi
if grep -qE ' sys_enter_unlinkat: .*' <<< "$rep"; then ok "report: extra -e event recorded"; else not_ok "report: extra -e event recorded"; fi
out=$(bpf-scripts/unionfs-record -n -o build/trace/87-nobop.dat -f 'err != 0' -- true 2>&1)
is "unionfs-record -n -f: exits 0" "$?" 0
is "unionfs-record -n: no branch_op events" "$(trace-cmd report -i build/trace/87-nobop.dat 2>/dev/null | grep -c unionfs_branch_op)" 0
rm -f build/trace/87-nobop.dat
finish
