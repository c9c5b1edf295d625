"""Masking what differs between two runs of the same stuck conversation (DESIGN §4).

Two rounds of a deadlocked pair rarely match byte for byte: timestamps, durations, temp paths,
ids, hashes and large numbers change on every run even when the agents say the same thing.
`normalize` replaces those with placeholders, lower-cases and collapses white space, so that the
stagnation fingerprint, the repeated-findings comparison and the blocked-reason hash see only
what the agents actually said. Small numbers (test counts, line numbers) are kept: they are how
progress shows ("3 failed" → "1 failed").
"""

from __future__ import annotations

import hashlib
import re

# Order matters: paths and ids are masked before the numbers inside them.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\x1b\[[0-9;?]*+[A-Za-z]"), ""),  # ANSI colours
    (
        re.compile(
            r"(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)/[^\s'\"`)\]]*+"
            r"|[A-Za-z]:\\Users\\[^\\\s]++\\AppData\\Local\\Temp\\[^\s'\"`)\]]*+",
            re.IGNORECASE,
        ),
        "<tmp>",
    ),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<id>",
    ),
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?)?\b"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b"
        ),
        "<duration>",
    ),
    # Memory addresses and hash-like runs (git shas, digests): 7+ hex digits with a digit and a
    # letter among them, so English words made of a-f ("facade") survive.
    (
        re.compile(
            r"\b(?:0x[0-9a-f]++|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,})\b",
            re.IGNORECASE,
        ),
        "<hex>",
    ),
    # Generated ids: long runs of letters and digits, with an optional short prefix (toolu_…).
    (
        re.compile(
            r"\b(?:[a-z]{2,8}_)?(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{12,}\b"
        ),
        "<id>",
    ),
    # Numbers that are noise: fractions (timings, ratios) and 4+ digit integers (ports, pids,
    # epochs, sizes).
    (re.compile(r"\b\d+\.\d+\b|\b\d{4,}\b"), "<n>"),
)
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """The text with run-to-run noise masked, lower-cased, white space collapsed."""
    for pattern, placeholder in _MASKS:
        text = pattern.sub(placeholder, text)
    return _SPACE.sub(" ", text).strip().lower()


def digest(*parts: str) -> str:
    """SHA-256 of the parts, separated so that ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()
