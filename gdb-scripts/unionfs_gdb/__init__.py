# gdb-scripts/unionfs_gdb/: the unionfs gdb helpers as a package, one module per question:
#
#   core.py     types, container_of, bounded list walks, paths, the module's objects (no command)
#   symbols.py  unionfs-load-symbols [KO]     module symbols for every section, from `modules`
#   mounts.py   unionfs-mounts                every union: mount point(s), sb, generation, branches
#   fanout.py   unionfs-fanout PATH|EXPR [--dot FILE]   branch fan-out of a dentry/inode/file
#   stale.py    unionfs-stale [--limit N]     objects lagging the sb or disagreeing with a branch
#
# Loaded by any of (each registers the four commands once; importing again, or all three, is
# harmless):
#
#   (gdb) source gdb-scripts/unionfs.py                  the entry point (qemu-debug/gdb uses it)
#   gdb auto-loads src/unionfs.ko-gdb.py when it loads unionfs.ko's symbols (add-symbol-file,
#       lx-symbols, unionfs-load-symbols) and `auto-load safe-path` allows it
#   (gdb) python import sys; sys.path.insert(0, "gdb-scripts"); import unionfs_gdb
#
# With the kernel's gdb scripts sourced first (build/lx/vmlinux-gdb.py, `make gdb-helpers`)
# core.py reuses linux.utils and linux.lists; without them it uses its own equivalents.
#
#   (gdb) python import unionfs_gdb; print(unionfs_gdb.REGISTRATIONS, unionfs_gdb.core.HAVE_LX)
#   1 True
from . import core, fanout, mounts, stale, symbols

COMMANDS = {}		# gdb command name -> the gdb.Command object
REGISTRATIONS = 0	# how many times register() created the commands: 1 once loaded


def register():
    """Create the gdb commands unless this package already did."""
    global REGISTRATIONS
    if COMMANDS:
        return False
    for cls in (mounts.UnionfsMounts, fanout.UnionfsFanout, stale.UnionfsStale,
                symbols.UnionfsLoadSymbols):
        cmd = cls()
        COMMANDS[type(cmd).__name__] = cmd
    REGISTRATIONS += 1
    return True


register()
