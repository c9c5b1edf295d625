# Stands in for postgres:15-bookworm (no registry here): Debian's PostgreSQL 15 on the
# registry-free base, with the official image's variables (POSTGRES_USER/PASSWORD/DB).
ARG BASE=localhost/tribunal-base
FROM ${BASE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      postgresql-15 && rm -rf /var/lib/apt/lists/*
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint.sh"]
