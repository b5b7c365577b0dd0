#!/bin/sh
# The host's side of the TypeScript datastore module (issue 36): swamp's
# own datastore conformance suite (vendored, test/host/vendor), the ported
# swamp S3 lock/sync tests and the port of swamp's extension loader, all on
# Deno against the built module (dist/src/datastore.js, what npm ships).
# Needs only npm (deno is a devDependency) and go; nothing from jsr: the
# suite's jsr:@std/assert is mapped to a local shim by test/host/import_map.json
# and --cached-only refuses any remote module. The loader test runs
# `deno bundle` as the host does; its esbuild comes from the npm registry.
# Prints one "ts: N passed, M failed" line per file.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/silt-host.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
go build -o "$tmp/silt" ./cmd/silt
cd clients/typescript
[ -x node_modules/.bin/deno ] || npm ci --no-audit --no-fund --loglevel=error
./node_modules/.bin/tsc -p .
export DENO_NO_UPDATE_CHECK=1 SILT_BIN="$tmp/silt" HOST_SUITE_MODULE=dist
# deno run does not type-check; the vendored suite and the tests are checked here.
./node_modules/.bin/deno check --cached-only --import-map test/host/import_map.json test/host/run_host_suite.ts test/host/loader_test.ts test/host/ported_test.ts
status=0
for t in run_host_suite loader_test ported_test; do
  echo "-- test/host/$t.ts"
  ./node_modules/.bin/deno run -A --cached-only --import-map test/host/import_map.json "test/host/$t.ts" || status=1
done
exit $status
