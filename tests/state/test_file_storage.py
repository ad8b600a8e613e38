"""FileStateStorage: atomic writes, corrupt files, markers, concurrency."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from arknb.domain import AgentMessage, ArkError
from arknb.state import SCHEMA_VERSION, AgentState, FileStateStorage

from .conftest import make_full_state


def _files(directory) -> list[str]:
    """The directory's files, without the sessions' hidden lock files."""
    return sorted(name for name in os.listdir(directory) if not name.endswith(".lock"))


async def test_one_json_file_per_session(tmp_path, unsaved_state):
    storage = FileStateStorage(tmp_path / "new" / "dir")
    await storage.save(unsaved_state)
    path = tmp_path / "new" / "dir" / "demo.json"
    assert _files(path.parent) == ["demo.json"]
    assert sorted(os.listdir(path.parent)) == [".demo.lock", "demo.json"]
    assert json.loads(path.read_text("utf-8"))["schema_version"] == SCHEMA_VERSION
    assert storage.path_for("demo") == path


async def test_missing_directory_means_no_sessions(tmp_path):
    storage = FileStateStorage(tmp_path / "absent")
    assert await storage.list_sessions() == []
    assert await storage.load("s") is None
    assert not (tmp_path / "absent").exists()


async def test_failed_replace_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    storage = FileStateStorage(tmp_path)
    old = AgentState(session_id="s", history=(AgentMessage.user("old"),))
    await storage.save(old)
    before = (tmp_path / "s.json").read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ArkError) as info:
        await storage.save(AgentState(session_id="s", history=(AgentMessage.user("new"),), revision=1))
    monkeypatch.undo()

    assert info.value.code == "state_save_failed" and info.value.layer == "storage"
    assert "'s'" in info.value.message and str(tmp_path / "s.json") in info.value.message
    assert isinstance(info.value.__cause__, OSError)
    assert (tmp_path / "s.json").read_bytes() == before
    assert _files(tmp_path) == ["s.json"]
    assert await storage.load("s") == old.model_copy(update={"revision": 1})


async def test_failed_write_before_replace_leaves_no_temp_file(tmp_path, monkeypatch):
    storage = FileStateStorage(tmp_path)

    def broken_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(ArkError) as info:
        await storage.save(AgentState(session_id="s"))
    monkeypatch.undo()
    assert info.value.code == "state_save_failed"
    assert _files(tmp_path) == []
    assert await storage.load("s") is None


CORRUPT_DOCUMENTS = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "wrong_types": lambda text: json.dumps({**json.loads(text), "history": {"not": "a list"},
                                            "event_sequence": "forty-two"}),
    "not_an_object": lambda text: "[]",
    "not_utf8": lambda text: b"\xff\xfe\x00garbage",
    "other_session": lambda text: json.dumps({**json.loads(text), "session_id": "someone-else"}),
}


@pytest.mark.parametrize("kind", sorted(CORRUPT_DOCUMENTS))
async def test_corrupt_file_is_state_corrupt_and_left_untouched(tmp_path, full_state, kind):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "demo.json"
    content = CORRUPT_DOCUMENTS[kind](full_state.to_json())
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    before = path.read_bytes()

    with pytest.raises(ArkError) as info:
        await storage.load("demo")

    assert info.value.code == "state_corrupt" and info.value.layer == "storage"
    assert "'demo'" in info.value.message and str(path) in info.value.message
    assert path.read_bytes() == before
    assert _files(tmp_path) == ["demo.json"]


async def test_newer_version_file_is_refused_and_left_untouched(tmp_path):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 5, "session_id": "s",
                                "future_field": 1}), "utf-8")
    before = path.read_bytes()
    with pytest.raises(ArkError) as info:
        await storage.load("s")
    assert info.value.code == "state_version_unsupported"
    assert str(SCHEMA_VERSION + 5) in info.value.message and str(path) in info.value.message
    assert path.read_bytes() == before


async def test_v1_file_loads_migrated(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({
        "session_id": "old", "usage": [{"input_tokens": 3}],
        "history": [{"role": "user", "contents": [{"kind": "text", "text": "hi"}]}]}), "utf-8")
    state = await FileStateStorage(tmp_path).load("old")
    assert state.schema_version == SCHEMA_VERSION and state.usages[0].input_tokens == 3
    assert state.history[0].text == "hi"


async def test_mark_not_resumable_rewrites_an_existing_file(tmp_path, unsaved_state):
    storage = FileStateStorage(tmp_path)
    await storage.save(unsaved_state.model_copy(update={"not_resumable": False}))
    await storage.mark_not_resumable("demo")
    assert _files(tmp_path) == ["demo.json"]
    document = json.loads((tmp_path / "demo.json").read_text("utf-8"))
    assert document["not_resumable"] is True and document["revision"] == 1  # a mark is not a new revision


async def test_mark_not_resumable_on_a_missing_file_writes_a_marker(tmp_path):
    storage = FileStateStorage(tmp_path)
    await storage.mark_not_resumable("gone")
    assert _files(tmp_path) == ["gone.not_resumable"]
    assert (await storage.load("gone")).not_resumable is True


async def test_mark_not_resumable_on_a_corrupt_file_writes_a_marker_and_keeps_the_file(tmp_path):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "bad.json"
    path.write_text('{"session_id": "bad", "history": [', "utf-8")
    await storage.mark_not_resumable("bad")
    assert path.read_text("utf-8") == '{"session_id": "bad", "history": ['
    assert _files(tmp_path) == ["bad.json", "bad.not_resumable"]
    # The marker does not make a corrupt file readable: load still refuses to half-read it.
    with pytest.raises(ArkError) as info:
        await storage.load("bad")
    assert info.value.code == "state_corrupt"


async def test_marker_is_honoured_over_a_readable_file(tmp_path):
    storage = FileStateStorage(tmp_path)
    await storage.save(AgentState(session_id="s", is_running=True))
    (tmp_path / "s.not_resumable").write_text("{}", "utf-8")
    loaded = await storage.load("s")
    assert loaded.not_resumable is True and loaded.is_running is True


async def test_a_successful_save_removes_the_marker(tmp_path):
    storage = FileStateStorage(tmp_path)
    await storage.mark_not_resumable("s")
    await storage.save(AgentState(session_id="s"))
    assert _files(tmp_path) == ["s.json"]


async def test_mark_not_resumable_falls_back_to_the_marker_when_the_state_cannot_be_rewritten(
        tmp_path, monkeypatch):
    storage = FileStateStorage(tmp_path)
    await storage.save(AgentState(session_id="s"))
    real_replace = os.replace

    def replace_only_markers(src, dst):
        if str(dst).endswith(".json"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_only_markers)
    await storage.mark_not_resumable("s")
    monkeypatch.undo()
    assert _files(tmp_path) == ["s.json", "s.not_resumable"]
    assert (await storage.load("s")).not_resumable is True


async def test_list_sessions_ignores_temp_and_foreign_files(tmp_path):
    storage = FileStateStorage(tmp_path)
    await storage.save(AgentState(session_id="real"))
    await storage.mark_not_resumable("marked")
    for name in (".real.json.abc123.tmp", "notes.txt", "bad name.json", ".hidden.json"):
        (tmp_path / name).write_text("x", "utf-8")
    (tmp_path / "sub.json").mkdir()
    assert await storage.list_sessions() == ["marked", "real"]


async def test_concurrent_saves_of_one_session_never_tear_the_file(tmp_path):
    storage = FileStateStorage(tmp_path)
    states = [make_full_state("race", metadata={"n": n, "pad": "x" * (1000 * n)}, event_sequence=n, revision=0)
              for n in range(20)]
    outcomes = await asyncio.gather(*(storage.save(state) for state in states), return_exceptions=True)
    # All were based on revision 0: exactly one lands, the others conflict and write nothing.
    assert outcomes.count(1) == 1
    assert all(isinstance(o, ArkError) and o.code == "state_conflict" for o in outcomes if o != 1)
    loaded = await storage.load("race")
    assert loaded == states[outcomes.index(1)].model_copy(update={"revision": 1})
    assert _files(tmp_path) == ["race.json"]


async def test_concurrent_saves_of_different_sessions_all_land(tmp_path):
    storage = FileStateStorage(tmp_path)
    states = [AgentState(session_id=f"s{n}", event_sequence=n) for n in range(10)]
    assert await asyncio.gather(*(storage.save(state) for state in states)) == [1] * 10
    assert ([await storage.load(state.session_id) for state in states]
            == [state.model_copy(update={"revision": 1}) for state in states])


def test_repr_names_the_directory(tmp_path):
    assert str(tmp_path) in repr(FileStateStorage(tmp_path))


def test_directory_must_be_a_path():
    with pytest.raises(ArkError) as info:
        FileStateStorage(42)  # type: ignore[arg-type]
    assert info.value.code == "invalid_argument"


_SAVING_CHILD = """
import asyncio, sys
from arknb.domain import AgentMessage
from arknb.state import AgentState, FileStateStorage

async def main():
    storage = FileStateStorage(sys.argv[1])
    pad = "x" * 2_000_000  # a big document: the kill is likely to land mid-write
    revision = (await storage.load("s")).revision
    print("saving", flush=True)
    n = 0
    while True:
        n += 1
        state = AgentState(session_id="s", revision=revision, metadata={"n": n, "pad": pad},
                           history=(AgentMessage.user(f"save {n}"),))
        revision = await storage.save(state)

asyncio.run(main())
"""


KILLS = int(os.environ.get("ARKNB_SAVE_KILLS", "3"))


async def test_a_write_killed_with_sigkill_leaves_a_whole_file_and_the_next_save_sweeps_its_temp_file(tmp_path):
    import random
    import signal
    import subprocess
    import sys

    storage = FileStateStorage(tmp_path)
    await storage.save(AgentState(session_id="s"))
    leftovers = 0
    for _ in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", _SAVING_CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "saving", child.stderr.read()
        await asyncio.sleep(random.uniform(0.05, 0.3))  # the kill lands somewhere among the child's saves
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
        child.stdout.close()
        child.stderr.close()
        leftovers += any(name.endswith(".tmp") for name in os.listdir(tmp_path))

        loaded = await FileStateStorage(tmp_path).load("s")  # the old file or the new one, never half
        assert loaded.history[0].text.startswith("save ") and loaded.metadata["pad"] == "x" * 2_000_000
        await FileStateStorage(tmp_path).save(loaded)
        assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
    print(f"\n{leftovers} of {KILLS} kills left a temporary file; the next save removed it")
