import type { Request, Response, Router } from 'express';
import type { AppContext } from '../http/context';
import { formError, noticeFrom } from '../pages/account/account-area';
import {
  changeStaffRole,
  disableStaff,
  inviteStaff,
  listStaff,
  resetStaff,
  setupUrl,
  STAFF_ROLES,
  type Invitation,
} from '../services/accounts/staff';
import type { KeyRing } from '../temporal/codec';
import { act, desk, only, type Desk } from './console-guard';
import { IdParams, InviteForm, ReasonForm, RoleForm } from './console-forms';
import {
  consolePage,
  csrfField,
  errorBox,
  html,
  noticeBox,
  plainMessage,
  reasonField,
  send,
  when,
  type SafeHtml,
} from './console-layout';

// Staff management, for admins: invite (a one-time setup link, shown once, for the new member to
// set a password and a second factor), change a role, disable, or send a new setup link (a lost
// phone). The service keeps at least one admin able to sign in.

const NOTICES = {
  role: 'The role is changed; it applies from their next request.',
  disabled: 'The member is disabled and signed out.',
};

const linkBox = (ctx: AppContext, inv: Invitation) => html`<div class="notice" role="status">
<p><strong>Setup link for ${inv.staff.name}</strong> (valid until ${when(inv.staff.setupExpiresAt)}). Give it to them privately; it is shown only this once.</p>
<p class="secret" data-testid="setup-link">${setupUrl(ctx.config.publicBaseUrl, inv.setupToken)}</p></div>`;

async function staffPage(d: Desk, opts: { created?: SafeHtml; notice?: string; error?: string } = {}): Promise<string> {
  const members = await listStaff(d.em);
  return consolePage(d.viewer, {
    title: 'Staff',
    section: 'staff',
    body: html`<h1>Staff</h1>
${noticeBox(opts.notice)}${opts.created}${errorBox(opts.error)}
<p class="muted">viewer: reads everything. support: resolves orders, works the redemption queue, retries webhook deliveries. admin: also staff, balance adjustments and key revocation.</p>
<form method="post" action="/console/staff" class="action">${csrfField(d.viewer.csrf)}
  <label for="invite-name">Name</label><input id="invite-name" name="name" maxlength="80" required data-testid="invite-name">
  <label for="invite-email">Email</label><input id="invite-email" name="email" type="email" maxlength="254" required data-testid="invite-email">
  <label for="invite-role">Role</label><select id="invite-role" name="role" data-testid="invite-role">${STAFF_ROLES.map((r) => html`<option value="${r}">${r}</option>`)}</select>
  <button type="submit" data-testid="invite">Invite</button></form>
<table data-testid="staff"><thead><tr><th>Name</th><th>Email</th><th>Role</th><th>Status</th><th>Last sign-in</th><th>Recovery codes</th><th></th></tr></thead>
<tbody>${members.map(
      (m) => html`<tr data-testid="staff-row" data-staff-id="${m.id}">
  <td>${m.name}</td><td>${m.email}</td><td>${m.role}</td><td>${m.status}</td><td>${m.lastSignInAt ? when(m.lastSignInAt) : 'never'}</td><td class="num">${m.recoveryCodesLeft}</td>
  <td><form method="post" action="/console/staff/${m.id}/role">${csrfField(d.viewer.csrf)}
    <select name="role" aria-label="New role">${STAFF_ROLES.map((r) => html`<option value="${r}"${r === m.role ? ' selected' : ''}>${r}</option>`)}</select>
    ${reasonField(`role-reason-${m.id}`)}<button type="submit" class="secondary">Change role</button></form>
  <form method="post" action="/console/staff/${m.id}/reset">${csrfField(d.viewer.csrf)}${reasonField(`reset-reason-${m.id}`)}<button type="submit" class="secondary">New setup link</button></form>
  ${m.status === 'disabled' ? '' : html`<form method="post" action="/console/staff/${m.id}/disable">${csrfField(d.viewer.csrf)}${reasonField(`disable-reason-${m.id}`)}<button type="submit" class="danger">Disable</button></form>`}</td>
</tr>`,
    )}</tbody></table>`,
  });
}

export function staffRoutes(router: Router, ctx: AppContext, keys: KeyRing): void {
  router.get('/staff', only('admin'), async (req, res) => {
    send(res, 200, await staffPage(desk(req, res, ctx), { notice: noticeFrom(req, NOTICES) }));
  });

  /** Runs a staff action; `shown` renders the page with what it made (a setup link), else a redirect with a notice. */
  const handle =
    (run: (d: Desk, req: Request) => Promise<{ created?: SafeHtml; notice?: keyof typeof NOTICES }>) =>
    async (req: Request, res: Response) => {
      const d = desk(req, res, ctx);
      try {
        const { created, notice } = await run(d, req);
        if (created) return send(res, 200, await staffPage({ ...d, em: d.em.fork() }, { created }));
        res.redirect(303, `/console/staff?notice=${notice}`);
      } catch (err) {
        const e = formError(err);
        send(res, e.status, await staffPage({ ...d, em: d.em.fork() }, { error: plainMessage(e) }), e.headers);
      }
    };

  router.post(
    '/staff',
    only('admin'),
    handle(async (d, req) => {
      const form = InviteForm.parse(req.body ?? {});
      const inv = await act(d, { action: 'staff.invite', details: { email: form.email, role: form.role } }, () =>
        inviteStaff(d.em, keys, form, d.staff.email),
      );
      return { created: linkBox(ctx, inv) };
    }),
  );

  router.post(
    '/staff/:id/role',
    only('admin'),
    handle(async (d, req) => {
      const { id } = IdParams.parse(req.params);
      const form = RoleForm.parse(req.body ?? {});
      await act(d, { action: 'staff.role', subjectId: id, reason: form.reason, details: { role: form.role } }, () =>
        changeStaffRole(d.em, id, form.role),
      );
      return { notice: 'role' };
    }),
  );

  router.post(
    '/staff/:id/disable',
    only('admin'),
    handle(async (d, req) => {
      const { id } = IdParams.parse(req.params);
      const { reason } = ReasonForm.parse(req.body ?? {});
      await act(d, { action: 'staff.disable', subjectId: id, reason }, () => disableStaff(d.em, id));
      return { notice: 'disabled' };
    }),
  );

  router.post(
    '/staff/:id/reset',
    only('admin'),
    handle(async (d, req) => {
      const { id } = IdParams.parse(req.params);
      const { reason } = ReasonForm.parse(req.body ?? {});
      return {
        created: linkBox(
          ctx,
          await act(d, { action: 'staff.reset', subjectId: id, reason }, () => resetStaff(d.em, keys, id)),
        ),
      };
    }),
  );
}
