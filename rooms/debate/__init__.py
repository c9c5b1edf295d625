"""The adversarial debate (DESIGN §9): an agreed frame, two opening briefs, one round of
cross-examination, and a referee who scores both sides on a weighted rubric."""
