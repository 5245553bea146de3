#!/bin/sh
# The service's Temporal namespace, created once the server answers (docker-compose.yml
# `temporal-namespace`, the admin-tools image's temporal CLI). The service registers its own
# search attributes at start.
set -eu
: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}"
tries=0
until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "temporal-namespace: the server at $TEMPORAL_ADDRESS did not answer" >&2
    exit 1
  fi
  sleep 2
done
if temporal operator namespace describe --namespace "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; then
  echo "temporal-namespace: $TEMPORAL_NAMESPACE exists"
else
  temporal operator namespace create --namespace "$TEMPORAL_NAMESPACE" --retention "${TEMPORAL_RETENTION:-30d}" --address "$TEMPORAL_ADDRESS"
  echo "temporal-namespace: $TEMPORAL_NAMESPACE created"
fi
