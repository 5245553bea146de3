import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config';
import { accountNameAndEmail, accountsMatching } from '../db/accounts-store';
import type { Order } from '../db/entities/all-entities';
import { ordersByAnyId } from '../db/orders-store';
import { isUuid } from '../domain/redeem-info';
import type { TemporalHandle } from '../temporal/client';
import { orderWorkflowId } from '../contracts/orders-contract';
import { procurementStateQuery, procurementWorkflowId, type ProcurementState } from '../contracts/procurement-contract';
import { topupWorkflowId } from '../contracts/topups-contract';

// Read models only the console needs, over the stores' queries: search across orders, accounts
// and reseller emails, the workflows of an order and where the Temporal UI shows them.
// Never codes, redeem details or secrets: only ids, states and what the supplier answered.

/** How long the queue waits for one workflow's `state` query before showing it as unknown. */
const STATE_QUERY_MS = 2_000;

export interface SearchHit {
  kind: 'order' | 'account';
  id: string;
  accountId: string;
  label: string;
  detail: string;
}

/**
 * Orders by id or the reseller's id (externalOrderId, externalTopupId); accounts by id, name or
 * the email of the reseller who signs in to them. Exact ids, names and emails by substring.
 */
export async function search(em: EntityManager, q: string, limit = 50): Promise<SearchHit[]> {
  const term = q.trim();
  if (!term) return [];
  const orders = await ordersByAnyId(em, term, limit);
  const accounts = await accountsMatching(em, term, isUuid(term), limit);
  return [
    ...orders.map((o) => ({
      kind: 'order' as const,
      id: o.id,
      accountId: o.account_id,
      label: o.external ?? '—',
      detail: `${o.kind} · ${o.status}`,
    })),
    ...accounts.map((a) => ({
      kind: 'account' as const,
      id: a.id,
      accountId: a.id,
      label: a.name,
      detail: a.email ?? 'no sign-in user',
    })),
  ];
}

export async function accountHeader(
  em: EntityManager,
  accountId: string,
): Promise<{ name: string; email: string | null } | undefined> {
  if (!isUuid(accountId)) return undefined;
  return accountNameAndEmail(em, accountId);
}

/** The Temporal Web UI's page of a workflow (TEMPORAL_UI_ORIGIN, or the dev server's UI port). */
export function temporalUiUrl(
  config: Pick<Config, 'TEMPORAL_UI_ORIGIN' | 'TEMPORAL_UI_PORT' | 'TEMPORAL_NAMESPACE'>,
  workflowId: string,
): string {
  const origin = (config.TEMPORAL_UI_ORIGIN ?? `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`).replace(/\/$/, '');
  return `${origin}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The workflows an order lives in: its placement (order or top-up) and, for direct codes, procurement. */
export function workflowsOf(
  order: Pick<Order, 'id' | 'accountId' | 'kind' | 'externalOrderId' | 'externalTopupId' | 'deliveryType'>,
): string[] {
  const ids: string[] = [];
  if (order.kind === 'topup') ids.push(topupWorkflowId(order.accountId, order.externalTopupId ?? order.id));
  else if (order.externalOrderId) ids.push(orderWorkflowId(order.accountId, order.externalOrderId));
  if (order.deliveryType === 'direct_code') ids.push(procurementWorkflowId(order.id));
  return ids;
}

/**
 * The procurement `state` query of each order, asked in parallel; an order whose workflow does not
 * answer in time (gone, no worker) maps to null, so one stuck query does not hold the page.
 */
export async function procurementStates(
  temporal: TemporalHandle,
  orderIds: string[],
): Promise<Map<string, ProcurementState | null>> {
  const entries = await Promise.all(
    orderIds.map(async (id) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<null>((ok) => {
        timer = setTimeout(() => ok(null), STATE_QUERY_MS);
      });
      const query = temporal.client.workflow
        .getHandle(procurementWorkflowId(id))
        .query(procurementStateQuery)
        .catch(() => null);
      try {
        return [id, await Promise.race([query, timeout])] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return new Map(entries);
}
