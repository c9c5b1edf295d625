"""What every protocol runs on (see rooms/__init__.py)."""
