"""The import contracts (DESIGN §1, rooms/__init__.py): the layers of rooms/ one way only, no
protocol folder importing another, no circle in rooms/ or bot/.

The contracts are import-linter's, in pyproject.toml ([tool.importlinter]); the circles are found
here with grimp (which import-linter is built on), since not every import-linter release has a
contract for them. Each check is also shown to fail: an import planted in a copy of the packages
must break the contract it offends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rooms", "bot", "runners", "container", "prompts")
NO_CIRCLES_IN = ("rooms", "bot")


def circles(*packages: str) -> list[list[str]]:
    """Every set of modules of `packages` that import each other in a loop (strongly connected
    components of more than one module, or a module importing itself)."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        imported = graph.find_modules_directly_imported_by(module)
        for other in sorted(imported):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1 or module in imported:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts from `where`/pyproject.toml, over the packages found there."""
    tool = Path(sys.executable).with_name("lint-imports")
    command = [str(tool)] if tool.exists() else [shutil.which("lint-imports") or "lint-imports"]
    return subprocess.run(
        [*command, "--no-cache"],
        cwd=where,
        env={**os.environ, "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        check=False,
    )


def planted_copy(tmp_path: Path, file: str, line: str) -> Path:
    """The packages and pyproject.toml copied to `tmp_path`, with `line` added to `file`."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / file  # a new file, or one that is there
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    target.write_text(f"{before}\n{line}\n", encoding="utf-8")
    return tmp_path


def test_the_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize("package", NO_CIRCLES_IN)
def test_no_import_circles(package: str) -> None:
    assert circles(package) == []


# An import that each contract refuses, planted where a newcomer might write it.
PLANTED = [
    # upward: a pure reader of text reaching for the driver
    ("rooms/judge/noise.py", "import rooms.core.driver", "rooms/: layers"),
    # upward: the nouns reaching for the store
    ("rooms/base/records.py", "from rooms.store import Store", "rooms/: layers"),
    # upward: the core reaching for a protocol
    ("rooms/core/turns.py", "import rooms.pair.states", "rooms/: layers"),
    # between protocol folders
    ("rooms/arena/limits.py", "import rooms.debate.limits", "a protocol folder never imports"),
    ("rooms/pair/states.py", "import rooms.arena.state", "a protocol folder never imports"),
    # a new module at rooms/'s root that no layer names
    ("rooms/stray.py", "import rooms.base.model", "rooms/: layers"),
    # DESIGN §1
    ("rooms/core/status.py", "import bot.render", "rooms knows no platform"),
    ("rooms/core/outbox.py", "import discord", "rooms knows no platform"),
    ("container/limits.py", "import rooms.base.model", "runners/ and container/"),
    # bot/: a platform that knows serve
    ("bot/console/adapter.py", "import bot.serve", "bot/: platforms register"),
    # bot/: the dashboard reaching up for serve, or a platform reaching for the dashboard
    ("bot/dashboard/pages.py", "import bot.serve", "bot/: platforms register"),
    ("bot/slack/adapter.py", "import bot.dashboard.server", "bot/: platforms register"),
]


@pytest.mark.parametrize(("file", "line", "contract"), PLANTED)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, file: str, line: str, contract: str
) -> None:
    result = lint_imports(planted_copy(tmp_path, file, line))
    assert result.returncode != 0, result.stdout + result.stderr
    # The report names each broken contract again, in full, under this heading.
    _, _, broken = result.stdout.partition("Broken contracts")
    assert contract in broken, result.stdout


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    # rooms.judge.findings imports rooms.judge.noise; noise importing findings closes a circle.
    where = planted_copy(tmp_path, "rooms/judge/noise.py", "import rooms.judge.findings")
    found = subprocess.run(
        # -P: not this file's folder first on the path, where tests/rooms would pass for rooms
        [sys.executable, "-P", __file__, "rooms"],
        cwd=where,
        env={**os.environ, "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 1, found.stdout + found.stderr
    assert "rooms.judge.findings rooms.judge.noise" in found.stdout


def test_every_declared_platform_is_behind_the_platforms_wall() -> None:
    """The `bot-platforms` contract names its layers (it is not exhaustive), so a new platform
    package left off its line would import `bot.serve` unchecked: every package a declared
    platform's factory lives in must be on that line (one word in pyproject.toml)."""
    import tomllib

    import bot.platforms  # noqa: F401  (every platform declares itself)
    from bot.adapter import platform_specs

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [walls] = [
        c for c in contracts["tool"]["importlinter"]["contracts"] if c["id"] == "bot-platforms"
    ]
    listed = {name.strip() for layer in walls["layers"] for name in layer.split("|")}
    for spec in platform_specs():
        assert isinstance(spec.factory, str), spec.name
        package = ".".join(spec.factory.partition(":")[0].split(".")[:2])
        assert package in listed, f"{spec.name}: {package} is not a layer of bot-platforms"


if __name__ == "__main__":  # the circles of the packages found on PYTHONPATH (the planted copy)
    loops = circles(*sys.argv[1:])
    for loop in loops:
        print(" ".join(loop))
    sys.exit(1 if loops else 0)
