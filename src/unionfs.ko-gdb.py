# src/unionfs.ko-gdb.py: gdb auto-loads this file when it loads the symbols of unionfs.ko (the
# objfile OBJFILE gets OBJFILE-gdb.py: add-symbol-file, the kernel's lx-symbols, or
# unionfs-load-symbols), if `auto-load safe-path` allows it (qemu-debug/gdb sets it to /; by
# hand: gdb -iex 'add-auto-load-safe-path /path/to/unionfs/src'). It imports the unionfs gdb
# helpers (gdb-scripts/unionfs_gdb/, found from this file's real path, or installed next to it
# by `make install`), which register unionfs-load-symbols, unionfs-mounts, unionfs-fanout and
# unionfs-stale once; loading the symbols again adds nothing.
#
#   (gdb) add-symbol-file src/unionfs.ko 0xffffffffc02e4000
#   (gdb) unionfs-mounts
#   union /tmp/g/m  sb 0xffff888006099800  sbi 0xffff88800638e180  generation 1  branches 2  ...
import os
import sys

import gdb


def _unionfs_gdb_dirs():
    """Directories that may hold the unionfs_gdb package: gdb-scripts/ of the source tree this
    file is in (src/../gdb-scripts), and this file's own directory (an installed copy)."""
    here = []
    f = globals().get("__file__")
    if f and os.path.basename(f) == "unionfs.ko-gdb.py":
        here.append(os.path.dirname(os.path.realpath(f)))
    objf = gdb.current_objfile()
    if objf is not None and objf.filename:
        here.append(os.path.dirname(os.path.realpath(objf.filename)))
    dirs = []
    for h in here:
        for d in (os.path.join(os.path.dirname(h), "gdb-scripts"), h):
            if os.path.isfile(os.path.join(d, "unionfs_gdb", "__init__.py")) and d not in dirs:
                dirs.append(d)
    return dirs


if "unionfs_gdb" not in sys.modules:
    _dirs = _unionfs_gdb_dirs()
    if not _dirs:
        gdb.write("unionfs.ko-gdb.py: unionfs_gdb package not found (expected in gdb-scripts/)\n")
    else:
        if _dirs[0] not in sys.path:
            sys.path.insert(0, _dirs[0])
        import unionfs_gdb  # noqa: F401  (registers the commands)
