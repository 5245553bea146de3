import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

// A script calling `npx wholesale` tells a typo from a failure from success by the exit code alone,
// and reads one line on stderr when a command fails (issue 41 item 6): an unknown command or flag
// prints the usage on stderr and exits 2, `--help` prints it on stdout and exits 0, a failed command
// exits 1 with one JSON line {error, message} and no stack trace. The real process, as an operator
// runs it; none of these cases reaches a database that answers.
const root = resolve(__dirname, '..', '..');
const USAGE = 'usage: wholesale <command>';
// Nothing listens on port 1: a command that gets past its arguments fails on connecting.
const UNREACHABLE_DB = 'postgres://wholesale:wholesale@127.0.0.1:1/wholesale';

function wholesale(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'wholesale.js'), ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: UNREACHABLE_DB, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

test.each([
  ['--help', ['--help']],
  ['-h', ['-h']],
  ['--help after a command', ['accounts', 'create', '--help']],
])('%s: the usage on stdout, nothing on stderr, exit 0', async (_case, args) => {
  const run = await wholesale(args);
  expect({ code: run.code, usage: run.stdout.startsWith(USAGE), stderr: run.stderr }).toEqual({
    code: 0,
    usage: true,
    stderr: '',
  });
});

test.each([
  ['an unknown command', ['acounts', 'create', '--name', 'x'], 'wholesale: unknown command: acounts create'],
  ['no command', [], 'wholesale: no command given'],
  ['an unknown flag', ['accounts', 'create', '--nmae', 'x'], "wholesale: Unknown option '--nmae'"],
  ['a flag without its value', ['accounts', 'create', '--name'], "wholesale: Option '--name <value>' argument missing"],
])('%s: what was wrong and the usage on stderr, nothing on stdout, exit 2', async (_case, args, first) => {
  const run = await wholesale(args);
  const [line, usage] = run.stderr.split('\n');
  expect({ code: run.code, line: line.startsWith(first), usage, stdout: run.stdout }).toEqual({
    code: 2,
    line: true,
    usage: USAGE,
    stdout: '',
  });
});

test.each([
  [
    'the database cannot be reached',
    ['accounts', 'create', '--name', 'x'],
    {},
    { error: 'error', message: expect.stringContaining('ECONNREFUSED') },
  ],
  [
    'the configuration is invalid',
    ['accounts', 'create', '--name', 'x'],
    { PAYMENT_PROVIDER: 'cash' },
    { error: 'error', message: expect.stringMatching(/^Invalid configuration:\n.*PAYMENT_PROVIDER/) },
  ],
  [
    'the API it talks to is down',
    ['webhooks', 'listen', '--api', 'http://127.0.0.1:1/wholesale/v1', '--key', 'wsk_x'],
    {},
    { error: 'error', message: 'fetch failed' },
  ],
])('a command fails because %s: one JSON line on stderr, no stack trace, exit 1', async (_case, args, env, body) => {
  const run = await wholesale(args, env);
  const lines = run.stderr.split('\n').filter(Boolean);
  expect({ code: run.code, lines: lines.length, stdout: run.stdout }).toEqual({ code: 1, lines: 1, stdout: '' });
  expect(JSON.parse(lines[0])).toEqual(body);
  expect(run.stderr).not.toMatch(/\n\s+at /);
});
