# gdb-scripts/unionfs_gdb/mounts.py: "which unions are mounted, and on which branches?" For each
# unionfs superblock in the kernel's super_blocks list: mount point(s), sb, sbi, generation,
# branch count, root dentry and branch table; per branch its index, path, mode (rw, ro, or
# "rw(fs ro)" when the branch's filesystem is read-only), id, open files, lower sb and the path
# the union really holds (walked from the branch's private mount).
#
#   (gdb) unionfs-mounts
#
# Sample output (tests/host/30-gdb.sh: tmpfs dirs /tmp/g/b0 rw and /tmp/g/b1 ro):
#
#   union /tmp/g/m  sb 0xffff888006099800  sbi 0xffff88800638e180  generation 1  branches 2  root dentry 0xffff8880058ebe40  btable 0xffff8880061430c0 (gen 1)
#     idx path                     mode id  open  lower sb (fs)
#     0   /tmp/g/b0                rw   0   0     0xffff888006098000 (tmpfs, dev tmpfs)  [/tmp/g/b0]
#     1   /tmp/g/b1                ro   1   0     0xffff888006098000 (tmpfs, dev tmpfs)  [/tmp/g/b1]
#
# "no unionfs superblock in super_blocks" when nothing is mounted.
import gdb

from . import core
from .symbols import ensure_symbols


class UnionfsMounts(gdb.Command):
    """List every mounted union: mount point, superblock, generation, branches.
Usage: unionfs-mounts"""

    def __init__(self):
        super().__init__("unionfs-mounts", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        ensure_symbols()
        n = 0
        for sb in core.union_sbs():
            n += 1
            sbi = core.SBI(sb)
            brs = core.branches(sb)
            bt = core.sb_bt(sb)
            print("union %s  sb 0x%x  sbi 0x%x  generation %d  branches %d  root dentry 0x%x%s" % (
                ", ".join(core.sb_mountpoints(sb)) or "(not mounted)", int(sb), int(sbi),
                core.sb_gen(sb), len(brs), int(sb["s_root"]),
                "  btable 0x%x (gen %d)" % (int(bt), int(bt["gen"])) if bt is not None else ""))
            print("  %-3s %-24s %-4s %-3s %-5s %s" % ("idx", "path", "mode", "id", "open", "lower sb (fs)"))
            for i, br in enumerate(brs):
                lsb = br["path"]["mnt"]["mnt_sb"]
                print("  %-3d %-24s %-4s %-3d %-5d 0x%x (%s, dev %s)  [%s]" % (
                    i, core.cstr(br["name"]), core.br_mode(br), int(br["id"]),
                    core.atomic(br["open_files"]), int(lsb), core.cstr(lsb["s_type"]["name"]),
                    lsb["s_id"].string(), core.lower_path_of(br["path"]["dentry"], br)))
        if not n:
            print("no unionfs superblock in super_blocks")
