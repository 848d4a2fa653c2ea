#!/bin/bash
# Host-side: fault injection is a test facility (issue 21, item 6). The module a user builds
# (`make`, no FAULT_INJECTION=1) has no fault sites, no debugfs inject/crash_at and says so
# (modinfo fault_injection: no, /sys/module/unionfs/parameters/fault_injection N); the test
# build (src/unionfs.ko after make check) has them. Built with `make nofault-module` into
# build/nofault/ (a copy of src/: src/unionfs.ko is not touched), then loaded in a guest, where
# a test that needs injection (75-faults) must FAIL with the reason, not skip.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
# timeout: 400

ko=build/nofault/unionfs.ko
if ! out=$(make -s nofault-module 2>&1) || [[ ! -s $ko ]]; then
	not_ok "make nofault-module builds $ko" "$(tail -n 8 <<< "$out")"
	finish
fi
ok "make nofault-module builds $ko"
is "without FAULT_INJECTION: no unionfs_fault_slow / unionfs_fault_key symbol" \
	"$(nm "$ko" | grep -E ' unionfs_fault_(slow|key)$')" ""
is "without FAULT_INJECTION: no inject/crash_at strings in the module" \
	"$(strings "$ko" | grep -cE '^(inject|crash_at)$')" 0
is "without FAULT_INJECTION: modinfo fault_injection: no" "$(modinfo -F fault_injection "$ko")" no
is "test build src/unionfs.ko: modinfo fault_injection: yes (make check builds it so)" \
	"$(modinfo -F fault_injection src/unionfs.ko)" yes
is "test build src/unionfs.ko: has unionfs_fault_slow" "$(nm src/unionfs.ko | grep -c ' T unionfs_fault_slow$')" 1

W=$(mktemp -d "$PWD/build/check/nofault.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat > "$W/guest.sh" <<'EOF'
echo "param=$(cat /sys/module/unionfs/parameters/fault_injection)"
echo "debugfs=$(ls /sys/kernel/debug/unionfs | tr '\n' ' ')"
mkdir -p /tmp/n/b0 /tmp/n/b1 /tmp/n/m; echo lower > /tmp/n/b1/f
mount -i -t unionfs -o dirs=/tmp/n/b0:/tmp/n/b1=ro none /tmp/n/m && echo more >> /tmp/n/m/f &&
	echo "copyup=$(cat /tmp/n/b0/f | tr '\n' ' ')"
umount /tmp/n/m
echo "insmod-param=$(rmmod unionfs && insmod "$1" fault_injection=1 2>&1 | tail -n 1 | grep -c 'Operation not permitted')"
insmod "$1" || echo "insmod failed"
bash tests/t/75-faults.sh
echo "75-faults exit $?"
EOF
out=$(qemu-debug/boot --append "unionfs_module=$ko" -- bash "$W/guest.sh" "$ko" 2>&1 | tr -d '\r'); rc=$?
grep -q '^param=' <<< "$out" || { not_ok "guest with $ko ran (boot exit $rc)" "$(tail -n 15 <<< "$out")"; finish; }
is "guest: /sys/module/unionfs/parameters/fault_injection is N" "$(sed -n 's/^param=//p' <<< "$out")" N
is "guest: /sys/kernel/debug/unionfs has no inject or crash_at" "$(sed -n 's/^debugfs=//p' <<< "$out")" "mounts "
is "guest: the union works (copy-up)" "$(sed -n 's/^copyup=//p' <<< "$out")" "lower more "
is "guest: insmod fault_injection=1 refused (EPERM)" "$(sed -n 's/^insmod-param=//p' <<< "$out")" 1
is "guest: 75-faults FAILS on it (exit 1), it does not skip" "$(sed -n 's/^75-faults exit //p' <<< "$out")" 1
if grep -q '^not ok .*fault injection built in' <<< "$out" && grep -q 'built without fault injection' <<< "$out" &&
	! grep -q 'SKIP' <<< "$out"; then
	ok "guest: 75-faults says why (built without fault injection)"
else
	not_ok "guest: 75-faults says why (built without fault injection)" "$(grep -E '^(not )?ok|^#' <<< "$out" | head -n 8)"
fi
finish
