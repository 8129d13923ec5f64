# syntax=docker/dockerfile:1
# Build: docker build -t imghost .
# Run:   docker run -d -p 3000:3000 -v imghost-data:/app/data -e PUBLIC_URL=https://img.example.com imghost

FROM oven/bun:1 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; the `bun` npm package is a dev dependency, the image already has Bun.
RUN bun install --production --frozen-lockfile || bun install --production

FROM oven/bun:1 AS runtime
WORKDIR /app
ENV NODE_ENV=production PORT=3000 DATA_DIR=/app/data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
# data/tus exists in the image so that a volume mounted there (shared by instances: deploy/compose.yaml) is the bun user's.
RUN mkdir -p /app/data/tus && chown -R bun:bun /app/data
USER bun
VOLUME ["/app/data"]
EXPOSE 3000
# The server shuts down gracefully on SIGTERM: stops accepting, finishes requests, flushes views, closes the db.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD bun -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then(r => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"
CMD ["bun", "src/index.ts"]
