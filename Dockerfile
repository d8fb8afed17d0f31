# syntax=docker/dockerfile:1
# Multi-stage: compile in a full toolchain, ship only production dependencies and dist/ as a non-root user.

FROM node:20-bookworm-slim AS toolchain
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

FROM toolchain AS build
COPY package.json package-lock.json ./
COPY client/package.json ./client/package.json
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/build.mjs ./scripts/build.mjs
RUN npm run build

FROM toolchain AS production-dependencies
COPY package.json package-lock.json ./
COPY client/package.json ./client/package.json
# --ignore-scripts skips `prepare` (a build that needs dev dependencies); the one native addon is rebuilt explicitly.
RUN npm ci --omit=dev --ignore-scripts && npm rebuild better-sqlite3

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/animal-store.sqlite
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# A young generation of 4 MB per semi-space keeps the process within its memory budget (see README, Performance).
ENV NODE_OPTIONS=--max-semi-space-size=4
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
