#!/usr/bin/env node
// The container's health check (Dockerfile HEALTHCHECK, docker-compose.yml): exit 0 when /readyz on
// METRICS_PORT answers 200 (Postgres, Temporal and, in a worker, the worker are up), 1 otherwise.
const port = Number(process.env.METRICS_PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('healthcheck: METRICS_PORT is not set; the ops server (/readyz) listens there\n');
  process.exit(1);
}
// The ops server listens on METRICS_HOST; a wildcard host is reached on loopback.
const host =
  !process.env.METRICS_HOST || ['0.0.0.0', '::', '[::]'].includes(process.env.METRICS_HOST)
    ? '127.0.0.1'
    : process.env.METRICS_HOST;
fetch(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}/readyz`, {
  signal: AbortSignal.timeout(2500),
}).then(
  (res) => process.exit(res.status === 200 ? 0 : 1),
  () => process.exit(1),
);
