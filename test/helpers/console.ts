import { createHmac, randomBytes } from 'node:crypto';
import type { StaffRole } from '../../src/db/staff-store';
import { sandboxSupplierControl } from '../../src/providers/sandbox/sandbox-supplier';
import { completeSetup, inviteStaff, setupDetails } from '../../src/services/accounts/staff';
import { parseKeyRing } from '../../src/temporal/codec';
import { AccountSession, type PageResponse } from './account-session';
import { eventually } from './eventually';
import type { Harness } from './harness';
import { fulfillmentIs, orderUntil, type Api } from './procurement';

// The staff console from a test: members made through the same invite and setup services an admin
// uses, TOTP codes from an implementation of RFC 6238 of our own (so the server's library is
// checked against another), and sessions that post forms with the page's CSRF token.

const PERIOD = 30;

function base32Decode(s: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of s.replace(/=+$/, '').toUpperCase()) {
    value = (value << 5) | alphabet.indexOf(c);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export const currentStep = () => Math.floor(Date.now() / 1000 / PERIOD);

/** The 6-digit TOTP code (SHA-1, 30 s) of `step` for a base32 secret. */
export function totp(secret: string, step = currentStep()): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32Decode(secret)).update(counter).digest();
  const offset = mac[mac.length - 1] & 15;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/**
 * Waits until the current 30-second step has at least `seconds` left, so codes of this step and
 * its neighbours are still accepted when the request arrives.
 */
export async function roomInStep(seconds = 8): Promise<void> {
  await eventually(async () => PERIOD - ((Date.now() / 1000) % PERIOD) >= seconds, (PERIOD + 2) * 1000, 200);
}

export interface Member {
  id: string;
  email: string;
  name: string;
  role: StaffRole;
  password: string;
  secret: string;
  recoveryCodes: string[];
  /** The last TOTP step this member used: each step signs in once. */
  lastStep: number;
}

let counter = 0;

/** An enrolled member: invited, then set up with the previous step's code (so the current one signs in). */
export async function staffMember(h: Harness, role: StaffRole, opts: { name?: string } = {}): Promise<Member> {
  const keys = parseKeyRing(h.config.TEMPORAL_PAYLOAD_KEYS);
  const em = h.services.orm.em.fork();
  const email = `staff-${process.pid}-${Date.now()}-${counter++}@example.com`;
  const name = opts.name ?? `${role} ${randomBytes(2).toString('hex')}`;
  const { staff, setupToken } = await inviteStaff(em, keys, { email, name, role }, 'test');
  const { secret } = await setupDetails(em, keys, setupToken);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  await roomInStep();
  const lastStep = currentStep() - 1;
  const { recoveryCodes } = await completeSetup(em, keys, setupToken, { password, code: totp(secret, lastStep) });
  return { id: staff.id, email, name, role, password, secret, recoveryCodes, lastStep };
}

/** A fresh console session (no cookie yet), from the client address `ip` when given. */
export const consoleSession = (h: Harness, ip?: string) =>
  new AccountSession(h.baseUrl, ip ? { 'x-forwarded-for': ip } : {});

/** Posts the sign-in form with the sign-in page's token. */
export async function signInWith(
  session: AccountSession,
  m: Pick<Member, 'email' | 'password'>,
  code: string,
): Promise<PageResponse> {
  return session.submit('/console/sign-in', '/console/sign-in', { email: m.email, password: m.password, code });
}

/**
 * A code the server takes now for this member: a step after the last one it used, within one step
 * of the current one (waiting for the next step when all three are spent).
 */
export async function freshCode(m: Member): Promise<string> {
  await roomInStep();
  if (m.lastStep + 1 > currentStep() + 1) {
    const next = m.lastStep;
    await eventually(async () => currentStep() >= next, 35_000, 200);
    await roomInStep();
  }
  m.lastStep = Math.max(currentStep() - 1, m.lastStep + 1);
  return totp(m.secret, m.lastStep);
}

/** A member signed in with a fresh TOTP code. */
export async function signedIn(h: Harness, m: Member): Promise<AccountSession> {
  const session = consoleSession(h);
  const res = await signInWith(session, m, await freshCode(m));
  if (res.status !== 303 || res.location !== '/console')
    throw new Error(`console sign-in answered ${res.status}: ${res.text.slice(0, 300)}`);
  return session;
}

/** A form post from a page: loads `page` for its CSRF token, then posts. */
export async function postFrom(
  session: AccountSession,
  page: string,
  path: string,
  fields: Record<string, string> = {},
): Promise<PageResponse> {
  const shown = await session.get(page);
  if (shown.status !== 200) throw new Error(`GET ${page} answered ${shown.status}`);
  return session.post(path, fields);
}

export async function auditRows(h: Harness, where = 'true', params: unknown[] = []) {
  return h.services.orm.em.fork().execute<
    {
      id: string;
      actor: string;
      actor_email: string | null;
      role: string;
      action: string;
      subject_id: string | null;
      account_id: string | null;
      reason: string | null;
      request_id: string | null;
      details: Record<string, unknown>;
      outcome: string | null;
    }[]
  >(`select a.*, o.outcome from audit_log a left join audit_outcomes o on o.audit_id = a.id where ${where} order by a.id`, params);
}

/** Direct-code procurement that gives up within seconds, and sign-ins enough for a test file. */
export const STUCK_ORDER_ENV = {
  RATE_LIMIT_PER_MINUTE: '100000',
  SIGN_IN_RATE_LIMIT_PER_IP: '1000',
  PROCUREMENT_RETRY_BASE_SECONDS: '1',
  PROCUREMENT_RETRY_CAP_SECONDS: '1',
  PROCUREMENT_MAX_ROUNDS: '50',
  PROCUREMENT_DEADLINE_SECONDS: '3',
};

/** A balance order whose supplier hands over `obtained` units, then nothing: it ends in needs_attention (spec 3.2). */
export async function stuckOrder(
  api: Api,
  productId: string,
  qty: number,
  obtained: number,
  externalOrderId: string,
): Promise<string> {
  sandboxSupplierControl.script(productId, { steps: obtained > 0 ? [obtained] : [], then: 0 });
  const placed = await api.post('/orders', { externalOrderId, productId, qty });
  if (placed.body.status !== 'paid') throw new Error(`order ${externalOrderId}: ${placed.status} ${placed.text}`);
  await orderUntil(api, placed.body.orderId, fulfillmentIs('needs_attention'));
  return placed.body.orderId;
}
