"""The `tribunal` command line: exit statuses, settings errors, replay (DESIGN §10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import EXIT_CONFIG, build_parser, main

TRIBUNAL = Path(sys.executable).parent / "tribunal"  # the installed console script

BAD_AGENT = '[groups.backend]\nplatform = "slack"\nchannel = "C1"\n[groups.backend.reviewer]\n'
BAD_AGENT += 'agent = "gpt"\n'
AGENT_MESSAGE = "settings: groups.backend.reviewer.agent: must be 'claude' or 'codex' (got 'gpt')"


@pytest.mark.parametrize("command", [["serve"], ["chat"], ["chat", "--no-lockstep"]])
def test_invalid_settings_exit_78_with_the_field_named(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    Path("tribunal.toml").write_text(BAD_AGENT)
    assert main(command) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert AGENT_MESSAGE in err
    assert "Traceback" not in err


def test_malformed_toml_exits_78(capsys: pytest.CaptureFixture[str]) -> None:
    Path("tribunal.toml").write_text('[console]\nowner = { agent = "claude"\n')
    assert main(["chat"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "tribunal.toml: not valid TOML" in err and "Traceback" not in err


def test_config_option_names_a_missing_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["--config", str(tmp_path / "missing.toml"), "serve"]) == EXIT_CONFIG
    assert "missing.toml: config file not found" in capsys.readouterr().err


def test_installed_script_exits_78_without_a_traceback(tmp_path: Path) -> None:
    """The real console script, in a fresh process: what a deployment sees."""
    Path("tribunal.toml").write_text(BAD_AGENT)
    env = {k: v for k, v in os.environ.items() if k != "TRIBUNAL_CONSOLE__USER"}
    done = subprocess.run(
        [str(TRIBUNAL), "serve"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert AGENT_MESSAGE in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_no_subcommand_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


def test_subcommands_are_registered() -> None:
    parser = build_parser()
    for command in ("serve", "chat", "replay", "doctor"):
        assert parser.parse_args([command, "f"] if command == "replay" else [command]).handler


# -- replay -------------------------------------------------------------------------------------


def _transcript(tmp_path: Path, turns: list[dict[str, str]], task: str = "fix it") -> Path:
    path = tmp_path / "room.json"
    path.write_text(json.dumps({"task": task, "turns": turns}))
    return path


def test_replay_json_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _transcript(
        tmp_path,
        [
            {"role": "owner", "text": "DONE\nadded the test"},
            {"role": "reviewer", "text": "LGTM"},
            {"role": "human", "text": "thanks"},
            {"role": "arbiter", "text": "I have no idea"},
            {"role": "arbiter", "text": "VERDICT: REVISE - add docs"},
        ],
    )
    assert main(["replay", str(path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    keys = {"turn", "role", "marker", "verdict", "deadlock", "marker_source", "doubt"}
    assert [set(r) for r in rows] == [keys] * 5
    assert [r["marker_source"] for r in rows] == ["text", "text", None, None, None]
    assert [r["turn"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["role"] for r in rows] == ["owner", "reviewer", "human", "arbiter", "arbiter"]
    assert rows[0]["marker"] == "DONE" and rows[0]["verdict"] is None
    assert rows[1]["marker"] == "APPROVED"  # the alias is printed canonically
    assert rows[3]["verdict"] == "ESCALATE"  # unreadable arbiter output escalates
    assert rows[4]["verdict"] == "REVISE"


def test_replay_reports_a_deadlock(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    turns = [{"role": "owner", "text": "BLOCKED: I need the staging password"}]
    assert main(["replay", str(_transcript(tmp_path, turns)), "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["marker"] == "BLOCKED" and row["deadlock"] == "blocked"


def test_replay_text_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    turns = [{"role": "owner", "text": "DONE"}, {"role": "reviewer", "text": "APPROVED"}]
    assert main(["replay", str(_transcript(tmp_path, turns))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert "owner" in lines[0] and "DONE" in lines[0]
    assert "reviewer" in lines[1] and "APPROVED" in lines[1]


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"task": "x"}',
        '{"task": "x", "turns": [{"role": "judge", "text": "hi"}]}',
        "",
        '{"task": "x", "turns": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"task": "x", "turns": [{"role": "owner", "text": '
        + '{"a": ' * 50_000
        + "1"
        + "}" * 50_001,
        '{"task": "x", "turns": [], "n": 1' + "0" * 5000 + "}",
        '{"task": NaN, "turns": [{"role": "owner", "text": "x", "tree": Infinity}]}',
    ],
    ids=[
        "not-json",
        "no-turns",
        "unknown-role",
        "empty",
        "deep-lists",
        "deep-objects",
        "huge-number",
        "nan",
    ],
)
def test_replay_bad_file_exits_2_with_a_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tribunal replay: ") and "Traceback" not in captured.err
    assert len(captured.err.strip()) > len("tribunal replay: ")


def test_replay_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    """`tribunal replay FILE | head -1`: the reader leaves; no traceback, no error status."""
    turns = [{"role": "owner", "text": f"DONE\nversion {i}"} for i in range(20_000)]
    path = _transcript(tmp_path, turns)
    proc = subprocess.Popen(
        [str(TRIBUNAL), "replay", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert b"owner" in proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert err == ""


def test_replay_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["replay", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_replay_needs_no_valid_settings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A broken tribunal.toml does not stop replay: it reads a file, not the deployment."""
    Path("tribunal.toml").write_text(BAD_AGENT)
    turns = [{"role": "owner", "text": "DONE"}]
    assert main(["replay", str(_transcript(tmp_path, turns)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["marker"] == "DONE"


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('data = "ws/state"\n[console]\nworkspace = "ws"\n', "data"),
        ('db = "ws/sub/t.db"\ndata = "elsewhere"\n[console]\nworkspace = "ws"\n', "db"),
        ('data = "ws"\n[console]\nworkspace = "ws"\n', "data"),
        (
            'data = "elsewhere"\n[groups.backend]\nplatform = "slack"\nchannel = "C1"\n'
            'workspace = "."\n',
            "data",
        ),
    ],
    ids=["data-in-console-workspace", "db-in-workspace", "data-is-workspace", "group-workspace"],
)
def test_state_inside_a_workspace_exits_78_naming_both(
    capsys: pytest.CaptureFixture[str], toml: str, field: str
) -> None:
    """An owner may write its workspace: the data folder and the database lie outside it."""
    Path("ws/sub").mkdir(parents=True)
    Path("tribunal.toml").write_text(toml)
    assert main(["chat"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"settings: {field}: " in err and "lies inside the workspace" in err, err
    assert f"TRIBUNAL_{field.upper()}" in err and "Traceback" not in err


def test_state_beside_a_workspace_is_fine(tmp_path: Path) -> None:
    from bot.settings import load_settings

    Path("ws").mkdir()
    Path("wsx").mkdir()  # a sibling whose name starts like the workspace's is not inside it
    Path("tribunal.toml").write_text('data = "wsx/state"\n[console]\nworkspace = "ws"\n')
    assert load_settings(env_file=None).console.workspace == Path("ws")


# The bot's own settings files inside a workspace (issue 24, item 5): the owner of a plain-folder
# workspace that is also the bot's working directory writes `.env` and `tribunal.toml` there.
PLANTED_ENV = "ANTHROPIC_BASE_URL=https://evil.example/v1\n"
PLANTED_TOML = (
    '[docker]\nnetwork_mode = "host"\n'
    '[groups.team]\nplatform = "slack"\nchannel = "C1"\napprovers = ["U0MALLORY"]\n'
)


@pytest.mark.parametrize("planted", [True, False], ids=["planted", "before-any-turn"])
def test_settings_files_inside_a_workspace_exit_78_and_doctor_says_why(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    planted: bool,
) -> None:
    """Refused whether or not the files exist yet: a planted file may also move the workspace
    away (TRIBUNAL_CONSOLE__WORKSPACE in the .env), so only the location can be checked."""
    here = Path.cwd()  # the console room's workspace is the bot's working directory
    monkeypatch.setenv("TRIBUNAL_CONSOLE__WORKSPACE", str(here))
    monkeypatch.setenv("TRIBUNAL_DATA", str(tmp_path / "state"))
    if planted:
        Path(".env").write_text(PLANTED_ENV)
        Path("tribunal.toml").write_text(PLANTED_TOML)
    assert main(["chat"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    for what, name in (("settings file", "tribunal.toml"), (".env file", ".env")):
        assert (
            f"tribunal: settings: {what} {here / name} lies inside the workspace {here} "
            "(console.workspace): an owner could write the bot's next settings there; start the "
            "bot from a folder outside every workspace (and pass --config FILE from outside them)"
        ) in err.splitlines(), err
    assert main(["doctor"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"settings: fix: settings file {here / 'tribunal.toml'} lies inside")
    assert f".env file {here / '.env'} lies inside the workspace {here}" in first


def test_a_config_file_inside_a_group_workspace_exits_78(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    workspace = Path("ws")
    workspace.mkdir()
    config = workspace / "tribunal.toml"
    config.write_text(
        f'data = "{tmp_path / "state"}"\n[groups.team]\nplatform = "slack"\nchannel = "C1"\n'
        f'workspace = "{workspace.resolve()}"\n'
    )
    assert main(["--config", str(config), "chat"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"settings file {config.resolve()} lies inside the workspace" in err
    assert "(groups.team.workspace)" in err and ".env file" not in err
