# syntax=docker/dockerfile:1
# Build: docker build -t imghost .
# Run:   docker run -d -p 3000:3000 -v imghost-data:/app/data -e PUBLIC_URL=https://img.example.com imghost
# Or:    docker compose -f deploy/compose.yaml up -d --build (one instance; several: deploy/compose.scale.yaml)

# Both stages on the Bun the tests run on (node_modules/bun's version): test/deploy/docker.test.ts holds them equal.
FROM oven/bun:1.4.5-slim AS deps
WORKDIR /app
COPY package.json bun.lock ./
# Production dependencies only (the `bun` npm package is a dev dependency: the image has Bun), exactly the versions
# bun.lock pins: a bun.lock out of step with package.json fails the build rather than resolving anew.
RUN bun install --frozen-lockfile --production

FROM oven/bun:1.4.5-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production PORT=3000 DATA_DIR=/app/data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
# data/tus exists in the image so that a volume mounted there (shared by instances: deploy/compose.scale.yaml) is the
# bun user's.
RUN mkdir -p /app/data/tus && chown -R bun:bun /app/data
USER bun
VOLUME ["/app/data"]
EXPOSE 3000
# The server shuts down gracefully on SIGTERM: stops accepting, finishes requests, flushes views, closes the db.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD bun -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then(r => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"
CMD ["bun", "src/index.ts"]
