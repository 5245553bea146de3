import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config';
import { endpointOf } from '../../db/webhooks-store';
import type { UrlPolicy } from '../../domain/webhook-url';

// Where an account's webhooks go and the rule its URL must keep: read by the delivery activity
// (worker) and by the webhook settings (API).

export const urlPolicy = (config: Pick<Config, 'WEBHOOK_ALLOW_INSECURE_URLS'>): UrlPolicy => ({
  allowInsecure: config.WEBHOOK_ALLOW_INSECURE_URLS,
});

export interface Endpoint {
  url: string;
  secret: string;
}

export async function findEndpoint(em: EntityManager, accountId: string): Promise<Endpoint | undefined> {
  return endpointOf(em, accountId);
}
