"""The fake Discord's REST API: login, channels, messages, threads, webhooks, interactions."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.fakes.discord.payloads import (
    APP_ID,
    BOT_ID,
    BOT_ROLE,
    CHANNEL_ID,
    GUILD_ID,
    OWNER_ID,
    ROLES_OF,
    USERS,
    Call,
    _json,
    member_obj,
    now_iso,
    snowflake,
    user_obj,
)


class Rest:
    """The REST half of FakeDiscord (its state is set up there)."""

    channels: dict[str, dict[str, Any]]
    guilds: dict[int, str]
    shard_count: int

    def _guild(self, guild_id: int = GUILD_ID) -> dict[str, Any]:
        raise NotImplementedError

    def guild_of(self, channel: str) -> int:
        """The guild of a channel or thread (the first guild's for one the fake does not know)."""
        found = self.channels.get(str(channel), {}).get("guild_id")
        return int(found) if found else GUILD_ID

    def _message(
        self,
        channel: str,
        author: dict[str, Any],
        content: str,
        *,
        mid: str | None = None,
        body: dict[str, Any] | None = None,
        webhook_id: str | None = None,
    ) -> dict[str, Any]:
        body = body or {}
        message: dict[str, Any] = {
            "id": mid or snowflake(),
            "type": 0,
            "channel_id": channel,
            "guild_id": str(self.guild_of(channel)),
            "author": author,
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "pinned": False,
            "flags": body.get("flags") or 0,
        }
        if webhook_id is not None:
            message["webhook_id"] = webhook_id
        return message

    async def _record(
        self, request: web.Request, *, label: str | None = None
    ) -> tuple[Call, web.Response | None]:
        """Read and record the call; a 429 when a rate limit was asked for this one."""
        body: Any = None
        files: list[tuple[str, str]] = []
        if request.content_type == "application/json":
            body = await request.json()
        elif request.content_type.startswith("multipart/"):
            form = await request.post()
            for key, value in form.items():
                if key == "payload_json":
                    body = json.loads(str(value))
                elif hasattr(value, "file"):
                    files.append((value.filename, value.file.read().decode("utf-8")))
        call = Call(request.method, label or request.path, dict(request.query), body, files)
        for index, (pred, retry_after) in enumerate(self._rate_limits):
            if pred(request.method, request.path):
                del self._rate_limits[index]
                call.body = {"rate_limited": retry_after, "body": body}
                self.calls.append(call)
                await self._notify()
                headers = {
                    "Via": "1.1 google",
                    "X-RateLimit-Limit": "5",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset-After": str(retry_after),
                    "X-RateLimit-Bucket": "fake-bucket",
                    "X-RateLimit-Scope": "user",
                    "Retry-After": str(int(retry_after) + 1),
                }
                error = {
                    "message": "You are being rate limited.",
                    "retry_after": retry_after,
                    "global": False,
                }
                return call, _json(error, 429, headers)
        self.calls.append(call)
        return call, None

    async def _done(self, call: Call, response: web.Response) -> web.Response:
        await self._notify()
        return response

    async def _me(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return await self._done(call, _json({"message": "401: Unauthorized", "code": 0}, 401))
        return await self._done(call, limited or _json({**USERS[BOT_ID], "verified": True}))

    async def _app(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        return await self._done(
            call,
            _json(
                {
                    "id": str(APP_ID),
                    "name": "tribunal",
                    "description": "",
                    "icon": None,
                    "bot_public": False,
                    "bot_require_code_grant": False,
                    "verify_key": "00" * 32,
                    "owner": user_obj(OWNER_ID, "owner"),
                    "flags": self.app_flags,
                    "team": None,
                    "interactions_endpoint_url": None,
                }
            ),
        )

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        return await self._done(
            call,
            _json(
                {
                    "url": self.gateway_url,
                    "shards": self.shard_count,
                    "session_start_limit": {
                        "total": 1000,
                        "remaining": 999,
                        "reset_after": 0,
                        "max_concurrency": 1,
                    },
                }
            ),
        )

    async def _get_channel(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        channel = self.channels.get(request.match_info["cid"])
        if channel is None:
            return await self._done(call, _json({"message": "Unknown Channel", "code": 10003}, 404))
        return await self._done(call, _json(channel))

    async def _get_guild(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        gid = int(request.match_info["gid"])
        if gid not in self.guilds:
            return await self._done(call, _json({"message": "Unknown Guild", "code": 10004}, 404))
        guild = {k: v for k, v in self._guild(gid).items() if k not in ("channels", "members")}
        return await self._done(call, _json(guild))

    async def _get_member(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        uid = int(request.match_info["uid"])
        roles = (
            ([str(BOT_ROLE)] if self.webhooks_allowed else [])
            if uid == BOT_ID
            else ROLES_OF.get(uid, [])
        )
        return await self._done(call, _json(member_obj(uid, roles)))

    async def _post_message(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        cid = request.match_info["cid"]
        if cid not in self.channels:
            return await self._done(call, _json({"message": "Unknown Channel", "code": 10003}, 404))
        body = call.body or {}
        nonce = body.get("nonce") if body.get("enforce_nonce") else None
        if nonce and (cid, nonce) in self._nonces:  # Discord: the message made the first time
            call.message_id = self._nonces[(cid, nonce)]
            return await self._done(call, _json(self.messages[call.message_id]))
        message = self._message(cid, USERS[BOT_ID], body.get("content") or "", body=body)
        message["attachments"] = self._attachments(call)
        if nonce:
            self._nonces[(cid, nonce)] = message["id"]
        return await self._created(call, message)

    def _attachments(self, call: Call) -> list[dict[str, Any]]:
        return [
            {
                "id": snowflake(),
                "filename": name,
                "size": len(text.encode()),
                "url": f"{self.api_url}/attachments/{name}",
                "proxy_url": f"{self.api_url}/p/{name}",
            }
            for name, text in call.files
        ]

    async def _created(self, call: Call, message: dict[str, Any]) -> web.Response:
        self.messages[message["id"]] = message
        call.message_id = message["id"]
        if self.echo and self._current is not None:
            await self.dispatch("MESSAGE_CREATE", message)
        return await self._done(call, _json(message))

    def _edit(self, call: Call, mid: str) -> dict[str, Any]:
        message = self.messages[mid]
        for key in ("content", "embeds", "components"):
            if isinstance(call.body, dict) and key in call.body:
                message[key] = call.body[key] if call.body[key] is not None else []
        message["edited_timestamp"] = now_iso()
        call.message_id = mid
        return message

    async def _patch_message(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        mid = request.match_info["mid"]
        if mid not in self.messages:
            return await self._done(call, _json({"message": "Unknown Message", "code": 10008}, 404))
        return await self._done(call, _json(self._edit(call, mid)))

    async def _post_thread(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        cid, mid = request.match_info["cid"], request.match_info["mid"]
        if not self.threads_allowed:
            error = {"message": "Missing Permissions", "code": 50013}
            return await self._done(call, _json(error, 403))
        if mid in self.channels:
            error = {
                "message": "A thread has already been created for this message",
                "code": 160004,
            }
            return await self._done(call, _json(error, 400))
        body = call.body or {}
        thread = {
            "id": mid,
            "type": 11,
            "guild_id": str(self.guild_of(cid)),
            "parent_id": cid,
            "owner_id": str(BOT_ID),
            "name": body.get("name", "thread"),
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 1440),
                "archive_timestamp": now_iso(),
                "locked": False,
                "create_timestamp": now_iso(),
            },
            "member": {"id": mid, "user_id": str(BOT_ID), "join_timestamp": now_iso(), "flags": 0},
        }
        self.channels[mid] = thread
        call.message_id = mid
        if self._current is not None:
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return await self._done(call, _json(thread, 201))

    async def _get_webhooks(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        if not self.webhooks_allowed:
            return await self._done(
                call, _json({"message": "Missing Permissions", "code": 50013}, 403)
            )
        cid = request.match_info["cid"]
        return await self._done(
            call, _json([w for w in self.webhooks.values() if w["channel_id"] == cid])
        )

    async def _post_webhooks(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request)
        if not self.webhooks_allowed:
            return await self._done(
                call, _json({"message": "Missing Permissions", "code": 50013}, 403)
            )
        if self.webhooks_full:
            error = {"message": "Maximum number of webhooks reached (15)", "code": 30007}
            return await self._done(call, _json(error, 400))
        wid = snowflake()
        hook = {
            "id": wid,
            "type": 1,
            "channel_id": request.match_info["cid"],
            "guild_id": str(self.guild_of(request.match_info["cid"])),
            "name": (call.body or {}).get("name", "hook"),
            "avatar": None,
            "token": f"wtoken-{wid}",
            "application_id": str(APP_ID),
            "user": USERS[BOT_ID],
        }
        self.webhooks[wid] = hook
        return await self._done(call, _json(hook))

    async def _post_webhook(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        wid, token = request.match_info["wid"], request.match_info["token"]
        body = call.body or {}
        if wid == str(APP_ID):  # an interaction's follow-up
            mid = self._interaction_messages.get(token)
            channel = self.messages[mid]["channel_id"] if mid else str(CHANNEL_ID)
            message = self._message(channel, USERS[BOT_ID], body.get("content") or "", body=body)
            self.messages[message["id"]] = message
            call.message_id = message["id"]
            return await self._done(call, _json(message))
        hook = self.webhooks.get(wid)
        if hook is None or hook["token"] != token:
            return await self._done(call, _json({"message": "Unknown Webhook", "code": 10015}, 404))
        channel = request.query.get("thread_id") or hook["channel_id"]
        author = user_obj(int(wid), body.get("username") or hook["name"], bot=True)
        message = self._message(
            channel, author, body.get("content") or "", body=body, webhook_id=wid
        )
        message["attachments"] = self._attachments(call)
        self.messages[message["id"]] = message
        if self.on_webhook_post is not None:
            self.on_webhook_post(message)
        return await self._created(call, message)

    async def _delete_message(self, request: web.Request) -> web.Response:
        """DELETE a message: the bot's own (/channels/…) or its webhook's (/webhooks/…)."""
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        mid = request.match_info["mid"]
        wid = request.match_info.get("wid")
        if (
            wid is not None
            and (self.webhooks.get(wid) or {}).get("token") != request.match_info["token"]
        ):
            return await self._done(call, _json({"message": "Unknown Webhook", "code": 10015}, 404))
        message = self.messages.pop(mid, None)
        if message is None:
            return await self._done(call, _json({"message": "Unknown Message", "code": 10008}, 404))
        self.deleted.append(message)
        return await self._done(call, web.Response(status=204))

    async def _get_messages(self, request: web.Request) -> web.Response:
        """GET /channels/{cid}/messages: as Discord answers, newest first; with `after`, the
        `limit` oldest messages after that id (newest of them first)."""
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        cid = request.match_info["cid"]
        if cid not in self.channels:
            return await self._done(call, _json({"message": "Unknown Channel", "code": 10003}, 404))
        limit = min(int(request.query.get("limit", "50")), 100)
        found = sorted(
            (m for m in self.messages.values() if m["channel_id"] == cid),
            key=lambda m: int(m["id"]),
        )
        if "after" in request.query:
            after = int(request.query["after"])
            page = [m for m in found if int(m["id"]) > after][:limit]
        else:
            before = int(request.query.get("before", str(2**63)))
            page = [m for m in found if int(m["id"]) < before][-limit:]
        return await self._done(call, _json(list(reversed(page))))

    async def _patch_webhook(self, request: web.Request) -> web.Response:
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        wid, token, mid = (request.match_info[k] for k in ("wid", "token", "mid"))
        if mid == "@original":
            mid = self._interaction_messages.get(token, "")
        elif wid != str(APP_ID) and (self.webhooks.get(wid) or {}).get("token") != token:
            return await self._done(call, _json({"message": "Unknown Webhook", "code": 10015}, 404))
        if mid not in self.messages:
            return await self._done(call, _json({"message": "Unknown Message", "code": 10008}, 404))
        return await self._done(call, _json(self._edit(call, mid)))

    async def _callback(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request, label="/interactions/{id}/{token}/callback")
        call.query["interaction_id"] = request.match_info["iid"]
        body = call.body or {}
        response = {
            "interaction": {
                "id": request.match_info["iid"],
                "type": 3,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool((body.get("data") or {}).get("flags", 0) & 64),
            }
        }
        if request.query.get("with_response") in ("1", "true", "True"):
            return await self._done(call, _json(response))
        return await self._done(call, web.Response(status=204))

    async def _open_dm(self, request: web.Request) -> web.Response:
        """POST /users/@me/channels: the bot's DM channel with a person (made once)."""
        call, limited = await self._record(request)
        if limited is not None:
            return limited
        uid = str((call.body or {}).get("recipient_id"))
        cid = self.dms.setdefault(uid, snowflake())
        channel = {
            "id": cid,
            "type": 1,
            "last_message_id": None,
            "recipients": [USERS[int(uid)]],
        }
        self.channels.setdefault(cid, channel)
        return await self._done(call, _json(channel))

    def in_dm(self, uid: int) -> list[dict[str, Any]]:
        """What the bot wrote to a person in private (DM)."""
        cid = self.dms.get(str(uid))
        return [m for m in self.messages.values() if cid is not None and m["channel_id"] == cid]

    async def _unhandled(self, request: web.Request) -> web.Response:
        call, _ = await self._record(request, label=f"UNHANDLED {request.path}")
        return await self._done(call, _json({"message": "404: Not Found (fake)", "code": 0}, 404))
