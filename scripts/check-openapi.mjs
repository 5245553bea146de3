#!/usr/bin/env node
// Checks OpenAPI documents with two independent OpenAPI 3.1 validators:
// @seriousme/openapi-schema-validator (the official JSON schemas) and `redocly lint` (its
// recommended rules, where a warning counts as a failure too). Prints one JSON report per file
// and exits non-zero if either finds anything. Usage: node scripts/check-openapi.mjs <file>...
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Validator } from '@seriousme/openapi-schema-validator';

const require = createRequire(import.meta.url);
const redocly = require.resolve('@redocly/cli/bin/cli.js');

let failed = false;
for (const file of process.argv.slice(2)) {
  const schema = await new Validator().validate(JSON.parse(readFileSync(file, 'utf8')));
  const lint = spawnSync(process.execPath, [redocly, 'lint', file, '--format=json'], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const json = lint.stdout.slice(lint.stdout.indexOf('{'));
  const problems = json
    ? JSON.parse(json).problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)
    : [`redocly failed: ${lint.stderr}`];
  const report = { file, seriousme: schema.valid ? [] : [].concat(schema.errors), redocly: problems };
  if (report.seriousme.length || report.redocly.length || lint.status !== 0) failed = true;
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
process.exit(failed ? 1 : 0);
