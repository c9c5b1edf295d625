"""Wiring: Settings → Store, runner backend, policies, Engine, adapters.

Every platform adapter (console, Slack, Discord) runs on the same engine and store through
`open_app`; the engine drives and delivers for the adapters' platforms only. Model keys never
reach a runner, on either backend: the credential proxy holds them and each run gets a token
valid while it runs (bot/proxy.py); the proxy also checks that a turn's final answer is the
model's. A runner handed in by a test (`runner=`) gets the settings' model variables of its
agent type per run instead (Claude the Anthropic ones, Codex the OpenAI ones), as the local
backend did before it had the proxy. Chat platform tokens never reach a runner.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bot.adapter import Adapter, Router
from bot.backend import BackendKind, make_backend, running_backend
from bot.data_folder import make_private_folder
from bot.model_credentials import (
    Credential,
    missing_credentials,
    missing_line,
    turn_refusal,
)
from bot.policies import SettingsPolicies
from bot.settings import Settings
from container.engine_set import engine_notes
from rooms.base.ports import Clock, Runner
from rooms.engine import Engine
from rooms.store import Store
from runners.protocol import SETUP, RunEvent, RunSpec, error

if TYPE_CHECKING:
    from bot.references.clients import SettingsReferences

__all__ = ["App", "CredentialedRunner", "make_backend", "model_env", "open_app"]


def model_env(
    settings: Settings, backend: BackendKind, *, proxied: bool = False
) -> dict[str, dict[str, str]]:
    """Per agent type, the variables its runner needs to reach its model (and its binary), for
    a runner that is not behind the credential proxy (one handed to `open_app` by a test). With
    the docker backend, none; behind the proxy the keys would be taken away again anyway
    (container/proxy/runner.py MODEL_VARIABLES): it gives each run a token instead."""
    if backend == "docker":
        return {"claude": {}, "codex": {}}
    if proxied:  # the local backend behind the proxy: only the binary
        return {
            "claude": {},
            "codex": {"CODEX_BIN": settings.codex_bin} if settings.codex_bin else {},
        }
    claude: dict[str, str] = {}
    if settings.anthropic_api_key is not None:
        claude["ANTHROPIC_API_KEY"] = settings.anthropic_api_key.get_secret_value()
    if settings.anthropic_base_url:
        claude["ANTHROPIC_BASE_URL"] = settings.anthropic_base_url
    codex: dict[str, str] = {}
    if settings.openai_api_key is not None:
        codex["OPENAI_API_KEY"] = settings.openai_api_key.get_secret_value()
    if settings.openai_base_url:
        codex["OPENAI_BASE_URL"] = settings.openai_base_url
    if settings.codex_bin and backend == "local":
        codex["CODEX_BIN"] = settings.codex_bin  # in a container, the image's codex is on PATH
    return {"claude": claude, "codex": codex}


class CredentialedRunner:
    """A Runner that adds the model variables of the spec's agent type to each run.

    Values already in the spec win: the engine (or a test) may set a variable on purpose. A run
    of an agent type in `missing` (no credential in the settings, none in the spec) fails at
    once with a `setup` error naming the variable, instead of starting an agent that can only
    answer "Not logged in" or "invalid run token" (issue 27 #1)."""

    def __init__(
        self,
        inner: Runner,
        env_by_agent: Mapping[str, Mapping[str, str]],
        missing: Mapping[str, Credential] | None = None,
    ) -> None:
        self.inner = inner
        self.env_by_agent = env_by_agent
        self.missing = dict(missing or {})

    def engine_notes(self) -> list[str]:
        return engine_notes(self.inner)

    def run(self, spec: RunSpec) -> AsyncIterator[RunEvent]:
        credential = self.missing.get(spec.agent)
        given = credential is not None and (
            credential.key_variable in spec.env or credential.url_variable in spec.env
        )
        if credential is not None and not given:
            return _refused(turn_refusal(credential))
        extra = dict(self.env_by_agent.get(spec.agent, {}))
        return self.inner.run(spec.model_copy(update={"env": {**extra, **spec.env}}))


async def _refused(text: str) -> AsyncIterator[RunEvent]:
    yield error(SETUP, text)


def announce_missing_credentials(settings: Settings, out: TextIO) -> dict[str, Credential]:
    """The start banner's line per agent type in use with no credential; returns them."""
    missing = missing_credentials(settings)
    for credential in missing.values():
        out.write(f"tribunal: {missing_line(settings, credential)}\n")
    out.flush()
    return missing


@dataclass
class App:
    settings: Settings
    store: Store
    engine: Engine
    policies: SettingsPolicies
    router: Router


@asynccontextmanager
async def open_app(
    settings: Settings,
    *adapters: Adapter,
    runner: Runner | None = None,
    clock: Clock | None = None,
    warn: TextIO | None = None,
    before_adapters: Callable[[App, contextlib.AsyncExitStack], Awaitable[None]] | None = None,
) -> AsyncIterator[App]:
    """Backend ready, store opened and migrated, engine started (the open tasks of the adapters'
    platforms resume), then each adapter started; on exit the adapters stop first (in reverse
    order), then the engine, the store and the backend. The backend is the settings' choice
    (bot/backend.py); its warning, if any, goes to `warn` (stderr). Raises BackendUnavailable (a
    SettingsError) when the docker backend was asked for and cannot work. The agent types in use
    with no model credential are named on `warn` too, and their turns fail at once.

    `runner` replaces the backend of the settings (tests); credentials are added either way.
    `before_adapters` runs once the engine has started and before the adapters start (the
    dashboard, which may mount its routes on an adapter's HTTP listener); what it pushes on the
    stack is closed after the adapters stop."""
    data = settings.data.resolve()  # absolute, so decision record links work from anywhere
    make_private_folder(data)  # 0700: other local users read no conversation
    if settings.db_url is None:
        make_private_folder(Path(settings.db_path).parent.resolve(), tighten=False)
    async with contextlib.AsyncExitStack() as stack:
        missing: dict[str, Credential] = {}
        if runner is not None:
            backend, kind = runner, _kind_of(settings)
        else:
            out = warn if warn is not None else sys.stderr
            backend, choice = await stack.enter_async_context(running_backend(settings, warn=out))
            kind = choice.kind
            missing = announce_missing_credentials(settings, out)
        policies = SettingsPolicies(settings)
        router = Router(adapters)  # raises for two adapters of one platform, before any start
        store = await Store.open(settings.database)
        stack.push_async_callback(store.close)
        references = _references(settings)
        if references is not None:
            stack.push_async_callback(references.close)
        engine = Engine(
            store,
            CredentialedRunner(backend, model_env(settings, kind, proxied=runner is None), missing),
            router,
            policies,
            clock=clock,
            data_dir=str(data / "records"),
            platforms=router.platforms,
            retention_days=settings.retention_days,
            references=references,
        )
        await engine.start()
        stack.push_async_callback(engine.stop)
        app = App(settings, store, engine, policies, router)
        if before_adapters is not None:
            await before_adapters(app, stack)
        for adapter in router.adapters():
            await adapter.start(engine)
            stack.push_async_callback(adapter.stop)  # LIFO: before the engine stops
        yield app


def _references(settings: Settings) -> SettingsReferences | None:
    """The groups' reference clients; None when no group has any (the model SDKs are then not
    even imported: that takes seconds)."""
    groups = {name: group.references for name, _, _, group in settings.all_groups()}
    if not any(groups.values()):
        return None
    from bot.references.clients import SettingsReferences

    private_ok = {name for name, _, _, group in settings.all_groups() if group.allow_private_urls}
    return SettingsReferences(groups, private_ok=private_ok)


def _kind_of(settings: Settings) -> BackendKind:
    # A runner handed in by a test: only an explicit docker setting means "not on this host".
    return "docker" if settings.backend == "docker" else "local"
