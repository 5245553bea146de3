import { EntitySchema, type Opt } from '@mikro-orm/core';
import { createdAt, money } from './entity-columns';

/** The ledger: every balance change, with the balance it left. Its sum equals the balance. */
export interface LedgerTransaction {
  id: number;
  accountId: string;
  type: 'topup' | 'purchase' | 'refund' | 'adjust';
  amount: string;
  balanceAfter: string;
  orderId?: string | null;
  /** Makes each money movement happen once: purchase:<orderId>, topup:<orderId>, ... */
  idempotencyKey: string;
  note?: string | null;
  createdAt: Date & Opt;
}
export const LedgerTransactionSchema = new EntitySchema<LedgerTransaction>({
  name: 'LedgerTransaction',
  tableName: 'ledger_transactions',
  indexes: [{ properties: ['accountId', 'id'] }],
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    accountId: { type: 'uuid' },
    type: { type: 'string', length: 16 },
    amount: { ...money },
    balanceAfter: { ...money },
    orderId: { type: 'string', nullable: true },
    idempotencyKey: { type: 'string', unique: true },
    note: { type: 'text', nullable: true },
    createdAt,
  },
});
