import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

// Issue 31: CI runs what the README tells a newcomer, so a step the README leaves out fails in CI
// too: `npm ci` (the lockfile's `npm install`), then the README's test command. Printing the test
// counts from jest's JSON is reporting, not a step.
const root = resolve(__dirname, '..', '..');
const read = (file: string) => readFileSync(resolve(root, file), 'utf8');

test(".ci/run is npm ci plus the README's test command, nothing else", () => {
  const lines = read('.ci/run')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const report = lines.findIndex((l) => l.startsWith('if [ -f /tmp/wholesale-jest.json ]'));
  const commands = [...lines.slice(0, report), ...lines.slice(lines.indexOf('fi', report) + 1)];
  expect(commands).toEqual([
    'set -euo pipefail',
    'cd "$(dirname "$0")/.."',
    'export CI=true',
    'npm ci --no-audit --no-fund',
    'result=0',
    'npm test -- --json --outputFile=/tmp/wholesale-jest.json || result=$?',
    'exit "$result"',
  ]);
});

test('the README gives npm install and npm test as the commands', () => {
  const readme = read('README.md');
  expect(/```sh\n([\s\S]*?)```/.exec(readme)?.[1].trim().split('\n')).toEqual(['npm install', 'npm start']);
  expect(readme).toMatch(/^Tests: `npm test`/m);
});
