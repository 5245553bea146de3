/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  // Real Postgres and a real Temporal dev server, started once for the whole run.
  globalSetup: '<rootDir>/test/global-setup.mjs',
  globalTeardown: '<rootDir>/test/global-teardown.mjs',
  testTimeout: 90_000,
  maxWorkers: 2,
  // The suites that take minutes first (test/sequencer.js).
  testSequencer: '<rootDir>/test/sequencer.js',
  verbose: true,
};
