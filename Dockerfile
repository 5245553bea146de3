# One image for the service's processes: `node dist/src/api.js` (the default command),
# `node dist/src/worker.js` and `node dist/src/migrate.js` (docs/operations.md, *Deploying*).
ARG NODE_IMAGE=node:20-bookworm-slim

# Build: every dependency, the TypeScript compiled to dist/ and the workflow bundle written beside
# it (`npm run build`). No install script is needed to compile or bundle.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
RUN npm run build

# Runtime: production dependencies only (no tsx, no devDependency), the compiled code and the
# bundle, run by plain node as an unprivileged user.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prune-runtime.mjs ./scripts/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && node scripts/prune-runtime.mjs \
 && npm cache clean --force
COPY bin ./bin
COPY --from=build /app/dist ./dist
USER node
# The API on PORT; /healthz, /readyz and /metrics on METRICS_PORT (production requires it), both
# on every interface of the container.
ENV HOST=0.0.0.0 PORT=8080 METRICS_HOST=0.0.0.0 METRICS_PORT=9464
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "bin/healthcheck.js"]
# node runs as PID 1 and handles SIGTERM itself: the API finishes its requests and the worker its
# activities, then the process exits 0 (give it the stop grace period the compose file and chart set).
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/api.js"]
