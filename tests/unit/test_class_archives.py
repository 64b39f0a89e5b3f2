"""Class archives are written whole or not at all, and mapped only once they exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor import class_archives


def written_to(options: tuple[str, ...]) -> Path:
    return Path(options[0].removeprefix("-XX:ArchiveClassesAtExit="))


def test_an_archive_whose_writing_failed_is_left_neither_whole_nor_half(tmp_path):
    archive = tmp_path / "node.jsa"
    with pytest.raises(RuntimeError), class_archives.writing(archive) as options:
        written_to(options).write_text("half")
        raise RuntimeError("the JVM had to be killed")
    assert list(tmp_path.iterdir()) == []
    with class_archives.writing(archive) as options:
        assert class_archives.mapping(archive) == ()  # nothing to map while it is written
        written_to(options).write_text("whole")
    assert [p.name for p in tmp_path.iterdir()] == ["node.jsa"]
    assert class_archives.mapping(archive)[0] == f"-XX:SharedArchiveFile={archive}"


def test_a_jvm_that_wrote_nothing_leaves_no_archive(tmp_path):
    with class_archives.writing(tmp_path / "tools.jsa", ("-Xlog:disable",)) as options:
        assert options[1:] == ("-Xlog:disable",)
    assert list(tmp_path.iterdir()) == []
