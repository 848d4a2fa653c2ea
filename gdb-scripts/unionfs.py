# gdb-scripts/unionfs.py: entry point of the unionfs gdb helpers (the package unionfs_gdb/ next to
# this file) for `gdb build/vmlinux` attached to the debug guest's gdbstub or opened on a vmcore
# (qemu-debug/gdb does all of this for you):
#
#   (gdb) source gdb-scripts/unionfs.py
#   (gdb) unionfs-load-symbols [KO]     module symbols for every section (incl. .init.text),
#                                       read from the kernel's `modules` list: no guest help
#   (gdb) unionfs-mounts                every union: mount point(s), sb, generation, branches
#   (gdb) unionfs-fanout PATH|EXPR [--dot FILE]
#                                       branch fan-out of a union dentry/inode/file
#   (gdb) unionfs-stale [--limit N]     objects whose generation lags the sb's, or whose cached
#                                       view disagrees with the branch (direct modification)
#
# Sourcing it puts gdb-scripts/ on sys.path and imports unionfs_gdb, which registers the
# commands once (sourcing again, or the auto-loaded src/unionfs.ko-gdb.py, adds nothing).
# Each command's module header (unionfs_gdb/*.py) says what it answers and shows sample
# output. Every structure layout comes from the debug info; nothing knows an offset.
#
#   (gdb) source gdb-scripts/unionfs.py
#   (gdb) unionfs-mounts
#   union /tmp/g/m  sb 0xffff888006099800  sbi 0xffff88800638e180  generation 1  branches 2  ...
import os
import sys

_here = os.path.dirname(os.path.realpath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

import unionfs_gdb  # noqa: E402,F401  (registers the commands)
