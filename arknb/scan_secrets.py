"""Scan files for credentials before you share them (DESIGN §14 "Secret scan").

``python -m arknb.scan_secrets PATH...`` reads every regular file it is given or finds in
a folder (recursively; ``.git``, ``node_modules``, ``__pycache__`` and virtual
environments are skipped), whatever its name, and looks for:

- credential shapes: ``sk-...`` API keys and bearer tokens that look generated,
  ``Authorization`` headers;
- the values of environment variables whose names end in ``_API_KEY``, ``_TOKEN`` or
  ``_SECRET`` (the keys on this machine), wherever they appear: plain, written with
  escapes (``\\u0064``, ``\\/``, JSON in JSON, HTML entities) or cut across adjacent
  strings or notebook outputs.

What it reads is told by content, not by name: notebooks (cell sources, outputs,
attachments, the widget state saved in their metadata, and the base64 and compressed
payloads inside them), JSON documents (saved states), SQLite databases (by their header:
every text and blob of every table, and their ``-wal``/``-journal`` files), gzip files
(``.jsonl.gz``), UTF-16 text, and any other text line by line (traces, cassettes, logs,
HTML such as ``ChatWidget.to_html()``, Markdown, Python, YAML, ``.env``). A binary file
is searched for its runs of text.

Each finding is printed as ``file: location: what``, the location being a cell index and
field, a JSON path, a table and row, or a line number; the secret itself is never
printed. FIFOs, sockets and devices are never opened: each is skipped with a note. A
file over the size limit (``--max-size``, 64 MiB by default) or one that could not be
read is reported, never counted clean. Exit status: 0 when everything is clean, 1 when
anything was found, 2 on a usage error or when a file could not be read.

Example:
    $ python -m arknb.scan_secrets notebooks/ .arknb/
    notebooks/03_approvals.ipynb: cell 7 (code) outputs[0].text line 2: sk- API key pattern
    1 finding in 12 files
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bz2
import gzip
import html
import io
import json
import lzma
import os
import re
import sqlite3
import stat
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .state.secrets import ENV_SUFFIXES, SecretLint, environment_secrets

__all__ = ["DEFAULT_MAX_BYTES", "ENV_SUFFIXES", "Finding", "ScanReport", "SecretScanner", "main"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Files (and decompressed payloads) larger than this are reported as not read."""

_MIN_VALUE = 8
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SIDE_SUFFIXES = ("-wal", "-journal")
_SKIPPED_DIRS = {".git", "node_modules", "__pycache__", ".hg", ".svn"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MULTILINE_KEYS = {"source", "text"}
_BASE64 = re.compile(r"[A-Za-z0-9+/\s]{24,}={0,2}\s*\Z")
_DATA_URI = re.compile(r"base64,([A-Za-z0-9+/]{24,}={0,2})")
_TEXT_RUN = re.compile(r"[\x20-\x7e\x80-\xff\t\r\n]{8,}")
_SPLIT = "configured secret split across strings"


@dataclass(frozen=True, slots=True)
class Finding:
    """One credential found: the file, where in it, and what kind (never the value)."""

    path: str
    location: str
    kind: str

    def __str__(self) -> str:
        return f"{self.path}: {self.location}: {self.kind}"


@dataclass(slots=True)
class ScanReport:
    """What a scan found, which files it read, which it could not, and which it skipped
    (FIFOs, sockets, devices: never opened)."""

    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 with findings, else 2 if a file could not be read, else 0."""
        return 1 if self.findings else 2 if self.errors else 0


class _TooLarge(Exception):
    pass


class SecretScanner:
    """Finds credentials in files.

    Args:
        env: the environment whose ``*_API_KEY``, ``*_TOKEN`` and ``*_SECRET`` values
            are looked for (default: ``os.environ``; ``{}`` for none).
        secrets: more values to look for, each reported as "configured secret".
        max_bytes: files and decompressed payloads larger than this are not read (and
            reported so).

    Example:
        >>> scanner = SecretScanner(env={"DEMO_API_KEY": "demo-key-1234567890"})
        >>> scanner.scan_text("the key is demo-key-1234567890")
        ['value of $DEMO_API_KEY']
    """

    def __init__(self, env: Mapping[str, str] | None = None, secrets: Iterable[str] = (), *,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        # One lint, the runtime's: the values are found plain, escaped and split as it finds them.
        self._lint = SecretLint()
        self._labels: dict[str, str] = {}
        named = [(f"value of ${name}", value) for name, value in environment_secrets(env)]
        for label, value in [*named, *(("configured secret", value) for value in secrets)]:
            if isinstance(value, str) and len(value) >= _MIN_VALUE and self._lint.add(value):
                self._labels[f"configured secret #{len(self._lint)}"] = label
        self._labels[_SPLIT] = "a known value split across strings"
        self.max_bytes = max_bytes

    # -- text ---------------------------------------------------------------------------

    def scan_text(self, text: str) -> list[str]:
        """What ``text`` holds: one description per kind found, never the value."""
        found = [self._labels.get(kind, kind) for kind in self._lint.scan(text)]
        if "&" in text:  # HTML: entities hide what they spell
            unescaped = html.unescape(text)
            if unescaped != text:
                found.extend(self._labels.get(kind, kind) for kind in self._lint.scan(unescaped))
        for match in _DATA_URI.finditer(text) if "base64," in text else ():
            found.extend(kind for _, kind in self._scan_payload(match.group(1), ""))
        return list(dict.fromkeys(found))

    def _scan_split(self, texts: list[str], where: str) -> Iterator[tuple[str, str]]:
        """What adjacent ``texts`` hold together that none holds alone (a value cut in two)."""
        if len(texts) < 2:
            return
        alone = {kind for text in texts for kind in self.scan_text(text)}
        for kind in self.scan_text("".join(texts)):
            if kind not in alone:
                yield f"{where} (split across adjacent parts)", kind

    # -- files --------------------------------------------------------------------------

    def scan(self, paths: Sequence[str | os.PathLike[str]]) -> ScanReport:
        """Scan files and folders (recursively); see the module docstring."""
        report = ScanReport()
        for path in paths:
            path = Path(path)
            if path.is_dir():
                for file in _walk(path, report):
                    self._scan_file(file, report)
            else:
                self._scan_file(path, report, explicit=True)
        return report

    def _scan_file(self, path: Path, report: ScanReport, *, explicit: bool = False) -> None:
        shown = str(path)
        try:
            info = os.stat(path)  # before any open(): a FIFO would block it, a device never end
        except OSError as exc:
            report.errors.append(f"{shown}: could not be read ({type(exc).__name__}: {exc})")
            return
        if not stat.S_ISREG(info.st_mode):
            report.skipped.append(f"{shown}: skipped, not a regular file ({_file_kind(info.st_mode)}); never opened")
            return
        if info.st_size > self.max_bytes:
            report.errors.append(f"{shown}: not read: {info.st_size} bytes is over the {self.max_bytes}-byte limit "
                                 "(raise it with --max-size)")
            return
        try:
            with open(path, "rb") as handle:
                data = handle.read(self.max_bytes + 1)
            if data[:16] == _SQLITE_MAGIC:
                found = list(self._scan_sqlite(path))
                for side in _SIDE_SUFFIXES:
                    sibling = path.with_name(path.name + side)
                    if explicit and sibling.is_file():
                        self._scan_file(sibling, report)
            elif path.name.endswith(_SIDE_SUFFIXES):
                found = list(self._scan_bytes(data))
            else:
                found = list(self._scan_data(path.name, data))
        except (OSError, sqlite3.Error, _TooLarge, EOFError, zlib.error, lzma.LZMAError) as exc:
            report.errors.append(f"{shown}: could not be read ({type(exc).__name__}: {exc})")
            return
        report.files.append(shown)
        report.findings.extend(Finding(shown, location, kind) for location, kind in dict.fromkeys(found))

    def _scan_data(self, name: str, data: bytes, where: str = "") -> Iterator[tuple[str, str]]:
        """A file's bytes, by content: compressed, notebook or JSON, text, or binary."""
        unpacked = self._decompressed(data)
        if unpacked is not None:
            method, inner = unpacked
            yield from self._scan_data(name.removesuffix(".gz").removesuffix(".bz2").removesuffix(".xz"), inner,
                                       f"{where}({method}) ")
            return
        text = _decoded(data)
        if text is None:  # binary: its runs of text
            for location, kind in self._scan_bytes(data):
                yield f"{where}{location}", kind
            return
        if text.lstrip()[:1] in ("{", "[") and not name.endswith((".jsonl", ".ndjson")):
            try:
                document = json.loads(text)
            except (ValueError, RecursionError):
                document = None
                note = " (not valid JSON)" if name.endswith((".json", ".ipynb")) else ""
            else:
                note = ""
            if document is not None:
                if isinstance(document, dict) and isinstance(document.get("cells"), list):
                    yield from ((f"{where}{loc}", kind) for loc, kind in self._scan_notebook(document))
                else:
                    yield from ((f"{where}{loc}", kind) for loc, kind in self._scan_json(document, "$"))
                return
        else:
            note = ""
        yield from ((f"{where}{loc}", kind) for loc, kind in self._scan_lines(text, note))

    def _decompressed(self, data: bytes) -> tuple[str, bytes] | None:
        """``(method, bytes)`` of a gzip, zlib, bzip2 or xz payload (at most ``max_bytes``)."""
        if data[:2] == b"\x1f\x8b":
            method, reader = "gzip", gzip.GzipFile(fileobj=io.BytesIO(data))
        elif data[:3] == b"BZh":
            method, reader = "bzip2", bz2.BZ2File(io.BytesIO(data))
        elif data[:6] == b"\xfd7zXZ\x00":
            method, reader = "xz", lzma.LZMAFile(io.BytesIO(data))
        elif len(data) > 2 and data[0] == 0x78 and (data[0] * 256 + data[1]) % 31 == 0:
            try:
                decompressor = zlib.decompressobj()
                inner = decompressor.decompress(data, self.max_bytes + 1)
            except zlib.error:
                return None
            if len(inner) > self.max_bytes:
                raise _TooLarge(f"a zlib payload decompresses to more than {self.max_bytes} bytes")
            return "zlib", inner
        else:
            return None
        with reader:
            inner = reader.read(self.max_bytes + 1)
        if len(inner) > self.max_bytes:
            raise _TooLarge(f"a {method} payload decompresses to more than {self.max_bytes} bytes")
        return method, inner

    def _scan_payload(self, text: str, where: str) -> Iterator[tuple[str, str]]:
        """A base64 string (an attachment, a widget buffer, a data: URI): what its bytes hold,
        decompressed first; an image or other binary is left alone."""
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            return
        try:
            unpacked = self._decompressed(data)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, _TooLarge):
            return
        method = "base64"
        if unpacked is not None:
            method, data = f"base64, {unpacked[0]}", unpacked[1]
        decoded = _decoded(data)
        if decoded is None:
            return
        for kind in self.scan_text(decoded):
            yield f"{where} ({method})".lstrip(), kind

    def _scan_notebook(self, document: dict) -> Iterator[tuple[str, str]]:
        for index, cell in enumerate(document.get("cells") or ()):
            if not isinstance(cell, dict):
                yield from self._scan_json(cell, f"cell {index}")
                continue
            where = f"cell {index} ({cell.get('cell_type', '?')})"
            for key, value in cell.items():
                if key != "cell_type":
                    yield from self._scan_json(value, f"{where} {key}", key=key)
            outputs = [o for o in cell.get("outputs") or () if isinstance(o, dict)]
            yield from self._scan_split([_output_text(o) for o in outputs], f"{where} outputs")
        for key, value in document.items():
            if key != "cells":
                yield from self._scan_json(value, f"notebook {key}", key=key)

    def _scan_lines(self, text: str, note: str = "") -> Iterator[tuple[str, str]]:
        """A JSONL file (trace, cassette) or any text: line by line, each JSON line walked."""
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            value = None
            if line.lstrip()[:1] in ("{", "["):
                try:
                    value = json.loads(line)
                except (ValueError, RecursionError):
                    value = None
            if value is None:
                for kind in self.scan_text(line):
                    yield f"line {number}{note}", kind
                continue
            yield from self._scan_json(value, f"line {number} $")

    def _scan_json(self, value: Any, where: str, key: str | None = None) -> Iterator[tuple[str, str]]:
        """Every string of a JSON value (keys too), located by a JSON path; base64 payloads
        decoded; adjacent strings of a list read together too."""
        stack: list[tuple[Any, str, str | None]] = [(value, where, key)]
        while stack:  # iterative: a deeply nested document is no RecursionError
            item, place, name = stack.pop()
            if isinstance(item, str):
                for kind in self.scan_text(item):
                    yield place, kind
                if len(item) >= 24 and _BASE64.match(item):
                    yield from self._scan_payload(item, place)
            elif isinstance(item, dict):
                for child_key, child in reversed(list(item.items())):
                    child_key = str(child_key)
                    child_place = _member(place, child_key)
                    for kind in self.scan_text(child_key):
                        yield f"{child_place} (key)", kind
                    stack.append((child, child_place, child_key))
            elif isinstance(item, list):
                if item and all(isinstance(line, str) for line in item):
                    if name in _MULTILINE_KEYS or (name and "/" in name):
                        # nbformat keeps multi-line text (sources, stream text, MIME bundle
                        # values such as "text/html") as a list of lines: say which line.
                        for number, line in enumerate(item, start=1):
                            for kind in self.scan_text(line):
                                yield f"{place} line {number}", kind
                        yield from self._scan_split(item, place)
                        joined = "".join(item)
                        if name and "/" in name and _BASE64.match(joined):  # attachments: base64 of any type
                            yield from self._scan_payload(joined, place)
                        continue
                    yield from self._scan_split(item, place)
                for index in range(len(item) - 1, -1, -1):
                    stack.append((item[index], f"{place}[{index}]", None))

    def _scan_sqlite(self, path: Path) -> Iterator[tuple[str, str]]:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True)
            connection.execute("select count(*) from sqlite_master").fetchone()
        except sqlite3.OperationalError:  # e.g. a read-only folder with a WAL: read the main file as it is
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)
        try:
            tables = [row[0] for row in connection.execute(
                "select name from sqlite_master where type = 'table' order by name")]
            for table in tables:
                quoted = '"' + table.replace('"', '""') + '"'
                try:
                    cursor = connection.execute(f"select rowid, * from {quoted}")
                    has_rowid = True
                except sqlite3.OperationalError:  # a WITHOUT ROWID table
                    cursor = connection.execute(f"select * from {quoted}")
                    has_rowid = False
                columns = [d[0] for d in cursor.description][1 if has_rowid else 0:]
                for number, row in enumerate(cursor, start=1):
                    row_id, values = (row[0], row[1:]) if has_rowid else (number, row)
                    for column, cell in zip(columns, values):
                        where = f"table {table} row {row_id} column {column}"
                        yield from self._scan_cell(cell, where)
        finally:
            connection.close()

    def _scan_cell(self, cell: Any, where: str) -> Iterator[tuple[str, str]]:
        if isinstance(cell, bytes):
            try:
                unpacked = self._decompressed(cell)
            except (OSError, EOFError, zlib.error, lzma.LZMAError, _TooLarge):
                unpacked = None
            if unpacked is not None:
                where, cell = f"{where} ({unpacked[0]})", unpacked[1]
            text = _decoded(cell)
            cell = text if text is not None else cell.decode("latin-1")
        if not isinstance(cell, str) or len(cell) < _MIN_VALUE:
            return
        if not self.scan_text(cell):
            return
        stripped = cell.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                document = json.loads(cell)
            except (ValueError, RecursionError):
                pass
            else:
                yield from self._scan_json(document, f"{where} $")
                return
        for kind in self.scan_text(cell):
            yield where, kind

    def _scan_bytes(self, data: bytes) -> Iterator[tuple[str, str]]:
        """A raw file (a SQLite WAL or journal, a binary): text runs, located by byte offset."""
        text = data.decode("latin-1")
        for match in _TEXT_RUN.finditer(text):
            for kind in self.scan_text(match.group()):
                yield f"byte {match.start()}", kind


def _decoded(data: bytes) -> str | None:
    """``data`` as text (UTF-8, or UTF-16 by its byte-order mark or its zero bytes), or
    None for binary data."""
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    head = data[:4096]
    if head and b"\x00" in head:
        # UTF-16 without a mark: every other byte of ASCII text is zero.
        zeros_odd = head[1::2].count(0)
        zeros_even = head[0::2].count(0)
        half = len(head) // 2
        if zeros_odd > 0.4 * half and zeros_even < 0.05 * half:
            encoding = "utf-16-le"
        elif zeros_even > 0.4 * half and zeros_odd < 0.05 * half:
            encoding = "utf-16-be"
        else:
            return None
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _output_text(output: dict) -> str:
    """The text a notebook output shows (stream text or ``text/plain``)."""
    value = output.get("text")
    if value is None:
        value = (output.get("data") or {}).get("text/plain", "")
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _walk(folder: Path, report: ScanReport) -> Iterator[Path]:
    """The files of ``folder`` a scan reads, in a stable order; virtual environments,
    version-control folders and caches are skipped. A folder that cannot be listed is
    reported."""
    def failed(error: OSError) -> None:
        report.errors.append(f"{error.filename}: could not be listed ({type(error).__name__}: {error.strerror})")

    for root, dirs, files in os.walk(folder, onerror=failed):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS
                         and not (Path(root, d) / "pyvenv.cfg").exists())
        for name in sorted(files):
            yield Path(root, name)


def _member(place: str, key: str) -> str:
    return f"{place}.{key}" if _IDENTIFIER.match(key) else f"{place}[{json.dumps(key, ensure_ascii=False)}]"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m arknb.scan_secrets",
        description="Scan files before sharing them for credentials: sk-... keys and bearer tokens that look "
                    "generated, Authorization headers, and the values of environment variables named *_API_KEY, "
                    "*_TOKEN or *_SECRET (plain, escaped, or split across adjacent strings or outputs). Every "
                    "regular file given or found is read, its kind told by content: notebooks (with base64 and "
                    "compressed attachments and widget buffers), JSON, SQLite databases and their -wal/-journal "
                    "files, gzip/bzip2/xz files, UTF-8 or UTF-16 text (logs, HTML, Markdown, YAML, .env, JSONL), "
                    "and the text runs of binaries. Folders are scanned recursively (.git, node_modules, "
                    "__pycache__ and virtual environments are skipped). FIFOs, sockets and devices are never "
                    "opened: each is skipped with a note.",
        epilog="Each finding is printed as 'file: location: what' (a cell and field, a JSON path, a table "
               "and row, or a line); the secret itself is never printed. A file over --max-size or one that "
               "could not be read is reported, never counted clean. Exit status: 0 clean, 1 findings, "
               "2 usage error or a file that could not be read.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to scan")
    parser.add_argument("--no-env", action="store_true",
                        help="do not look for the values of *_API_KEY / *_TOKEN / *_SECRET variables")
    parser.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    parser.add_argument("--max-size", type=int, default=DEFAULT_MAX_BYTES, metavar="BYTES",
                        help=f"files (and decompressed payloads) larger than this are reported as not read "
                             f"(default {DEFAULT_MAX_BYTES})")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on usage errors and 0 for --help
        return int(exit_.code or 0)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"scan_secrets: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.max_size < 1:
        print("scan_secrets: --max-size must be at least 1 byte", file=sys.stderr)
        return 2
    report = SecretScanner(env={} if args.no_env else None, max_bytes=args.max_size).scan(args.paths)
    for finding in report.findings:
        print(finding)
    for error in report.errors:
        print(f"scan_secrets: {error}", file=sys.stderr)
    for note in report.skipped:
        print(f"scan_secrets: {note}", file=sys.stderr)
    if not args.quiet:
        count = len(report.findings)
        files = len(report.files)
        print(f"{count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}"
              + (f"; {len(report.errors)} could not be read" if report.errors else "")
              + (f"; {len(report.skipped)} skipped (not regular files)" if report.skipped else ""), file=sys.stderr)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
