"""The operator's view (issue 20): a web dashboard on `tribunal serve`'s aiohttp server, with
`/healthz` and `/metrics`.

- server.py: the aiohttp application, its middleware (sign-in, CSRF, headers) and its lifetime
- sessions.py / token.py / links.py: who is signed in (operator token, one-time chat links)
- access.py: what a signed-in person may see and do (the groups' approver rules)
- pages.py / actions.py / live.py: the pages, the actions (through the engine's own paths), and
  the server-sent events that keep open pages current
- health.py / metrics.py: /healthz and the Prometheus /metrics

The read queries are the store's (rooms/store/dashboard_reads.py); nothing here writes a task:
every action is an `Inbound` for the engine, as a click or a message in chat would be.
"""
