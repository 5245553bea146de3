import { inviteStaff } from '../../src/services/accounts/staff';
import { parseKeyRing } from '../../src/temporal/codec';
import { auditRows, postFrom, signedIn, staffMember, type Member } from '../helpers/console';
import { startHarness, type Harness } from '../helpers/harness';

// The console keeps one admin who can sign in (docs/account-and-console.md): an admin who was only
// invited and never enrolled does not count, and a new setup link (reset) is a change it guards too,
// since the member cannot sign in until the link is used. Over real HTTP, as an admin would.
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ SIGN_IN_RATE_LIMIT_PER_IP: '1000' }, { worker: false });
});
afterAll(() => h?.stop());

const LAST_ADMIN = 'This would leave no admin who can sign in: make someone else admin first';

const staffRow = async (id: string) => {
  const [row] = await h.services.orm.em
    .fork()
    .execute<{ role: string; enrolled: boolean; disabled: boolean }[]>(
      'select role, enrolled_at is not null as enrolled, disabled_at is not null as disabled from staff where id = ?',
      [id],
    );
  return row;
};

test('only enrolled, not disabled admins count: the last of them cannot demote, disable or reset themselves', async () => {
  // A fresh database: this file's admins are the only staff.
  const ada: Member = await staffMember(h, 'admin', { name: 'Ada Last' });
  const { staff: invited } = await inviteStaff(
    h.services.orm.em.fork(),
    parseKeyRing(h.config.TEMPORAL_PAYLOAD_KEYS),
    { email: 'invited-admin@example.com', name: 'Ivy Invited', role: 'admin' },
    'test',
  );
  const s = await signedIn(h, ada);

  const refusals = [
    ['role', { role: 'support', reason: 'stepping down' }],
    ['disable', { reason: 'leaving' }],
    ['reset', { reason: 'lost my phone' }],
  ] as const;
  for (const [action, fields] of refusals) {
    const res = await postFrom(s, '/console/staff', `/console/staff/${ada.id}/${action}`, fields);
    expect([action, res.status, res.text]).toEqual([action, 400, expect.stringContaining(LAST_ADMIN)]);
  }
  expect(await staffRow(ada.id)).toEqual({ role: 'admin', enrolled: true, disabled: false });
  expect((await s.get('/console/staff')).status).toBe(200); // still signed in: the refused reset changed nothing
  expect(
    (await auditRows(h, `subject_id = ? and action <> 'staff.sign_in'`, [ada.id])).map((r) => [r.action, r.outcome]),
  ).toEqual([
    ['staff.role', 'invalid_input'],
    ['staff.disable', 'invalid_input'],
    ['staff.reset', 'invalid_input'],
  ]);

  // The invited admin is not one who can sign in: resetting them is no loss.
  const reset = await postFrom(s, '/console/staff', `/console/staff/${invited.id}/reset`, { reason: 'link expired' });
  expect([reset.status, reset.text]).toEqual([200, expect.stringContaining('data-testid="setup-link"')]);

  // With a second enrolled admin, the first may step down; resetting the second would again leave none.
  const bea = await staffMember(h, 'admin', { name: 'Bea Second' });
  const demoted = await postFrom(s, '/console/staff', `/console/staff/${ada.id}/role`, {
    role: 'support',
    reason: 'Bea takes over',
  });
  expect([demoted.status, demoted.location]).toEqual([303, '/console/staff?notice=role']);
  const beaSession = await signedIn(h, bea);
  const refused = await postFrom(beaSession, '/console/staff', `/console/staff/${bea.id}/reset`, {
    reason: 'new phone',
  });
  expect([refused.status, refused.text]).toEqual([400, expect.stringContaining(LAST_ADMIN)]);
  expect(await staffRow(bea.id)).toEqual({ role: 'admin', enrolled: true, disabled: false });
});
