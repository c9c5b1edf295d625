"""The expert arena (DESIGN §9): a panel of expert personas argues in the room with rated
evidence until it converges; the synthesis is posted and saved in the task's worktree."""
