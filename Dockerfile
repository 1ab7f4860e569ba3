# The gateway as a container image: docker build -t mcp-tasks-gateway .
# Two stages: the first builds and packs exactly what `npm publish` would ship (npm pack), the second installs that
# tarball with its production dependencies only, at the versions package-lock.json pins, and runs it as `node`.

FROM node:20-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
# --ignore-scripts: `prepare` builds, and the sources are not copied yet. The one install script in the lockfile is
# esbuild's (a dev dependency, for tsx; it checks its platform binary), which `tsc` here does not need; no production
# dependency has one (test/operations/dockerfile.test.ts).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY config ./config
COPY README.md ./
RUN npm run build && npm pack --ignore-scripts --pack-destination /pkg && mv /pkg/mcp-tasks-gateway-*.tgz /pkg/gateway.tgz

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /pkg/gateway.tgz /tmp/gateway.tgz
COPY --from=build /src/package-lock.json /tmp/package-lock.json
# The tarball's files, then its production dependencies from the lockfile; the bin linked onto PATH, executable.
RUN tar -xzf /tmp/gateway.tgz --strip-components=1 -C /app \
 && cp /tmp/package-lock.json /app/package-lock.json \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && chmod 755 /app/dist/cli.js \
 && ln -s /app/dist/cli.js /usr/local/bin/mcp-tasks-gateway \
 && rm /tmp/gateway.tgz /tmp/package-lock.json \
 && npm cache clean --force
USER node
# A larger young generation for V8 (docs/performance.md § Large answers at high concurrency): with the default one, 64
# answers of 100 KB in flight promote garbage to the old generation and cost twice the CPU per call. Up to about 100 MB
# more resident under such load. A NODE_OPTIONS of your own replaces this one: keep the flag in it.
ENV NODE_OPTIONS="--max-semi-space-size=32"
EXPOSE 8080
# Reachable from outside the container only on every interface (the gateway's own default is loopback). Bound to a
# non-loopback address, the Host/Origin checks admit anything unless server.allowedHosts/allowedOrigins are set
# (README, Deployment › Docker). The healthcheck asks from inside, as Host 127.0.0.1:8080, which the host check admits
# on /healthz and /readyz from a loopback peer whatever allowedHosts says; change the port here if you change --port.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "require('node:http').get('http://127.0.0.1:8080/healthz', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
# Arguments after the image name are the gateway's flags: --upstream URL, or -c /path/to/gateway.yaml (mounted).
ENTRYPOINT ["mcp-tasks-gateway", "--host", "0.0.0.0"]
