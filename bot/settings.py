"""Tribunal's settings: defaults < `tribunal.toml` < `.env` < environment < init arguments.

The names of DESIGN §11 are fixed: `TRIBUNAL_DB`, `TRIBUNAL_DATA`, `TRIBUNAL_HTTP_PORT`, and the
unprefixed `SLACK_*`, `DISCORD_*`, `ANTHROPIC_*`, `OPENAI_*` and `DOCKER_HOST` variables (read
as the platform and model SDKs read them). Everything else is `TRIBUNAL_<FIELD>`, with `__`
between nested fields (`TRIBUNAL_CONSOLE__OWNER__AGENT=codex`).

In `tribunal.toml` the same settings are lower case: flat (`slack_bot_token = "…"`,
`tribunal_db = "…"`, or just `db = "…"`) or as a section of the same name (`[slack]
bot_token = "…"`, `[docker] host = "…"`). Groups are `[groups.<name>]` tables; the console room's
group is the `[console]` section. An unknown key in the file is an error, not a silent no-op.

`load_settings()` is the one entry point: it turns every kind of bad input (a wrong type, an
unknown agent, a negative threshold, a missing prompt file, a malformed TOML file) into a
`SettingsError` whose lines name the field, so the CLI can print them and exit 78.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib.resources.abc import Traversable
from pathlib import Path, PurePath
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as LibrarySettingsError

from bot.adapter import load, platform_specs, platforms_declared
from bot.settings_dashboard import DashboardSettings
from bot.settings_sections import (
    _GROUP_NAME,
    CONSOLE_CHANNEL,
    CONSOLE_GROUP,
    CONSOLE_PLATFORM,
    DEFAULT_ENV_FILE,
    DEFAULT_TOML,
    ConsoleSettings,
    DockerSettings,
    GroupBase,
    GroupSettings,
    LimitsSettings,
    SettingsError,
    default_instance,
)
from rooms.store.postgres import is_postgres
from rooms.store.retention import DEFAULT_RETENTION_DAYS, MAX_RETENTION_DAYS


def _alias(*names: str) -> Any:
    return Field(None, validation_alias=AliasChoices(*names))


def _platform_fields() -> dict[str, Any]:
    """Each declared platform's settings fields and their types (a secret is a SecretStr)."""
    return {
        spec.field(s.key): SecretStr | None if s.secret else s.value | None
        for spec in platform_specs()
        for s in spec.settings
    }


def _platform_variables() -> dict[str, str]:
    return {spec.field(s.key): s.variable for spec in platform_specs() for s in spec.settings}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TRIBUNAL_",
        env_nested_delimiter="__",
        env_file=DEFAULT_ENV_FILE,
        toml_file=DEFAULT_TOML,
        extra="ignore",  # unknown TRIBUNAL_* variables (other tools may share the prefix)
        populate_by_name=True,
    )

    data: Path = Path(".tribunal")  # TRIBUNAL_DATA: decision records, runner homes
    # TRIBUNAL_DB: a SQLite file, or a postgresql:// URL (several bot processes on one
    # database, README "Running at scale"); None: <data>/tribunal.db
    db: str | None = None
    http_port: int | None = Field(None, ge=1, le=65535)  # TRIBUNAL_HTTP_PORT (Slack HTTP mode)
    # auto: docker when the engine answers and has the image, else local (with a warning).
    backend: Literal["auto", "local", "docker"] = "auto"
    codex_bin: str | None = _alias("TRIBUNAL_CODEX_BIN", "CODEX_BIN")
    # Days the store keeps event ids, delivered posts and closed tasks' usage rows; 0: forever.
    retention_days: int = Field(DEFAULT_RETENTION_DAYS, ge=0, le=MAX_RETENTION_DAYS)

    # Each declared platform's settings (bot/adapter.py PlatformSpec) are fields too, added by
    # `load_settings` (`_settings_class`): `slack_bot_token`, read from SLACK_BOT_TOKEN or
    # `[slack] bot_token`. Its own code reads them with `platform_value`.
    anthropic_api_key: SecretStr | None = _alias("ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = _alias("ANTHROPIC_BASE_URL")
    openai_api_key: SecretStr | None = _alias("OPENAI_API_KEY")
    openai_base_url: str | None = _alias("OPENAI_BASE_URL")
    docker_host: str | None = _alias("DOCKER_HOST")

    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    docker: DockerSettings = DockerSettings()
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    groups: dict[str, GroupSettings] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The TOML file is read only because it is returned here (integrations.md §12).
        toml = TribunalTomlSource(settings_cls)
        return (init_settings, env_settings, dotenv_settings, toml, file_secret_settings)

    @field_validator("db", mode="before")
    @classmethod
    def _a_path_is_a_file(cls, value: object) -> object:
        # A pathlib.Path (settings built in code, as before the field took URLs) is a SQLite file.
        return str(value) if isinstance(value, PurePath) else value

    @field_validator("retention_days", mode="before")
    @classmethod
    def _days_are_not_a_switch(cls, value: object) -> object:
        # TOML `true` would otherwise be read as 1 day: a typo that silently drops history.
        if isinstance(value, bool):
            raise ValueError(f"must be a whole number of days, 0 to keep forever (got {value})")
        return value

    @field_validator("groups")
    @classmethod
    def _groups_are_distinct(cls, groups: dict[str, GroupSettings]) -> dict[str, GroupSettings]:
        seen: dict[tuple[str, str], str] = {}
        for name, group in groups.items():
            if not _GROUP_NAME.match(name):
                raise ValueError(f"group name {name!r}: use letters, digits, '_', '-' or '.'")
            if name == CONSOLE_GROUP:
                raise ValueError("'console' is the console room's group: use the [console] section")
            key = (group.platform, group.channel)
            if key in seen:
                raise ValueError(
                    f"groups.{seen[key]} and groups.{name} are both {group.platform} "
                    f"channel {group.channel!r}"
                )
            seen[key] = name
        return groups

    @property
    def db_url(self) -> str | None:
        """The PostgreSQL URL of TRIBUNAL_DB; None when the store is a SQLite file."""
        return self.db if self.db is not None and is_postgres(self.db) else None

    @property
    def db_path(self) -> Path:
        """The SQLite file (when TRIBUNAL_DB is not a PostgreSQL URL)."""
        if self.db is not None and self.db_url is None:
            return Path(self.db)
        return self.data / "tribunal.db"

    @property
    def database(self) -> str:
        """What the store opens: the PostgreSQL URL, else the SQLite file."""
        return self.db_url or str(self.db_path)

    @property
    def docker_instance(self) -> str:
        """The `tribunal.instance` label of this bot's containers (DockerSettings.instance)."""
        return self.docker.instance or default_instance(self.data)

    def all_groups(self) -> Iterator[tuple[str, str, str, GroupBase]]:
        """(name, platform, channel, settings) of every group, the console group first."""
        yield CONSOLE_GROUP, CONSOLE_PLATFORM, CONSOLE_CHANNEL, self.console
        for name, group in self.groups.items():
            yield name, group.platform, group.channel, group

    def agents_in_use(self) -> set[str]:
        return {agent for *_, group in self.all_groups() for agent in group.agents_in_use()}

    def platforms_configured(self) -> list[str]:
        """Chat platforms with a token, in the order they were declared."""
        return [
            spec.name
            for spec in platform_specs()
            if spec.token is not None and self.platform_value(spec.name, spec.token) is not None
        ]

    def platform_value(self, platform: str, key: str) -> str | None:
        """A declared platform's setting (`[<platform>] <key>` or its variable), a secret's
        value revealed: for that platform's own code. None when unset."""
        value = getattr(self, f"{platform}_{key}", None)
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        return None if value is None else str(value)

    def platform_setting(self, platform: str, key: str) -> Any:
        """A declared platform's setting as its declared type (`PlatformSetting.value`), not a
        secret: for that platform's own code. None when unset."""
        return getattr(self, f"{platform}_{key}", None)


# ---------------------------------------------------------------------------------------------
# tribunal.toml: sections and §11 names mapped onto the flat fields, unknown keys rejected.

# [section] key -> field. The section names are the §11 variables' prefixes, lower case.
_SECTIONS: dict[str, dict[str, str]] = {
    "tribunal": {
        "db": "db",
        "data": "data",
        "http_port": "http_port",
        "retention_days": "retention_days",
    },
    "anthropic": {"api_key": "anthropic_api_key", "base_url": "anthropic_base_url"},
    "openai": {"api_key": "openai_api_key", "base_url": "openai_base_url"},
}
# Flat §11 names (lower case) that are not already field names.
_FLAT_NAMES = {
    "tribunal_db": "db",
    "tribunal_data": "data",
    "tribunal_http_port": "http_port",
    "tribunal_retention_days": "retention_days",
}


class ConfigFileError(ValueError):
    """A tribunal.toml that cannot be read, parsed, or holds keys we do not know."""


class TribunalTomlSource(TomlConfigSettingsSource):
    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        try:
            with file_path.open(mode="rb") as handle:
                raw = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(f"{file_path}: not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigFileError(f"{file_path}: cannot read: {exc.strerror}") from None
        return normalize_toml(raw, str(file_path))


def _sections() -> dict[str, dict[str, str]]:
    """The sections above, and each declared platform's: [slack] bot_token = "…"."""
    platforms = {
        spec.name: {s.key: spec.field(s.key) for s in spec.settings}
        for spec in platform_specs()
        if spec.settings
    }
    return {**_SECTIONS, **platforms}


def normalize_toml(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """Flat field names for sections and §11 names; a ConfigFileError for an unknown key."""
    fields = set(Settings.model_fields) | set(_platform_fields())
    sections = _sections()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        lower = key.lower()
        if lower == "docker" and isinstance(value, dict) and "host" in value:
            value = dict(value)
            out["docker_host"] = value.pop("host")
            out["docker"] = value
        elif lower in sections and isinstance(value, dict):
            for sub, sub_value in value.items():
                if sub not in sections[lower]:
                    known = ", ".join(sections[lower])
                    raise ConfigFileError(f"{source}: {lower}.{sub}: unknown setting ({known})")
                out[sections[lower][sub]] = sub_value
        elif lower in _FLAT_NAMES:
            out[_FLAT_NAMES[lower]] = value
        elif lower in fields:
            out[lower] = value
        else:
            raise ConfigFileError(f"{source}: {key}: unknown setting")
    return out


# ---------------------------------------------------------------------------------------------
# Loading, and errors a person can act on.


def load_settings(
    config: Path | None = None, env_file: Path | None = DEFAULT_ENV_FILE, **overrides: Any
) -> Settings:
    """Settings from every source. `config`: a TOML file other than ./tribunal.toml (it must
    exist); `env_file=None` skips `.env` (tests). Raises SettingsError, never a traceback's
    worth of pydantic."""
    if not platforms_declared():
        # Without them a platform's token would be silently ignored: a bug, not a setting.
        raise RuntimeError("import bot.platforms before loading the settings")
    if config is not None and not config.is_file():
        raise SettingsError([f"settings: {config}: config file not found"])
    cls = _settings_class(config)
    try:
        settings = cls(_env_file=env_file, **overrides)
    except ValidationError as exc:
        raise SettingsError([f"settings: {line}" for line in describe_errors(exc)]) from None
    except ConfigFileError as exc:
        raise SettingsError([f"settings: {exc}"]) from None
    except LibrarySettingsError as exc:  # e.g. a nested env variable that is not valid JSON
        raise SettingsError([f"settings: {exc}"]) from None
    inside = state_inside_workspaces(settings) + files_inside_workspaces(
        settings, config or DEFAULT_TOML, env_file
    )
    if inside:
        raise SettingsError([f"settings: {line}" for line in inside])
    checks = [load(spec.check) for spec in platform_specs() if spec.check is not None]
    problems = [line for check in checks for line in check(settings)]
    if problems:
        raise SettingsError([f"settings: {line}" for line in problems])
    return settings


def _workspaces(settings: Settings) -> Iterator[tuple[Path, str]]:
    """(resolved workspace, the setting that names it) of every group with one."""
    for name, _platform, _channel, group in settings.all_groups():
        if group.workspace is not None:
            where = "console.workspace" if name == CONSOLE_GROUP else f"groups.{name}.workspace"
            yield group.workspace.resolve(), where


def _inside(path: Path, workspace: Path) -> bool:
    return path == workspace or workspace in path.parents


def state_inside_workspaces(settings: Settings) -> list[str]:
    """The data folder and the database must lie outside every workspace: an owner may write
    its workspace, and must not be able to edit the store (nor make every turn look like a
    change to the work, as a database inside the workspace does)."""
    state = {"data": settings.data.resolve()}
    if settings.db_url is None:  # a PostgreSQL database is not a file of this host
        state["db"] = settings.db_path.resolve()
    problems = []
    for workspace, where in _workspaces(settings):
        for field, path in state.items():
            if _inside(path, workspace):
                problems.append(
                    f"{field}: {path} lies inside the workspace {workspace} ({where}); "
                    f"put it outside every workspace (TRIBUNAL_{field.upper()})"
                )
    return problems


def files_inside_workspaces(settings: Settings, toml: Path, env_file: Path | None) -> list[str]:
    """The settings file and the `.env` file this start reads (whether or not they exist yet)
    must lie outside every workspace: an owner who may write there (a plain folder is used in
    place) would otherwise write the bot's next settings (a model base URL that receives the
    real key, `network_mode = "host"`, its own approvers), read at the next start. Checked
    against the location, not the content: a planted file could also move the workspace
    away, and then no check of the settings it produced would see it."""
    files = {"settings file": toml.resolve()}
    if env_file is not None:
        files[".env file"] = env_file.resolve()
    problems = []
    for workspace, where in _workspaces(settings):
        for what, path in files.items():
            if _inside(path, workspace):
                problems.append(
                    f"{what} {path} lies inside the workspace {workspace} ({where}): an owner "
                    "could write the bot's next settings there; start the bot from a folder "
                    "outside every workspace (and pass --config FILE from outside them)"
                )
    return problems


def _settings_class(toml: Path | None) -> type[Settings]:
    """`Settings` with every declared platform's fields, reading `toml` (None: the default)."""
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__annotations__": _platform_fields(),
        **{name: _alias(variable) for name, variable in _platform_variables().items()},
    }
    if toml is not None:
        config = SettingsConfigDict(**{**Settings.model_config, "toml_file": toml})  # type: ignore[typeddict-item]
        namespace["model_config"] = config
    return type("Settings", (Settings,), namespace)


def describe_errors(exc: ValidationError) -> list[str]:
    """One 'field.path: what is wrong (got …)' line per pydantic error."""
    lines = []
    for err in exc.errors():
        where = _location(err["loc"])
        if any(word in where.lower() for word in _SECRET_WORDS):
            err = {**err, "input": "<hidden>"}  # never echo a token back, even a wrong one
        lines.append(f"{where}: {_message(err)}")
    return lines


_SECRET_WORDS = ("token", "secret", "api_key")
_PREFIXED_SCALARS = ("data", "db", "http_port", "backend", "retention_days")


def _location(loc: tuple[int | str, ...]) -> str:
    # Pydantic adds the validator's name for some constrained types; it is not a field.
    parts = [str(p) for p in loc if not str(p).startswith(("function-", "constrained-"))]
    if len(parts) == 1 and parts[0] in _PREFIXED_SCALARS:
        # A top-level scalar is usually set by its variable: name both.
        return f"{parts[0]} (TRIBUNAL_{parts[0].upper()})"
    return ".".join(parts) or "settings"


def _message(err: Any) -> str:
    kind: str = err["type"]
    ctx: dict[str, Any] = err.get("ctx") or {}
    got = _shown(err.get("input"))
    bounds = {
        "greater_than_equal": ("ge", ">="),
        "greater_than": ("gt", ">"),
        "less_than_equal": ("le", "<="),
        "less_than": ("lt", "<"),
    }
    if kind == "literal_error":
        return f"must be {ctx.get('expected')} (got {got})"
    if kind == "missing":
        return "required"
    if kind == "extra_forbidden":
        return "unknown setting"
    if kind in bounds:
        key, symbol = bounds[kind]
        bound = ctx.get(key)
        shown = f"{bound:g}" if isinstance(bound, float) else str(bound)
        return f"must be {symbol} {shown} (got {got})"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"must be a whole number (got {got})"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number (got {got})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (got {got})"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    message = str(err["msg"])
    return f"{message[:1].lower()}{message[1:]} (got {got})"


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return type(value).__name__
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
