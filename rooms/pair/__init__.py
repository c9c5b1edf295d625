"""The owner/reviewer protocol: its state table, rounds, arbitration, prompts and outcomes."""
