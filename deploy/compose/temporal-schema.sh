#!/bin/sh
# The Temporal server's two databases on Postgres, created when missing and their schemas set up
# or upgraded to the server's version (docker-compose.yml `temporal-schema`, the admin-tools
# image). Every step is idempotent: it runs at each `docker compose up`, and after an image
# upgrade it applies the new server's schema versions before the server starts.
set -eu
: "${POSTGRES_HOST:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
for db in temporal:temporal temporal_visibility:visibility; do
  name=${db%%:*}
  schema=${db#*:}
  set -- --plugin postgres12 --ep "$POSTGRES_HOST" -p "${POSTGRES_PORT:-5432}" -u "$POSTGRES_USER" --db "$name"
  temporal-sql-tool "$@" create-database
  temporal-sql-tool "$@" setup-schema -v 0.0
  temporal-sql-tool "$@" update-schema --schema-name "postgresql/v12/$schema"
done
echo "temporal-schema: databases temporal and temporal_visibility are at the server's schema version"
