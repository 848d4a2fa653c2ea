#!/bin/bash
# The module's BTF (make module-btf, run by check/run/soak): the kernel registers it as
# /sys/kernel/btf/unionfs, bpftrace lists a unionfs function with its typed arguments and a
# kfunc probe reads the module's own structures (the dentry info's branch range) during a
# workload. Without BTF in unionfs.ko these fail (kfunc probes need it; kprobes do not).
. "$(dirname "$0")/../lib.sh"
. tests/unionfs-lib.sh
require_guest
mk_tmpdir
command -v bpftrace > /dev/null || { not_ok "bpftrace installed (make deps)"; finish; }

check "unionfs.ko ($UNIONFS_KO) carries a .BTF section" bash -c "readelf -S '$UNIONFS_KO' | grep -q ' \.BTF '"
check "the kernel registered it: /sys/kernel/btf/unionfs" test -s /sys/kernel/btf/unionfs
is "no BTF complaint from the kernel at load" "$(dmesg | grep -iE 'BTF.*unionfs|unionfs.*BTF' | grep -iE 'fail|invalid|mismatch')" ""
lv=$(timeout $(t_limit 120) bpftrace -lv 'kfunc:unionfs:unionfs_d_revalidate' 2>&1)
check "bpftrace lists kfunc:unionfs:unionfs_d_revalidate with typed arguments" \
	grep -qE '^ +struct dentry \* dentry$' <<< "$lv"

mkdir -p "$T/b0" "$T/b1" "$T/m"
echo lower > "$T/b1/f"
check "mount" mount -i -t unionfs -o "dirs=$T/b0=rw:$T/b1=ro" none "$T/m" || finish
stat "$T/m/f" > /dev/null	# cached: the next walks revalidate it
out=$T/bt.out
# probe_f: the branch range of the union dentry "f" as a kfunc probe on d_revalidate reads it
# from the module's struct unionfs_dentry_info (its type from the module's BTF), into $out
probe_f() {
	timeout -s INT 90 bpftrace -e '
	BEGIN { printf("attached\n"); }
	kfunc:unionfs:unionfs_d_revalidate
	/str(args->dentry->d_name.name) == "f"/
	{
		$ud = (struct unionfs_dentry_info *)args->dentry->d_fsdata;
		printf("f bstart %d bend %d nbr %d\n", $ud->bstart, $ud->bend, $ud->nbr);
		exit();
	}' > "$out" 2>&1 &
	bp=$!
	for ((i = 0; i < 600; i++)); do grep -q attached "$out" && break; kill -0 $bp 2>/dev/null || break; sleep 0.1; done
	for ((i = 0; i < 50; i++)); do stat "$T/m/f" > /dev/null; kill -0 $bp 2>/dev/null || break; sleep 0.1; done
	wait $bp
}
probe_f
check "a kfunc probe reads struct unionfs_dentry_info of a lower-only name: bstart 1 bend 1 nbr 2" \
	grep -qx 'f bstart 1 bend 1 nbr 2' "$out"
echo more >> "$T/m/f"	# copied up: now in both branches, b0 wins
probe_f
check "... and after its copy-up: bstart 0 bend 1" grep -qx 'f bstart 0 bend 1 nbr 2' "$out"
check "umount" umount "$T/m"
finish
