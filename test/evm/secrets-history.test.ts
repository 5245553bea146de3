import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { getAddress } from 'viem';
import { ENCRYPTED_ENCODING } from '../../src/temporal/codec';
import { startDevChain, type DevChain } from '../helpers/evm-chain';
import { depositAddressOf, evmEnv, transfersOf, units6 } from '../helpers/evm-checkout';
import { reseller, startHarness, type Harness } from '../helpers/harness';
import { decodeHistory, encodingOf, historyAsText, payloadsOf, rawHistory } from '../helpers/history';
import { eventually } from '../helpers/http';
import { checkoutIdOf, waitForOrderStatus } from '../helpers/payments';
import { OPERATOR_XPUB } from '../helpers/production';

// Issue 25 "Done when": the EVM checkout's workflows keep the history-secrecy rule of issue 12
// (test/api/secrets-history.test.ts): no deposit address, transaction hash, xpub or RPC URL with
// its key in any history, raw or decoded, and every payload but search attributes encrypted. The
// watch is named by order and derivation index, never by the checkout id or the address.
const RPC_KEY = `rpc-key-${randomBytes(8).toString('hex')}`;
let chain: DevChain;
let h: Harness;
let plain: Client;
let connection: Connection;
const secrets = new Map<string, string[]>([
  ['address', []],
  ['tx hash', []],
  ['xpub', [OPERATOR_XPUB]],
  ['RPC key', [RPC_KEY]],
  ['checkout id', []],
]);
const add = (kind: string, ...values: string[]) => secrets.get(kind)!.push(...values);
let executions: { workflowId: string; runId: string; type: string }[] = [];

beforeAll(async () => {
  chain = await startDevChain();
  h = await startHarness({
    ...evmEnv(chain, { confirmations: 1, rpcUrls: [`${chain.rpcUrl}/?key=${RPC_KEY}`] }),
    EVM_XPUB: OPERATOR_XPUB,
    PAYMENT_WINDOW_SECONDS: '300',
  });
  connection = await Connection.connect({ address: h.config.TEMPORAL_ADDRESS! });
  plain = new Client({ connection, namespace: h.config.TEMPORAL_NAMESPACE });

  const { api } = await reseller(h);
  const pay = async (url: string, amount: string) => {
    const address = await depositAddressOf(h, url);
    add('address', address.toLowerCase(), getAddress(address), address.slice(2).toLowerCase());
    add('checkout id', checkoutIdOf(url));
    await chain.pay(address, 'USDT', units6(amount));
  };
  const order = (
    await api.post('/orders', {
      externalOrderId: 'sh-evm',
      productId: 'prod_chatgpt_plus_1m',
      qty: 1,
      payment: 'intent',
    })
  ).body;
  await pay(order.checkoutUrl, order.amount);
  await waitForOrderStatus(api, order.orderId, 'delivered');
  await pay(order.checkoutUrl, '3.00');
  const topup = (await api.post('/topup', { externalTopupId: 'sh-evm-top', amount: '7.00' })).body;
  await pay(topup.checkoutUrl, '4.00');
  await pay(topup.checkoutUrl, '3.00');
  await waitForOrderStatus(api, topup.orderId, 'delivered');
  // The order paid exactly, then 3.00 more to its spent address: credited to the balance with the top-up.
  await eventually(async () => (await api.get('/balance')).body.balance === '10.00');
  for (const url of [order.checkoutUrl, topup.checkoutUrl])
    add('tx hash', ...(await transfersOf(h, url)).flatMap((t) => [t.tx_hash, t.tx_hash.slice(2)]));
  executions = await eventually(async () => {
    const found: typeof executions = [];
    for await (const wf of plain.workflow.list({ query: `TaskQueue = "${h.config.TEMPORAL_TASK_QUEUE}"` }))
      found.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
    return found.filter((e) => e.type === 'evmCheckoutWorkflow').length === 2 ? found : undefined;
  });
}, 180_000);

afterAll(async () => {
  await connection?.close();
  await h?.stop();
  await chain?.stop();
});

function secretsIn(text: string): string[] {
  return [...secrets].flatMap(([kind, values]) =>
    values.filter((v) => text.includes(v)).map((v) => `${kind} ${v.slice(0, 8)}…`),
  );
}

test("the flows ran the checkout watch and the chain's scanner beside the order and top-up workflows, and collected their secrets", () => {
  expect(new Set(executions.map((e) => e.type))).toEqual(
    new Set(['orderWorkflow', 'topupWorkflow', 'evmCheckoutWorkflow', 'chainScanWorkflow']),
  );
  for (const [kind, values] of secrets) expect([kind, values.length > 0]).toEqual([kind, true]);
  expect(secrets.get('tx hash')!.length).toBe(8);
});

test('raw and decoded histories hold no address, transaction hash, xpub, RPC key or checkout id; payloads are encrypted', async () => {
  for (const e of executions) {
    const where = `${e.type} ${e.workflowId}`;
    expect([where, secretsIn(e.workflowId)]).toEqual([where, []]);
    const raw = await rawHistory(plain, e.workflowId, e.runId);
    expect([
      where,
      secretsIn(Buffer.from(temporal.api.history.v1.History.encode(raw).finish()).toString('latin1')),
    ]).toEqual([where, []]);
    expect([where, secretsIn(historyAsText(raw))]).toEqual([where, []]);
    const markers = new Set(
      raw.events!.flatMap((ev) =>
        Object.values(ev.markerRecordedEventAttributes?.details ?? {}).flatMap((d) => d.payloads ?? []),
      ),
    );
    const payloads = payloadsOf(raw, { except: ['searchAttributes'] }).filter((p) => !markers.has(p as never));
    expect([where, payloads.filter((p) => encodingOf(p) !== ENCRYPTED_ENCODING).map(encodingOf)]).toEqual([where, []]);
    const decoded = historyAsText(await decodeHistory(raw, h.config.TEMPORAL_PAYLOAD_KEYS));
    expect([where, secretsIn(decoded)]).toEqual([where, []]);
  }
}, 120_000);
