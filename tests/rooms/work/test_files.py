"""The one writer of decision records and saved conclusions (rooms/work/files.py): a write that
fails at any point leaves the old file as it was and no partial file beside it; it runs in a
worker thread, never on the event loop's."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from rooms.work import files

OLD = "# Decision record\n\nthe old text\n"


def _failing(name: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, f"No space left on device ({name})")

    return fail


@pytest.mark.parametrize("step", ["fsync", "replace"])
async def test_an_interrupted_write_keeps_the_old_record_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    record = tmp_path / "decisions" / "task-1-turn-3.md"
    record.parent.mkdir()
    record.write_text(OLD)
    monkeypatch.setattr(os, step, _failing(step))
    with pytest.raises(OSError, match="No space left"):
        await files.save(str(record), "# Decision record\n\nthe new text, half of it\n" * 1000)
    assert record.read_text() == OLD
    assert [p.name for p in record.parent.iterdir()] == [record.name]


async def test_a_write_replaces_the_whole_record(tmp_path: Path) -> None:
    record = tmp_path / "decisions" / "task-1-arena.md"
    await files.save(str(record), OLD)
    await files.save(str(record), "new\n")
    assert record.read_text() == "new\n"
    assert [p.name for p in record.parent.iterdir()] == [record.name]


async def test_an_exclusive_write_never_replaces_a_file(tmp_path: Path) -> None:
    saved = tmp_path / "docs" / "arena" / "2026-01-01-queue.md"
    await files.save(str(saved), OLD, exclusive=True)
    with pytest.raises(FileExistsError):
        await files.save(str(saved), "another arena's synthesis", exclusive=True)
    assert saved.read_text() == OLD
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


async def test_an_exclusive_write_without_hard_links_still_never_replaces_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "link", _failing("link"))  # as on a filesystem without hard links
    saved = tmp_path / "docs" / "arena" / "2026-01-01-queue.md"
    await files.save(str(saved), OLD, exclusive=True)
    with pytest.raises(FileExistsError):
        await files.save(str(saved), "another arena's synthesis", exclusive=True)
    assert saved.read_text() == OLD
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


async def test_the_write_runs_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []
    real = files.write

    def spy(path: str, text: str, *, exclusive: bool = False) -> None:
        threads.append(threading.current_thread())
        real(path, text, exclusive=exclusive)

    monkeypatch.setattr(files, "write", spy)
    await files.save(str(tmp_path / "r.md"), OLD)
    assert threads and threads[0] is not threading.main_thread()
