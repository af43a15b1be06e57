#!/bin/sh
# npm test (and, with the coverage flags, npm run test:coverage): every test file in a process of
# its own, six at a time, the files outside test/unit/ first since they take longest. Arguments are
# node flags, placed before the test files.
set -e
exec node --import tsx "$@" --test --test-concurrency=6 --test-reporter=./scripts/test-reporter.js \
  $(find test -name '*.test.ts' -not -path 'test/unit/*' | sort) $(find test/unit -name '*.test.ts' | sort)
