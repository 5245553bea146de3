import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt } from './entity-columns';

/** Who did what to an order or redemption, and why (support actions). */
export interface SupportAction {
  id: number;
  subjectId: string;
  action: string;
  actor: string;
  reason: string;
  payload: Record<string, unknown>;
  createdAt: Date & Opt;
}
export const SupportActionSchema = new EntitySchema<SupportAction>({
  name: 'SupportAction',
  tableName: 'support_actions',
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    subjectId: { type: 'string', index: true },
    action: { type: 'string', length: 32 },
    actor: { type: 'string' },
    reason: { type: 'text' },
    payload: { type: 'json' },
    createdAt,
  },
});
