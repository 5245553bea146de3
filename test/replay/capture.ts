// Regenerates the replay fixtures (test/fixtures/histories/*.json) from a soak on the topology
// harness: 1 API, 1 worker, its own Postgres and Temporal dev server, the soak's traffic with every
// kind of operation, then for each workflow type the histories of distinct shapes (different
// sets of event types), longest first, at most MAX_PER_TYPE each.
//
//   node --import tsx test/replay/capture.ts [--seed N] [--add]
//
// --add keeps the fixtures there are and adds the histories of shapes they do not have after them
// (numbered on): a refactor of a workflow is checked against the histories of the code before it
// and after it.
//
// The server stores every payload encrypted with the run's own key; the fixtures hold them decoded
// (plain JSON payloads), so they need no key and the replay test uses the plain data converter.
// Each file holds the history as protobuf (base64: the SDK's historyToJSON/historyFromJSON fail in
// this install, whose two copies of protobufjs 8.8.1 break protojson's `instanceof Type`), next to
// a readable list of its events and the text of every payload in it, for review.
// They are test data (sandbox ids, amounts, counts); the capture refuses to write a history that
// holds anything shaped like a secret (API keys, webhook secrets, checkout links, codes).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { dataConverter, parseKeyRing } from '../../src/temporal/codec';
import { decodeHistory, historyAsText, payloadsOf } from '../helpers/history';
import { startTopology } from '../topology/harness';
import { Soak, SOAK_SERVICE_ENV, soakTargetOf } from '../topology/soak';

export const FIXTURE_DIR = resolve(__dirname, '..', 'fixtures', 'histories');
export const WORKFLOW_TYPES = [
  'orderWorkflow',
  'topupWorkflow',
  'procurementWorkflow',
  'redemptionWorkflow',
  'webhookDeliveryWorkflow',
  'evmCheckoutWorkflow',
  'chainScanWorkflow',
  'reconcileWorkflow',
  'exportWorkflow',
  'batchWorkflow',
];
/**
 * Captured by test/replay/capture-evm.ts (the soak runs on the sandbox provider, not on a chain),
 * test/replay/capture-reconcile.ts and test/replay/capture-jobs.ts (their runs' shapes made on
 * purpose, not left to the soak).
 */
const SOAK_TYPES = WORKFLOW_TYPES.filter(
  (t) =>
    !['evmCheckoutWorkflow', 'chainScanWorkflow', 'reconcileWorkflow', 'exportWorkflow', 'batchWorkflow'].includes(t),
);
export const MAX_PER_TYPE = 4;
const EventType = temporal.api.enums.v1.EventType;
/** Shapes of secrets that must never be in a committed history. */
export const SECRET_PATTERNS = [
  /wsk_[A-Za-z0-9_-]{8,}/,
  /whsec_[A-Za-z0-9_-]{8,}/,
  /\/checkout\/chk_/,
  /eyJ[A-Za-z0-9_-]{10,}/,
  /download\?token=/,
];

async function main() {
  const { values } = parseArgs({
    options: { seed: { type: 'string', default: '20261123' }, add: { type: 'boolean', default: false } },
  });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const keys = `capture:${randomBytes(32).toString('base64')}`;
  process.env.TEMPORAL_PAYLOAD_KEYS = keys;
  const t = await startTopology({ apis: 1, workers: 1, env: SOAK_SERVICE_ENV });
  const soak = new Soak(soakTargetOf(t, keys), {
    seed: Number(values.seed),
    durationMs: 40_000,
    maxOps: 120,
    accounts: 5,
    concurrency: 3,
    log: (l) => console.log(l),
  });
  try {
    await soak.setup();
    await soak.run();
    const left = await soak.drain(120_000);
    if (left.length) throw new Error(`workflows still running: ${left.join(', ')}`);
    const report = await soak.check({ strict: true });
    console.log(report.text);
    if (report.violations.length) throw new Error('the soak broke invariants; not capturing');

    const connection = await Connection.connect({ address: t.temporalAddress });
    const client = new Client({ connection, dataConverter: dataConverter(parseKeyRing(keys)) });
    const closed = (await soak.workflows()).filter((w) => w.status === 'COMPLETED');
    await writeFixtures(client, keys, SOAK_TYPES, closed, { seed: Number(values.seed) }, { add: values.add });
    await connection.close();
  } finally {
    await soak.close();
    await t.teardown();
  }
}

type IndexEntry = { file: string; workflowType: string; events: number; shape: string };

type HistoryLike = { events?: temporal.api.history.v1.IHistoryEvent[] | null };

/**
 * Histories of one type differ in shape by the kinds of events in them (signals, timers, failed
 * activities, updates, child handoffs), not by how many timer rounds they ran, and by the patches
 * they took: a history that took one is what later code must still replay.
 */
function shapeOf(history: HistoryLike): { events: string[]; shape: string } {
  const events = (history.events ?? []).map((e) => EventType[e.eventType ?? 0].replace(/^EVENT_TYPE_/, ''));
  const patches = patchesOf(history);
  return {
    events,
    shape: [...new Set(events)].sort().join(',') + (patches.length ? `;patches:${patches.join(',')}` : ''),
  };
}

/** A committed fixture's history. */
function fixtureHistory(file: string): HistoryLike {
  const { historyProtobufBase64 } = JSON.parse(readFileSync(join(FIXTURE_DIR, file), 'utf8')) as {
    historyProtobufBase64: string;
  };
  return temporal.api.history.v1.History.decode(Buffer.from(historyProtobufBase64, 'base64'));
}

/** The ids of the patches a history took (the SDK's `core_patch` markers), sorted. */
export function patchesOf(history: HistoryLike): string[] {
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_patch') continue;
    for (const p of marker.details?.['patch-data']?.payloads ?? []) {
      const { id } = JSON.parse(Buffer.from(p.data ?? new Uint8Array()).toString('utf8')) as { id?: string };
      if (id) ids.add(id);
    }
  }
  return [...ids].sort();
}

/**
 * For each of `types`, the completed histories of distinct shapes, longest first, at most
 * MAX_PER_TYPE, written as fixtures (replacing that type's earlier ones, or with `add` after them;
 * other types' stay).
 */
export async function writeFixtures(
  client: Client,
  keys: string,
  types: string[],
  closed: { workflowId: string; runId: string; type: string }[],
  meta: Record<string, unknown>,
  opts: { add?: boolean } = {},
): Promise<void> {
  const histories: DecodedRun[] = [];
  for (const w of closed.filter((x) => types.includes(x.type)))
    histories.push({
      workflowId: w.workflowId,
      type: w.type,
      history: await decodeHistory(await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory(), keys),
    });
  writeHistories(types, histories, meta, opts);
}

/** A closed run's history, its payloads decoded. */
export interface DecodedRun {
  workflowId: string;
  type: string;
  history: temporal.api.history.v1.IHistory;
}

/** writeFixtures, for histories already fetched and decoded. */
export function writeHistories(
  types: string[],
  closed: DecodedRun[],
  meta: Record<string, unknown>,
  opts: { add?: boolean } = {},
): void {
  mkdirSync(FIXTURE_DIR, { recursive: true });
  const indexFile = join(FIXTURE_DIR, 'index.json');
  const prior = existsSync(indexFile)
    ? (JSON.parse(readFileSync(indexFile, 'utf8')) as Record<string, unknown> & { histories: IndexEntry[] })
    : { histories: [] };
  const index: IndexEntry[] = prior.histories.filter((e) => opts.add || !types.includes(e.workflowType));
  if (!opts.add)
    for (const f of readdirSync(FIXTURE_DIR))
      if (types.some((t) => f.startsWith(`${t}-`)) && f.endsWith('.json')) rmSync(join(FIXTURE_DIR, f));
  for (const type of types) {
    // With `add`, only shapes no fixture of the type has yet (read again from the fixtures, so a
    // shape rule added since counts for them too).
    const known = new Set<string>();
    for (const entry of index.filter((e) => e.workflowType === type)) {
      entry.shape = shapeOf(fixtureHistory(entry.file)).shape;
      known.add(entry.shape);
    }
    const candidates: { id: string; events: number; shape: string; json: string }[] = [];
    for (const { workflowId, history } of closed.filter((x) => x.type === type)) {
      const text = historyAsText(history);
      const leaked = SECRET_PATTERNS.find((p) => p.test(text));
      if (leaked)
        throw new Error(
          `${workflowId}: its decoded history matches ${leaked} (…${text.slice(Math.max(0, text.search(leaked) - 200), text.search(leaked) + 60)}…); fix the workflow before capturing`,
        );
      const { events, shape } = shapeOf(history);
      if (known.has(shape)) continue;
      const encoded = Buffer.from(
        temporal.api.history.v1.History.encode(temporal.api.history.v1.History.fromObject(history)).finish(),
      ).toString('base64');
      const fixture = {
        workflowId: workflowId,
        workflowType: type,
        events,
        payloads: payloadsOf(history).map((p) => Buffer.from(p.data ?? new Uint8Array()).toString('utf8')),
        historyProtobufBase64: encoded,
      };
      candidates.push({ id: workflowId, events: events.length, shape, json: JSON.stringify(fixture, null, 1) });
    }
    const chosen: typeof candidates = [];
    for (const c of candidates.sort((a, b) => b.events - a.events)) {
      if (chosen.length < MAX_PER_TYPE && !chosen.some((x) => x.shape === c.shape)) chosen.push(c);
    }
    if (!chosen.length && opts.add) {
      console.log(
        `${type}: no shape the fixtures do not have, in ${closed.filter((x) => x.type === type).length} closed`,
      );
      continue;
    }
    if (!chosen.length) throw new Error(`no completed ${type} to capture`);
    const first =
      1 +
      Math.max(
        0,
        ...index.filter((e) => e.workflowType === type).map((e) => Number(/-(\d+)\.json$/.exec(e.file)?.[1] ?? 0)),
      );
    for (const [i, c] of chosen.entries()) {
      const file = `${type}-${first + i}.json`;
      writeFileSync(join(FIXTURE_DIR, file), `${c.json}\n`);
      index.push({ file, workflowType: type, events: c.events, shape: c.shape });
    }
    console.log(
      `${type}: ${chosen.length} histories (${chosen.map((c) => c.events).join(', ')} events) of ${candidates.length}`,
    );
  }
  index.sort((a, b) => a.file.localeCompare(b.file));
  writeFileSync(
    indexFile,
    `${JSON.stringify({ ...prior, capturedAt: new Date().toISOString(), ...meta, payloads: 'decoded (plain JSON)', histories: index }, null, 1)}\n`,
  );
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
