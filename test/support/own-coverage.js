// Loaded into every test process by `npm run test:coverage` (an --import): coverage is collected
// for the test processes only. Their child processes (the CLI, git, ssh helpers) would otherwise
// inherit NODE_V8_COVERAGE too, and node 20's coverage summary fails on some of what they leave.
delete process.env.NODE_V8_COVERAGE;
