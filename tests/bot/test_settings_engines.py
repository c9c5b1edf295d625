"""`[docker] engines`: several Docker-API engines (container/endpoints.py, bot/backend.py).

A unix socket is a bare string; a tcp:// engine is a table with its TLS files, which must exist
now. DOCKER_HOST alone keeps meaning one engine, as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.backend import engine_address, engine_endpoints
from bot.settings import SettingsError, load_settings
from container.endpoints import Endpoint
from tests.bot.test_settings import write


@pytest.fixture
def tls_files(tmp_path: Path) -> dict[str, str]:
    files = {}
    for name in ("ca", "cert", "key"):
        path = tmp_path / f"{name}.pem"
        path.write_text("-----BEGIN NOTHING-----\n")
        files[f"tls_{name}"] = str(path)
    return files


def test_docker_host_alone_is_one_engine_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    settings = load_settings(env_file=None)
    assert settings.docker.engines == []
    assert engine_endpoints(settings) == [Endpoint("tcp://127.0.0.1:2375")]
    assert engine_address(settings) == "tcp://127.0.0.1:2375"


def test_engines_from_the_file(tls_files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///ignored.sock")  # the list wins
    tls = ", ".join(f'{k} = "{v}"' for k, v in tls_files.items())
    write(
        Path("tribunal.toml"),
        f'[docker]\nengines = ["unix:///run/a.sock", {{host = "tcp://10.0.0.2:2376", {tls}}}]\n',
    )
    settings = load_settings(env_file=None)
    assert engine_endpoints(settings) == [
        Endpoint("unix:///run/a.sock"),
        Endpoint("tcp://10.0.0.2:2376", **tls_files),
    ]
    assert engine_address(settings) == "unix:///run/a.sock, tcp://10.0.0.2:2376"


def test_engines_as_tables_as_the_readme_writes_them(tls_files: dict[str, str]) -> None:
    tls = "\n".join(f'{k} = "{v}"' for k, v in tls_files.items())
    write(
        Path("tribunal.toml"),
        '[docker]\nproxy_dir = "/run/tribunal-proxy"\n\n'
        '[[docker.engines]]\nhost = "unix:///run/podman/podman.sock"\n\n'
        f'[[docker.engines]]\nhost = "tcp://runner2.internal:2376"\n{tls}\n',
    )
    settings = load_settings(env_file=None)
    assert engine_endpoints(settings) == [
        Endpoint("unix:///run/podman/podman.sock"),
        Endpoint("tcp://runner2.internal:2376", **tls_files),
    ]
    assert settings.docker.proxy_dir == Path("/run/tribunal-proxy")


def test_engines_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIBUNAL_DOCKER__ENGINES", '["unix:///a.sock", "unix:///b.sock"]')
    settings = load_settings(env_file=None)
    assert [e.host for e in engine_endpoints(settings)] == ["unix:///a.sock", "unix:///b.sock"]


BAD = [
    (
        "a tcp engine without TLS",
        'engines = ["tcp://10.0.0.2:2375"]',
        "settings: docker.engines.0: tcp://10.0.0.2:2375: a tcp:// engine needs TLS client "
        "certificates: set tls_ca, tls_cert, tls_key (a remote engine's API is root on its host)",
    ),
    (
        "a tcp engine with a key but no certificates",
        'engines = [{host = "tcp://h:2376", tls_key = "KEY"}]',
        "settings: docker.engines.0: tcp://h:2376: a tcp:// engine needs TLS client "
        "certificates: set tls_ca, tls_cert",
    ),
    (
        "certificate files that are not there",
        'engines = [{host = "tcp://h:2376", tls_ca = "CA", tls_cert = "/no/cert.pem", '
        'tls_key = "KEY"}]',
        "settings: docker.engines.0: tcp://h:2376: tls_cert /no/cert.pem: no such file",
    ),
    (
        "another scheme",
        'engines = ["http://h:2375"]',
        "settings: docker.engines.0: 'http://h:2375': use unix:///path/to/socket or "
        "tcp://host:port (with TLS)",
    ),
    (
        "a bare path",
        'engines = ["/run/podman/podman.sock"]',
        "use unix:///path/to/socket or tcp://host:port (with TLS)",
    ),
    (
        "TLS files on a unix socket",
        'engines = [{host = "unix:///a.sock", tls_ca = "CA"}]',
        "settings: docker.engines.0: unix:///a.sock: tls_ca only apply to tcp:// engines",
    ),
    (
        "the same engine twice",
        'engines = ["unix:///a.sock", "unix:///a.sock"]',
        "settings: docker.engines: each engine once: unix:///a.sock is listed twice",
    ),
    (
        "an unknown key",
        'engines = [{host = "unix:///a.sock", tls_verify = false}]',
        "docker.engines.0.tls_verify",
    ),
]


@pytest.mark.parametrize(("line", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_engines_are_settings_errors(
    tls_files: dict[str, str], line: str, expected: str
) -> None:
    for name, path in (("CA", tls_files["tls_ca"]), ("KEY", tls_files["tls_key"])):
        line = line.replace(f'"{name}"', f'"{path}"')
    write(Path("tribunal.toml"), f"[docker]\n{line}\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(env_file=None)
    assert any(expected in problem for problem in caught.value.lines), caught.value.lines
