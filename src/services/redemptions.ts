import type { EntityManager } from '@mikro-orm/postgresql';
import { ProductSchema, type Product } from '../db/entities';
import { CODE_RE, newId, normalizeCode } from '../domain/codes';
import { ApiError } from '../domain/errors';
import { displayFields, maskDeliverable, validateRedeemInfo, type RedeemFieldDef, type ValidatedRedeemInfo } from '../domain/redeem-info';
import { UpstreamUnavailableError, type RedemptionUpstream } from '../providers/redemption-upstream';
import type { TemporalHandle } from '../temporal/client';
import {
  operatorDecisionSignal,
  redemptionEventId,
  redemptionWorkflowId,
  type AttemptOutcome,
  type AttemptRef,
  type OperatorDecision,
  type RedemptionStatus,
  type RedemptionWorkflowInput,
} from '../temporal/redemptions';
import { recordEvent } from './events';

// Server-side redemption (spec 4.4, 3.4) and the public redemption site share this module: one
// code lookup, one validation, one state machine. Postgres holds the facts (redemptions, one row
// per code, and redemption_attempts, one row per submission); redemptionWorkflow owns the time.

export const TEST_DELIVERABLE = 'Test redemption completed: this integration test code carries no subscription or benefit.';

export interface RedemptionView {
  redemptionId: string | null;
  code: string;
  orderId: string;
  externalOrderId: string | null;
  productId: string;
  status: 'not_redeemed' | RedemptionStatus;
  retryable: boolean;
  failureCode: string | null;
  deliverable: string | null;
  createdAt: number | null;
  fulfilledAt: number | null;
}

export interface SubmitRedemptionResult {
  redemptionId: string;
  status: 'pending';
  code: string;
  orderId: string;
}

export interface RedemptionDeps {
  em: EntityManager;
  temporal: TemporalHandle;
  upstream: RedemptionUpstream;
  refreshSeconds: number;
}

/** Who submits: a reseller's key (only its own codes) or the public site (any wholesale code). */
export type Submitter = { source: 'api'; accountId: string } | { source: 'site' };

interface CodeRow {
  id: string;
  code: string;
  account_id: string;
  order_id: string;
  product_id: string;
  kind: string;
  is_test: boolean;
  voided: boolean;
  order_status: string;
  channel: string;
  external_order_id: string | null;
}

interface RedemptionRow {
  id: string;
  code_id: string;
  account_id: string;
  attempt: number;
  status: RedemptionStatus;
  failure_code: string | null;
  deliverable: string | null;
  created_at: Date;
  fulfilled_at: Date | null;
  holds_resources: boolean | null;
}

const unix = (d: Date | string | null | undefined) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

// One message for every reason, so a caller learns nothing about codes that are not theirs.
const invalidCode = () => new ApiError('invalid_code', 'This code cannot be redeemed: it is unknown, voided or not issued to you');

const CODE_SQL = `select ic.id, ic.code, ic.account_id, ic.order_id, ic.product_id, ic.kind, ic.is_test, ic.voided,
    o.status as order_status, o.channel, o.external_order_id
  from issued_codes ic join orders o on o.id = ic.order_id where ic.code = ?`;

const REDEMPTION_SQL = `select r.id, r.code_id, r.account_id, r.attempt, r.status, r.failure_code, r.deliverable, r.created_at,
    r.fulfilled_at, a.holds_resources
  from redemptions r left join redemption_attempts a on a.redemption_id = r.id and a.attempt = r.attempt`;

/**
 * A platform code of a delivered order that the submitter may redeem. Unknown, voided, gift-card
 * (direct-code, out of scope) and other accounts' codes are all the same `invalid_code`.
 */
async function findCode(em: EntityManager, rawCode: string, who: Submitter, lock = false): Promise<CodeRow> {
  const code = normalizeCode(rawCode);
  if (!CODE_RE.test(code)) throw invalidCode();
  const [row] = await em.execute<CodeRow[]>(`${CODE_SQL}${lock ? ' for update of ic' : ''}`, [code]);
  if (!row || row.voided || row.kind !== 'platform' || row.order_status !== 'delivered') throw invalidCode();
  if (who.source === 'api' && row.account_id !== who.accountId) throw invalidCode();
  return row;
}

async function redemptionOfCode(em: EntityManager, codeId: string): Promise<RedemptionRow | undefined> {
  const [row] = await em.execute<RedemptionRow[]>(`${REDEMPTION_SQL} where r.code_id = ?`, [codeId]);
  return row;
}

/** Spec 3.4: pending, processing and fulfilled reject a resubmission; a failed attempt may be retried once it let go. */
function assertSubmittable(existing: RedemptionRow | undefined): void {
  if (!existing) return;
  if (existing.status !== 'failed') {
    throw new ApiError('already_redeemed', `This code was already submitted and is ${existing.status}`, {
      redemptionId: existing.id,
      status: existing.status,
    });
  }
  if (existing.holds_resources) {
    throw new ApiError('retry_conflict', 'The previous attempt still holds supplier resources; query the redemption and retry later', {
      redemptionId: existing.id,
    });
  }
}

async function productOf(em: EntityManager, productId: string): Promise<Product> {
  const product = await em.findOne(ProductSchema, { id: productId });
  if (!product) throw invalidCode();
  return product;
}

/** The session-user-id pre-check against the third party; nothing is written before it passes. */
async function preCheckSession(deps: RedemptionDeps, productId: string, validated: ValidatedRedeemInfo): Promise<void> {
  if (!validated.sessionUserId) return;
  let verdict: 'valid' | 'invalid';
  try {
    verdict = await deps.upstream.validateSession({ productId, userId: validated.sessionUserId });
  } catch (err) {
    if (err instanceof UpstreamUnavailableError) {
      throw new ApiError('session_validation_unavailable', 'The session pre-check is temporarily unavailable; the code was not used, retry');
    }
    throw err;
  }
  if (verdict === 'invalid') {
    throw new ApiError('invalid_session_json', 'The session was not recognised as an authenticated session', { field: 'session_user_id' });
  }
}

/**
 * POST /redemptions and the site's submit (spec 4.4): check the code and its redemption state,
 * validate redeemInfo and pre-check a session before anything is written, then, under a lock
 * on the code row, open attempt 1 (or the next attempt after a failure) and start its workflow.
 * Test-product codes complete here, within the submission.
 */
export async function submitRedemption(
  deps: RedemptionDeps,
  who: Submitter,
  input: { code: string; redeemInfo: unknown },
): Promise<SubmitRedemptionResult> {
  const found = await findCode(deps.em, input.code, who);
  if (who.source === 'site' && found.is_test) {
    throw new ApiError('test_code_only', 'Integration test codes cannot be redeemed on the redemption site');
  }
  assertSubmittable(await redemptionOfCode(deps.em, found.id));
  const product = await productOf(deps.em, found.product_id);
  // Test codes accept any redeemInfo and keep none of it.
  const validated: ValidatedRedeemInfo = found.is_test ? { stored: {}, secrets: {} } : validateRedeemInfo(product.redeemFields, input.redeemInfo);
  if (!found.is_test) await preCheckSession(deps, product.id, validated);

  return deps.em.transactional(async (tx) => {
    const code = await findCode(tx, found.code, who, true);
    const existing = await redemptionOfCode(tx, code.id);
    assertSubmittable(existing);
    const ref: AttemptRef = existing ? { redemptionId: existing.id, attempt: existing.attempt + 1 } : { redemptionId: newId('rdm'), attempt: 1 };
    if (existing) {
      await tx.execute(
        `update redemptions set attempt = ?, status = 'pending', failure_code = null, deliverable = null, fulfilled_at = null,
           source = ?, updated_at = now() where id = ? and status = 'failed'`,
        [ref.attempt, who.source, ref.redemptionId],
      );
    } else {
      await tx.execute(
        `insert into redemptions (id, code_id, account_id, order_id, source, attempt, status) values (?, ?, ?, ?, ?, 1, 'pending')`,
        [ref.redemptionId, code.id, code.account_id, code.order_id, who.source],
      );
    }
    await tx.execute(`insert into redemption_attempts (redemption_id, attempt, status, redeem_info) values (?, ?, 'pending', ?::jsonb)`, [
      ref.redemptionId, ref.attempt, JSON.stringify(validated.stored),
    ]);
    if (code.is_test) {
      await finishAttempt(tx, ref, { status: 'fulfilled', deliverable: TEST_DELIVERABLE });
    } else {
      // Started before commit: if the start fails, nothing was consumed. A run whose transaction
      // then fails to commit never sees its attempt and ends itself (see redemptionWorkflow).
      await startAttemptWorkflow(deps, { ...ref, refreshSeconds: deps.refreshSeconds, secrets: validated.secrets });
    }
    return { redemptionId: ref.redemptionId, status: 'pending' as const, code: code.code, orderId: code.order_id };
  });
}

async function startAttemptWorkflow(deps: RedemptionDeps, input: RedemptionWorkflowInput): Promise<void> {
  const secrets = input.secrets && Object.keys(input.secrets).length > 0 ? input.secrets : undefined;
  await deps.temporal.client.workflow.start('redemptionWorkflow', {
    workflowId: redemptionWorkflowId(input.redemptionId, input.attempt),
    taskQueue: deps.temporal.taskQueue,
    args: [{ ...input, secrets }],
    // An attempt number is committed once; a run still holding its id can only be left over from
    // a submission whose transaction rolled back, so it is replaced.
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

// ---- reads ----

interface ViewRow {
  id: string;
  account_id: string;
  status: RedemptionStatus;
  failure_code: string | null;
  deliverable: string | null;
  created_at: Date;
  fulfilled_at: Date | null;
  code: string;
  order_id: string;
  product_id: string;
  external_order_id: string | null;
}

const VIEW_SQL = `select r.id, r.account_id, r.status, r.failure_code, r.deliverable, r.created_at, r.fulfilled_at,
    ic.code, ic.order_id, ic.product_id, o.external_order_id
  from redemptions r join issued_codes ic on ic.id = r.code_id join orders o on o.id = ic.order_id`;

function toView(row: ViewRow): RedemptionView {
  return {
    redemptionId: row.id,
    code: row.code,
    orderId: row.order_id,
    externalOrderId: row.external_order_id,
    productId: row.product_id,
    status: row.status,
    retryable: row.status === 'failed',
    failureCode: row.status === 'failed' ? row.failure_code : null,
    deliverable: row.status === 'fulfilled' ? row.deliverable : null,
    createdAt: unix(row.created_at),
    fulfilledAt: row.status === 'fulfilled' ? unix(row.fulfilled_at) : null,
  };
}

async function viewById(em: EntityManager, redemptionId: string): Promise<(RedemptionView & { accountId: string }) | undefined> {
  const [row] = await em.execute<ViewRow[]>(`${VIEW_SQL} where r.id = ?`, [redemptionId]);
  return row ? { ...toView(row), accountId: row.account_id } : undefined;
}

/** GET /redemptions/{id}: unknown ids and other accounts' ids are the same 404 not_found. */
export async function redemptionById(em: EntityManager, accountId: string, redemptionId: string): Promise<RedemptionView> {
  const found = await viewById(em, redemptionId);
  if (!found || found.accountId !== accountId) throw new ApiError('not_found', 'Redemption not found');
  const { accountId: _owner, ...view } = found;
  return view;
}

/** GET /redemptions?code=: `not_redeemed` with a null id when the code was never submitted. */
export async function redemptionByCode(em: EntityManager, who: Submitter, rawCode: string): Promise<RedemptionView> {
  const code = await findCode(em, rawCode, who);
  const [row] = await em.execute<ViewRow[]>(`${VIEW_SQL} where r.code_id = ?`, [code.id]);
  if (row) return toView(row);
  return {
    redemptionId: null,
    code: code.code,
    orderId: code.order_id,
    externalOrderId: code.external_order_id,
    productId: code.product_id,
    status: 'not_redeemed',
    retryable: false,
    failureCode: null,
    deliverable: null,
    createdAt: null,
    fulfilledAt: null,
  };
}

// ---- the public site ----

export interface SiteCodeLookup {
  code: string;
  productName: string;
  fields: RedeemFieldDef[];
  redemption: RedemptionView;
  /** The previous attempt failed but still holds supplier resources. */
  held: boolean;
}

/** The site's first step: a code an end customer typed, its product's fields and its state. */
export async function lookupCodeForSite(em: EntityManager, rawCode: string): Promise<SiteCodeLookup> {
  const found = await findCode(em, rawCode, { source: 'site' });
  if (found.is_test) throw new ApiError('test_code_only', 'Integration test codes cannot be redeemed on the redemption site');
  const product = await productOf(em, found.product_id);
  const existing = await redemptionOfCode(em, found.id);
  return {
    code: found.code,
    productName: product.nameEn ?? product.name,
    fields: displayFields(product.redeemFields, product.redeemFieldsEn),
    redemption: await redemptionByCode(em, { source: 'site' }, found.code),
    held: !!existing?.holds_resources && existing.status === 'failed',
  };
}

export async function productFieldsForCode(em: EntityManager, rawCode: string): Promise<{ productName: string; fields: RedeemFieldDef[] }> {
  const found = await findCode(em, rawCode, { source: 'site' });
  const product = await productOf(em, found.product_id);
  return { productName: product.nameEn ?? product.name, fields: displayFields(product.redeemFields, product.redeemFieldsEn) };
}

/** The site's status page: addressed by the unguessable redemption id its submitter was sent to. */
export async function siteRedemptionStatus(em: EntityManager, redemptionId: string): Promise<RedemptionView & { productName: string }> {
  const found = await viewById(em, redemptionId);
  if (!found) throw new ApiError('not_found', 'Redemption not found');
  const product = await productOf(em, found.productId);
  const { accountId: _owner, ...view } = found;
  return { ...view, productName: product.nameEn ?? product.name };
}

// ---- the state machine's steps, run by redemptionWorkflow's activities ----

interface AttemptRow {
  status: RedemptionStatus;
  redeem_info: Record<string, string>;
  upstream_ref: string | null;
}

async function attemptOf(em: EntityManager, ref: AttemptRef, lock = false): Promise<AttemptRow | undefined> {
  const [row] = await em.execute<AttemptRow[]>(
    `select status, redeem_info, upstream_ref from redemption_attempts where redemption_id = ? and attempt = ?${lock ? ' for update' : ''}`,
    [ref.redemptionId, ref.attempt],
  );
  return row;
}

/**
 * pending → processing. Returns undefined while the attempt is not visible (its submission has
 * not committed, or rolled back), `finished` when it already reached a terminal state.
 */
export async function beginAttempt(em: EntityManager, ref: AttemptRef): Promise<{ state: 'ready' | 'finished'; manual: boolean } | undefined> {
  return em.transactional(async (tx) => {
    const attempt = await attemptOf(tx, ref, true);
    if (!attempt) return undefined;
    const [{ fulfillment_mode: mode }] = await tx.execute<{ fulfillment_mode: string }[]>(
      `select p.fulfillment_mode from redemptions r join issued_codes ic on ic.id = r.code_id join products p on p.id = ic.product_id
        where r.id = ?`,
      [ref.redemptionId],
    );
    const manual = mode === 'manual';
    if (attempt.status === 'fulfilled' || attempt.status === 'failed') return { state: 'finished', manual };
    if (attempt.status === 'pending') {
      await tx.execute(`update redemption_attempts set status = 'processing' where redemption_id = ? and attempt = ?`, [ref.redemptionId, ref.attempt]);
      await tx.execute(`update redemptions set status = 'processing', updated_at = now() where id = ? and attempt = ? and status = 'pending'`, [
        ref.redemptionId, ref.attempt,
      ]);
    }
    return { state: 'ready', manual };
  });
}

/** What the upstream is sent for an attempt: the stored normalized values plus the password values. */
export async function upstreamSubmission(em: EntityManager, ref: AttemptRef, secrets: Record<string, string> = {}) {
  const attempt = await attemptOf(em, ref);
  if (!attempt) throw new Error(`attempt ${ref.redemptionId}:${ref.attempt} not found`);
  const [row] = await em.execute<{ product_id: string }[]>(
    'select ic.product_id from redemptions r join issued_codes ic on ic.id = r.code_id where r.id = ?',
    [ref.redemptionId],
  );
  const product = await productOf(em, row.product_id);
  return {
    upstreamRef: attempt.upstream_ref,
    submission: {
      key: `${ref.redemptionId}:${ref.attempt}`,
      productId: product.id,
      productName: product.nameEn ?? product.name,
      redeemInfo: { ...attempt.redeem_info, ...secrets },
      manual: product.fulfillmentMode === 'manual',
    },
  };
}

/** Records the upstream's reference; from now on the attempt holds supplier resources. */
export async function recordUpstreamRef(em: EntityManager, ref: AttemptRef, upstreamRef: string): Promise<void> {
  await em.execute(
    'update redemption_attempts set upstream_ref = ?, holds_resources = true where redemption_id = ? and attempt = ? and upstream_ref is null',
    [upstreamRef, ref.redemptionId, ref.attempt],
  );
}

/**
 * processing → fulfilled or failed, once per attempt: the attempt row, the redemption (if this
 * is still its current attempt) and the terminal event in one transaction. The deliverable is
 * masked against everything the customer submitted. Idempotent: a finished attempt is left alone.
 */
export async function finishAttempt(em: EntityManager, ref: AttemptRef, outcome: AttemptOutcome, secrets: Record<string, string> = {}): Promise<void> {
  await em.transactional(async (tx) => {
    const attempt = await attemptOf(tx, ref, true);
    if (!attempt || attempt.status === 'fulfilled' || attempt.status === 'failed') return;
    const fulfilled = outcome.status === 'fulfilled';
    const deliverable = fulfilled ? maskDeliverable(outcome.deliverable, [...Object.values(attempt.redeem_info), ...Object.values(secrets)]) : null;
    const failureCode = fulfilled ? null : outcome.failureCode;
    await tx.execute(
      `update redemption_attempts set status = ?, failure_code = ?, holds_resources = ?, finished_at = now()
        where redemption_id = ? and attempt = ?`,
      [outcome.status, failureCode, !fulfilled && outcome.holdsResources, ref.redemptionId, ref.attempt],
    );
    const [updated] = await tx.execute<{ fulfilled_at: Date | null }[]>(
      `update redemptions set status = ?, failure_code = ?, deliverable = ?, fulfilled_at = ?, updated_at = now()
        where id = ? and attempt = ? returning fulfilled_at`,
      [outcome.status, failureCode, deliverable, fulfilled ? new Date() : null, ref.redemptionId, ref.attempt],
    );
    if (!updated) return;
    await recordRedemptionEvent(tx, ref, outcome.status, failureCode, unix(updated.fulfilled_at));
  });
}

/**
 * `redemption.fulfilled` / `redemption.failed` with the spec's id shape, for codes of wholesale
 * API orders only; never the deliverable or the submitted details (spec part 6).
 */
async function recordRedemptionEvent(
  em: EntityManager,
  ref: AttemptRef,
  status: 'fulfilled' | 'failed',
  failureCode: string | null,
  fulfilledAt: number | null,
): Promise<void> {
  const [row] = await em.execute<{ account_id: string; code: string; order_id: string; product_id: string; external_order_id: string | null; channel: string }[]>(
    `select r.account_id, ic.code, ic.order_id, ic.product_id, o.external_order_id, o.channel
       from redemptions r join issued_codes ic on ic.id = r.code_id join orders o on o.id = ic.order_id where r.id = ?`,
    [ref.redemptionId],
  );
  if (!row || row.channel !== 'wholesale_api') return;
  const type = status === 'fulfilled' ? 'redemption.fulfilled' : 'redemption.failed';
  await recordEvent(
    em,
    row.account_id,
    type,
    {
      orderId: row.order_id,
      externalOrderId: row.external_order_id,
      productId: row.product_id,
      redemptionId: ref.redemptionId,
      code: row.code,
      status,
      failureCode,
      retryable: status === 'failed',
      fulfilledAt,
    },
    redemptionEventId(ref.redemptionId, ref.attempt, type),
  );
}

/** The upstream let go of a failed attempt: a resubmission is allowed again. */
export async function releaseAttemptResources(em: EntityManager, ref: AttemptRef): Promise<void> {
  await em.execute(
    `update redemption_attempts set holds_resources = false where redemption_id = ? and attempt = ? and status = 'failed'`,
    [ref.redemptionId, ref.attempt],
  );
}

// ---- support ----

/**
 * `npx wholesale support redemption fulfill|reject <id>`: sends the operator's decision to the
 * current attempt's workflow (which records the outcome) and logs the support action.
 */
export async function decideRedemption(
  deps: { em: EntityManager; temporal: TemporalHandle },
  redemptionId: string,
  decision: OperatorDecision,
): Promise<AttemptRef> {
  const [row] = await deps.em.execute<{ attempt: number; status: string }[]>('select attempt, status from redemptions where id = ?', [redemptionId]);
  if (!row) throw new ApiError('not_found', `Redemption ${redemptionId} not found`);
  if (row.status !== 'pending' && row.status !== 'processing') {
    throw new ApiError('invalid_input', `Redemption ${redemptionId} is ${row.status}; only a pending or processing redemption takes a decision`);
  }
  const ref = { redemptionId, attempt: row.attempt };
  await deps.temporal.client.workflow.getHandle(redemptionWorkflowId(redemptionId, row.attempt)).signal(operatorDecisionSignal, decision);
  await deps.em.execute(
    'insert into support_actions (subject_id, action, actor, reason, payload) values (?, ?, ?, ?, ?::jsonb)',
    [redemptionId, `redemption.${decision.decision}`, decision.actor, decision.reason, JSON.stringify({ attempt: row.attempt })],
  );
  return ref;
}

/** The redemption as support sees it, once the attempt has left pending/processing (or the deadline passed). */
export async function settledRedemption(em: EntityManager, ref: AttemptRef, timeoutMs: number): Promise<RedemptionView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await viewById(em.fork(), ref.redemptionId);
    if (!view) throw new ApiError('not_found', `Redemption ${ref.redemptionId} not found`);
    const { accountId: _owner, ...rest } = view;
    if (rest.status === 'fulfilled' || rest.status === 'failed' || Date.now() > deadline) return rest;
    await new Promise((r) => setTimeout(r, 250));
  }
}
