"""Folder skills (DESIGN §14): SKILL.md discovery, malformed files reported, tools.py."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import arknb as ark
from arknb import ArkError


def _skill(root: Path, folder: str, text: str, tools: str | None = None) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    if tools is not None:
        (path / "tools.py").write_text(textwrap.dedent(tools), encoding="utf-8")
    return path


GOOD = """
---
name: release-notes
description: Write release notes from a list of merged changes.
license: MIT
---
Group the changes by kind (features, fixes), newest first.
Keep each line under 80 characters.
"""


def test_a_folder_of_skills_loads_good_ones_and_reports_each_bad_file(tmp_path):
    _skill(tmp_path, "a-good", GOOD)
    _skill(tmp_path, "b-no-front-matter", "Just some text.\n")
    _skill(tmp_path, "c-unclosed", "---\nname: x\ndescription: y\nbody without a closing line\n")
    _skill(tmp_path, "d-bad-yaml", "---\nname: broken\ndescription: a: b\n---\nbody\n")
    _skill(tmp_path, "e-no-name", "---\ndescription: has no name\n---\nbody\n")
    _skill(tmp_path, "f-no-description", "---\nname: nodesc\n---\nbody\n")
    _skill(tmp_path, "g-name-not-a-string", "---\nname: 123\ndescription: numbers\n---\nbody\n")
    _skill(tmp_path, "h-duplicate", "---\nname: release-notes\ndescription: the same name again\n---\nbody\n")
    _skill(tmp_path, "i-list", "---\n- name\n- description\n---\nbody\n")
    _skill(tmp_path, "j-bad-name", "---\nname: has spaces\ndescription: d\n---\nbody\n")
    _skill(tmp_path, "k-empty", "---\nname: empty\ndescription: nothing inside\n---\n\n")
    (tmp_path / "l-not-utf8").mkdir()
    (tmp_path / "l-not-utf8" / "SKILL.md").write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\nbody\n")
    _skill(tmp_path, "m-always", "---\nname: tone\ndescription: Keep a kind tone.\nalways_on: true\n---\nBe kind.\n")
    _skill(tmp_path, "n-always-bad", "---\nname: tone2\ndescription: d\nalways_on: sometimes\n---\nx\n")
    (tmp_path / "notes").mkdir()  # a folder without SKILL.md is not a skill
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "SKILL.md").write_text(GOOD)

    report = ark.load_skills(tmp_path)

    assert [s.name for s in report.skills] == ["release-notes", "tone"]
    notes = report.skills[0]
    assert notes.description == "Write release notes from a list of merged changes."
    assert notes.instructions.startswith("Group the changes") and notes.instructions.endswith("80 characters.")
    assert notes.metadata == {"license": "MIT"} and notes.path == tmp_path / "a-good" and not notes.always_on
    assert report.skills[1].always_on
    problems = {e.path.parent.name: e.message for e in report.errors}
    assert set(problems) == {"b-no-front-matter", "c-unclosed", "d-bad-yaml", "e-no-name", "f-no-description",
                             "g-name-not-a-string", "h-duplicate", "i-list", "j-bad-name", "k-empty",
                             "l-not-utf8", "n-always-bad"}
    assert "has no YAML front matter" in problems["b-no-front-matter"]
    assert "not closed" in problems["c-unclosed"]
    assert problems["d-bad-yaml"] == ("the YAML front matter is invalid at line 3, column 15: "
                                      "mapping values are not allowed here")
    assert "no 'name'" in problems["e-no-name"]
    assert "no 'description'" in problems["f-no-description"]
    assert "'name' must be a string, got int 123" in problems["g-name-not-a-string"]
    assert "already loaded from" in problems["h-duplicate"] and "a-good" in problems["h-duplicate"]
    assert "must be a mapping" in problems["i-list"]
    assert "skill name must be" in problems["j-bad-name"]
    assert "neither instructions nor tools" in problems["k-empty"]
    assert "not UTF-8" in problems["l-not-utf8"]
    assert "'always_on' must be true or false" in problems["n-always-bad"]
    assert all(e.path.name == "SKILL.md" for e in report.errors)
    assert not report.ok and len(report) == 2 and list(report) == list(report.skills)
    assert "2 loaded, 12 failed" in repr(report) and "d-bad-yaml" in repr(report)
    with pytest.raises(ArkError, match="12 skill"):
        report.raise_on_errors()


def test_a_single_skill_folder_or_file_loads_too(tmp_path):
    folder = _skill(tmp_path, "notes", GOOD)
    assert [s.name for s in ark.load_skills(folder)] == ["release-notes"]
    assert [s.name for s in ark.load_skills(folder / "SKILL.md")] == ["release-notes"]
    assert ark.load_skills(str(folder)).ok


def test_a_path_that_is_not_there_is_a_config_error(tmp_path):
    with pytest.raises(ArkError) as info:
        ark.load_skills(tmp_path / "nope")
    assert info.value.code == "invalid_argument" and "nope" in info.value.message


def test_a_crlf_file_with_a_bom_loads(tmp_path):
    path = tmp_path / "win"
    path.mkdir()
    (path / "SKILL.md").write_bytes("\ufeff---\r\nname: win\r\ndescription: From Windows.\r\n---\r\nHello.\r\n"
                                    .encode("utf-8"))
    [skill] = ark.load_skills(tmp_path)
    assert skill.name == "win" and skill.instructions == "Hello."


def test_a_huge_skill_file_is_reported(tmp_path):
    _skill(tmp_path, "big", "---\nname: big\ndescription: d\n---\n" + "x" * 300_000)
    [error] = ark.load_skills(tmp_path).errors
    assert "at most" in error.message


TOOLS = """
import arknb as ark
from arknb import tool as imported_decorator


@ark.tool(read_only=True)
def word_count(text: str) -> int:
    \"\"\"Count the words of a text.\"\"\"
    return len(text.split())


@ark.tool
def shout(text: str) -> str:
    \"\"\"Upper-case a text.\"\"\"
    return text.upper()


not_a_tool = 42
"""


def test_tools_py_gives_the_skill_its_tools(tmp_path):
    _skill(tmp_path, "writer", "---\nname: writer\ndescription: Writing help.\n---\nCount words first.\n", TOOLS)
    [skill] = ark.load_skills(tmp_path)
    assert skill.tool_names == ("word_count", "shout")
    assert skill.tools[0].read_only and skill.tools[0].fn("a b c") == 3


def test_a_tools_py_that_raises_is_reported_and_the_other_skills_load(tmp_path):
    _skill(tmp_path, "broken", "---\nname: broken\ndescription: Breaks.\n---\nx\n",
           "raise RuntimeError('the database is not configured')\n")
    _skill(tmp_path, "exits", "---\nname: exits\ndescription: Exits.\n---\nx\n", "import sys\nsys.exit(3)\n")
    _skill(tmp_path, "fine", GOOD)
    _skill(tmp_path, "syntax", "---\nname: syntax\ndescription: Bad Python.\n---\nx\n", "def (:\n")

    report = ark.load_skills(tmp_path)

    assert [s.name for s in report.skills] == ["release-notes"]
    problems = {e.path.parent.name: (e.path.name, e.message) for e in report.errors}
    assert problems["broken"] == ("tools.py", "raised RuntimeError on import: the database is not configured")
    assert problems["exits"][1].startswith("raised SystemExit on import")
    assert problems["syntax"][1].startswith("raised SyntaxError on import")
    assert not [m for m in sys.modules if m.startswith("_arknb_skill_broken")]


def test_tools_py_is_imported_only_from_the_folder_given(tmp_path, monkeypatch):
    # A `tools` module elsewhere on sys.path must never stand in for the skill's own file.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "tools.py").write_text("import arknb as ark\n\n@ark.tool\ndef impostor() -> str:\n"
                                        "    '''Not the skill's.'''\n    return 'no'\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    root = tmp_path / "skills"
    _skill(root, "writer", "---\nname: writer\ndescription: Writing help.\n---\nx\n", TOOLS)
    [skill] = ark.load_skills(root)
    assert skill.tool_names == ("word_count", "shout")
    assert Path(skill.tools[0].fn.__code__.co_filename) == (root / "writer" / "tools.py").resolve()

    # A tools.py that is a link leading out of the folder is refused.
    linked = root / "linked"
    _skill(root, "linked", "---\nname: linked\ndescription: Linked.\n---\nx\n")
    (linked / "tools.py").symlink_to(elsewhere / "tools.py")
    report = ark.load_skills(root)
    [error] = report.errors
    assert error.path == linked / "tools.py" and "leads outside" in error.message


def test_loading_again_replaces_the_module_of_a_skill(tmp_path):
    folder = _skill(tmp_path, "writer", "---\nname: writer\ndescription: Writing help.\n---\nx\n", TOOLS)
    first = ark.load_skills(tmp_path).skills[0]
    (folder / "tools.py").write_text(TOOLS.replace("text.upper()", "text.upper() + '!'"))
    second = ark.load_skills(tmp_path).skills[0]
    assert first.tools[1].fn("a") == "A" and second.tools[1].fn("a") == "A!"


def test_skill_values_are_checked():
    with pytest.raises(ArkError, match="needs a description"):
        ark.Skill("x", "  ", "do")
    with pytest.raises(ArkError, match="skill name"):
        ark.Skill("", "d", "do")
    with pytest.raises(ArkError, match="always_on"):
        ark.Skill("x", "d", "do", always_on="yes")
    with pytest.raises(ArkError, match="under 1024"):
        ark.Skill("x", "d" * 2000, "do")

    def helper(text: str) -> str:
        """Help."""
        return text

    skill = ark.Skill("x", "d", "  do  ", tools=[helper])
    assert skill.instructions == "do" and skill.tool_names == ("helper",)
    assert "tools=['helper']" in repr(skill)
