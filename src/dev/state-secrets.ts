import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { newKeySpec } from '../temporal/codec';

// Secrets `npm start` makes once and keeps under STATE_DIR (mode 0600), like the demo key: the
// payload encryption key and the codec server's operator token. The environment wins over them;
// production sets its own and never reads this file.

export interface StateSecrets {
  TEMPORAL_PAYLOAD_KEYS: string;
  CODEC_TOKEN: string;
}

const fileOf = (stateDir: string) => resolve(stateDir, 'secrets.json');

export function readStateSecrets(stateDir: string): Partial<StateSecrets> {
  const file = fileOf(stateDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<StateSecrets>) : {};
}

/** The state's secrets, made now for what is missing. */
export function ensureStateSecrets(stateDir: string): StateSecrets {
  const saved = readStateSecrets(stateDir);
  const secrets: StateSecrets = {
    TEMPORAL_PAYLOAD_KEYS: saved.TEMPORAL_PAYLOAD_KEYS ?? newKeySpec(`dev-${randomBytes(3).toString('hex')}`),
    CODEC_TOKEN: saved.CODEC_TOKEN ?? `codec_${randomBytes(24).toString('base64url')}`,
  };
  if (saved.TEMPORAL_PAYLOAD_KEYS !== secrets.TEMPORAL_PAYLOAD_KEYS || saved.CODEC_TOKEN !== secrets.CODEC_TOKEN) {
    mkdirSync(resolve(stateDir), { recursive: true });
    writeFileSync(fileOf(stateDir), JSON.stringify(secrets), { mode: 0o600 });
  }
  return secrets;
}
