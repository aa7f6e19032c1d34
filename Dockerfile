# One image for every process of the platform; docker-compose.yml picks the command.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.base.json ./
COPY packages/core/package.json packages/core/
COPY packages/cli/package.json packages/cli/
COPY packages/agent/package.json packages/agent/
COPY packages/client/package.json packages/client/
COPY packages/testing/package.json packages/testing/
COPY apps/api/package.json apps/api/
COPY apps/dispatcher/package.json apps/dispatcher/
COPY apps/agent-sim/package.json apps/agent-sim/
COPY apps/console/package.json apps/console/
# postgres.js carries a patch (docs/decisions/postgres-driver-patch.md): npm ci's postinstall applies it
COPY patches patches
# exactly the lock file's versions: a lock file out of step with package.json fails the build
RUN npm ci --no-audit --no-fund
COPY packages packages
COPY apps apps
COPY scripts scripts
RUN npx tsc -b && node apps/console/build.mjs --force && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
USER node
CMD ["node", "apps/api/dist/main.js"]
