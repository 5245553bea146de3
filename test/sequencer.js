// The order in which jest's two workers take the suites. Jest runs the slowest first when its cache
// knows their times; on a fresh clone (CI) it has none and orders by file size, which put the fault
// suite (about ten minutes, small file) last, running alone while the other worker sat idle. These
// suites take minutes, so they start first; the rest keep jest's order.
const Sequencer = require('@jest/test-sequencer').default;

const LONG_FIRST = [
  'test/topology/faults.test.ts',
  'test/fuzz/rest.test.ts',
  'test/fuzz/mcp.test.ts',
  'test/api/start.test.ts',
  'test/api/webhook-attempts-crash.test.ts',
  'test/evm/faults.test.ts',
  'test/deploy/production-build.test.ts',
];

function rank(test) {
  const i = LONG_FIRST.findIndex((suffix) => test.path.replace(/\\/g, '/').endsWith(suffix));
  return i === -1 ? LONG_FIRST.length : i;
}

class LongFirstSequencer extends Sequencer {
  sort(tests) {
    return [...super.sort(tests)].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongFirstSequencer;
