"""Reading and writing the JSONL files of ``arknb.eval`` (cassettes, traces, reports).

Every reader names the file and the line (lines count from 1) when something is
wrong and never writes to the file it read; every whole-file writer goes through a
temporary file in the same folder and ``os.replace``, so a crash leaves the old file
or the new one, never half of one.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from ..state import SecretLint, environment_secrets
from ..state.file_types import file_type

__all__ = [
    "FileKind", "as_path", "canonical_json", "check_header", "export_lint", "file_type", "iter_jsonl", "now_iso",
    "too_deep", "write_lines_atomically",
]


class FileKind:
    """What a file is, for messages and error codes (one instance per kind)."""

    __slots__ = ("noun", "header_key", "version", "corrupt", "unsupported")

    def __init__(self, noun: str, header_key: str, version: int, corrupt: ErrorCode,
                 unsupported: ErrorCode) -> None:
        self.noun = noun
        self.header_key = header_key
        self.version = version
        self.corrupt = corrupt
        self.unsupported = unsupported

    def error(self, path: Path, line: int | None, detail: str) -> ArkError:
        """``<kind>_corrupt`` naming the file and line; the message says the file was left alone."""
        where = f"{path}, line {line}" if line is not None else str(path)
        return ArkError(ErrorLayer.STORAGE, self.corrupt,
                        f"{self.noun} {where}: {detail} (the file was left as it is)")


def as_path(value: Any, what: str) -> Path:
    """A ``Path`` from a str or path-like; a clear error for anything else."""
    if isinstance(value, (str, os.PathLike)) and str(value):
        return Path(value)
    raise invalid_argument(f"{what} must be a file path (str or pathlib.Path), got {type(value).__name__}")


def now_iso() -> str:
    """The current UTC time as ISO 8601 (what file headers record as ``created_at``)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the form request hashes are computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def missing_file(path: Path, kind: FileKind) -> ArkError:
    """``eval_file_not_found`` for a file that is not there."""
    return ArkError(ErrorLayer.STORAGE, ErrorCode.EVAL_FILE_NOT_FOUND, f"{kind.noun} {path} does not exist")


def iter_jsonl(path: Path, kind: FileKind, *, tolerate_torn_tail: bool = False,
               stats: dict[str, Any] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed JSON)`` for every non-blank line of ``path``.

    A line that is not valid UTF-8 or JSON raises ``kind.corrupt`` naming the line.
    With ``tolerate_torn_tail`` a last line that has no newline and does not parse is
    skipped: it is the record a writer was appending when its process died. When the
    file has been read to the end, ``stats`` (if given) holds ``lines`` (how many) and
    ``torn`` (whether such a line was skipped).
    """
    handle = _open_regular(path, kind)
    with handle:
        number = 0
        pending: tuple[int, bytes] | None = None
        for raw in handle:
            number += 1
            if pending is not None:
                yield _parse(path, kind, *pending)
                pending = None
            if not raw.strip():
                continue
            if tolerate_torn_tail and not raw.endswith(b"\n"):
                pending = (number, raw)
                continue
            yield _parse(path, kind, number, raw)
        torn = False
        if pending is not None:
            try:
                parsed = _parse(path, kind, *pending)
            except ArkError:
                torn = True  # the torn record of a writer that died mid-line
            else:
                yield parsed
        if stats is not None:
            stats.update(lines=number, torn=torn)


def _open_regular(path: Path, kind: FileKind):
    """``path`` opened for reading, once ``os.stat`` says it is a regular file: a FIFO or a
    device would block the open or the read for ever (issue 26), so it is refused first."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise missing_file(path, kind) from None
    except OSError as exc:
        raise ArkError(ErrorLayer.STORAGE, kind.corrupt, f"{kind.noun} {path} cannot be read: {exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise kind.error(path, None, "is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise kind.error(path, None, f"is not a regular file (it is {file_type(info.st_mode)}): it was not opened")
    try:
        # O_NONBLOCK: were it swapped for a FIFO since the stat, the open would not wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ArkError(ErrorLayer.STORAGE, kind.corrupt, f"{kind.noun} {path} cannot be read: {exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise kind.error(path, None, "is not a regular file: it was not read")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def too_deep(path: Path, kind: FileKind, number: int | None) -> ArkError:
    """The corrupt error of a line nested deeper than Python can read."""
    return kind.error(path, number, "nests its JSON values too deeply to be read (deeper than Python's "
                                    f"recursion limit of {sys.getrecursionlimit()} allows)")


def _parse(path: Path, kind: FileKind, number: int, raw: bytes) -> tuple[int, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise kind.error(path, number, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    text = text.rstrip("\r\n")  # parsed without its line end: a cut line then reads as cut, not as a bad character
    try:
        return number, json.loads(text)
    except RecursionError:
        raise too_deep(path, kind, number) from None
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()):
            raise kind.error(path, number, f"is not valid JSON: it is cut short, the text ends inside a value "
                                           f"({exc})") from None
        raise kind.error(path, number, f"is not valid JSON ({exc})") from None


def check_header(path: Path, kind: FileKind, number: int, value: Any) -> dict[str, Any]:
    """Validate the header line: a JSON object whose ``kind.header_key`` is a supported version."""
    if not isinstance(value, dict) or kind.header_key not in value:
        raise kind.error(path, number, f"is not an arknb {kind.noun} header "
                                       f"(expected {{\"{kind.header_key}\": {kind.version}, ...}})")
    version = value[kind.header_key]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise kind.error(path, number, f"has an invalid {kind.header_key} version {version!r}")
    if version > kind.version:
        raise ArkError(ErrorLayer.STORAGE, kind.unsupported,
                       f"{kind.noun} {path} is format version {version}, written by a newer arknb "
                       f"({value.get('arknb_version', 'unknown version')}); this arknb reads version "
                       f"{kind.version} and older: upgrade arknb to read it (the file was left as it is)")
    return value


def export_lint(*shared: SecretLint | None) -> Callable[[str], str]:
    """The redaction every eval file passes through as it is written (DESIGN §9, the last
    line): credential shapes, the values of this machine's ``*_API_KEY`` / ``*_TOKEN`` /
    ``*_SECRET`` variables, and the secrets of each ``shared`` lint (a runtime's), plain
    or escaped. Events a runtime published are clean already; a file made of other
    events, or of what a model sent, may not be."""
    own = SecretLint(value for _, value in environment_secrets())
    lints = [own, *(lint for lint in shared if lint is not None)]

    def redact(line: str) -> str:
        for lint in lints:
            line, _ = lint.redact_text(line)
        return line

    return redact


def write_lines_atomically(path: Path, lines: Iterable[str], *, on_line: Callable[[], None] | None = None) -> None:
    """Write ``lines`` (each without its newline) to ``path`` through a temp file and ``os.replace``;
    each line passes through :func:`export_lint` first."""
    redact = export_lint()
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise invalid_argument(f"cannot write {path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(redact(line))
                out.write("\n")
                if on_line is not None:
                    on_line()
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
