import type { Request, Response, Router } from 'express';
import { ApiError } from '../../domain/errors';
import type { AppContext } from '../../http/context';
import { BAD_CREDENTIALS, checkSignUpBudget, signIn, signUp } from '../../services/accounts/users';
import { html } from '../page-layout';
import { formError, noticeFrom } from './account-area';
import { SignInForm, SignUpForm } from './account-forms';
import { signInPage as signedInPage } from '../signed-in-area';
import { csrfField, errorBox, plainMessage, publicPage, send } from './account-layout';
import { endSession, SESSION_COOKIE, startSignedInSession } from './account-session';

const SIGN_IN_WINDOW_SECONDS = 15 * 60;
const SIGN_UP_WINDOW_SECONDS = 60 * 60;

const NOTICES = {
  'signed-out': 'You are signed out.',
};

function signInPage(csrf: string, opts: { email?: string; error?: string; notice?: string } = {}): string {
  return signedInPage(publicPage, {
    heading: 'Sign in',
    lead: 'Your reseller account: API keys, balance, top-ups, orders and webhooks.',
    action: '/account/sign-in',
    csrf,
    after: html`
<p>New here? <a href="/account/sign-up" data-testid="to-sign-up">Create an account</a></p>`,
    ...opts,
  });
}

function signUpPage(csrf: string, opts: { email?: string; error?: string } = {}): string {
  return publicPage({
    title: 'Create an account',
    body: html`<h1>Create an account</h1>
<p class="lead">A new account starts at Lv1 with a zero balance. You create API keys once you are in; no review is needed.</p>
${errorBox(opts.error)}
<form method="post" action="/account/sign-up">
  ${csrfField(csrf)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" value="${opts.email ?? ''}" required>
  <label for="password">Password <span class="hint">(at least 12 characters)</span></label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required>
  <button type="submit" data-testid="sign-up">Create account</button>
</form>
<p>Already registered? <a href="/account/sign-in">Sign in</a></p>`,
  });
}

const emailOf = (req: Request) => (typeof req.body?.email === 'string' ? req.body.email.slice(0, 254) : '');
const ipOf = (req: Request) => req.ip ?? 'unknown';

export function authRoutes(router: Router, ctx: AppContext): void {
  const { config } = ctx;
  const signedIn = (req: Request) => !!req.session.userId;

  router.get('/sign-in', (req, res) => {
    if (signedIn(req)) return res.redirect(303, '/account');
    send(res, 200, signInPage(req.csrfToken!(), { notice: noticeFrom(req, NOTICES) }));
  });

  router.post('/sign-in', async (req: Request, res: Response) => {
    const email = emailOf(req);
    try {
      const parsed = SignInForm.safeParse(req.body ?? {});
      if (!parsed.success) throw new ApiError('unauthorized', BAD_CREDENTIALS);
      const user = await signIn(
        ctx.orm.em.fork(),
        { ...parsed.data, ip: ipOf(req) },
        {
          perEmailAndIp: config.SIGN_IN_RATE_LIMIT_PER_ACCOUNT,
          perIp: config.SIGN_IN_RATE_LIMIT_PER_IP,
          windowSeconds: SIGN_IN_WINDOW_SECONDS,
        },
      );
      await startSignedInSession(req, user, config.SESSION_TTL_SECONDS);
      ctx.logger.info({ requestId: res.locals.requestId, accountId: user.accountId }, 'account area sign-in');
      res.redirect(303, '/account');
    } catch (err) {
      const e = formError(err);
      send(res, e.status, signInPage(req.csrfToken!(), { email, error: plainMessage(e) }), e.headers);
    }
  });

  router.get('/sign-up', (req, res) => {
    if (signedIn(req)) return res.redirect(303, '/account');
    send(res, 200, signUpPage(req.csrfToken!()));
  });

  router.post('/sign-up', async (req: Request, res: Response) => {
    const email = emailOf(req);
    try {
      const em = ctx.orm.em.fork();
      await checkSignUpBudget(em, ipOf(req), config.SIGN_UP_RATE_LIMIT_PER_IP, SIGN_UP_WINDOW_SECONDS);
      const user = await signUp(em, SignUpForm.parse(req.body ?? {}));
      await startSignedInSession(req, user, config.SESSION_TTL_SECONDS);
      ctx.logger.info({ requestId: res.locals.requestId, accountId: user.accountId }, 'account area sign-up');
      res.redirect(303, '/account?notice=welcome');
    } catch (err) {
      const e = formError(err);
      send(res, e.status, signUpPage(req.csrfToken!(), { email, error: plainMessage(e) }), e.headers);
    }
  });

  router.post('/sign-out', async (req, res) => {
    if (req.session.userId) await endSession(req);
    res.clearCookie(SESSION_COOKIE, { path: '/account' });
    res.redirect(303, '/account/sign-in?notice=signed-out');
  });
}
