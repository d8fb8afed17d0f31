#!/usr/bin/env bash
# Runs the HTTP suites on PostgreSQL alone (npm test runs them too, beside the rest). Without a reachable
# server the run is skipped loudly, except under CI=true, where a missing PostgreSQL fails the build.
set -uo pipefail
cd "$(dirname "$0")/.."
node --import tsx test/helpers/check-postgres.ts
status=$?
if [ $status -ne 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "PostgreSQL is required in CI. Start it: pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start" >&2
    exit 1
  fi
  echo "*** SKIPPED: the HTTP suites on PostgreSQL (set TEST_POSTGRES_URL or start PostgreSQL to run them) ***" >&2
  exit 0
fi
TEST_ENGINE=postgres exec node --import tsx --test --test-reporter=spec --test-concurrency=2 --test-timeout=600000 $(find test/http -name '*.test.ts' | sort)
