"""The sections of Tribunal's settings: groups and their roles, thresholds, budgets and
timeouts, the console room, the bot-wide limits and the Docker backend. `bot.settings`
assembles them into `Settings` and reads the files and the environment.
"""

from __future__ import annotations

import getpass
import hashlib
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bot.adapter import platform_specs
from bot.references.urls import UnsafeURL, check_base_url
from bot.settings_approvers import approver_problems, console_approver_problems
from bot.settings_references import ReferenceSettings
from container.docker_pool import DockerConfig
from container.endpoints import Endpoint
from container.slots import default_turns_at_once
from rooms.base.model import GroupPolicy, Thresholds
from rooms.base.open_caps import OpenCaps
from rooms.base.words import OWNER, REVIEWER
from rooms.core.registry import prompt_roles, specs
from rooms.judge.detector_spec import Threshold
from rooms.judge.detectors import DETECTORS
from runners.protocol import ModelAgent

DEFAULT_TOML = Path("tribunal.toml")
DEFAULT_ENV_FILE = Path(".env")
CONSOLE_PLATFORM = "console"
CONSOLE_CHANNEL = "local"
CONSOLE_GROUP = "console"
_GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_INSTANCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def _prompt_role(role: str) -> str:
    """A role whose prompt a group may replace: the protocols declare theirs in the registry
    (rooms.core.registry.ProtocolSpec.prompt_roles). Refused as a choice among them, in the
    words every other choice is refused with."""
    known = prompt_roles()
    if role not in known:
        expected = ", ".join(repr(r) for r in known[:-1]) + f" or {known[-1]!r}"
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )
    return role


PromptRole = Annotated[str, AfterValidator(_prompt_role)]


def _chat_platform(name: str) -> str:
    """A declared chat platform (bot/adapter.py PlatformSpec with a token: not the console),
    refused as a choice among them in the words every other choice is refused with."""
    known = [spec.name for spec in platform_specs() if spec.token is not None]
    if name not in known:
        expected = ", ".join(repr(p) for p in known[:-1]) + f" or {known[-1]!r}"
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )
    return name


ChatPlatform = Annotated[str, AfterValidator(_chat_platform)]


def _detector_thresholds() -> list[Threshold]:
    return [t for spec in DETECTORS for t in spec.thresholds]


def _protocol_sections() -> dict[str, type]:
    """Each registered protocol's limits model, by its section of a group's settings."""
    return {spec.section: spec.limits for spec in specs() if spec.limits is not None}


class SettingsError(Exception):
    """Settings that cannot be used. Each line names one field and what is wrong with it."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class _Section(BaseModel):
    # Unknown keys are errors: a typo in tribunal.toml must not be silently ignored. A limit of
    # `inf` (TOML's own spelling, or "inf"/"1e999" in a variable) is no limit at all: every
    # number must be finite (`nan` fails every comparison, and so every bound, anyway).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AgentSettings(_Section):
    """Which agent plays a role, and with which model (None: the agent's default)."""

    agent: ModelAgent = "claude"
    model: str | None = None


class ArbiterSettings(AgentSettings):
    """The arbiter's agent and model, and how fairly it reads the sides (rooms/judge/positions).

    `swap_check` (on by default): ask twice with the two positions swapped; a PROCEED, REVISE
    or RESET stands only if both agree. `allow_same_model`: let the arbiter run the same model
    as the owner or the reviewer (by default a settings error when the models are named and
    equal)."""

    swap_check: bool = True
    allow_same_model: bool = False


class ThresholdSettings(_Section):
    """rooms.base.model.Thresholds, field for field: the deadlock detectors and the task
    ceilings."""

    # Each detector's thresholds, as it declares them (rooms/judge/detectors.py DETECTORS):
    # added while the class is built, so a new detector's setting needs no edit here.
    __annotations__.update({t.setting: type(t.default) for t in _detector_thresholds()})
    vars().update(
        {t.setting: Field(t.default, ge=t.ge, gt=t.gt, le=t.le) for t in _detector_thresholds()}
    )
    # The engine's own cap, not a detector's: arbitrations per task, then people decide.
    max_arbitrations: int = Field(Thresholds.max_arbitrations, ge=0)

    def to_thresholds(self) -> Thresholds:
        return Thresholds(**self.model_dump())


class BudgetSettings(_Section):
    """Limits of one runner call (the task-wide budgets are ceilings in `thresholds`)."""

    # tool-use turns inside one agent turn
    max_agent_turns: int = Field(GroupPolicy.max_agent_turns, ge=1)


class TimeoutSettings(_Section):
    # no event from the runner for this long: the turn fails
    idle_s: float = Field(GroupPolicy.idle_timeout_s, gt=0)
    hard_s: float = Field(GroupPolicy.hard_timeout_s, gt=0)  # wall-clock limit of one turn


class GroupBase(_Section):
    """What a group decides: agents per role, workspace, who may approve, limits, prompts."""

    owner: AgentSettings = AgentSettings()
    reviewer: AgentSettings = AgentSettings()
    arbiter: ArbiterSettings = ArbiterSettings()
    # The deliberation protocols' actors (experts, researchers, advocates, referee, resolve's
    # positions and test designer…); unset: the arbiter's agent and model, as before it existed.
    deliberation: AgentSettings | None = None
    workspace: Path | None = None
    approvers: list[str] = Field(default_factory=list)
    # Open tasks at once in the group's channel, and opened by one person there (rooms/open_caps).
    max_open_tasks: int = Field(OpenCaps.per_channel, ge=1)
    max_open_tasks_per_person: int = Field(OpenCaps.per_person, ge=1)
    thresholds: ThresholdSettings = ThresholdSettings()
    budgets: BudgetSettings = BudgetSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    prompts: dict[PromptRole, Path] = Field(default_factory=dict)
    recent_turns: int = Field(GroupPolicy.recent_turns, ge=1)  # turn outputs quoted in each prompt
    # A new or changed file larger than this (MiB) is refused from the engine's commit, with a
    # message in the room (rooms/work/snapshots.py).
    commit_max_file_mb: int = Field(
        GroupPolicy.max_commit_file_bytes // (1024 * 1024), ge=1, le=4096
    )
    # The protocols' limits, one section each (`[groups.<name>.<protocol>]`), as the registry
    # declares them (rooms.core.registry.ProtocolSpec.limits): the dataclasses in rooms/ hold the
    # defaults and check them; unknown keys are errors here too. Added while the class is built,
    # so that a protocol registered before the settings are read has its section with no edit here.
    __annotations__.update(_protocol_sections())
    vars().update({section: model() for section, model in _protocol_sections().items()})
    # Context that does not grow (rooms/pair/sessions): how long an owner/reviewer session is
    # resumed (turns; characters of turn outputs it has read), and the characters of turns
    # quoted in full in a fresh prompt (older ones get one line each).
    session_turns: int = Field(3, ge=1)
    session_chars: int = Field(6000, ge=0)  # chosen by tests/bench/bench_context.py
    recent_chars: int = Field(4000, ge=500)
    # Reference opinions (bot/settings_references.py): asked before each ruling.
    references: list[ReferenceSettings] = Field(default_factory=list)
    reference_deadline_s: float = Field(90.0, gt=0, le=900)  # the whole fan-out
    allow_private_urls: bool = False  # references on loopback / private networks (tests)
    # Let the model APIs' server-side tools through the credential proxy for this group's
    # turns (web search and fetch, code execution, MCP connectors, Codex's web search): they
    # reach the network for agents that otherwise have none (container/proxy/policy.py).
    server_tools: bool = False

    @model_validator(mode="after")
    def _references_are_safe(self) -> GroupBase:
        problems, names = [], set()
        for ref in self.references:
            if ref.name in names:
                problems.append(f"references: two are named {ref.name!r}")
            names.add(ref.name)
            try:
                check_base_url(ref.base_url, allow_private=self.allow_private_urls)
            except UnsafeURL as exc:
                problems.append(f"references.{ref.name}.base_url {ref.base_url!r} {exc}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _arbiter_is_another_model(self) -> GroupBase:
        if self.arbiter.allow_same_model or self.arbiter.model is None:
            return self
        for role, cfg in ((OWNER, self.owner), (REVIEWER, self.reviewer)):
            if (cfg.agent, cfg.model) == (self.arbiter.agent, self.arbiter.model):
                raise ValueError(
                    f"arbiter.model {self.arbiter.model!r} is also the {role}'s: the arbiter "
                    "judges best with another model; set arbiter.allow_same_model = true to "
                    "allow it"
                )
        return self

    @field_validator("workspace")
    @classmethod
    def _workspace_is_a_folder(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_dir():
            raise ValueError(f"not an existing folder: {value}")
        return value

    @field_validator("prompts")
    @classmethod
    def _prompt_files_exist(cls, value: dict[str, Path]) -> dict[str, Path]:
        # Checked here, at start-up, rather than at the first turn that needs the prompt.
        missing = [f"{role}: {path}" for role, path in value.items() if not path.is_file()]
        if missing:
            raise ValueError("prompt file not found: " + ", ".join(missing))
        return value

    def protocol_limits(self) -> dict[str, Any]:
        """Each registered protocol's limits for this group, by protocol name."""
        return {spec.name: getattr(self, spec.section) for spec in specs() if spec.limits}

    def agents_in_use(self) -> set[str]:
        roles = [self.owner, self.reviewer, self.arbiter, self.deliberation or self.arbiter]
        return {role.agent for role in roles}


class GroupSettings(GroupBase):
    """A registered chat channel (DESIGN §2): which platform, which channel."""

    platform: ChatPlatform
    channel: str = Field(min_length=1)

    @model_validator(mode="after")
    def _approvers_can_match(self) -> GroupSettings:
        problems = approver_problems(self.platform, self.approvers)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class ConsoleSettings(GroupBase):
    """The console room's group. `user` is you; by default the only approver."""

    user: str = Field(default_factory=lambda: _login_name(), min_length=1)

    @model_validator(mode="after")
    def _user_approves_by_default(self) -> ConsoleSettings:
        if not self.approvers:
            self.approvers = [self.user]
        problems = console_approver_problems(self.user, self.approvers)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class EngineSettings(_Section):
    """One engine of `[docker] engines`: its address, and for `tcp://` the TLS files
    (container/endpoints.py). Written as a bare string for a unix socket."""

    host: str = Field(min_length=1)
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_address(cls, data: object) -> object:
        return {"host": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _usable(self) -> EngineSettings:
        problems = self.endpoint().problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def endpoint(self) -> Endpoint:
        return Endpoint(self.host, self.tls_ca, self.tls_cert, self.tls_key)


class DockerSettings(_Section):
    """The Docker backend (container/): image, per-container limits, network and instance. The
    engine address is `DOCKER_HOST` (Settings.docker_host), or `engines`.

    `engines`: several Docker-API engines that share the turns (container/engine_set.py): each
    a unix socket address, or a table `{host = "tcp://…", tls_ca, tls_cert, tls_key}` for a
    remote one (TLS client certificates required). When set, DOCKER_HOST is not used.

    `network_mode`: the network of the runner containers. The default "none" gives them no
    network at all but their own loopback: the agents reach the model APIs only through the
    bot's credential proxy, whose unix socket each container mounts (bot/proxy.py). Any other
    value ("bridge", "host", a network name) opts out of that egress isolation (the keys still
    stay out: the proxy is used either way); `tribunal doctor` warns about it.

    `instance`: the `tribunal.instance` label value that marks this bot's containers. A restarted
    bot finds (reuses or removes) the containers of its own instance and leaves other bots'
    alone. Unset: derived from the data folder's absolute path (Settings.docker_instance), which
    is stable across restarts and distinct for two bots with two data folders.

    `idle_timeout_s` / `hard_timeout_s`: ceilings for container turns; each group's `timeouts`
    apply to its turns, capped by these.

    `retire_idle_s` / `max_containers_per_group`: a runner container per (group, role, task
    worktree) is kept while its task goes on (its agents' HOME with it); one unused that long,
    or past that many in its group (least recently used first), is removed
    (container/docker_pool.py)."""

    image: str = Field("tribunal-runner:latest", min_length=1)
    mem_limit: str = "4g"
    nano_cpus: int = Field(2_000_000_000, ge=1)
    pids_limit: int = Field(512, ge=1)
    idle_timeout_s: float = Field(300.0, gt=0)
    hard_timeout_s: float = Field(1800.0, gt=0)
    retire_idle_s: float = Field(DockerConfig.max_idle_s, gt=0)
    max_containers_per_group: int = Field(DockerConfig.max_per_group, ge=1)
    network_mode: str = Field("none", min_length=1)
    instance: str | None = None
    engines: list[EngineSettings] = Field(default_factory=list)
    # Where the credential proxy's socket is (mounted into every container); None: <data>/proxy.
    # A folder local to each host when the data folder is shared and some engines are remote:
    # there the socket is relayed to the same path (README "Running at scale").
    proxy_dir: Path | None = None

    @field_validator("proxy_dir")
    @classmethod
    def _proxy_dir_is_absolute(cls, value: Path | None) -> Path | None:
        # Bind-mounted by path on every engine's host: a relative one would mean another folder
        # on each.
        if value is not None and not value.is_absolute():
            raise ValueError(f"must be an absolute path (got {str(value)!r})")
        return value

    @field_validator("engines")
    @classmethod
    def _engines_are_distinct(cls, engines: list[EngineSettings]) -> list[EngineSettings]:
        hosts = [e.host for e in engines]
        twice = sorted({h for h in hosts if hosts.count(h) > 1})
        if twice:
            raise ValueError(f"each engine once: {', '.join(twice)} is listed twice")
        return engines

    @model_validator(mode="before")
    @classmethod
    def _concurrency_moved(cls, data: object) -> object:
        # Once the Docker backend's own cap; now one cap for both backends. An old file must
        # not lose its cap silently, nor fail with a bare "extra inputs are not permitted".
        if isinstance(data, dict) and "concurrency" in data:
            raise ValueError(
                "concurrency: moved to [limits] turns_at_once (TRIBUNAL_LIMITS__TURNS_AT_ONCE), "
                "the cap for both backends"
            )
        return data

    @field_validator("mem_limit")
    @classmethod
    def _mem_limit_limits(cls, value: str) -> str:
        # The engine reads "0" (and Docker some negative values) as "no limit": a typo would
        # silently lift the cap on every runner container.
        size = memory_bytes(value)
        if size is None:
            raise ValueError(
                f"must be a size such as '4g' or '512m' (bytes, or k, m, g) (got {value!r})"
            )
        if size < MIN_MEM_BYTES:
            raise ValueError(
                f"must be at least 6m: the engine refuses less, and 0 would mean no limit "
                f"(got {value!r})"
            )
        return value

    @field_validator("instance")
    @classmethod
    def _instance_is_a_label_value(cls, value: str | None) -> str | None:
        # It also becomes part of container names, so keep it to what names allow.
        if value is not None and not _INSTANCE.match(value):
            raise ValueError(
                f"use 1 to 63 letters, digits, '_', '-' or '.', starting with a letter or digit "
                f"(got {value!r})"
            )
        return value


class LimitsSettings(_Section):
    """Limits of the whole bot, whatever the backend.

    `turns_at_once`: runners alive at once (container/slots.py); a turn past it waits, and its
    room shows "waiting for a runner slot". Default: two per CPU, at most one per GiB of
    memory, at least one."""

    turns_at_once: int = Field(default_factory=default_turns_at_once, ge=1)


MIN_MEM_BYTES = 6 * 1024 * 1024  # Docker's own minimum for a container's memory limit
_MEMORY = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kmg]?)b?", re.IGNORECASE)
_MEMORY_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def memory_bytes(text: str) -> int | None:
    """A memory size as the docker SDK reads it ("4g", "512m", "1073741824"), in bytes; None
    when it is no such size (a sign, spaces, another unit)."""
    match = _MEMORY.fullmatch(text)
    if match is None:
        return None
    return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2).lower()])


def default_instance(data: Path) -> str:
    """The instance label of a bot whose data folder is `data`: a hash of its absolute path."""
    digest = hashlib.sha256(str(data.expanduser().resolve()).encode()).hexdigest()
    return f"data-{digest[:12]}"


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        return "console"
