#!/usr/bin/env python3
"""tests/fsconfig.py: mount or reconfigure through the new mount API and show the fs_context log.

  fsconfig.py mount TARGET FSTYPE KEY[=VALUE]...        fsopen, fsconfig each, CREATE, fsmount,
                                                        move_mount onto TARGET
  fsconfig.py reconfigure TARGET KEY[=VALUE]...         fspick TARGET, fsconfig each, RECONFIGURE

Each VALUE is passed as one FSCONFIG_SET_STRING (so it may hold ',' freely); a KEY without
'=' is a FSCONFIG_SET_FLAG. Prints "OK" or the errno name of the first failing call, then
every message the fs_context log holds (read(2) of the fs fd until ENODATA), one a line.
"""
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick = 429, 430, 431, 432, 433
SET_FLAG, SET_STRING, CMD_CREATE, CMD_RECONFIGURE = 0, 1, 6, 7
AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = -100, 4


class Fail(Exception):
    pass


def sc(nr, *args):
    r = libc.syscall(nr, *args)
    if r < 0:
        raise Fail(errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
    return r


def log(fd):
    out = []
    while fd >= 0:
        try:
            out.append(os.read(fd, 8192).decode(errors="backslashreplace").rstrip("\n"))
        except OSError:
            break
    return out


def config(fd, kvs):
    for kv in kvs:
        k, eq, v = kv.partition("=")
        if eq:
            sc(SYS_fsconfig, ctypes.c_int(fd), ctypes.c_uint(SET_STRING), k.encode(),
               v.encode(), ctypes.c_int(0))
        else:
            sc(SYS_fsconfig, ctypes.c_int(fd), ctypes.c_uint(SET_FLAG), k.encode(), None,
               ctypes.c_int(0))


def main(argv):
    op, target = argv[1], argv[2]
    fd, res = -1, "OK"
    try:
        if op == "mount":
            fd = sc(SYS_fsopen, argv[3].encode(), ctypes.c_uint(1))
            config(fd, argv[4:])
            sc(SYS_fsconfig, ctypes.c_int(fd), ctypes.c_uint(CMD_CREATE), None, None,
               ctypes.c_int(0))
            mfd = sc(SYS_fsmount, ctypes.c_int(fd), ctypes.c_uint(1), ctypes.c_uint(0))
            sc(SYS_move_mount, ctypes.c_int(mfd), b"", ctypes.c_int(AT_FDCWD), target.encode(),
               ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH))
        elif op == "reconfigure":
            fd = sc(SYS_fspick, ctypes.c_int(AT_FDCWD), target.encode(), ctypes.c_uint(1))
            config(fd, argv[3:])
            sc(SYS_fsconfig, ctypes.c_int(fd), ctypes.c_uint(CMD_RECONFIGURE), None, None,
               ctypes.c_int(0))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Fail as e:
        res = str(e)
    print(res)
    for line in log(fd):
        print(line)
    return 0 if res == "OK" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
