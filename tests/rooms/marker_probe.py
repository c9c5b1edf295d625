"""Reads marker strings with `rooms/base/markers.py` under whatever Python runs this file.

Standard library only, and `markers.py` is loaded by its path (with `words.py` beside it), so
Debian's own `/usr/bin/python3.11` (3.11.2, no venv packages) can run it:
`test_markers_on_debian_python` compares its readings with the venv's. Input on stdin: a JSON list
of [role, text]. Output: a JSON object with this interpreter's version, whether its `re` has the
3.11.2 bug (a possessive quantifier on a group, fixed in 3.11.5), and one reading per input.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import types
from pathlib import Path
from typing import Any


def load_markers(path: Path) -> Any:
    # markers.py reads its words from rooms/base/words.py (standard library only too). The
    # packages above them stand in as bare namespaces: rooms/__init__.py registers the protocols,
    # which need the venv's packages.
    for name, folder in (("rooms", path.parents[1]), ("rooms.base", path.parent)):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            sys.modules[name] = package
    spec = importlib.util.spec_from_file_location("tribunal_markers_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building classes
    spec.loader.exec_module(module)
    return module


def has_group_possessive_bug() -> bool:
    """True on interpreters whose `re` lets a possessive group swallow the `_` that follows
    (3.11.0 to 3.11.4): the pattern the old marker parser used."""
    m = re.match(r"[A-Za-z]++(?:_[A-Za-z]++)*+(?P<after>$|_)", "DONE__")
    return m is None or m.group(0) != "DONE_"


def main() -> None:
    markers = load_markers(Path(sys.argv[1]))
    cases = json.load(sys.stdin)
    readings = []
    for role, text in cases:
        r = markers.read_marker(text, role)
        first = [r.first.marker, r.first.index, r.first.rest] if r.first else None
        readings.append([r.marker, r.doubt, list(r.seen), first])
    out = {
        "version": list(sys.version_info[:3]),
        "bug": has_group_possessive_bug(),
        "readings": readings,
    }
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
