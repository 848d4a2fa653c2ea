# gdb-scripts/unionfs_gdb/symbols.py: "where is the running unionfs module, and are its symbols
# loaded?" Reads the module's section addresses from the kernel's `modules` list (no guest
# help) and add-symbol-files unionfs.ko at them: every section, including .init.text (usable
# while the module's init runs), warning when the file was rebuilt since the guest loaded it.
# Adding the file makes gdb auto-load src/unionfs.ko-gdb.py (when `auto-load safe-path` allows),
# which imports this package again: harmless, the commands are registered once.
#
#   (gdb) unionfs-load-symbols [PATH/TO/unionfs.ko]
#         default: src/unionfs.ko of this project, or the unionfs.ko gdb already has (lx-symbols)
#
# Sample output (tests/host/30-gdb.sh):
#
#   unionfs: module struct 0xffffffffc02fb6c0, 32 sections from /work/main/src/unionfs.ko \
#       (.text 0xffffffffc02e4000, .init.text 0xffffffffc02be000)
#
# The other commands call ensure_symbols(): they load the default file first when the module's
# types are not known yet.
import os
import subprocess

import gdb

from . import core

PROJ = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_KO = os.path.join(PROJ, "src", "unionfs.ko")


def find_module(name=core.MODNAME):
    for mod in core.list_for_each(gdb.parse_and_eval("modules"), "struct module", "list"):
        if mod["name"].string() == name:
            return mod
    return None


def module_sections(mod):
    secs = {}
    sa = mod["sect_attrs"]
    if int(sa):
        attrs = sa["attrs"]
        for i in range(int(sa["nsections"])):
            secs[attrs[i]["battr"]["attr"]["name"].string()] = int(attrs[i]["address"])
    if ".text" not in secs:		# no sysfs section attributes: fall back to the layouts
        secs[".text"] = int(mod["core_layout"]["base"])
        if int(mod["init_layout"]["base"]):
            secs[".init.text"] = int(mod["init_layout"]["base"])
    return secs


def symbols_loaded():
    try:
        core.T("struct unionfs_sb_info")
        return True
    except gdb.error:
        return False


def default_ko():
    """src/unionfs.ko of this project when it exists (a source tree), else the unionfs.ko gdb
    has loaded already (lx-symbols, add-symbol-file of an installed module), else DEFAULT_KO."""
    if os.path.exists(DEFAULT_KO):
        return DEFAULT_KO
    for objf in gdb.objfiles():
        if objf.filename and os.path.basename(objf.filename) == "unionfs.ko":
            return objf.filename
    return DEFAULT_KO


def load_symbols(ko=None, quiet=False):
    ko = os.path.realpath(ko or default_ko())
    mod = find_module()
    if mod is None:
        raise gdb.GdbError("unionfs is not in the kernel's modules list (not loaded yet?)")
    if not os.path.exists(ko):
        raise gdb.GdbError("%s not found (make)" % ko)
    for objf in gdb.objfiles():
        if objf.filename and os.path.realpath(objf.filename) == ko:
            gdb.execute("remove-symbol-file %s" % objf.filename, to_string=True)
    secs = module_sections(mod)
    args = " ".join("-s %s 0x%x" % (s, a) for s, a in sorted(secs.items())
                    if s != ".text" and not s.startswith((".note", "__ksymtab_strings")))
    gdb.execute("add-symbol-file %s 0x%x %s" % (ko, secs[".text"], args), to_string=True)
    srcv = core.cstr(mod["srcversion"]) if core.has_field(mod, "srcversion") else ""
    warn = ""
    try:
        kov = subprocess.run(["/sbin/modinfo", "-F", "srcversion", ko], capture_output=True,
                             text=True).stdout.strip()
        if srcv and kov and srcv != kov:
            warn = " WARNING: srcversion differs (guest %s, file %s): rebuilt since load?" % (srcv, kov)
    except OSError:
        pass
    if not quiet:
        print("unionfs: module struct 0x%x, %d sections from %s (.text 0x%x%s)%s" % (
            int(mod), len(secs), ko, secs[".text"],
            ", .init.text 0x%x" % secs[".init.text"] if ".init.text" in secs else "", warn))
    return secs


def ensure_symbols():
    if not symbols_loaded():
        load_symbols(quiet=False)


class UnionfsLoadSymbols(gdb.Command):
    """Load unionfs.ko symbols at the addresses of the running module, every section
(.text, .data, .bss, .init.text, ...), read from the kernel's `modules` list.
Usage: unionfs-load-symbols [PATH/TO/unionfs.ko]   (default: src/unionfs.ko of this project)"""

    def __init__(self):
        super().__init__("unionfs-load-symbols", gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        load_symbols(argv[0] if argv else None)
