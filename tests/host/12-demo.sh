#!/bin/bash
# Host-side: `make run`'s guest script (qemu-debug/demo-setup). Its banner's commands must work:
# one boot runs demo-setup (not on a terminal: it prints the banner and returns), then every
# command the banner shows, each checked for exit status 0 and for what it must show (the
# copy-up and whiteout in the overlay branch, the branch table, trace events, bpftrace
# counts, drgn's fan-out when build/vmlinux is there).
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 2
W=$(mktemp -d "$PWD/build/check/demo.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat > "$W/guest.sh" <<EOS
W=$W
EOS
cat >> "$W/guest.sh" <<'EOS'
qemu-debug/demo-setup > $W/banner 2>&1; echo $? > $W/setup.rc
DEMO_BANNER_CHECK=1 qemu-debug/demo-setup > $W/cmds 2>/dev/null
i=0
while IFS= read -r c; do
	bash -c "$c" > $W/out.$i 2>&1; echo $? > $W/rc.$i
	i=$((i + 1))
done < $W/cmds
umount /mnt/union
EOS
qemu-debug/boot -- bash "$W/guest.sh" > "$W/boot.log" 2>&1
is "guest ran the demo and its commands" "$?" 0
is "demo-setup exits 0" "$(cat "$W/setup.rc" 2>/dev/null)" 0
b=$(cat "$W/banner" 2>/dev/null)
check "banner: mounted" grep -q '^ mounted:  mount -i -t unionfs -o dirs=/tmp/demo/overlay=rw:/tmp/demo/dvd=ro none /mnt/union$' <<< "$b"
n=$(wc -l < "$W/cmds" 2>/dev/null)
if ((n >= 7)); then ok "banner lists $n commands"; else not_ok "banner lists >= 7 commands" "$n"; fi
i=0
while IFS= read -r c; do
	is "banner command exits 0: $c" "$(cat "$W/rc.$i" 2>/dev/null)" 0
	check "banner command is shown in the banner: ${c:0:40}..." grep -qF -- "$c" <<< "$b"
	o=$(cat "$W/out.$i" 2>/dev/null)
	case $c in
	"echo hi >> /mnt/union/README"*) check "copy-up: README lands in the overlay branch" grep -q ' README$' <<< "$o" ;;
	"rm /mnt/union/pkgs/foo-1.0.deb"*) check "whiteout: .wh.foo-1.0.deb in the overlay branch" grep -q ' \.wh\.foo-1\.0\.deb$' <<< "$o" ;;
	*"unionctl /mnt/union --list"*) check "unionctl --list: both branches" bash -c 'grep -q "/tmp/demo/overlay" <<< "$0" && grep -q "/tmp/demo/dvd" <<< "$0"' "$o" ;;
	"cat /sys/fs/unionfs/"*) check "sysfs: branches and hazards" bash -c 'grep -qE "^0 rw /tmp/demo/overlay$" <<< "$0" && grep -qE "^[a-z_]+ 0$" <<< "$0"' "$o" ;;
	"trace-cmd record"*) check "trace-cmd: unionfs events recorded" grep -q 'unionfs_' <<< "$o" ;;
	"bpftrace "*) check "unionfs-top.bt: counts printed" grep -qE '^ *Totals|^[0-9:]{8} +[0-9]+' <<< "$o" ;;
	"drgn "*) check "drgn fanout of README: copied up into branch 0" grep -qE '^  ├─ \[0\] rw /tmp/demo/overlay +ino [0-9]+ regular  /README  <top>$' <<< "$o" ;;
	esac
	i=$((i + 1))
done < "$W/cmds"
((_T_FAILS)) && { rm -rf build/check/demo-failed; cp -r "$W" build/check/demo-failed; }
finish
