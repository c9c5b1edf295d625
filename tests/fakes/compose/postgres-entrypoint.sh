set -eu
mkdir -p "$PGDATA" /run/postgresql
chown -R postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
  su postgres -c "initdb -D '$PGDATA' -U '$POSTGRES_USER' --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256" >/dev/null
  rm -f /tmp/pw
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  su postgres -c "pg_ctl -D '$PGDATA' -o '-c listen_addresses=' -w start" >/dev/null
  su postgres -c "psql -U '$POSTGRES_USER' -d postgres -c 'CREATE DATABASE \"$POSTGRES_DB\"'" >/dev/null
  su postgres -c "pg_ctl -D '$PGDATA' -w stop" >/dev/null
fi
exec su postgres -c "exec postgres -D '$PGDATA' -c listen_addresses='*'"
