#!/bin/bash
# Host-side: gdb on the guest's gdbstub with gdb-scripts/unionfs.py (qemu-debug/gdb -batch).
# Boots with --gdb=PORT (a free port), mounts a 2-branch union with a file in both branches
# and a lower-only file, attaches, runs unionfs-mounts and unionfs-fanout on both files (and on
# an inode, through its d_u.d_alias) and checks the output names the right branches and lower
# inode numbers (taken from `stat` on the branches in the guest). Then attaches a second, plain
# gdb (no lx-* scripts, no `source`): add-symbol-file src/unionfs.ko alone must auto-load
# src/unionfs.ko-gdb.py and give the same commands (the package's own list/container_of
# fallbacks), with the same output as the first run. A third gdb loads the module with the
# kernel's own `lx-symbols src`, which must auto-load the script the same way. Every module of the package must compile
# under plain python3. Needs build/vmlinux and build/lx (make vmlinux gdb-helpers:
# fetched/generated once, ~1 min each, then cached in build/). Three gdb loads of vmlinux (four: lx-symbols reloads it): ~1 min each.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
[[ -n ${UNIONFS_SKIP_GDB:-} ]] && skip_all "UNIONFS_SKIP_GDB set"

W=$(mktemp -d "$PWD/build/check/gdb.XXXXXX")
trap 'rm -rf "$W"' EXIT
for f in gdb-scripts/unionfs.py gdb-scripts/unionfs_gdb/*.py src/unionfs.ko-gdb.py; do
	check "python3 -m py_compile $f" env PYTHONPYCACHEPREFIX="$W/pyc" python3 -m py_compile "$f"
done

t0=$(date +%s)
if ! out=$(make -s vmlinux gdb-helpers 2>&1); then
	not_ok "make vmlinux gdb-helpers" "$(tail -n 8 <<< "$out")"
	finish
fi
ok "debug vmlinux and lx-* helpers available ($(($(date +%s) - t0))s)"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=$((20000 + RANDOM % 20000))
while port_busy $port; do port=$((port + 1)); done

cat > "$W/guest.sh" <<EOF
set -e
mkdir -p /tmp/g/b0 /tmp/g/b1 /tmp/g/m
echo top > /tmp/g/b0/both; echo bottom > /tmp/g/b1/both; echo low > /tmp/g/b1/lower
mount -i -t unionfs -o dirs=/tmp/g/b0:/tmp/g/b1=ro none /tmp/g/m
cat /tmp/g/m/both /tmp/g/m/lower > /dev/null
stat -c %i /tmp/g/b0/both /tmp/g/b1/both /tmp/g/b1/lower > $W/inodes
cat /sys/module/unionfs/sections/.text > $W/text
touch $W/ready
for i in \$(seq 3000); do [ -e $W/done ] && break; sleep 0.2; done
umount /tmp/g/m
EOF
qemu-debug/boot --gdb=$port -- sh "$W/guest.sh" > "$W/boot.log" 2>&1 &
bpid=$!
# (up to 40 min: boot may first wait for other guests to finish, on the shared lock)
for ((i = 0; i < 12000; i++)); do [[ -e $W/ready ]] && break; kill -0 $bpid 2>/dev/null || break; sleep 0.2; done
if [[ ! -e $W/ready ]]; then
	not_ok "guest mounted the union" "$(tail -n 15 "$W/boot.log")"
	kill $bpid 2>/dev/null; wait $bpid 2>/dev/null
	finish
fi
read -r i0both i1both i1lower < <(tr '\n' ' ' < "$W/inodes")

t1=$(date +%s)
timeout 180 qemu-debug/gdb $port -- -batch \
	-ex 'unionfs-mounts' \
	-ex 'unionfs-fanout /tmp/g/m/both --dot '"$W"'/both.dot' \
	-ex 'unionfs-fanout /tmp/g/m/lower' \
	-ex 'unionfs-stale' \
	-ex 'p $lx_module("unionfs").name' \
	-ex 'info symbol unionfs_lookup' \
	-ex 'source gdb-scripts/unionfs.py' \
	-ex 'info auto-load python-scripts' \
	-ex 'python import unionfs_gdb as u; print("unionfs_gdb: registrations %d lx %s" % (u.REGISTRATIONS, u.core.HAVE_LX))' \
	-ex 'python gdb.set_convenience_variable("ud", u.fanout.resolve_path("/tmp/g/m/both"))' \
	-ex 'unionfs-fanout $ud->d_inode' > "$W/gdb.out" 2>&1
grc=$?
tg=$(($(date +%s) - t1))

# plain gdb: no lx-* scripts, no `source`; only the module's symbols (.text from the guest)
t2=$(date +%s)
timeout 180 gdb -q -nx -batch -iex 'set auto-load safe-path /' -iex 'set pagination off' \
	-iex 'set confirm off' -ex 'file build/vmlinux' -ex "target remote :$port" \
	-ex "add-symbol-file src/unionfs.ko $(cat "$W/text")" \
	-ex 'info auto-load python-scripts' \
	-ex 'python import unionfs_gdb as u; print("unionfs_gdb: registrations %d lx %s" % (u.REGISTRATIONS, u.core.HAVE_LX))' \
	-ex 'unionfs-mounts' \
	-ex 'unionfs-fanout /tmp/g/m/both --dot '"$W"'/both.dot' \
	-ex 'unionfs-fanout /tmp/g/m/lower' \
	-ex 'unionfs-stale' -ex 'detach' > "$W/gdb2.out" 2>&1
grc2=$?
tg2=$(($(date +%s) - t2))

# the kernel's own lx-symbols (scripts/gdb): it finds unionfs.ko in the directory given, adds it
# at the module's section addresses, and gdb auto-loads src/unionfs.ko-gdb.py from that
t3=$(date +%s)
timeout 300 gdb -q -nx -batch -iex 'set auto-load safe-path /' -iex 'set pagination off' \
	-iex 'set confirm off' -ex 'file build/vmlinux' -ex 'source build/lx/vmlinux-gdb.py' \
	-ex "target remote :$port" -ex 'lx-symbols src' \
	-ex 'info auto-load python-scripts' \
	-ex 'python import unionfs_gdb as u; print("unionfs_gdb: registrations %d lx %s" % (u.REGISTRATIONS, u.core.HAVE_LX))' \
	-ex 'info symbol unionfs_lookup' \
	-ex 'unionfs-mounts' -ex 'detach' > "$W/gdb3.out" 2>&1
grc3=$?
tg3=$(($(date +%s) - t3))
touch "$W/done"
wait $bpid; brc=$?
out=$(<"$W/gdb.out")
out2=$(<"$W/gdb2.out")
is "gdb batch exits 0 (${tg}s)" "$grc" 0
is "plain gdb (auto-load only) exits 0 (${tg2}s)" "$grc2" 0
is "guest ran to the end" "$brc" 0
if grep -q "Python Exception\|Error occurred" <<< "$out"; then
	not_ok "no Python errors" "$(grep -B2 -A2 "Python Exception\|Error occurred" <<< "$out" | head)"
else
	ok "no Python errors"
fi
check "module symbols loaded from the modules list (incl. .init.text)" \
	grep -qE 'unionfs: module struct .*\.init\.text 0x' <<< "$out"
check "unionfs_lookup resolves in the module's .text" grep -q 'unionfs_lookup in section .text' <<< "$out"
check "lx-* helpers work (\$lx_module)" grep -q '"unionfs"' <<< "$out"

# unionfs-mounts: the union, its two branches with modes and ids
mounts=$(sed -n '/^union \/tmp\/g\/m /,/^dentry\|^union /p' <<< "$out")
check "unionfs-mounts lists the union at /tmp/g/m" grep -q '^union /tmp/g/m ' <<< "$out"
check "unionfs-mounts: branch 0 = /tmp/g/b0 rw" grep -qE '^  0 +/tmp/g/b0 +rw ' <<< "$mounts"
check "unionfs-mounts: branch 1 = /tmp/g/b1 ro" grep -qE '^  1 +/tmp/g/b1 +ro ' <<< "$mounts"

fan() { awk -v n="\"$1\"" '$1 == "dentry" && $3 == n { f = 1; print; next } f && /^dentry|^union/ { exit } f' <<< "$out"; }
both=$(fan both) lower=$(fan lower)
check "fanout both: bstart 0 (a file: the top branch wins)" grep -q 'bstart 0  bend 0 ' <<< "$both"
check "fanout both: branch 0 is b0, its lower ino $i0both" \
	grep -qE "\[0\] rw /tmp/g/b0 .* ino $i0both regular  /tmp/g/b0/both  <top>" <<< "$both"
check "fanout both: branch 1 is b1, its lower ino $i1both" \
	grep -qE "\[1\] ro /tmp/g/b1 .*shadowed by branch 0: .* ino $i1both regular  /tmp/g/b1/both" <<< "$both"
check "fanout both: generation current" grep -q 'generation 1 (sb 1: current)' <<< "$both"
check "fanout lower: bstart 1 bend 1" grep -q 'bstart 1  bend 1 ' <<< "$lower"
check "fanout lower: branch 0 (b0) has no such name" grep -qE '\[0\] rw /tmp/g/b0 \(id [0-9]+\) +-($|:.*NEGATIVE)' <<< "$lower"
check "fanout lower: branch 1 is b1, its lower ino $i1lower" \
	grep -qE "\[1\] ro /tmp/g/b1 .* ino $i1lower regular  /tmp/g/b1/lower  <top>" <<< "$lower"
check "fanout lower: union inode's lower inode is ino $i1lower" \
	grep -q "lower inodes: \[1\] ino $i1lower regular" <<< "$lower"
check "--dot wrote a graph naming both lower dentries" \
	bash -c "grep -q 'digraph' '$W/both.dot' && grep -q 'ino $i0both' '$W/both.dot' && grep -q 'ino $i1both' '$W/both.dot'"
if command -v dot >/dev/null; then
	check "dot renders the graph" dot -Tpng "$W/both.dot" -o "$W/both.png"
fi
check "unionfs-stale walks the union (nothing stale)" grep -qE '^  [0-9]+ cached dentries, 0 stale' <<< "$out"
check "unionfs-fanout on an inode shows its alias (d_u.d_alias) \"both\"" \
	grep -qE '^\(alias of inode 0x[0-9a-f]+\) dentry 0x[0-9a-f]+ "both"  /tmp/g/m/both  \[regular\]' <<< "$out"

# auto-load: src/unionfs.ko-gdb.py ran when unionfs-load-symbols / add-symbol-file loaded the
# module; the commands exist once however often the package is imported
check "qemu-debug/gdb: src/unionfs.ko-gdb.py auto-loaded" \
	grep -qE '^Yes +.*/src/unionfs\.ko-gdb\.py *$' <<< "$out"
check "qemu-debug/gdb: source + auto-load + source again: commands registered once, lx helpers used" \
	grep -q '^unionfs_gdb: registrations 1 lx True$' <<< "$out"
if grep -q "Python Exception\|Error occurred\|Undefined command" <<< "$out2"; then
	not_ok "plain gdb: no Python errors" "$(grep -B2 -A2 "Python Exception\|Error occurred\|Undefined command" <<< "$out2" | head)"
else
	ok "plain gdb: no Python errors"
fi
check "plain gdb: add-symbol-file auto-loaded src/unionfs.ko-gdb.py" \
	grep -qE '^Yes +.*/src/unionfs\.ko-gdb\.py *$' <<< "$out2"
check "plain gdb: commands registered once, without lx helpers (own fallbacks)" \
	grep -q '^unionfs_gdb: registrations 1 lx False$' <<< "$out2"
# identical DESC A B: A (qemu-debug/gdb's lines) is not empty and B is the same
identical() {
	if [[ -n $2 && $2 == "$3" ]]; then
		ok "$1 ($(wc -l <<< "$2") lines)"
	else
		not_ok "$1" "$(diff <(echo "$2") <(echo "$3") | head -n 12)"
	fi
}
# the same mounts/fan-out/stale lines with either implementation
same() { sed -n '/^union .*  sbi /,/^  [0-9]* cached dentries/p'; }
identical "plain gdb: unionfs-mounts/fanout/stale output identical to qemu-debug/gdb's" \
	"$(same <<< "$out")" "$(same <<< "$out2")"
out3=$(<"$W/gdb3.out")
is "lx-symbols gdb exits 0 (${tg3}s)" "$grc3" 0
check "lx-symbols src: found and added src/unionfs.ko" \
	grep -qE '^loading @0x[0-9a-f]+: .*/?src/unionfs\.ko$' <<< "$out3"
check "lx-symbols: src/unionfs.ko-gdb.py auto-loaded" \
	grep -qE '^Yes +.*/src/unionfs\.ko-gdb\.py *$' <<< "$out3"
check "lx-symbols: commands registered once, lx helpers used" \
	grep -q '^unionfs_gdb: registrations 1 lx True$' <<< "$out3"
check "lx-symbols: unionfs_lookup resolves in the module's .text" \
	grep -q 'unionfs_lookup in section .text' <<< "$out3"
ml() { grep -E '^union /tmp/g/m .* sbi |^  [0-9]+ +/'; }
identical "lx-symbols: unionfs-mounts output as qemu-debug/gdb's" "$(ml <<< "$mounts")" "$(ml <<< "$out3")"
[[ -n ${UNIONFS_KEEP_GDB_OUT:-} ]] && cp "$W/gdb.out" "$UNIONFS_KEEP_GDB_OUT" && cp "$W/gdb2.out" "$UNIONFS_KEEP_GDB_OUT.plain" && cp "$W/gdb3.out" "$UNIONFS_KEEP_GDB_OUT.lx"
finish
