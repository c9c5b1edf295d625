"""The host-side credential proxy (DESIGN §6): model keys stay on the host, each turn gets a
run token, and the proxy counts the usage and enforces the task's budget."""

from container.proxy.grants import Grant, Grants, Spent
from container.proxy.server import CredentialProxy, Upstream

__all__ = ["CredentialProxy", "Grant", "Grants", "Spent", "Upstream"]
