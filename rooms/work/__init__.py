"""The workspace side: worktrees, git safety, the workspace hash (see rooms/__init__.py)."""
