"""Pure readers of text and history: markers, verdicts, findings, fingerprints, noise,
detectors, transcripts and their replay."""
