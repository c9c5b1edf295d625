"""Pure readers of text and history: verdicts, findings, fingerprints, noise, detectors, the
task's history as they read it, transcripts and their replay, and quoting. They import only
rooms/base/ (the marker line's words and parser live there: the nouns are made of them)."""
