"""The workspace side (rooms/__init__.py): a worktree per task and the engine's commits
(`worktrees.py`), git run safely (`gitsafe.py`), the workspace's tree hash (`workspace.py`)."""
