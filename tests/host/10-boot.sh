#!/bin/bash
# Host-side tests of qemu-debug/boot's contract. Each boots a guest (~7 s each).
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
boot=qemu-debug/boot
abi=$(cat build/kver)

out=$($boot -- sh -c 'exit 7' 2>&1); rc=$?
is "boot -- sh -c 'exit 7' exits 7" "$rc" 7

t0=$(date +%s.%N)
out=$($boot -- uname -r 2>&1); rc=$?
t=$(echo "$(date +%s.%N) - $t0" | bc)
is "boot -- uname -r exits 0" "$rc" 0
if grep -qx "$abi" <<< "${out//$'\r'/}"; then ok "boot -- uname -r prints $abi (${t%???????}s)"; else not_ok "boot -- uname -r prints $abi" "$out"; fi

out=$($boot --no-module -- sh -c '! grep -qw unionfs /proc/modules' 2>&1); rc=$?
is "boot --no-module does not load unionfs" "$rc" 0

out=$($boot -- sh -c 'echo c > /proc/sysrq-trigger; sleep 30' 2>&1); rc=$?
if [[ $rc != 0 ]]; then ok "sysrq crash: boot exits non-zero ($rc)"; else not_ok "sysrq crash: boot exits non-zero" "exit 0"; fi
if grep -q "Kernel panic" <<< "$out" && grep -q "sysrq" <<< "$out"; then
	ok "sysrq crash: output shows the panic"
else
	not_ok "sysrq crash: output shows the panic" "$(tail -n 5 <<< "$out")"
fi

out=$(BOOT_TIMEOUT=25 $boot -- sleep 1000 2>&1); rc=$?
is "hung guest: killed by BOOT_TIMEOUT, exit 124" "$rc" 124
if grep -q "BOOT_TIMEOUT" <<< "$out"; then ok "hung guest: clear message"; else not_ok "hung guest: clear message" "$(tail -n 3 <<< "$out")"; fi

# boot killed from outside (outer timeout, Ctrl-C of make) must take its QEMU down with it
before=$(pgrep -f "path=$PWD,mount_tag=project" | sort)
timeout 15 $boot -- sleep 1000 >/dev/null 2>&1
sleep 3
after=$(pgrep -f "path=$PWD,mount_tag=project" | sort)
left=$(comm -13 <(echo "$before") <(echo "$after"))
is "boot killed by a signal leaves no QEMU behind" "$left" ""

if lsmod 2>/dev/null | grep -qw unionfs || grep -qw unionfs /proc/modules; then
	not_ok "unionfs is not loaded on the host" "$(grep -w unionfs /proc/modules)"
else
	ok "unionfs is not loaded on the host"
fi
finish
