import { randomInt } from 'node:crypto';
import { z } from 'zod';
import type { Orm } from '../../db/orm';
import { insertSupplierPurchase, supplierPurchase } from './sandbox-store';
import { CODE_ALPHABET } from '../../codes';
import { SupplierPermanentError, SupplierTransientError, type ProcureResult, type Supplier } from '../supplier';

// The built-in sandbox gift-card supplier. Like a real supplier it remembers each purchase by its
// idempotency key (in `sandbox_supplier_orders`, so a worker restarted mid-call is answered the
// same), and it is scriptable per product: how many units each call hands over, transient and
// permanent failures, and a delay. Unscripted products are supplied in full at once.
//
// Tests steer it in-process through `sandboxSupplierControl`; a separate worker process (and
// `npm start` demos) are scripted by SANDBOX_SUPPLIER_SCRIPT, which the composition root
// (src/providers/all-providers.ts) loads at start, for example
//   {"prod_robux_400": {"steps": [1, "transient", 1], "then": 0, "delayMs": 500}, "*": {"then": "all"}}

/** What one call does: hand over at most N units, all asked, or fail. */
export const SupplierStep = z.union([z.number().int().min(0), z.enum(['all', 'transient', 'permanent'])]);
export type SupplierStep = z.infer<typeof SupplierStep>;

export const SupplierScript = z
  .object({
    /** One step per call, in order, for this product. */
    steps: z.array(SupplierStep).default([]),
    /** The step of every call after `steps` ran out. */
    then: SupplierStep.default('all'),
    /** Each call takes this long before it answers. */
    delayMs: z.number().int().min(0).max(600_000).default(0),
  })
  .strict();
export type SupplierScript = z.infer<typeof SupplierScript>;

const ScriptTable = z.record(z.string(), SupplierScript);

export interface SupplierCall {
  productId: string;
  qty: number;
  idempotencyKey: string;
  /** `replayed`: a repeated key, answered from the recorded purchase without buying again. */
  outcome: 'supplied' | 'replayed' | 'transient' | 'permanent';
  units: number;
}

const MAX_CALLS_KEPT = 1000;

/** The sandbox's script and call log, shared by every SandboxSupplier in this process. */
export class SandboxSupplierControl {
  private scripts = new Map<string, SupplierScript>();
  private cursors = new Map<string, number>();
  /** Every call this process answered, oldest first. */
  readonly calls: SupplierCall[] = [];

  /** Scripts a product (or `*`, every product without its own script); its steps start over. */
  script(productId: string, script: z.input<typeof SupplierScript>): this {
    this.scripts.set(productId, SupplierScript.parse(script));
    this.cursors.delete(productId);
    return this;
  }

  /** Replaces every script with a JSON table `{productId | "*": script}` (SANDBOX_SUPPLIER_SCRIPT). */
  load(json: string | undefined): this {
    this.scripts.clear();
    this.cursors.clear();
    if (!json) return this;
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      throw new Error('SANDBOX_SUPPLIER_SCRIPT is not valid JSON');
    }
    const table = ScriptTable.safeParse(parsed);
    if (!table.success)
      throw new Error(
        `SANDBOX_SUPPLIER_SCRIPT: ${table.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    for (const [productId, script] of Object.entries(table.data)) this.scripts.set(productId, script);
    return this;
  }

  reset(): void {
    this.scripts.clear();
    this.cursors.clear();
    this.calls.length = 0;
  }

  callsFor(productId: string): SupplierCall[] {
    return this.calls.filter((c) => c.productId === productId);
  }

  /** The step of the next new purchase of a product. */
  next(productId: string): SupplierStep {
    const key = this.scripts.has(productId) ? productId : '*';
    const script = this.scripts.get(key);
    if (!script) return 'all';
    const i = this.cursors.get(key) ?? 0;
    this.cursors.set(key, i + 1);
    return i < script.steps.length ? script.steps[i] : script.then;
  }

  delayOf(productId: string): number {
    return (this.scripts.get(productId) ?? this.scripts.get('*'))?.delayMs ?? 0;
  }

  record(call: SupplierCall): void {
    this.calls.push(call);
    if (this.calls.length > MAX_CALLS_KEPT) this.calls.splice(0, this.calls.length - MAX_CALLS_KEPT);
  }
}

export const sandboxSupplierControl = new SandboxSupplierControl();

/** `GC-XXXX-XXXX-XXXX`: never the platform code shape, so the two can never collide. */
export function generateGiftCardCode(): string {
  const group = () => Array.from({ length: 4 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
  return `GC-${group()}-${group()}-${group()}`;
}

export class SandboxSupplier implements Supplier {
  constructor(
    private readonly orm: Orm,
    private readonly control: SandboxSupplierControl,
  ) {}

  async procure(productId: string, qty: number, idempotencyKey: string): Promise<ProcureResult> {
    const delayMs = this.control.delayOf(productId);
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    const em = this.orm.em.fork();
    const known = await this.purchase(idempotencyKey);
    if (known) {
      this.control.record({ productId, qty, idempotencyKey, outcome: 'replayed', units: known.length });
      return { codes: known };
    }
    const step = this.control.next(productId);
    if (step === 'transient' || step === 'permanent') {
      this.control.record({ productId, qty, idempotencyKey, outcome: step, units: 0 });
      if (step === 'permanent') throw new SupplierPermanentError(`sandbox supplier: ${productId} cannot be supplied`);
      throw new SupplierTransientError(`sandbox supplier: ${productId} temporarily unavailable`);
    }
    const units = step === 'all' ? qty : Math.min(step, qty);
    const codes = Array.from({ length: units }, generateGiftCardCode);
    let inserted: string[] | undefined;
    try {
      inserted = await insertSupplierPurchase(em, { idempotencyKey, productId, requested: qty, codes });
    } catch {
      // The driver's error quotes the codes; a supplier that failed to record a sale sold nothing.
      throw new SupplierTransientError('sandbox supplier: could not record the purchase');
    }
    // A concurrent call with the same key recorded first: its purchase is the one.
    const result = inserted ?? (await this.purchase(idempotencyKey)) ?? [];
    this.control.record({
      productId,
      qty,
      idempotencyKey,
      outcome: inserted ? 'supplied' : 'replayed',
      units: result.length,
    });
    return { codes: result };
  }

  private async purchase(idempotencyKey: string): Promise<string[] | undefined> {
    return supplierPurchase(this.orm.em.fork(), idempotencyKey);
  }
}
