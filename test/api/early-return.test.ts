import { temporal } from '@temporalio/proto';
import { orderWorkflowId } from '../../src/contracts/orders-contract';
import { topupWorkflowId } from '../../src/contracts/topups-contract';
import { startHarness, type Harness } from '../helpers/harness';
import { client } from '../helpers/http';
import { expectLedgerMatchesBalance } from '../helpers/money';
import { PAYMENT_ENV } from '../helpers/payments';

// Issue 14: the placement that answers the caller runs as a local activity inside the update
// handler, so the update completes in the first workflow task ("early return"); a business
// rejection is an answer, so it leaves no failed activity, no retry and no failure in history.
const EventType = temporal.api.enums.v1.EventType;
let h: Harness;

beforeAll(async () => {
  h = await startHarness(PAYMENT_ENV);
});
afterAll(() => h?.stop());

async function historyOf(workflowId: string) {
  const history = await h.services.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  return history.events ?? [];
}

const names = (events: temporal.api.history.v1.IHistoryEvent[]) => events.map((e) => EventType[e.eventType!]);

/** No event of the kinds a failure writes, and no failed outcome of an update or a marker. */
function expectNoFailure(events: temporal.api.history.v1.IHistoryEvent[]) {
  expect(names(events).filter((n) => /FAILED|TIMED_OUT|CANCELED|TERMINATED/.test(n))).toEqual([]);
  for (const e of events) {
    expect(e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.failure ?? null).toBeNull();
    expect(e.markerRecordedEventAttributes?.failure ?? null).toBeNull();
  }
}

test('a balance order is answered in the first workflow task, by a local activity (a marker), with no activity task', async () => {
  const { accountId, apiKey } = await h.account('1.00');
  const placed = await client(h.apiUrl, apiKey).post('/orders', {
    externalOrderId: 'early-1',
    productId: 'prod_api_order_test',
    qty: 1,
  });
  expect(placed.body).toMatchObject({ status: 'delivered', reused: false });
  expect(placed.body.codes).toHaveLength(1);
  const history = await historyOf(orderWorkflowId(accountId, 'early-1'));
  const events = names(history);
  expect(events.slice(0, 4)).toEqual([
    'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
  ]);
  // Everything that answers the caller is in what that first task produced.
  const firstTaskCommands = events.slice(
    4,
    events.indexOf('EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', 4) === -1
      ? undefined
      : events.indexOf('EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', 4),
  );
  expect(firstTaskCommands).toEqual(
    expect.arrayContaining([
      'EVENT_TYPE_MARKER_RECORDED',
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED',
    ]),
  );
  expect(events).not.toContain('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
  // The run carries its status from its start (orderStarter), so it records no version marker and
  // no TemporalChangeVersion: its only marker is the local activity's, its only upsert the status.
  expect(history.map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean)).toEqual([
    'core_local_activity',
  ]);
  expect(
    history.flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    ),
  ).toEqual(['OrderStatus']);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.99');
});

test.each([
  ['insufficient_balance', 402, { productId: 'prod_chatgpt_plus_1m', qty: 1 }],
  ['price_changed', 409, { productId: 'prod_chatgpt_plus_1m', qty: 1, expectedUnitPrice: '0.01' }],
  ['not_found', 404, { productId: 'prod_does_not_exist', qty: 1 }],
  ['insufficient_stock', 409, { productId: 'prod_chatgpt_team_1m', qty: 1000 }],
  ['out_of_stock', 409, { productId: 'prod_spotify_premium_1m', qty: 1 }],
])(
  'a rejected placement (%s) is the API error and leaves no failure anywhere in history',
  async (code, status, body) => {
    const { accountId, apiKey } = await h.account('0.50');
    const res = await client(h.apiUrl, apiKey).post('/orders', { externalOrderId: `rejected-${code}`, ...body });
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(code);
    if (code === 'price_changed') expect(res.body.details).toEqual({ actualUnitPrice: '18.00' });
    const events = await historyOf(orderWorkflowId(accountId, `rejected-${code}`));
    expectNoFailure(events);
    expect(names(events)).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    // Nothing moved.
    const money = await expectLedgerMatchesBalance(h, accountId);
    expect(money.balance).toBe('0.50');
    expect(money.rows).toHaveLength(1);
  },
);

test('top-ups: opened by a local activity in the first task; the unpaid limit is an answer, not a failure', async () => {
  const { accountId, apiKey } = await h.account('0');
  const api = client(h.apiUrl, apiKey);
  const opened = await api.post('/topup', { externalTopupId: 'early-top-1', amount: '5.00' });
  expect(opened.body).toMatchObject({ status: 'pending', reused: false });
  expect(opened.body.checkoutUrl).toMatch(/\/checkout\//);
  const history = await historyOf(topupWorkflowId(accountId, 'early-top-1'));
  const events = names(history);
  // The update completes in the first task; the payment loop's activities come after it. Besides
  // the update and the local activity's marker, that task records only the workflow's version
  // marker (`patched`) and the search attribute Temporal keeps with it.
  const completed = events.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED');
  expect(events.slice(0, 4)).toEqual([
    'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
  ]);
  const firstTask = history.slice(4, completed);
  expect(
    names(firstTask).filter(
      (n) => n !== 'EVENT_TYPE_MARKER_RECORDED' && n !== 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
    ),
  ).toEqual(['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED']);
  const markers = firstTask.map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
  expect(markers.filter((m) => m === 'core_local_activity')).toHaveLength(1);
  expect(markers.filter((m) => m !== 'core_local_activity' && m !== 'core_patch')).toEqual([]);

  for (let i = 2; i <= 5; i++)
    expect((await api.post('/topup', { externalTopupId: `early-top-${i}`, amount: '5.00' })).status).toBe(200);
  // The sixth unpaid top-up is refused by the API's own check; one racing past it is refused by
  // the placement itself, as a value. Either way: 429 and no failure in history.
  const refused = await api.post('/topup', { externalTopupId: 'early-top-6', amount: '5.00' });
  expect([refused.status, refused.body.error]).toEqual([429, 'too_many_pending_topups']);
  expect((await expectLedgerMatchesBalance(h, accountId)).balance).toBe('0.00');
});
