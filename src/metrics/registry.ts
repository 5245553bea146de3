import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ERROR_STATUS } from '../domain/errors';

// Every metric of the service, in one registry per process (prom-client). Label values are
// bounded sets the code spells out (route templates, enums, error codes); never an account id,
// an order id or a code.

export const registry = new Registry();
registry.setDefaultLabels({ service: 'wholesale' });
collectDefaultMetrics({ register: registry, prefix: 'wholesale_' });

const ERROR_CODES = new Set(Object.keys(ERROR_STATUS));
/** An error code as a label: one of the spec's codes, or `other`. */
export const codeLabel = (code: string | undefined) => (code && ERROR_CODES.has(code) ? code : 'other');

// HTTP (RED: rate, errors, duration), by route template.
export const httpRequests = new Counter({
  name: 'wholesale_http_requests_total',
  help: 'HTTP requests by route template, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});
export const httpDuration = new Histogram({
  name: 'wholesale_http_request_duration_seconds',
  help: 'HTTP request latency by route template and method',
  labelNames: ['route', 'method'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
export const rateLimited = new Counter({
  name: 'wholesale_rate_limited_total',
  help: '429 answers by the limit that was hit',
  labelNames: ['limit'] as const,
  registers: [registry],
});
export const signInFailures = new Counter({
  name: 'wholesale_sign_in_failures_total',
  help: 'Sign-ins refused for a wrong email, password or code, by area (console, account)',
  labelNames: ['area'] as const,
  registers: [registry],
});

// Business.
export const ordersPlaced = new Counter({
  name: 'wholesale_orders_placed_total',
  help: 'Order placements by product delivery type, payment mode and outcome (delivered, paid, pending, rejected with its code)',
  labelNames: ['product_type', 'payment', 'outcome', 'code'] as const,
  registers: [registry],
});
// The placement's own work in the worker (its Postgres statements; an intent order's checkout
// call too), timed inside the local activity: what the order's latency owes to the database
// rather than to the engine that runs it.
export const placementDuration = new Histogram({
  name: 'wholesale_order_placement_seconds',
  help: 'Order placement (the local activity body) by payment mode',
  labelNames: ['payment'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
// Batch lines as their batch workflow placed them: `placed` (a new order), `reused` (a replay of an
// order that existed) or `rejected` with the order API's code.
export const batchLines = new Counter({
  name: 'wholesale_batch_lines_total',
  help: 'Lines of order batches placed, by outcome (placed, reused, rejected) and rejection code',
  labelNames: ['outcome', 'code'] as const,
  registers: [registry],
});
export const exportRows = new Counter({
  name: 'wholesale_export_rows_total',
  help: 'CSV rows exported, by kind (orders, ledger) and mode (stream: GET …csv, job: pages a workflow wrote)',
  labelNames: ['kind', 'mode'] as const,
  registers: [registry],
});
// Admission control of placements in each API process (src/services/admission.ts).
export const placementsAdmitted = new Counter({
  name: 'wholesale_admission_admitted_total',
  help: 'Placements (orders, top-ups) let through admission control, by kind',
  labelNames: ['kind'] as const,
  registers: [registry],
});
export const placementsShed = new Counter({
  name: 'wholesale_admission_shed_total',
  help: 'Placements answered 503 at once by admission control, by kind and reason (limit, account_share, no_worker)',
  labelNames: ['kind', 'reason'] as const,
  registers: [registry],
});
export const admissionLimit = new Gauge({
  name: 'wholesale_admission_limit',
  help: 'Placements this API process lets run at once now (its adaptive limit)',
  registers: [registry],
});
export const admissionShownLimit = new Gauge({
  name: 'wholesale_admission_shown_limit',
  help: 'Placements this API process shares out among accounts while several place (the level it has served in time under load)',
  registers: [registry],
});
export const admissionInFlight = new Gauge({
  name: 'wholesale_admission_in_flight',
  help: 'Placements running in this API process now',
  registers: [registry],
});
export const workersLive = new Gauge({
  name: 'wholesale_workers_live',
  help: "Worker processes whose heartbeat this API process saw fresh at its last read (its task queue's pollers)",
  registers: [registry],
});
export const workerQueueSeconds = new Gauge({
  name: 'wholesale_worker_queue_seconds',
  help: 'The longest mean workflow-task schedule-to-start the live workers reported at their last heartbeat',
  registers: [registry],
});
export const topupsCreated = new Counter({
  name: 'wholesale_topups_created_total',
  help: 'Top-ups opened (a hosted checkout created), by currency',
  labelNames: ['currency'] as const,
  registers: [registry],
});
export const topupsCredited = new Counter({
  name: 'wholesale_topups_credited_total',
  help: 'Top-ups confirmed and credited to a balance, by currency',
  labelNames: ['currency'] as const,
  registers: [registry],
});
export const paymentConfirmations = new Counter({
  name: 'wholesale_payment_confirmations_total',
  help: 'Payments settled, by what confirmed them (callback, status_sync, late) and what was paid (order, topup)',
  labelNames: ['path', 'kind'] as const,
  registers: [registry],
});
export const paymentNoticesUnverified = new Counter({
  name: 'wholesale_payment_notice_unverified_total',
  help: 'Payment notices (signals, status answers) that settled nothing because Postgres shows no payment, by path and kind',
  labelNames: ['path', 'kind'] as const,
  registers: [registry],
});
export const supportActionsUnverified = new Counter({
  name: 'wholesale_support_action_unverified_total',
  help: 'Support actions sent to a workflow with no support request on record, refused, by action',
  labelNames: ['action'] as const,
  registers: [registry],
});
export const unencryptedPayloadsRefused = new Counter({
  name: 'wholesale_temporal_unencrypted_payloads_refused_total',
  help: 'Payloads a worker received that no ring key encrypted, refused instead of decoded',
  registers: [registry],
});
export const procurementRounds = new Counter({
  name: 'wholesale_procurement_rounds_total',
  help: 'Supplier rounds of gift-card procurement, by outcome (progress, empty, transient, permanent)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
export const procurementUnits = new Counter({
  name: 'wholesale_procurement_units_total',
  help: 'Gift-card units obtained from the supplier',
  registers: [registry],
});
export const supplierPriceAboveLv1 = new Gauge({
  name: 'wholesale_supplier_price_above_lv1',
  help: "1 while the supplier's last unit cost of a direct-code product was above our Lv1 price for it (it sells at a loss), 0 once a purchase costs no more; by product id (a catalog set)",
  labelNames: ['product'] as const,
  registers: [registry],
});
export const redemptionOutcomes = new Counter({
  name: 'wholesale_redemptions_total',
  help: 'Redemption attempts that reached an end, by outcome (fulfilled, failed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
export const webhookAttempts = new Counter({
  name: 'wholesale_webhook_attempts_total',
  help: 'Webhook delivery attempts (HTTP POSTs), by outcome (succeeded, failed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const paymentProviderErrors = new Counter({
  name: 'wholesale_payment_provider_errors_total',
  help: 'Failed calls to the payment provider, by call (create, status) and kind (error, timeout)',
  labelNames: ['call', 'kind'] as const,
  registers: [registry],
});
let workerUp: Gauge | undefined;
/** Registered by the first worker supervisor, so a process without a worker does not report one. */
export function workerUpGauge(): Gauge {
  workerUp ??= new Gauge({
    name: 'wholesale_worker_up',
    help: '1 while this process runs its Temporal worker, 0 while it is restarting or gave up',
    registers: [registry],
  });
  return workerUp;
}

// Gauges read from Postgres when scraped (src/metrics/state.ts): facts live there.
export const ordersNeedingAttention = new Gauge({
  name: 'wholesale_orders_needs_attention',
  help: 'Direct-code orders in needs_attention, waiting for support',
  registers: [registry],
});
export const oldestNeedsAttentionSeconds = new Gauge({
  name: 'wholesale_orders_needs_attention_oldest_seconds',
  help: 'How long the longest-waiting needs_attention order has waited (0 when none)',
  registers: [registry],
});
export const pendingIntentOrders = new Gauge({
  name: 'wholesale_pending_intent_orders',
  help: 'Intent-mode orders waiting for payment',
  registers: [registry],
});
export const pendingTopups = new Gauge({
  name: 'wholesale_pending_topups',
  help: 'Top-ups waiting for payment',
  registers: [registry],
});
export const accountsNearTopupLimit = new Gauge({
  name: 'wholesale_accounts_near_unpaid_topup_limit',
  help: 'Accounts with one unpaid top-up short of the limit or at it (MAX_PENDING_TOPUPS)',
  registers: [registry],
});
export const oldestUndeliveredEventSeconds = new Gauge({
  name: 'wholesale_webhook_oldest_undelivered_seconds',
  help: 'Age of the oldest event whose webhook delivery is still pending (0 when none)',
  registers: [registry],
});
export const undeliveredWebhooks = new Gauge({
  name: 'wholesale_webhook_deliveries_pending',
  help: 'Webhook deliveries not yet succeeded, failed or cancelled',
  registers: [registry],
});

// The self-hosted EVM checkout (PAYMENT_PROVIDER=evm). Chains are labelled by chain id, a set the
// operator's EVM_CHAINS bounds.
export const evmRpcErrors = new Counter({
  name: 'wholesale_evm_rpc_errors_total',
  help: 'JSON-RPC calls that failed or answered garbage, by chain and kind (timeout, http, rpc, invalid, not_found, lagging, wrong_chain)',
  labelNames: ['chain', 'kind'] as const,
  registers: [registry],
});
export const evmConfirmationLag = new Gauge({
  name: 'wholesale_evm_confirmation_lag_blocks',
  help: 'Confirmations the least-confirmed transfer still waits for at its last scan (0: none waiting), by chain',
  labelNames: ['chain'] as const,
  registers: [registry],
});
export const evmVerifyDisagreements = new Counter({
  name: 'wholesale_evm_verify_disagreements_total',
  help: "Transfers the chain's verifyWith node does not show as its nodes do (another receipt or block, or none), kept unconfirmed, by chain",
  labelNames: ['chain'] as const,
  registers: [registry],
});
export const evmTransfersCredited = new Counter({
  name: 'wholesale_evm_transfers_credited_total',
  help: 'Token transfers counted towards a checkout once confirmed, by chain and token',
  labelNames: ['chain', 'token'] as const,
  registers: [registry],
});
export const evmExcessCredited = new Counter({
  name: 'wholesale_evm_excess_credited_cents_total',
  help: 'Money received beyond what a checkout asked for, credited to the payer account balance, in cents, by reason',
  labelNames: ['reason'] as const,
  registers: [registry],
});
export const evmCheckouts = new Gauge({
  name: 'wholesale_evm_checkouts',
  help: 'EVM checkouts by state (pending, paid, closed)',
  labelNames: ['state'] as const,
  registers: [registry],
});

// The reconciler (a Temporal Schedule comparing Postgres with Temporal, src/services/reconcile.ts).
export const reconcilerRepairs = new Counter({
  name: 'wholesale_reconciler_repairs_total',
  help: 'Workflows the reconciler started again because Temporal had lost them, by kind (order_payment, topup_payment, procurement, redemption, webhook_delivery, evm_checkout)',
  labelNames: ['kind'] as const,
  registers: [registry],
});
export const reconcilerRuns = new Counter({
  name: 'wholesale_reconciler_runs_total',
  help: 'Reconciliation runs finished, by outcome (complete, or incomplete: a check kept failing and waits for the next run)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
export const reconcilerLedgerMismatches = new Gauge({
  name: 'wholesale_reconciler_ledger_mismatches',
  help: 'Accounts whose ledger does not add up (sum of ledger rows not the balance, or a broken balanceAfter chain) when last checked; never repaired (from Postgres, at each scrape)',
  registers: [registry],
});
export const codecUnopenedPayloads = new Counter({
  name: 'wholesale_codec_unopened_payloads_total',
  help: 'Payloads the codec server was asked to decode that no key of TEMPORAL_PAYLOAD_KEYS opened (shown encrypted: a rotated-out key missing from the ring, or altered bytes)',
  registers: [registry],
});
