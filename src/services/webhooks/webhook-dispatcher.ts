import { Client as PgClient } from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import { claimUndispatchedEvents, listenForEvents, markEventsDispatched } from '../../db/events-store';
import type { Orm } from '../../db/orm';
import type { TemporalHandle } from '../../temporal/client';
import { emitDueProductUpdates } from '../supply/product-updates';
import { insertDelivery, startDeliveryWorkflow } from './webhooks';

// The outbox relay. Producers only write events (recordEvent, in their own transaction, which
// also NOTIFYs on commit); product changes are marks, turned into product.updated events here once
// their coalescing window has passed (./product-updates). Here, in the worker process, each new event gets its delivery row
// when its account has a webhook configured, and its delivery workflow is started. A periodic
// sweep covers missed notifications and downtime; a delivery whose workflow was lost (never
// started, or closed without settling it) is the reconciler's (src/services/reconcile.ts), the
// one mechanism for every lifecycle. Every step is idempotent, so several workers may run this.

export interface DispatcherDeps {
  orm: Orm;
  temporal: TemporalHandle;
  config: Config;
  logger: Logger;
  databaseUrl: string;
  /** How often the sweep runs even without notifications. */
  sweepMs?: number;
}

const BATCH = 100;

export class WebhookDispatcher {
  private listener?: PgClient;
  private timer?: NodeJS.Timeout;
  private reconnect?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly deps: DispatcherDeps) {}

  async start(): Promise<void> {
    await this.listen();
    this.timer = setInterval(() => this.kick(), this.deps.sweepMs ?? 2000);
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.reconnect);
    await this.running;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /** Runs a pass now, or once more after the pass in progress. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.deps.logger.warn({ err }, 'webhook dispatch pass failed; the sweep retries');
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = undefined;
    });
  }

  /** Relays every undispatched event, after writing the product.updated events now due. */
  async pass(): Promise<void> {
    try {
      await emitDueProductUpdates(this.deps.orm.em.fork(), {
        coalesceSeconds: this.deps.config.PRODUCT_UPDATE_COALESCE_SECONDS,
        stockDisplayCap: this.deps.config.STOCK_DISPLAY_CAP,
      });
    } catch (err) {
      // The marks stay: the next pass announces them. Relaying must not wait for that.
      this.deps.logger.warn({ err }, 'product.updated announcement failed; the sweep retries');
    }
    for (;;) {
      const { decided, created } = await this.relayBatch();
      await Promise.all(created.map((d) => this.ensureRunning(d)));
      if (decided < BATCH || this.stopped) break;
    }
  }

  /** Decides the delivery of up to one batch of undispatched events, in one transaction. */
  private async relayBatch(): Promise<{ decided: number; created: { id: string; accountId: string }[] }> {
    return this.deps.orm.em.fork().transactional(async (tx) => {
      const events = await claimUndispatchedEvents(tx, BATCH);
      const created: { id: string; accountId: string }[] = [];
      for (const e of events) {
        if (!e.configured) continue;
        const id = await insertDelivery(tx, e.id, e.account_id);
        if (id) created.push({ id, accountId: e.account_id });
      }
      if (events.length)
        await markEventsDispatched(
          tx,
          events.map((e) => e.id),
        );
      return { decided: events.length, created };
    });
  }

  private async ensureRunning(delivery: { id: string; accountId: string }): Promise<void> {
    try {
      await startDeliveryWorkflow(this.deps.temporal, this.deps.config, delivery, 'ensure');
    } catch (err) {
      // The delivery row is durable: it becomes overdue and the reconciler starts it.
      this.deps.logger.warn({ err, deliveryId: delivery.id }, 'could not start webhook delivery workflow');
    }
  }

  private async listen(): Promise<void> {
    const client = new PgClient({ connectionString: this.deps.databaseUrl });
    client.on('notification', () => this.kick());
    client.on('error', (err) => {
      this.deps.logger.warn({ err }, 'webhook dispatcher lost its LISTEN connection; reconnecting');
      this.scheduleReconnect(client);
    });
    client.on('end', () => this.scheduleReconnect(client));
    try {
      await client.connect();
      await listenForEvents(client);
      if (this.stopped) await client.end();
      else this.listener = client;
    } catch (err) {
      this.deps.logger.warn({ err }, 'webhook dispatcher could not LISTEN; relying on the sweep until it can');
      this.scheduleReconnect(client);
    }
  }

  private scheduleReconnect(client: PgClient): void {
    // Ignore a stale connection's events once another one listens or a reconnect is pending.
    if (this.stopped || this.reconnect || (this.listener && this.listener !== client)) return;
    this.listener = undefined;
    client.end().catch(() => undefined);
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      if (!this.stopped) void this.listen().then(() => this.kick());
    }, 1000);
  }
}
