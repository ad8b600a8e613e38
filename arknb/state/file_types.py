"""What a path that is not a regular file is, in words, for the refusals of every reader
that checks ``os.stat`` before it opens a file (skills, eval files, secret scans)."""

from __future__ import annotations

import stat

__all__ = ["file_type"]


def file_type(mode: int) -> str:
    """What a non-regular file of ``st_mode`` ``mode`` is, for messages ("a FIFO (named pipe)")."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"
