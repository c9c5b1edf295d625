"""Reference opinions (mixture of agents, DESIGN §5) on the official model SDKs: the base URL
check of the settings, the same check at each connection, and the clients that fill in
`rooms.references.port.Reference`."""
