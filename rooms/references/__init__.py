"""Reference opinions (mixture of agents, DESIGN §5): other models asked in parallel before a
ruling, shuffled with a stored seed, shown to the arbiter under neutral labels, tallied.

`port` is what `bot/` fills in (one `Reference` per configured model); `panel` asks them;
`tally` reads their verdicts; `section` writes them into the arbiter's prompt; `checks` says
what a ruling does wrong with them.
"""
