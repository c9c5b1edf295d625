# Stands in for python:3.11-slim-bookworm (bot/Dockerfile's base): Python 3.11 with pip on PATH
# (a venv), passwd (useradd), on the registry-free base. ca.crt is this machine's CA bundle,
# copied in by __main__.py: the package registries may be reached through a proxy it trusts.
ARG BASE=localhost/tribunal-base
FROM ${BASE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3-venv python3-pip passwd && rm -rf /var/lib/apt/lists/* && python3 -m venv /usr/local/py
COPY ca.crt /etc/ssl/certs/host-ca.crt
ENV PATH=/usr/local/py/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/certs/host-ca.crt SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt
