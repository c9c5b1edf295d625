"""Which upstreams the bot's credential proxy gets from the settings (bot/proxy.py), and where
its socket goes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.proxy import ANTHROPIC_API, OPENAI_API, server_tools_groups, socket_dir, upstreams
from bot.settings import load_settings
from bot.settings_sections import SettingsError
from container.proxy import Upstream


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {}),
        ({"ANTHROPIC_API_KEY": "ka"}, {"claude": Upstream(ANTHROPIC_API, "ka")}),
        ({"OPENAI_API_KEY": "ko"}, {"codex": Upstream(OPENAI_API, "ko")}),
        (
            {"ANTHROPIC_API_KEY": "ka", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
            {"claude": Upstream("http://127.0.0.1:9", "ka")},
        ),
        # A model server of one's own without a key: forwarded to, with no credentials.
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:8/v1"},
            {"codex": Upstream("http://127.0.0.1:8/v1", "")},
        ),
    ],
)
def test_upstreams_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: dict[str, Upstream]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert upstreams(load_settings(env_file=None)) == expected


def test_the_socket_folder_is_in_the_data_folder_and_not_listable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    folder = socket_dir(load_settings(env_file=None))
    assert folder == tmp_path / "data" / "proxy"
    assert (folder.stat().st_mode & 0o777) == 0o711


def test_the_socket_folder_can_be_a_folder_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Several engines on hosts that share the data folder: the socket folder is host-local.
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TRIBUNAL_DOCKER__PROXY_DIR", str(tmp_path / "run" / "proxy"))
    folder = socket_dir(load_settings(env_file=None))
    assert folder == tmp_path / "run" / "proxy"
    assert (folder.stat().st_mode & 0o777) == 0o711
    monkeypatch.setenv("TRIBUNAL_DOCKER__PROXY_DIR", "run/proxy")
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    assert "docker.proxy_dir: must be an absolute path (got 'run/proxy')" in str(caught.value)


def test_a_data_folder_too_deep_for_a_socket_uses_the_temp_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("TRIBUNAL_DATA", str(deep))
    folder = socket_dir(load_settings(env_file=None))
    assert not folder.is_relative_to(deep) and folder.name.startswith("tribunal-proxy-")
    assert len(str(folder / "proxy.sock")) <= 100 and folder.stat().st_uid == os.getuid()
    folder.rmdir()


def test_server_tools_are_off_unless_a_group_turns_them_on(tmp_path: Path) -> None:
    toml = tmp_path / "tribunal.toml"
    toml.write_text(
        "[groups.web]\nplatform = 'slack'\nchannel = 'C1'\nserver_tools = true\n"
        "[groups.quiet]\nplatform = 'slack'\nchannel = 'C2'\n"
    )
    settings = load_settings(toml, env_file=None)
    assert server_tools_groups(settings) == frozenset({"web"})
