#!/bin/bash
# Host-side: --kdump leaves a vmcore in build/vmcore/<ts>/ after a guest panic (~30 s).
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
[[ -n ${UNIONFS_SKIP_KDUMP:-} ]] && skip_all "UNIONFS_SKIP_KDUMP set"

t0=$(date +%s)
out=$(qemu-debug/boot --kdump -- sh -c 'echo c > /proc/sysrq-trigger; sleep 60' 2>&1); rc=$?
t=$(($(date +%s) - t0))
if [[ $rc != 0 ]]; then ok "kdump: boot exits non-zero ($rc, ${t}s)"; else not_ok "kdump: boot exits non-zero" "exit 0"; fi
vm=$(sed -n 's/^vmcore: //p' <<< "$out" | tr -d '\r')
if [[ -n $vm && -s $vm ]]; then
	ok "kdump: vmcore saved ($vm, $(du -m "$vm" | cut -f1) MB)"
	check "kdump: vmcore is a kdump-compressed file" bash -c "head -c 8 '$vm' | grep -q KDUMP"
	check "kdump: dmesg saved with the panic" grep -q "Kernel panic" "$(dirname "$vm")/dmesg"
else
	not_ok "kdump: vmcore saved" "$(tail -n 15 <<< "$out")"
fi
finish
