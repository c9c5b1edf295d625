"""What the phased protocols share (see rooms/__init__.py)."""
