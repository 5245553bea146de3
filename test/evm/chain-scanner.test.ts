import type { ChildProcess } from 'node:child_process';
import { evmChainScans } from '../../src/db/evm-store';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { startRpcProxy, type RpcProxy } from '../helpers/evm-proxy';
import { reseller, startHarness, startWorkerProcess, type Harness } from '../helpers/harness';
import { eventually, postRetrying } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';

// Issue 38 item 2, "one scanner per chain": the chain is read once per tick for every open
// checkout, its deposit addresses in topics[2] in chunks of EVM_SCAN_ADDRESSES_PER_CALL, counted
// at the node (a proxy in front of a real Hardhat node). The worker is a real process, killed with
// SIGKILL while its scanner is between the two chunks of a range. Money is checked where it lives.
const OPEN = Number(process.env.CHAIN_SCAN_TEST_CHECKOUTS ?? 1000);
const PER_CALL = 500;
const CONFIRMATIONS = 2;

let chain: DevChain;
let proxy: RpcProxy;
let h: Harness;
let env: Record<string, string>;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  chain = await startDevChain();
  proxy = await startRpcProxy(chain.rpcUrl);
  env = {
    ...evmEnv(chain, { confirmations: CONFIRMATIONS, rpcUrls: [proxy.url] }),
    PAYMENT_WINDOW_SECONDS: '600',
    EVM_SCAN_ADDRESSES_PER_CALL: String(PER_CALL),
    // A watch's own count is an hour away: a credit within a tick can only be the scanner waking it.
    EVM_WATCH_FALLBACK_SECONDS: '3600',
  };
  h = await startHarness(env, { worker: false });
}, 120_000);
afterAll(async () => {
  worker?.kill('SIGKILL');
  await h?.stop();
  await proxy?.stop();
  await chain?.stop();
});

/** The scanner's ticks so far, as it records them (one row per chain, its time moved every tick). */
async function tickTime(): Promise<number> {
  const [row] = await evmChainScans(h.services.orm.em.fork());
  return row ? new Date(row.scanned_at).getTime() : 0;
}

/** Resolves at the end of the scanner's next tick. */
async function nextTick(): Promise<void> {
  const before = await tickTime();
  await eventually(async () => ((await tickTime()) > before ? true : undefined), 120_000, 50);
}

/** How many of the scanner's ticks ended before `done` held (polled every 50 ms, for at most 60 s). */
async function ticksUntil(done: () => Promise<boolean>): Promise<number> {
  const start = await tickTime();
  const ends = new Set<number>();
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (await done()) return ends.size;
    const at = await tickTime();
    if (at > start) ends.add(at);
  }
  throw new Error('not done within 60 s');
}

/** Checkouts opened by nobody's order (as many as fill the chain's scan to `OPEN`), each with a deposit address of its own. */
async function openCheckoutsWithoutPayers(count: number): Promise<void> {
  await h.services.orm.em.fork().execute(
    `insert into evm_checkouts (id, reference, derivation_index, address, amount, currency)
       select 'chk_filler_' || i, 'ord_filler_' || i, nextval('evm_derivation_index_seq'), '0xee' || lpad(to_hex(i), 38, '0'), '1.00', 'USDT'
         from generate_series(1, ?) as i`,
    [count],
  );
}

async function topup(api: Awaited<ReturnType<typeof reseller>>['api'], externalTopupId: string, amount: string) {
  const res = await postRetrying(api, '/topup', { externalTopupId, amount, currency: 'USDT' });
  expect(res.status).toBe(200);
  return { checkoutUrl: res.body.checkoutUrl as string, address: await depositAddressOf(h, res.body.checkoutUrl) };
}

test(`with ${OPEN} open checkouts a tick costs ceil(${OPEN} / ${PER_CALL}) eth_getLogs at the node, and a payment is credited within a tick of its confirmations`, async () => {
  worker = startWorkerProcess(h, env);
  // Its scanner ticks with no checkout open (reading Postgres only) once the worker runs.
  await nextTick();
  const { api, accountId } = await reseller(h);
  const first = await topup(api, 'scan-first', '5.00');
  await openCheckoutsWithoutPayers(OPEN - 2);
  const last = await topup(api, 'scan-last', '6.00');

  // Whole ticks, each with every open checkout in it: the node is asked for the logs once per chunk.
  await nextTick();
  const perTick: number[] = [];
  for (let i = 0; i < 3; i++) {
    const before = proxy.count('eth_getLogs');
    await nextTick();
    perTick.push(proxy.count('eth_getLogs') - before);
  }
  expect((await evmChainScans(h.services.orm.em.fork()))[0]).toMatchObject({ checkouts: OPEN, available: true });
  // Each tick reads the blocks that may still change: one range, so exactly one call per chunk.
  expect(perTick).toEqual(perTick.map(() => Math.ceil(OPEN / PER_CALL)));

  // The last checkout's address is in the last chunk: paid, confirmed, and credited within the
  // tick that follows its confirmations (that tick wakes its watch, which counts it at once).
  await chain.pay(last.address, 'USDT', units6('6.00'));
  await chain.mine(CONFIRMATIONS);
  const confirmedAfter = await ticksUntil(
    async () => (await transfersOf(h, last.checkoutUrl))[0]?.state === 'confirmed',
  );
  const creditedAfter = await ticksUntil(async () => (await api.get('/balance')).body.balance === '6.00');
  // The tick under way when the block was mined may have read before it; the next one confirms.
  expect(confirmedAfter).toBeLessThanOrEqual(2);
  // The watch counts it when woken, before another tick or two has passed (its own count is an hour away).
  expect(creditedAfter).toBeLessThanOrEqual(2);
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows).toEqual([expect.objectContaining({ type: 'topup', amount: '6.00' })]);
  expect(await transfersOf(h, first.checkoutUrl)).toEqual([]);
}, 240_000);

test("the scanner's worker killed mid-range (between the two chunks of one read): nothing is missed or credited twice", async () => {
  const { api, accountId } = await reseller(h);
  const early = await topup(api, 'kill-early', '7.00');
  const late = await topup(api, 'kill-late', '8.00');
  await nextTick();

  // The next read's second chunk (the one with the newest checkouts) never gets its answer.
  await chain.pay(early.address, 'USDT', units6('7.00'));
  await chain.pay(late.address, 'USDT', units6('8.00'));
  await chain.mine(CONFIRMATIONS);
  const held = proxy.hold('eth_getLogs', 1);
  await held.arrived;
  worker!.kill('SIGKILL');
  await new Promise((r) => worker!.once('exit', r));
  held.release();

  worker = startWorkerProcess(h, env);
  await eventually(async () => ((await api.get('/balance')).body.balance === '15.00' ? true : undefined), 90_000, 250);
  // Long enough for a second count to show: more ticks over the same blocks.
  await chain.mine(2);
  await nextTick();
  await nextTick();
  expect((await api.get('/balance')).body.balance).toBe('15.00');
  const money = await expectLedgerMatchesBalance(h, accountId);
  expect(money.rows.map((r) => r.amount).sort()).toEqual(['7.00', '8.00']);
  for (const { checkoutUrl } of [early, late]) {
    expect(await transfersOf(h, checkoutUrl)).toEqual([
      expect.objectContaining({ state: 'confirmed', applied: 'payment' }),
    ]);
  }
}, 240_000);
