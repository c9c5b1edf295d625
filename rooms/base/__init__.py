"""The words and nouns every part of rooms/ stands on (see rooms/__init__.py)."""
