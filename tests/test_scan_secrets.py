"""``python -m arknb.scan_secrets``: credentials in files meant for sharing (issue 10 item 9).

One test per file kind, clean and dirty: notebooks (sources, outputs, attachments,
saved widget state), saved state files, SQLite stores (tables and the WAL), traces and
cassettes (JSONL), folders; plus the command line's exit codes and its promise never
to print a secret.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import arknb as ark
from arknb.scan_secrets import SecretScanner, main

ENV_KEY = "env-provided-key-9f8e7d6c5b4a"
SK_KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUV"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"
ENV = {"DEMO_API_KEY": ENV_KEY, "UNRELATED": "not-a-secret-value-123"}
SECRETS = (ENV_KEY, SK_KEY, "eyJhbGciOiJIUzI1NiJ9.payload.sig")


def scan(*paths: Path, env: dict | None = None):
    return SecretScanner(env=ENV if env is None else env).scan(list(paths))


def places(report) -> list[tuple[str, str, str]]:
    return [(Path(f.path).name, f.location, f.kind) for f in report.findings]


def notebook(path: Path, *, dirty: bool) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A tutorial\nNothing secret here."),
        nbformat.v4.new_code_cell("import os\nkey = '" + (SK_KEY if dirty else "sk-...") + "'"),
        nbformat.v4.new_code_cell("print(headers)", outputs=[
            nbformat.v4.new_output("stream", name="stdout",
                                   text="first line\nAuthorization: " + (BEARER if dirty else "<hidden>") + "\n"),
            nbformat.v4.new_output("display_data", data={"text/html": "<b>" + (ENV_KEY if dirty else "ok") + "</b>"}),
        ]),
    ]
    state = {"model_name": "AnyModel", "state": {"transcript": {"entries": [
        {"kind": "tool", "text": "result: " + (ENV_KEY if dirty else "fine")}]}}}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {"abc123": state}}}
    nbformat.write(nb, path)
    return path


def test_a_dirty_notebook_names_cell_field_and_line(tmp_path):
    path = notebook(tmp_path / "tutorial.ipynb", dirty=True)
    assert places(scan(path)) == [
        ("tutorial.ipynb", "cell 1 (code) source line 2", "sk- API key pattern"),
        ("tutorial.ipynb", "cell 2 (code) outputs[0].text line 2", "Authorization header"),
        ("tutorial.ipynb", "cell 2 (code) outputs[1].data[\"text/html\"] line 1", "value of $DEMO_API_KEY"),
        ("tutorial.ipynb", "notebook metadata.widgets[\"application/vnd.jupyter.widget-state+json\"]"
                           ".state.abc123.state.transcript.entries[0].text", "value of $DEMO_API_KEY"),
    ]


def test_a_clean_notebook_passes(tmp_path):
    report = scan(notebook(tmp_path / "tutorial.ipynb", dirty=False))
    assert report.findings == [] and report.exit_code == 0 and len(report.files) == 1


async def test_saved_state_files(tmp_path):
    storage = ark.FileStateStorage(tmp_path / "clean")
    await storage.save(ark.AgentState(session_id="clean", history=(ark.AgentMessage.user("hello"),)))
    assert scan(tmp_path / "clean").findings == []

    dirty = tmp_path / "dirty" / "s.json"   # e.g. written by an older arknb, or by hand
    dirty.parent.mkdir()
    state = ark.AgentState(session_id="s", history=(ark.AgentMessage.user("hello"),
                                                    ark.AgentMessage.tool("c1", f"the key is {ENV_KEY}")),
                           metadata={"headers": {"Authorization": BEARER}})
    dirty.write_text(state.to_json())
    assert places(scan(dirty)) == [
        ("s.json", "$.history[1].contents[0].text", "value of $DEMO_API_KEY"),
        ("s.json", "$.metadata.headers.Authorization", "bearer token pattern"),
    ]


async def test_sqlite_stores_tables_rows_and_the_wal(tmp_path):
    store = ark.SQLiteStore(tmp_path / "clean.db")
    await store.save(ark.AgentState(session_id="s", history=(ark.AgentMessage.user("hello"),)))
    assert scan(tmp_path / "clean.db").findings == []

    db = tmp_path / "dirty.db"
    keep = sqlite3.connect(db)   # held open: its WAL is not checkpointed into the file yet
    keep.execute("pragma journal_mode=wal")
    keep.execute("create table notes (id integer primary key, body text, doc text, raw blob)")
    keep.execute("insert into notes values (1, 'fine', '{\"a\": 1}', x'00')")
    keep.execute("insert into notes values (7, ?, ?, ?)",
                 (f"token {SK_KEY}", json.dumps({"reply": {"text": f"key {ENV_KEY}"}}), BEARER.encode()))
    keep.commit()
    try:
        found = places(scan(db))
    finally:
        keep.close()
    assert ("dirty.db", "table notes row 7 column body", "sk- API key pattern") in found
    assert ("dirty.db", "table notes row 7 column doc $.reply.text", "value of $DEMO_API_KEY") in found
    assert ("dirty.db", "table notes row 7 column raw", "bearer token pattern") in found
    wal = [f for f in found if f[0] == "dirty.db-wal"]
    assert wal and all(location.startswith("byte ") for _, location, _ in wal)


def test_traces_and_cassettes_name_the_line(tmp_path):
    events = [ark.AgentEvent("r:1", "llm.chunk", "s", "r", 1, 0.0, {"kind": "text", "text": "hello"}),
              ark.AgentEvent("r:2", "tool.after", "s", "r", 2, 0.1, {"result": {"text": f"token {SK_KEY}"}})]
    trace = tmp_path / "trace.jsonl"  # written by hand: arknb's own writers redact the key (issue 26)
    trace.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in events), encoding="utf-8")
    cassette = tmp_path / "calls.ndjson"
    cassette.write_text(json.dumps({"arknb_cassette": 1}) + "\n" + "\n"
                        + json.dumps({"request": {"messages": [{"content": ENV_KEY}]}}) + "\n"
                        + f"not json but a {BEARER}\n")
    assert places(scan(trace, cassette)) == [
        ("trace.jsonl", "line 2 $.payload.result.text", "sk- API key pattern"),
        ("calls.ndjson", "line 3 $.request.messages[0].content", "value of $DEMO_API_KEY"),
        ("calls.ndjson", "line 4", "bearer token pattern"),
    ]
    clean = tmp_path / "clean.jsonl"
    ark.TimelineWidget(events[:1]).to_jsonl(clean)
    assert scan(clean).findings == []


def test_folders_are_scanned_recursively_and_skip_tooling(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "deep.json").write_text(json.dumps({"k": SK_KEY}))
    (tmp_path / "a" / "notes.txt").write_text(SK_KEY)           # every text file is read
    for skipped in (".git", "node_modules", "venv"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.json").write_text(json.dumps({"k": SK_KEY}))
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    report = scan(tmp_path)
    assert places(report) == [("notes.txt", "line 1", "sk- API key pattern"), ("deep.json", "$.k", "sk- API key pattern")]
    assert places(scan(tmp_path / "a" / "notes.txt")) == [("notes.txt", "line 1", "sk- API key pattern")]


def test_environment_values_only_for_credential_names():
    scanner = SecretScanner(env={"X_TOKEN": "tok-0123456789", "X_SECRET": "sec-0123456789",
                                 "OPENAI_API_KEY": "key-0123456789", "HOME": "/home/someone-long",
                                 "SHORT_TOKEN": "abc"})
    assert scanner.scan_text("tok-0123456789 sec-0123456789 key-0123456789 /home/someone-long abc") == [
        "value of $OPENAI_API_KEY", "value of $X_SECRET", "value of $X_TOKEN"]


def test_invalid_and_deeply_nested_json_is_still_scanned(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": "' + SK_KEY + '", oops')
    deep = tmp_path / "deep.ipynb"
    deep.write_text("[" * 100_000 + json.dumps(SK_KEY) + "]" * 100_000)
    assert places(scan(broken, deep)) == [("broken.json", "line 1 (not valid JSON)", "sk- API key pattern"),
                                          ("deep.ipynb", "line 1 (not valid JSON)", "sk- API key pattern")]


def test_an_unreadable_file_is_never_reported_clean(tmp_path):
    (tmp_path / "gone.json").symlink_to(tmp_path / "missing-target.json")
    report = scan(tmp_path)
    assert report.findings == [] and report.exit_code == 2 and "gone.json" in report.errors[0]


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET"))}
    return subprocess.run([sys.executable, "-m", "arknb.scan_secrets", *args], capture_output=True, text=True,
                          env={**environ, **(env or {})}, timeout=120)


def test_command_line_exit_codes_and_output_without_secrets(tmp_path):
    dirty = notebook(tmp_path / "dirty.ipynb", dirty=True)
    clean = notebook(tmp_path / "clean.ipynb", dirty=False)

    found = _cli(str(dirty), str(clean), env={"DEMO_API_KEY": ENV_KEY})
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith(f"{dirty}: cell ") or line.startswith(f"{dirty}: notebook ")
                                   for line in lines)
    assert "4 findings in 2 files" in found.stderr
    for secret in SECRETS:
        assert secret not in found.stdout and secret not in found.stderr

    assert _cli(str(dirty), "--no-env").stdout.count("\n") == 2   # the env value is not looked for
    ok = _cli(str(clean))
    assert (ok.returncode, ok.stdout, ok.stderr.strip()) == (0, "", "0 findings in 1 file")


@pytest.mark.parametrize("args", [[], ["/definitely/not/here"], ["--bogus", "x"]])
def test_usage_errors_exit_2(args):
    assert _cli(*args).returncode == 2


def test_help_documents_the_command():
    shown = _cli("--help")
    assert shown.returncode == 0
    for words in ("*_API_KEY", "Authorization", "SQLite", "Exit status", "never printed"):
        assert words in " ".join(shown.stdout.split())


def test_main_returns_the_status(tmp_path, capsys):
    (tmp_path / "s.json").write_text(json.dumps({"note": "all good"}))
    assert main([str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_the_repositorys_notebooks_are_clean():
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    report = SecretScanner().scan([notebooks])
    assert report.files and report.exit_code == 0, [str(f) for f in report.findings]


# -- issue 26 item 2: scan_secrets reads what it claims ------------------------------------

HTML_KEY = "tok&en/0123456789<abcdef>"   # a value HTML escapes (&amp; &lt; &gt;)


@pytest.mark.parametrize("name", ["run.log", "NOTES.md", "setup.py", "config.yaml", ".env", "README", "data.bin"])
def test_every_text_file_in_a_folder_is_read_whatever_its_name(tmp_path, name):
    (tmp_path / name).write_text(f"first line\nOPENAI_API_KEY={ENV_KEY}\n")
    report = scan(tmp_path)
    assert places(report) == [(name, "line 2", "value of $DEMO_API_KEY")] and report.exit_code == 1


def test_chat_to_html_output_is_read_through_its_entities(tmp_path):
    from arknb.widgets import ChatWidget

    chat = ChatWidget.from_events([ark.AgentEvent("r:1", "tool.after", "s", "r", 1, 0.0, {
        "call": {"id": "c", "name": "lookup", "arguments_json": "{}"}, "result": {"text": f"token {HTML_KEY}"}})])
    page = chat.to_html()
    assert HTML_KEY not in page and "&amp;" in page   # only the escaped form is in the file
    (tmp_path / "chat.html").write_text(page)
    found = SecretScanner(env={"CHAT_TOKEN": HTML_KEY}).scan([tmp_path])
    assert ("chat.html", "value of $CHAT_TOKEN") in [(Path(f.path).name, f.kind) for f in found.findings]


def test_a_gzipped_trace_is_read(tmp_path):
    import gzip

    with gzip.open(tmp_path / "run.trace.jsonl.gz", "wt") as out:
        out.write(json.dumps({"arknb_trace": 1}) + "\n" + json.dumps({"payload": {"text": SK_KEY}}) + "\n")
    assert places(scan(tmp_path)) == [("run.trace.jsonl.gz", "(gzip) line 2 $.payload.text", "sk- API key pattern")]


async def test_a_sqlite_database_is_recognised_by_content_not_suffix(tmp_path):
    db = tmp_path / "session-store"     # no known suffix
    keep = sqlite3.connect(db)
    keep.execute("create table t (body text)")
    keep.execute("insert into t values (?)", (f"key {ENV_KEY}",))
    keep.commit()
    keep.close()
    assert places(scan(tmp_path)) == [("session-store", "table t row 1 column body", "value of $DEMO_API_KEY")]


def test_base64_attachments_and_compressed_widget_buffers_are_decoded(tmp_path):
    import base64
    import gzip

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_markdown_cell("![notes](attachment:notes.txt)")
    cell.attachments = {"notes.txt": {"text/plain": base64.b64encode(f"key: {ENV_KEY}".encode()).decode()}}
    nb.cells = [cell]
    buffer = base64.b64encode(gzip.compress(json.dumps({"transcript": [SK_KEY]}).encode())).decode()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"version_major": 2, "version_minor": 0,
        "state": {"m1": {"model_name": "X", "state": {}, "buffers": [{"encoding": "base64", "path": ["value"],
                                                                      "data": buffer}]}}}}
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert sorted(places(scan(tmp_path / "n.ipynb"))) == [
        ("n.ipynb", 'cell 0 (markdown) attachments["notes.txt"]["text/plain"] (base64)', "value of $DEMO_API_KEY"),
        ("n.ipynb", 'notebook metadata.widgets["application/vnd.jupyter.widget-state+json"].state.m1.buffers[0].data'
                    " (base64, gzip)", "sk- API key pattern"),
    ]


def test_a_clean_image_attachment_is_not_a_finding(tmp_path):
    import base64

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_markdown_cell("![x](attachment:x.png)")
    cell.attachments = {"x.png": {"image/png": base64.b64encode(bytes(range(256)) * 40).decode()}}
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert scan(tmp_path).exit_code == 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_files_are_read(tmp_path, encoding):
    (tmp_path / "export.txt").write_bytes(f"hello\nthe key {SK_KEY}\n".encode(encoding))
    assert places(scan(tmp_path)) == [("export.txt", "line 2", "sk- API key pattern")]


def test_a_value_split_across_two_outputs_is_found(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(key)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="the key is " + ENV_KEY[:10]),
        nbformat.v4.new_output("stream", name="stdout", text=ENV_KEY[10:] + "\n"),
    ])]
    nbformat.write(nb, tmp_path / "split.ipynb")
    assert places(scan(tmp_path)) == [
        ("split.ipynb", "cell 0 (code) outputs (split across adjacent parts)", "value of $DEMO_API_KEY")]


def test_escaped_values_are_found(tmp_path):
    escaped = ENV_KEY[:4] + "\\u%04x" % ord(ENV_KEY[4]) + ENV_KEY[5:]
    (tmp_path / "args.log").write_text('tool call {"token": "%s"}\n' % escaped)
    assert places(scan(tmp_path)) == [("args.log", "line 1", "value of $DEMO_API_KEY")]


def test_fifos_and_devices_are_skipped_with_a_note_and_never_opened(tmp_path):
    """A FIFO named like a trace would block open() forever: the command must end."""
    os.mkfifo(tmp_path / "x.json")
    (tmp_path / "device.jsonl").symlink_to("/dev/zero")  # read whole, it would never end
    (tmp_path / "ok.json").write_text("{}")
    done = _cli(str(tmp_path), str(tmp_path / "x.json"))   # timeout=120: a hang fails the test
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / 'x.json'}: skipped, not a regular file (a FIFO); never opened" in done.stderr
    assert f"{tmp_path / 'device.jsonl'}: skipped, not a regular file (a device); never opened" in done.stderr
    report = scan(tmp_path)
    assert report.files == [str(tmp_path / "ok.json")] and len(report.skipped) == 2


def test_a_file_over_the_size_limit_is_reported_never_counted_clean(tmp_path):
    (tmp_path / "big.log").write_text("x" * 5000)
    report = SecretScanner(env={}, max_bytes=4096).scan([tmp_path])
    assert report.exit_code == 2 and report.files == []
    assert "big.log: not read: 5000 bytes is over the 4096-byte limit (raise it with --max-size)" in report.errors[0]
    assert _cli(str(tmp_path), "--max-size", "100000").returncode == 0


def test_a_compressed_payload_over_the_limit_is_reported(tmp_path):
    import gzip

    (tmp_path / "bomb.gz").write_bytes(gzip.compress(b"a" * 100_000))
    report = SecretScanner(env={}, max_bytes=10_000).scan([tmp_path])
    assert report.exit_code == 2 and "bomb.gz: could not be read" in report.errors[0]


@pytest.mark.parametrize("text", [
    "Use sk-learn-style-estimators-everywhere in the tutorial.",
    "a bearer authentication-for-everyone-everywhere note",
    "the risk-assessment-framework-2024 was published",
])
def test_ordinary_prose_is_not_a_credential(text):
    assert SecretScanner(env={}).scan_text(text) == []


def test_the_repositorys_notebooks_readme_and_docs_scan_clean():
    """A corpus of ordinary prose and code: no false positive (and every file was read)."""
    root = Path(__file__).resolve().parents[1]
    corpus = [root / "notebooks", root / "README.md", root / "examples", root / "benchmarks" / "README.md"]
    corpus += sorted((root / "arknb").rglob("*.md")) + [root / "arknb" / "scan_secrets.py"]
    report = SecretScanner(env={}).scan([p for p in corpus if p.exists()])
    assert report.exit_code == 0, [str(f) for f in report.findings] + report.errors
    assert len(report.files) >= 12
