import type { Logger } from 'pino';
import type { Config } from '../config';
import type { Orm } from '../db/orm';
import type { TemporalHandle } from '../temporal/client';

/** What every request handler may use: one ORM, one Temporal client, config and the logger. */
export interface AppContext {
  orm: Orm;
  temporal: TemporalHandle;
  config: Config;
  logger: Logger;
}
