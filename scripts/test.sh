#!/bin/sh
# npm test (and, with the coverage flags, npm run test:coverage): all of test/unit/ in one process
# (test/support/unit-suite.ts), the longest, first; then every other test file in a process of its
# own; six processes at a time. Arguments are node flags, placed before the test files.
set -e
exec node --import tsx "$@" --test --test-concurrency=6 --test-reporter=./scripts/test-reporter.js \
  test/support/unit-suite.ts $(find test -name '*.test.ts' -not -path 'test/unit/*' | sort)
