"""Scan files for credentials before you share them (DESIGN §14 "Secret scan").

``python -m arknb.scan_secrets PATH...`` looks through notebooks (cell sources, outputs,
attachments and the widget state saved in their metadata), saved states (JSON),
SQLite stores (every text and blob of every table, and their ``-wal``/``-journal``
files), traces and cassettes (JSONL), and folders recursively, for:

- credential shapes: ``sk-...`` API keys, bearer tokens, ``Authorization`` headers;
- the values of environment variables whose names end in ``_API_KEY``, ``_TOKEN`` or
  ``_SECRET`` (the keys on this machine), wherever they appear.

Each finding is printed as ``file: location: what``, the location being a cell index and
field, a JSON path, a table and row, or a line number; the secret itself is never
printed. Exit status: 0 when everything is clean, 1 when anything was found, 2 on a
usage error or when a file could not be read (so a clean result is never claimed for
it).

Example:
    $ python -m arknb.scan_secrets notebooks/ .arknb/
    notebooks/03_approvals.ipynb: cell 7 (code) outputs[0].text line 2: sk- API key pattern
    1 finding in 12 files
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .state.secrets import SecretLint

__all__ = ["ENV_SUFFIXES", "Finding", "ScanReport", "SecretScanner", "main"]

ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
"""Environment variables whose values are looked for."""

_MIN_VALUE = 8
_SQLITE_MAGIC = b"SQLite format 3\x00"
_JSON_SUFFIXES = {".json"}
_LINES_SUFFIXES = {".jsonl", ".ndjson"}
_SQLITE_SUFFIXES = {".db", ".sqlite", ".sqlite3"}
_SIDE_SUFFIXES = ("-wal", "-journal")
_SKIPPED_DIRS = {".git", "node_modules", "__pycache__", ".hg", ".svn"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MULTILINE_KEYS = {"source", "text"}


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
    """What a scan found, which files it read, and which it could not."""

    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 with findings, else 2 if a file could not be read, else 0."""
        return 1 if self.findings else 2 if self.errors else 0


class SecretScanner:
    """Finds credentials in files.

    Args:
        env: the environment whose ``*_API_KEY``, ``*_TOKEN`` and ``*_SECRET`` values
            are looked for (default: ``os.environ``; ``{}`` for none).
        secrets: more values to look for, each reported as "configured secret".

    Example:
        >>> scanner = SecretScanner(env={"DEMO_API_KEY": "demo-key-1234567890"})
        >>> scanner.scan_text("the key is demo-key-1234567890")
        ['value of $DEMO_API_KEY']
    """

    def __init__(self, env: Mapping[str, str] | None = None, secrets: Iterable[str] = ()) -> None:
        env = os.environ if env is None else env
        self._patterns = SecretLint()
        self._values: list[tuple[str, tuple[str, ...]]] = []
        named = [(f"value of ${name}", value) for name, value in sorted(env.items())
                 if name.upper().endswith(ENV_SUFFIXES)]
        for label, value in [*named, *(("configured secret", value) for value in secrets)]:
            if isinstance(value, str) and len(value) >= _MIN_VALUE:
                escaped = json.dumps(value, ensure_ascii=False)[1:-1]
                self._values.append((label, (value, escaped) if escaped != value else (value,)))

    # -- text ---------------------------------------------------------------------------

    def scan_text(self, text: str) -> list[str]:
        """What ``text`` holds: one description per kind found, never the value."""
        found = [label for label, forms in self._values if any(form in text for form in forms)]
        found.extend(self._patterns.scan(text))
        return list(dict.fromkeys(found))

    # -- files --------------------------------------------------------------------------

    def scan(self, paths: Sequence[str | os.PathLike[str]]) -> ScanReport:
        """Scan files and folders (recursively); see the module docstring."""
        report = ScanReport()
        for path in paths:
            path = Path(path)
            for file in (_walk(path) if path.is_dir() else [path]):
                self._scan_file(file, report, explicit=not path.is_dir())
        return report

    def _scan_file(self, path: Path, report: ScanReport, *, explicit: bool) -> None:
        shown = str(path)
        try:
            with path.open("rb") as handle:
                head = handle.read(16)
            if head == _SQLITE_MAGIC:
                found = list(self._scan_sqlite(path))
                for side in _SIDE_SUFFIXES:
                    sibling = path.with_name(path.name + side)
                    if explicit and sibling.is_file():
                        self._scan_file(sibling, report, explicit=False)
            elif path.name.endswith(_SIDE_SUFFIXES):
                found = list(self._scan_bytes(path.read_bytes()))
            elif path.suffix == ".ipynb" or path.suffix in _JSON_SUFFIXES:
                found = list(self._scan_json_file(path, notebook=path.suffix == ".ipynb"))
            else:
                found = list(self._scan_lines(path))
        except (OSError, sqlite3.Error) as exc:
            report.errors.append(f"{shown}: could not be read ({type(exc).__name__}: {exc})")
            return
        report.files.append(shown)
        report.findings.extend(Finding(shown, location, kind) for location, kind in found)

    def _scan_json_file(self, path: Path, *, notebook: bool = False) -> Iterator[tuple[str, str]]:
        """A JSON document (a notebook, a saved state); text that is not JSON line by line."""
        try:
            document = json.loads(path.read_text(encoding="utf-8-sig"))
        except (ValueError, RecursionError):
            yield from self._scan_lines(path, note=" (not valid JSON)")
            return
        if not notebook or not isinstance(document, dict):
            yield from self._scan_json(document, "$")
            return
        for index, cell in enumerate(document.get("cells") or ()):
            if not isinstance(cell, dict):
                yield from self._scan_json(cell, f"cell {index}")
                continue
            where = f"cell {index} ({cell.get('cell_type', '?')})"
            for key, value in cell.items():
                if key != "cell_type":
                    yield from self._scan_json(value, f"{where} {key}", key=key)
        for key, value in document.items():
            if key != "cells":
                yield from self._scan_json(value, f"notebook {key}", key=key)

    def _scan_lines(self, path: Path, note: str = "") -> Iterator[tuple[str, str]]:
        """A JSONL file (trace, cassette) or any text: line by line, each JSON line walked."""
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except (ValueError, RecursionError):
                    for kind in self.scan_text(line):
                        yield f"line {number}{note}", kind
                    continue
                yield from self._scan_json(value, f"line {number} $")

    def _scan_json(self, value: Any, where: str, key: str | None = None) -> Iterator[tuple[str, str]]:
        """Every string of a JSON value (keys too), located by a JSON path."""
        stack: list[tuple[Any, str, str | None]] = [(value, where, key)]
        while stack:  # iterative: a deeply nested document is no RecursionError
            item, place, name = stack.pop()
            if isinstance(item, str):
                for kind in self.scan_text(item):
                    yield place, kind
            elif isinstance(item, dict):
                for child_key, child in reversed(list(item.items())):
                    child_key = str(child_key)
                    child_place = _member(place, child_key)
                    for kind in self.scan_text(child_key):
                        yield f"{child_place} (key)", kind
                    stack.append((child, child_place, child_key))
            elif isinstance(item, list):
                if ((name in _MULTILINE_KEYS or (name and "/" in name)) and item
                        and all(isinstance(line, str) for line in item)):
                    # nbformat keeps multi-line text (sources, stream text, MIME bundle
                    # values such as "text/html") as a list of lines: say which line.
                    for number, line in enumerate(item, start=1):
                        for kind in self.scan_text(line):
                            yield f"{place} line {number}", kind
                    continue
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
            cell = cell.decode("utf-8", "replace")
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
        """A raw file (a SQLite WAL or journal): text runs, located by byte offset."""
        text = data.decode("latin-1")
        for match in re.finditer(r"[\x20-\x7e\x80-\xff\t\r\n]{8,}", text):
            for kind in self.scan_text(match.group()):
                yield f"byte {match.start()}", kind


def _walk(folder: Path) -> Iterator[Path]:
    """The files of ``folder`` a scan reads, in a stable order; virtual environments,
    version-control folders and caches are skipped."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS
                         and not (Path(root, d) / "pyvenv.cfg").exists())
        for name in sorted(files):
            suffix = Path(name).suffix
            if (suffix in _JSON_SUFFIXES | _LINES_SUFFIXES | _SQLITE_SUFFIXES or suffix == ".ipynb"
                    or name.endswith(_SIDE_SUFFIXES)):
                yield Path(root, name)


def _member(place: str, key: str) -> str:
    return f"{place}.{key}" if _IDENTIFIER.match(key) else f"{place}[{json.dumps(key, ensure_ascii=False)}]"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m arknb.scan_secrets",
        description="Scan notebooks, saved states, SQLite stores, traces and cassettes for credentials "
                    "before sharing them: sk-... keys, bearer tokens, Authorization headers, and the values "
                    "of environment variables named *_API_KEY, *_TOKEN or *_SECRET. Folders are scanned "
                    "recursively (.ipynb, .json, .jsonl, .ndjson, .db, .sqlite, .sqlite3 and SQLite -wal/"
                    "-journal files; .git, node_modules, __pycache__ and virtual environments are skipped); "
                    "a file named explicitly is scanned whatever its type.",
        epilog="Each finding is printed as 'file: location: what' (a cell and field, a JSON path, a table "
               "and row, or a line); the secret itself is never printed. Exit status: 0 clean, 1 findings, "
               "2 usage error or a file that could not be read.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to scan")
    parser.add_argument("--no-env", action="store_true",
                        help="do not look for the values of *_API_KEY / *_TOKEN / *_SECRET variables")
    parser.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits 2 on usage errors and 0 for --help
        return int(exit_.code or 0)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"scan_secrets: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    report = SecretScanner(env={} if args.no_env else None).scan(args.paths)
    for finding in report.findings:
        print(finding)
    for error in report.errors:
        print(f"scan_secrets: {error}", file=sys.stderr)
    if not args.quiet:
        count = len(report.findings)
        files = len(report.files)
        print(f"{count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}"
              + (f"; {len(report.errors)} could not be read" if report.errors else ""), file=sys.stderr)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
