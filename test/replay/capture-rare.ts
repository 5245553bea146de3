// Adds replay fixtures (test/fixtures/histories) for the branches a soak does not reach and the
// workflow tests provoke on purpose, each under its own patch: a placement answered after the run
// settled for none (order, top-up), a payment notice read while the order's status is read at the
// end, a retry during the attempt that ends a delivery, the operator queue's decision. Those
// tests run with CAPTURE_HISTORIES_DIR set, keep their runs' histories (keepHistory in
// test/workflows/env.ts), and the shapes the fixtures lack are added after them.
//
//   node --import tsx test/replay/capture-rare.ts
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { temporal } from '@temporalio/proto';
import { writeHistories, type DecodedRun } from './capture';

const root = resolve(__dirname, '..', '..');
const TEST_FILES = ['order', 'topup', 'webhook-delivery', 'redemption'].map((f) => `test/workflows/${f}.test.ts`);

function main() {
  const dir = mkdtempSync(join(tmpdir(), 'wholesale-capture-rare-'));
  const jest = spawnSync(process.execPath, [join(root, 'node_modules', 'jest', 'bin', 'jest.js'), ...TEST_FILES], {
    cwd: root,
    env: { ...process.env, CAPTURE_HISTORIES_DIR: dir },
    stdio: 'inherit',
  });
  if (jest.status !== 0) throw new Error(`the workflow tests failed (exit ${jest.status}); not capturing`);
  const runs: DecodedRun[] = readdirSync(dir).map((file) => {
    const kept = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
      workflowId: string;
      workflowType: string;
      historyProtobufBase64: string;
    };
    return {
      workflowId: kept.workflowId,
      type: kept.workflowType,
      history: temporal.api.history.v1.History.decode(Buffer.from(kept.historyProtobufBase64, 'base64')),
    };
  });
  const types = [...new Set(runs.map((r) => r.type))].sort();
  console.log(`${runs.length} histories kept (${types.join(', ')})`);
  writeHistories(types, runs, { rare: 'test/replay/capture-rare.ts' }, { add: true });
}

main();
