import type { Request, Response, Router } from 'express';
import type { AppContext } from '../http/context';
import { formError, noticeFrom } from '../pages/account/account-area';
import { actorLabel } from '../services/accounts/audit';
import {
  claimRedemption,
  decideQueued,
  listQueue,
  type OperatorOutcome,
  type QueueDeps,
} from '../services/redemptions/operator-queue';
import { settledRedemption } from '../services/redemptions/redemptions';
import type { KeyRing } from '../temporal/codec';
import { act, desk, only, type Desk } from './console-guard';
import { FailForm, FulfilForm, IdParams } from './console-forms';
import {
  consolePage,
  csrfField,
  errorBox,
  html,
  noticeBox,
  plainMessage,
  reasonField,
  send,
  when,
} from './console-layout';

// The redemption operator queue (REDEMPTION_UPSTREAM=operators, and manual products): what
// waits, who holds a claim; claim one, then fulfil or fail it, through the operator-queue
// service of the admin API and CLI. Redeem details appear in one place only: the page that
// answers the claim (a POST, never cached or linked), for the member who holds it. Claiming
// again renews the claim and shows them again.

const NOTICES = {
  fulfilled: 'The redemption is fulfilled; the reseller gets the deliverable.',
  failed: 'The redemption is failed.',
};

async function queuePage(d: Desk, opts: { notice?: string; error?: string } = {}): Promise<string> {
  const items = await listQueue(d.em, 100);
  return consolePage(d.viewer, {
    title: 'Redemption queue',
    section: 'redemptions',
    body: html`<h1>Redemptions waiting for an operator</h1>
${noticeBox(opts.notice)}${errorBox(opts.error)}
<p class="muted">Oldest first. Claim one to see what the customer submitted; a claim holds for a while and is renewed by claiming again.</p>
${
  items.length === 0
    ? html`<p class="muted" data-testid="redemptions-empty">Nothing is waiting.</p>`
    : html`<table data-testid="redemption-queue"><thead><tr><th>Redemption</th><th>Product</th><th>Status</th><th>Queued</th><th>Claim</th><th></th></tr></thead>
<tbody>${items.map(
        (r) => html`<tr data-testid="redemption-row" data-redemption-id="${r.redemptionId}">
  <td class="code">${r.redemptionId} <span class="muted">#${r.attempt}</span></td><td>${r.productName}</td><td>${r.status}</td>
  <td>${when(r.queuedAt)} <span class="muted">(${Math.round(r.ageSeconds / 60)} min)</span></td>
  <td data-testid="claim-holder">${r.claim ? html`${r.claim.holder} until ${when(r.claim.expiresAt)}` : html`<span class="muted">free</span>`}</td>
  <td>${
    d.may('support')
      ? html`<form method="post" action="/console/redemptions/${r.redemptionId}/claim" class="inline">${csrfField(d.viewer.csrf)}<button type="submit" data-testid="claim">Claim</button></form>`
      : ''
  }</td></tr>`,
      )}</tbody></table>`
}`,
  });
}

type Claimed = Awaited<ReturnType<typeof claimRedemption>>;

function claimPage(d: Desk, c: Claimed): string {
  const base = `/console/redemptions/${c.redemptionId}`;
  return consolePage(d.viewer, {
    title: `Redemption ${c.redemptionId}`,
    section: 'redemptions',
    body: html`<h1>Redemption <span class="code">${c.redemptionId}</span></h1>
<p class="notice" role="status">You hold this redemption until ${when(c.claim.expiresAt)}. What the customer submitted is shown only here, only to you.</p>
<dl data-testid="redeem-info"><dt>Product</dt><dd>${c.productName}</dd>
${Object.entries(c.redeemInfo).map(([k, v]) => html`<dt>${k}</dt><dd class="code" data-testid="redeem-field">${v}</dd>`)}</dl>
<form method="post" action="${base}/fulfil" class="action">${csrfField(d.viewer.csrf)}
  <label for="deliverable">What the reseller will see</label>
  <textarea id="deliverable" name="deliverable" maxlength="2000" required data-testid="deliverable"></textarea>
  ${reasonField('fulfil-reason')}<button type="submit" data-testid="fulfil">Fulfil</button></form>
<form method="post" action="${base}/fail" class="action">${csrfField(d.viewer.csrf)}
  <label for="failureCode">Failure</label>
  <select id="failureCode" name="failureCode"><option value="fulfillment_failed">fulfillment_failed (could not be done)</option>
  <option value="rejected_by_operator">rejected_by_operator (the details are wrong)</option></select>
  <label><input type="checkbox" name="holdsResources" value="on" style="width:auto"> The supplier still holds resources for it</label>
  ${reasonField('fail-reason')}<button type="submit" class="danger" data-testid="fail">Fail</button></form>
<p><a href="/console/redemptions">Back to the queue</a></p>`,
  });
}

export function redemptionRoutes(router: Router, ctx: AppContext, keys: KeyRing): void {
  const deps = (d: Desk): QueueDeps => ({
    em: d.em,
    temporal: ctx.temporal,
    keys,
    claimSeconds: ctx.config.OPERATOR_CLAIM_SECONDS,
  });

  router.get('/redemptions', async (req, res) => {
    send(res, 200, await queuePage(desk(req, res, ctx), { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/redemptions/:id/claim', only('support'), async (req: Request, res: Response) => {
    const d = desk(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    const reason = 'claimed from the console';
    try {
      const claimed = await act(d, { action: 'redemption.claim', subjectId: id, reason }, () =>
        claimRedemption(deps(d), id, { actor: actorLabel(d.actor), reason }),
      );
      send(res, 200, claimPage(d, claimed));
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await queuePage({ ...d, em: d.em.fork() }, { error: plainMessage(e) }), e.headers);
    }
  });

  const decide = (outcome: 'fulfilled' | 'failed') => async (req: Request, res: Response) => {
    const d = desk(req, res, ctx);
    const { id } = IdParams.parse(req.params);
    try {
      let decision: OperatorOutcome;
      let reason: string;
      if (outcome === 'fulfilled') {
        const form = FulfilForm.parse(req.body ?? {});
        decision = { outcome, deliverable: form.deliverable };
        reason = form.reason;
      } else {
        const form = FailForm.parse(req.body ?? {});
        decision = { outcome, failureCode: form.failureCode, holdsResources: form.holdsResources === 'on' };
        reason = form.reason;
      }
      // The deliverable may repeat what the customer submitted: the audit row names the outcome only.
      const details =
        decision.outcome === 'failed'
          ? { failureCode: decision.failureCode, holdsResources: decision.holdsResources }
          : {};
      await act(
        d,
        { action: outcome === 'fulfilled' ? 'redemption.fulfil' : 'redemption.fail', subjectId: id, reason, details },
        async () =>
          settledRedemption(
            d.em.fork(),
            await decideQueued(deps(d), id, { actor: actorLabel(d.actor), reason }, decision),
            5_000,
          ),
      );
      res.redirect(303, `/console/redemptions?notice=${outcome}`);
    } catch (err) {
      const e = formError(err);
      send(res, e.status, await queuePage({ ...d, em: d.em.fork() }, { error: plainMessage(e) }), e.headers);
    }
  };
  router.post('/redemptions/:id/fulfil', only('support'), decide('fulfilled'));
  router.post('/redemptions/:id/fail', only('support'), decide('failed'));
}
