"""Resolve (DESIGN §9): a dispute settled by discriminating tests that are executed, not argued."""
