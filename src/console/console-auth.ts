import type { Request, Response, Router } from 'express';
import QRCode from 'qrcode';
import type { AppContext } from '../http/context';
import { ApiError } from '../domain/errors';
import { recordAudit } from '../services/accounts/audit';
import {
  activeStaff,
  completeSetup,
  setupDetails,
  signInStaff,
  STAFF_BAD_CREDENTIALS,
} from '../services/accounts/staff';
import type { KeyRing } from '../temporal/codec';
import { formError, noticeFrom } from '../pages/account/account-area';
import { SetupForm, SetupQuery, SignInForm } from './console-forms';
import { signInPage as signedInPage } from '../pages/signed-in-area';
import { csrfField, errorBox, html, plainMessage, publicConsolePage, send } from './console-layout';
import { consoleIdleSeconds, endStaffSession, startStaffSession } from './console-session';

// Signing in (email, password and a TOTP or recovery code in one form, so there is no
// half-signed-in state), signing out, and the one-time setup a new member's link leads to.

const SIGN_IN_WINDOW_SECONDS = 15 * 60;
/** Failed tries per staff email from one address per window: stricter than resellers', a console account can move money. */
const SIGN_IN_PER_EMAIL_AND_IP = 5;

const NOTICES = { 'signed-out': 'You are signed out.', 'session-ended': 'Your session ended. Please sign in again.' };

function signInPage(csrf: string, opts: { email?: string; error?: string; notice?: string } = {}): string {
  return signedInPage(publicConsolePage, {
    heading: 'Staff console',
    lead: html`For support staff. Resellers sign in at <a href="/account">their account</a>.`,
    action: '/console/sign-in',
    csrf,
    withCode: true,
    ...opts,
  });
}

async function setupPage(
  csrf: string,
  token: string,
  d: Awaited<ReturnType<typeof setupDetails>>,
  error?: string,
): Promise<string> {
  const qr = await QRCode.toDataURL(d.otpauthUri, { errorCorrectionLevel: 'M', margin: 2, width: 220 });
  return publicConsolePage({
    title: 'Set up your console account',
    body: html`<h1>Set up your console account</h1>
<p class="lead">${d.name} · ${d.email} · role ${d.role}</p>
${errorBox(error)}
<ol>
  <li>Add this account to an authenticator app: scan the code, or type the secret.</li>
  <li>Choose a password (at least 12 characters) and enter the app's current code.</li>
</ol>
<p><img src="${qr}" alt="QR code of the authenticator secret" width="220" height="220"></p>
<p class="secret" data-testid="totp-secret">${d.secret}</p>
<form method="post" action="/console/setup">
  ${csrfField(csrf)}
  <input type="hidden" name="token" value="${token}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required>
  <label for="code">Code from the app</label>
  <input id="code" name="code" autocomplete="one-time-code" inputmode="numeric" maxlength="16" required>
  <button type="submit" data-testid="complete-setup">Finish setup</button>
</form>`,
  });
}

const field = (req: Request, name: string, max: number) =>
  typeof req.body?.[name] === 'string' ? req.body[name].slice(0, max) : '';
const ipOf = (req: Request) => req.ip ?? 'unknown';

export function authRoutes(router: Router, ctx: AppContext, keys: KeyRing): void {
  const { config } = ctx;
  const limits = {
    perEmailAndIp: SIGN_IN_PER_EMAIL_AND_IP,
    perIp: config.SIGN_IN_RATE_LIMIT_PER_IP,
    windowSeconds: SIGN_IN_WINDOW_SECONDS,
  };

  router.get('/sign-in', (req, res) => {
    if (req.session.staffId) return res.redirect(303, '/console');
    send(res, 200, signInPage(req.csrfToken!(), { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/sign-in', async (req: Request, res: Response) => {
    const email = field(req, 'email', 254);
    try {
      const parsed = SignInForm.safeParse(req.body ?? {});
      if (!parsed.success) throw new ApiError('unauthorized', STAFF_BAD_CREDENTIALS);
      const em = ctx.orm.em.fork();
      const { staff, recoveryCodeUsed } = await signInStaff(em, keys, { ...parsed.data, ip: ipOf(req) }, limits);
      await startStaffSession(req, staff.id, consoleIdleSeconds(config));
      const actor = {
        kind: 'staff' as const,
        staffId: staff.id,
        name: staff.name,
        email: staff.email,
        role: staff.role,
      };
      await recordAudit(
        em,
        { actor, requestId: res.locals.requestId ?? null },
        { action: 'staff.sign_in', subjectId: staff.id, details: { recoveryCodeUsed } },
      );
      ctx.logger.info({ requestId: res.locals.requestId, staffId: staff.id, recoveryCodeUsed }, 'console sign-in');
      res.redirect(303, '/console');
    } catch (err) {
      const e = formError(err);
      if (e.code === 'rate_limited')
        ctx.logger.warn({ requestId: res.locals.requestId }, 'console sign-in rate limited');
      send(res, e.status, signInPage(req.csrfToken!(), { email, error: plainMessage(e) }), e.headers);
    }
  });

  router.post('/sign-out', async (req, res) => {
    const staff = req.session.staffId ? await activeStaff(ctx.orm.em.fork(), req.session.staffId) : undefined;
    if (staff) {
      const actor = {
        kind: 'staff' as const,
        staffId: staff.id,
        name: staff.name,
        email: staff.email,
        role: staff.role,
      };
      await recordAudit(
        ctx.orm.em.fork(),
        { actor, requestId: res.locals.requestId ?? null },
        { action: 'staff.sign_out', subjectId: staff.id },
      );
    }
    await endStaffSession(req);
    res.redirect(303, '/console/sign-in?notice=signed-out');
  });

  router.get('/setup', async (req, res) => {
    const { token } = SetupQuery.parse(req.query);
    send(res, 200, await setupPage(req.csrfToken!(), token, await setupDetails(ctx.orm.em.fork(), keys, token)));
  });

  router.post('/setup', async (req: Request, res: Response) => {
    const token = field(req, 'token', 128);
    const em = ctx.orm.em.fork();
    try {
      const form = SetupForm.parse(req.body ?? {});
      const { staff, recoveryCodes } = await completeSetup(em, keys, form.token, {
        password: form.password,
        code: form.code,
      });
      const actor = {
        kind: 'staff' as const,
        staffId: staff.id,
        name: staff.name,
        email: staff.email,
        role: staff.role,
      };
      await recordAudit(
        em,
        { actor, requestId: res.locals.requestId ?? null },
        { action: 'staff.setup', subjectId: staff.id },
      );
      send(
        res,
        200,
        publicConsolePage({
          title: 'Setup complete',
          body: html`<h1>Your console account is ready</h1>
<div class="notice" role="status"><p><strong>Recovery codes.</strong> Each signs you in once instead of a code from the app, if you lose your phone.
They are shown only this once: store them somewhere safe now.</p>
<ol class="secret" data-testid="recovery-codes">${recoveryCodes.map((c) => html`<li data-testid="recovery-code">${c}</li>`)}</ol></div>
<p><a class="button" href="/console/sign-in" data-testid="to-sign-in">Sign in</a></p>`,
        }),
      );
    } catch (err) {
      const e = formError(err);
      if (e.code === 'not_found') throw err;
      send(
        res,
        e.status,
        await setupPage(req.csrfToken!(), token, await setupDetails(em, keys, token), plainMessage(e)),
        e.headers,
      );
    }
  });
}
