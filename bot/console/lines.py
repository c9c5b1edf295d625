"""Typed lines for the console room: stdin read on a daemon thread, handed to the event loop."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import io
import os
import threading
from collections.abc import Iterator
from typing import TextIO


class LineReader:
    """Lines of a text stream, read on a daemon thread and handed to the event loop.

    A thread rather than the loop's pipe reader: it works for terminals, pipes and regular files
    alike. It reads the raw file descriptor, not the stream's buffer: a thread blocked inside a
    buffered read holds the buffer's lock, and anything else touching the stream (closing it,
    interpreter shutdown) would then wait for it forever."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="console-stdin", daemon=True).start()

    def _lines(self) -> Iterator[str]:
        try:
            fd = self._stream.fileno()
        except (OSError, AttributeError, io.UnsupportedOperation):  # e.g. io.StringIO
            yield from self._stream
            return
        decoder = codecs.getincrementaldecoder(self._stream.encoding or "utf-8")("replace")
        pending = ""
        while chunk := os.read(fd, 65536):
            pending += decoder.decode(chunk)
            *complete, pending = pending.split("\n")
            yield from complete
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending  # a last line without a newline still counts

    def _pump(self) -> None:
        try:
            for line in self._lines():
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\r\n"))
        except (OSError, ValueError):  # the stream was closed under us: treat it as EOF
            pass
        finally:
            # RuntimeError: the loop is already closed, nobody is reading any more.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def next(self) -> str | None:
        return await self._queue.get()
