# One image for both production processes: `npm run api` and `npm run worker`.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY bin ./bin
COPY scripts ./scripts
COPY tsconfig.json ./
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
USER node
CMD ["npm", "run", "api"]
