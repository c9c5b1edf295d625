"""An EngineSet whose engines all fail to answer (container/engine_set.py): no Podman needed,
the engines are unix sockets nobody serves.

- `start` drains each one with its reason and raises NoEngine naming them all (the bot then
  exits with the settings error, bot/backend.py);
- a turn asked for anyway fails at once as `crashed`, with every engine's reason; it is not
  `engine_lost` (which would run it again, forever).
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from container.docker_backend import DockerBackend
from container.docker_pool import DockerConfig
from container.endpoints import Endpoint
from container.engine_set import EngineSet, NoEngine
from runners.protocol import CRASHED, RunRequest, RunSpec


def down(tmp_path: Path, name: str) -> tuple[Endpoint, DockerBackend]:
    host = f"unix://{tmp_path}/{name}.sock"
    # An explicit API version: no request is made until a turn needs one.
    client = docker.DockerClient(base_url=host, version="1.41", timeout=5)
    return Endpoint(host), DockerBackend(client, DockerConfig(instance="down"))


async def test_no_engine_answering_fails_start_and_turns(tmp_path: Path) -> None:
    engines = EngineSet([down(tmp_path, "a"), down(tmp_path, "b")])
    with pytest.raises(NoEngine) as caught:
        await engines.start()
    assert f"unix://{tmp_path}/a.sock" in str(caught.value)
    assert f"unix://{tmp_path}/b.sock" in str(caught.value)
    assert all(e.drained for e in engines.engines)
    notes = engines.engine_notes()
    assert len(notes) == 2 and all("is drained since" in n for n in notes)
    spec = RunSpec(group="g", agent="claude", request=RunRequest(role="owner", prompt="hi"))
    events = [event async for event in engines.run(spec)]
    assert [(e.kind, e.code) for e in events] == [("error", CRASHED)]
    assert "no container engine answers" in events[0].text
    assert str(tmp_path / "a.sock") in events[0].text
    await engines.close()  # drained engines: nothing to remove, and no error
