import type { EntityManager } from '@mikro-orm/postgresql';
import { ProductSchema, type Product } from '../../db/entities/all-entities';
import { insertAttempt } from '../../db/redemption-attempts-store';
import {
  codeRow,
  insertRedemption,
  redemptionOfCodeRow,
  redemptionState,
  reopenRedemption,
  viewRowByCodeId,
  viewRowById,
  type CodeRow,
  type RedemptionRow,
  type ViewRow,
} from '../../db/redemptions-store';
import { insertSupportAction } from '../../db/support-store';
import { CODE_RE, newId, normalizeCode } from '../../codes';
import { ApiError } from '../../domain/errors';
import {
  displayFields,
  validateRedeemInfo,
  type RedeemFieldDef,
  type ValidatedRedeemInfo,
} from '../../domain/redeem-info';
import { UpstreamUnavailableError, type RedemptionUpstream } from '../../providers/redemption-upstream';
import type { TemporalHandle } from '../../temporal/client';
import type { KeyRing } from '../../temporal/codec';
import {
  decisionSubject,
  operatorDecisionSignal,
  redemptionWorkflowId,
  type AttemptRef,
  type OperatorDecision,
  type RedemptionStatus,
} from '../../contracts/redemptions-contract';
import { redemptionStarter } from '../../temporal/starters';
import type { TimingConfig } from '../../temporal/timing';
import { finishAttempt, stageSecrets } from './redemption-attempts';
import { requestSupportAction } from '../supply/support-requests';

// Server-side redemption (spec 4.4, 3.4) and the public redemption site share this module: one
// code lookup, one validation, one state machine. Postgres holds the facts (redemptions, one row
// per code, and redemption_attempts, one row per submission); redemptionWorkflow owns the time.

export const TEST_DELIVERABLE =
  'Test redemption completed: this integration test code carries no subscription or benefit.';

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
  /** Where the redemption workflow's refresh cadence comes from. */
  config: TimingConfig;
  /** Encrypts the password values staged for the upstream call. */
  keys: KeyRing;
}

/** Who submits: a reseller's key (only its own codes) or the public site (any wholesale code). */
export type Submitter = { source: 'api'; accountId: string } | { source: 'site' };

const unix = (d: Date | string | null | undefined) => (d ? Math.floor(new Date(d).getTime() / 1000) : null);

// One message for every reason, so a caller learns nothing about codes that are not theirs.
const invalidCode = () =>
  new ApiError('invalid_code', 'This code cannot be redeemed: it is unknown, voided or not issued to you');

/**
 * A platform code of a delivered order that the submitter may redeem. Unknown, voided, gift-card
 * (direct-code, out of scope) and other accounts' codes are all the same `invalid_code`.
 */
async function findCode(em: EntityManager, rawCode: string, who: Submitter, lock = false): Promise<CodeRow> {
  const code = normalizeCode(rawCode);
  if (!CODE_RE.test(code)) throw invalidCode();
  const row = await codeRow(em, code, lock);
  if (!row || row.voided || row.kind !== 'platform' || row.order_status !== 'delivered') throw invalidCode();
  if (who.source === 'api' && row.account_id !== who.accountId) throw invalidCode();
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
    throw new ApiError(
      'retry_conflict',
      'The previous attempt still holds supplier resources; query the redemption and retry later',
      {
        redemptionId: existing.id,
      },
    );
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
      throw new ApiError(
        'session_validation_unavailable',
        'The session pre-check is temporarily unavailable; the code was not used, retry',
      );
    }
    throw err;
  }
  if (verdict === 'invalid') {
    throw new ApiError('invalid_session_json', 'The session was not recognised as an authenticated session', {
      field: 'session_user_id',
    });
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
  assertSubmittable(await redemptionOfCodeRow(deps.em, found.id));
  const product = await productOf(deps.em, found.product_id);
  // Test codes accept any redeemInfo and keep none of it.
  const validated: ValidatedRedeemInfo = found.is_test
    ? { stored: {}, secrets: {} }
    : validateRedeemInfo(product.redeemFields, input.redeemInfo);
  if (!found.is_test) await preCheckSession(deps, product.id, validated);

  return deps.em.transactional(async (tx) => {
    const code = await findCode(tx, found.code, who, true);
    const existing = await redemptionOfCodeRow(tx, code.id);
    assertSubmittable(existing);
    const ref: AttemptRef = existing
      ? { redemptionId: existing.id, attempt: existing.attempt + 1 }
      : { redemptionId: newId('rdm'), attempt: 1 };
    if (existing) {
      await reopenRedemption(tx, ref.redemptionId, ref.attempt, who.source);
    } else {
      await insertRedemption(tx, {
        id: ref.redemptionId,
        codeId: code.id,
        accountId: code.account_id,
        orderId: code.order_id,
        source: who.source,
      });
    }
    await insertAttempt(tx, ref, validated.stored);
    if (code.is_test) {
      await finishAttempt(tx, deps.keys, ref, { status: 'fulfilled', deliverable: TEST_DELIVERABLE });
    } else {
      await stageSecrets(tx, deps.keys, ref, validated.secrets);
      // Started before commit: if the start fails, nothing was consumed. A run whose transaction
      // then fails to commit never sees its attempt and ends itself (see redemptionWorkflow).
      await redemptionStarter(deps.temporal, deps.config, ref).start();
    }
    return { redemptionId: ref.redemptionId, status: 'pending' as const, code: code.code, orderId: code.order_id };
  });
}

// ---- reads ----

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

async function viewById(
  em: EntityManager,
  redemptionId: string,
): Promise<(RedemptionView & { accountId: string }) | undefined> {
  const row = await viewRowById(em, redemptionId);
  return row ? { ...toView(row), accountId: row.account_id } : undefined;
}

/** GET /redemptions/{id}: unknown ids and other accounts' ids are the same 404 not_found. */
export async function redemptionById(
  em: EntityManager,
  accountId: string,
  redemptionId: string,
): Promise<RedemptionView> {
  const found = await viewById(em, redemptionId);
  if (!found || found.accountId !== accountId) throw new ApiError('not_found', 'Redemption not found');
  const { accountId: _owner, ...view } = found;
  return view;
}

/** GET /redemptions?code=: `not_redeemed` with a null id when the code was never submitted. */
export async function redemptionByCode(em: EntityManager, who: Submitter, rawCode: string): Promise<RedemptionView> {
  const code = await findCode(em, rawCode, who);
  const row = await viewRowByCodeId(em, code.id);
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
  if (found.is_test)
    throw new ApiError('test_code_only', 'Integration test codes cannot be redeemed on the redemption site');
  const product = await productOf(em, found.product_id);
  const existing = await redemptionOfCodeRow(em, found.id);
  return {
    code: found.code,
    productName: product.nameEn ?? product.name,
    fields: displayFields(product.redeemFields, product.redeemFieldsEn),
    redemption: await redemptionByCode(em, { source: 'site' }, found.code),
    held: !!existing?.holds_resources && existing.status === 'failed',
  };
}

export async function productFieldsForCode(
  em: EntityManager,
  rawCode: string,
): Promise<{ productName: string; fields: RedeemFieldDef[] }> {
  const found = await findCode(em, rawCode, { source: 'site' });
  const product = await productOf(em, found.product_id);
  return {
    productName: product.nameEn ?? product.name,
    fields: displayFields(product.redeemFields, product.redeemFieldsEn),
  };
}

/** The site's status page: addressed by the unguessable redemption id its submitter was sent to. */
export async function siteRedemptionStatus(
  em: EntityManager,
  redemptionId: string,
): Promise<RedemptionView & { productName: string }> {
  const found = await viewById(em, redemptionId);
  if (!found) throw new ApiError('not_found', 'Redemption not found');
  const product = await productOf(em, found.productId);
  const { accountId: _owner, ...view } = found;
  return { ...view, productName: product.nameEn ?? product.name };
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
  const row = await redemptionState(deps.em, redemptionId);
  if (!row) throw new ApiError('not_found', `Redemption ${redemptionId} not found`);
  if (row.status !== 'pending' && row.status !== 'processing') {
    throw new ApiError(
      'invalid_input',
      `Redemption ${redemptionId} is ${row.status}; only a pending or processing redemption takes a decision`,
    );
  }
  const ref = { redemptionId, attempt: row.attempt };
  // On record first: the attempt's activity records the outcome only against this row.
  const requestId = await requestSupportAction(deps.em, {
    subjectId: decisionSubject(ref),
    action: `redemption.${decision.decision}`,
    actor: decision.actor,
    reason: decision.reason,
  });
  await deps.temporal.client.workflow
    .getHandle(redemptionWorkflowId(redemptionId, row.attempt))
    .signal(operatorDecisionSignal, { ...decision, requestId });
  await insertSupportAction(deps.em, {
    subjectId: redemptionId,
    action: `redemption.${decision.decision}`,
    actor: decision.actor,
    reason: decision.reason,
    payload: { attempt: row.attempt },
  });
  return ref;
}

/** The redemption as support sees it, once the attempt has left pending/processing (or the deadline passed). */
export async function settledRedemption(
  em: EntityManager,
  ref: AttemptRef,
  timeoutMs: number,
): Promise<RedemptionView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await viewById(em.fork(), ref.redemptionId);
    if (!view) throw new ApiError('not_found', `Redemption ${ref.redemptionId} not found`);
    const { accountId: _owner, ...rest } = view;
    if (rest.status === 'fulfilled' || rest.status === 'failed' || Date.now() > deadline) return rest;
    await new Promise((r) => setTimeout(r, 250));
  }
}
