"""Bad eval files are the format's corrupt error naming file and line (issue 26 item 7):
a deeply nested JSON line in a cassette, report or trace never lets ``RecursionError``
escape, and a FIFO given as one is refused without being opened for a read that hangs."""

from __future__ import annotations

import json
import os
import threading

import pytest

import arknb as ark
import arknb.eval as ev
from arknb.eval._report_file import read_report


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _cassette(path, line: str) -> None:
    path.write_text(json.dumps({"arknb_cassette": 1}) + "\n" + line + "\n")


def _report(path, line: str) -> None:
    path.write_text(json.dumps({"arknb_report": 1}) + "\n" + line + "\n")


def _trace(path, line: str) -> None:
    path.write_text(json.dumps({"arknb_trace": 1}) + "\n" + line + "\n")


def _load_cassette(path):
    return ev.ReplayModel(path)


_KINDS = {
    "cassette": (_cassette, _load_cassette, "cassette_corrupt"),
    "report": (_report, read_report, "report_corrupt"),
    "trace": (_trace, ev.trace.from_jsonl, "trace_corrupt"),
}


@pytest.mark.parametrize("depth", [100_000, 900])
@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_a_deeply_nested_json_line_is_the_formats_corrupt_error_naming_file_and_line(tmp_path, kind, depth):
    write, load, code = _KINDS[kind]
    path = tmp_path / f"x.{kind}.jsonl"
    if depth == 900:  # parses, but is nested too deep for what reads it next
        line = json.dumps({"type": "tool.after", "sequence": 1, "event_id": "e", "session_id": "s",
                           "run_id": "r", "timestamp": 0.0, "name": "case", "runs": [{}], "call": 1,
                           "payload": None, "request": None})
        line = line.replace('"payload": null', f'"payload": {{"deep": {_deep(depth)}}}').replace(
            '"request": null', f'"request": {{"deep": {_deep(depth)}}}')
    else:
        line = _deep(depth)
    write(path, line)
    try:
        load(path)  # (a trace may hold a value that deep: then it simply loads)
    except ark.ArkError as err:
        assert err.code == code, err
        assert f"{path}, line 2" in err.message, err.message
    else:
        assert (kind, depth) == ("trace", 900), "a line nested 100,000 deep was accepted"


def _in_thread(fn, seconds=20.0):
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn} did not return within {seconds} s (it hangs)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_a_fifo_given_as_an_eval_file_is_refused_without_hanging(tmp_path, kind):
    _, load, code = _KINDS[kind]
    path = tmp_path / "x.jsonl"
    os.mkfifo(path)
    with pytest.raises(ark.ArkError) as err:
        _in_thread(lambda: load(path))
    assert err.value.code == code and "not a regular file" in err.value.message and str(path) in err.value.message
