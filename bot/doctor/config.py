"""`tribunal doctor`'s checks of what the settings name: model credentials for the agent types
in use, the reference opinions' keys, the chat platforms' tokens (Slack's against the Web API:
auth.test and the scopes, bot/slack/doctor.py), and the database (opens, schema at the latest
migration)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

from bot.adapter import load, platform_specs
from bot.doctor.check import Check
from bot.model_credentials import groups_using, missing_credentials
from bot.settings import Settings
from bot.settings_sections import GroupBase


def check_credentials(settings: Settings) -> Check:
    found = []
    needs = {
        "claude": (settings.anthropic_api_key, settings.anthropic_base_url, "ANTHROPIC"),
        "codex": (settings.openai_api_key, settings.openai_base_url, "OPENAI"),
    }
    for agent in sorted(settings.agents_in_use()):
        key, base_url, prefix = needs[agent]
        if key is not None:
            found.append(f"{agent}: {prefix}_API_KEY")
        elif base_url:
            found.append(f"{agent}: {prefix}_BASE_URL {base_url}")
    missing = [
        f"{credential.how} for {agent} ({', '.join(groups_using(settings, agent))})"
        for agent, credential in missing_credentials(settings).items()
    ]
    if missing:
        return Check("credentials", False, "; ".join(missing))
    return Check("credentials", True, f"ok ({'; '.join(found)})")


def check_references(settings: Settings) -> Check | None:
    """The reference opinions' keys (their base URLs were checked with the settings), and how
    their connections are checked; None when no group has references. A missing key is not
    fatal: that reference is dropped and recorded at each ruling, the others still answer."""
    groups = [(name, g) for name, _, _, g in settings.all_groups() if g.references]
    if not groups:
        return None
    refs = [(name, ref) for name, g in groups for ref in g.references]
    missing = [
        f"{name}/{r.name}: set {r.key_env}" for name, r in refs if not os.environ.get(r.key_env)
    ]
    if missing:
        return Check("references", False, "; ".join(missing), required=False)
    listed = ", ".join(f"{name}/{r.name} ({r.api}, {r.base_url})" for name, r in refs)
    return Check("references", True, "; ".join([f"ok ({listed})", *_connecting(groups)]))


_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def _connecting(groups: list[tuple[str, GroupBase]]) -> list[str]:
    """bot/references/network.py: which groups' references have each connection's addresses
    checked, which may reach private ones, and that the checked ones ignore proxy variables."""
    checked = [name for name, g in groups if not g.allow_private_urls]
    private = [name for name, g in groups if g.allow_private_urls]
    notes = []
    if checked:
        notes.append(f"addresses checked at each connection ({', '.join(checked)})")
        proxies = [v for v in _PROXY_VARIABLES if os.environ.get(v) or os.environ.get(v.lower())]
        if proxies:
            notes.append(
                f"{'/'.join(proxies)} not used by those references: a proxy would resolve "
                "their host names itself, past the address check"
            )
    if private:
        notes.append(f"private addresses allowed ({', '.join(private)}: allow_private_urls)")
    return notes


def check_platforms(settings: Settings) -> Check:
    """Each declared chat platform (bot/adapter.py PlatformSpec): configured (as its `status`
    describes it), or missing its token while groups use it."""
    problems, found = [], []
    chats = [spec for spec in platform_specs() if spec.token is not None]
    for spec in chats:
        assert spec.token is not None
        groups = [n for n, g in settings.groups.items() if g.platform == spec.name]
        if settings.platform_value(spec.name, spec.token) is None:
            if groups:
                variable = spec.token_variable()
                problems.append(f"set {variable} for the {spec.name} groups ({', '.join(groups)})")
            continue
        described, problem = (
            (spec.name, None) if spec.status is None else load(spec.status)(settings)
        )
        if problem is not None:
            problems.append(problem)
        elif described is not None:
            found.append(described)
    if problems:
        return Check("platforms", False, "; ".join(problems))
    if not found:
        titles = " or ".join(spec.title or spec.name for spec in chats)
        return Check("platforms", True, f"ok (console only: no {titles} token set)")
    return Check("platforms", True, f"ok ({', '.join(found)}, and the console room)")


def check_each_platform(settings: Settings) -> Iterator[Check]:
    """Each declared platform's own checks (its `doctor`), loaded only when they run: their
    SDKs are loaded only when needed."""
    for spec in platform_specs():
        if spec.doctor is not None:
            yield from load(spec.doctor)(settings)


def check_database(settings: Settings) -> Check:
    if settings.db_url is not None:
        from bot.doctor.database import check_postgres

        return check_postgres(settings.db_url)
    path = settings.db_path
    if not path.exists():
        folder = _existing_parent(path)
        if not folder.is_dir():
            return Check("database", False, f"{path} cannot be created: {folder} is not a folder")
        if not os.access(folder, os.W_OK):
            return Check("database", False, f"{path} cannot be created: {folder} is not writable")
        return Check("database", True, f"ok ({path} will be created on the first run)")
    try:
        version, latest = asyncio.run(_schema_versions(path))
    except Exception as exc:  # any failure to open is the answer this check gives
        return Check("database", False, f"{path} does not open: {exc}")
    if version != latest:
        return Check("database", False, f"{path} is at schema {version}, latest is {latest}")
    return Check("database", True, f"ok ({path}, schema {version})")


def _existing_parent(path: Path) -> Path:
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


async def _schema_versions(path: Path) -> tuple[int, int]:
    from rooms.store import Store
    from rooms.store.schema import LATEST

    store = await Store.open(str(path))  # opening applies any missing migration
    try:
        return await store.schema_version(), LATEST
    finally:
        await store.close()
