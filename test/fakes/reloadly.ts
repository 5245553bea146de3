import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A contract fake of Reloadly's gift-card API, written from its public documentation
// (Reloadly/reloadly-api-documentation openapi/, the Java SDK giftcard module, and the facts
// gathered in shared/facts/gift-card-suppliers.md): the token endpoint, POST /orders, the
// transaction report, a transaction's cards, with the documented bodies, statuses and error
// bodies `{timeStamp, message, path, errorCode, infoLink, details}`. Where the documentation is
// silent (the answer to a repeated customIdentifier, an insufficient balance) it follows what a
// third-party client saw in Reloadly's sandbox: a 400 CUSTOM_IDENTIFIER_ALREADY_USED that does not
// return the existing order.
//
// Each route's next answers can be scripted (`fail`), as can the fate of the next orders
// (`nextOrders`). Every order taken is kept (`orders`): "bought once" is checked against it.
// It listens on 127.0.0.1 only.

export const FAKE_CLIENT_ID = 'fake-reloadly-client-id';
export const FAKE_CLIENT_SECRET = `fake-reloadly-secret-${randomBytes(8).toString('hex')}`;
export const SANDBOX_AUDIENCE = 'https://giftcards-sandbox.reloadly.com';
const ACCEPT = 'application/com.reloadly.giftcards-v1+json';

export type Route = 'token' | 'order' | 'report' | 'cards';

/** What the next call of a route does instead of its normal answer. */
export type Fault =
  /** A 5xx error body; with `afterTaking`, a POST /orders takes the order first. */
  | { kind: 'server_error'; status?: number; afterTaking?: boolean }
  /** A 200 whose body is not JSON; a POST /orders takes the order first. */
  | { kind: 'garbage' }
  /** 429 with Retry-After (seconds) and/or X-RateLimit-Reset (UNIX seconds). */
  | { kind: 'rate_limited'; retryAfterSeconds?: number; resetInSeconds?: number }
  /** 401 TOKEN_EXPIRED: every token issued so far stops working. */
  | { kind: 'token_expired' }
  /** POST /orders takes the order, then the connection is dropped before any answer. */
  | { kind: 'drop_after_taking' }
  /** The normal answer (the work done at once), sent only after `delayMs`. */
  | { kind: 'slow'; delayMs: number }
  /** The report does not show the newest orders yet (an empty page). */
  | { kind: 'stale' };

/** The fate of an order taken: reported PENDING for its first `pendingReads` reads, then `status`. */
export interface OrderFate {
  status?: 'SUCCESSFUL' | 'FAILED' | 'REFUNDED';
  pendingReads?: number;
  /** Cards handed over fewer than bought. */
  cardsShort?: number;
}

export interface FakeProduct {
  productId: number;
  productName: string;
  countryCode: string;
  brand: { brandId: number; brandName: string };
  /** The recipient currency and the fixed denominations in it. */
  currencyCode: string;
  fixedRecipientDenominations: number[];
  /** Per transaction, in the account currency. */
  senderFee: number;
  discountPercentage: number;
  /** Cards come with a PIN; and as JSON numbers (documented as integers) rather than strings. */
  pin: boolean;
  numericCards?: boolean;
}

export interface FakeTransaction {
  transactionId: number;
  customIdentifier: string;
  productId: number;
  quantity: number;
  unitPrice: number;
  amount: number;
  fate: Required<OrderFate>;
  reads: number;
  cards: { cardNumber: string; pinCode: string | null }[];
  createdAt: Date;
}

export interface FakeCall {
  route: Route | 'other';
  method: string;
  path: string;
  status: number | 'dropped';
  fault: Fault['kind'] | null;
  at: number;
}

export const FAKE_PRODUCTS: FakeProduct[] = [
  {
    productId: 5,
    productName: 'App Store & iTunes US',
    countryCode: 'US',
    brand: { brandId: 3, brandName: 'App Store & iTunes' },
    currencyCode: 'USD',
    fixedRecipientDenominations: [10, 25, 50, 100],
    senderFee: 0.5,
    discountPercentage: 3,
    pin: false,
  },
  {
    productId: 18,
    productName: 'Roblox US',
    countryCode: 'US',
    brand: { brandId: 40, brandName: 'Roblox' },
    currencyCode: 'USD',
    fixedRecipientDenominations: [10, 25, 50],
    senderFee: 0.3,
    discountPercentage: 2,
    pin: true,
    numericCards: true,
  },
];

const pad = (n: number) => String(n).padStart(2, '0');
/** Reloadly's timestamps: `yyyy-MM-dd HH:mm:ss`. */
const stamp = (d = new Date()) =>
  `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
const round4 = (n: number) => Math.round(n * 10_000) / 10_000;
const digits = (n: number) => Array.from({ length: n }, () => String(1 + (randomBytes(1)[0] % 9))).join('');

export class FakeReloadly {
  readonly orders: FakeTransaction[] = [];
  readonly calls: FakeCall[] = [];
  tokensIssued = 0;
  /** The account's balance, in its currency. */
  balance = 10_000;
  readonly currencyCode = 'USD';
  expiresInSeconds = 86_400;

  private readonly faults: Record<Route, Fault[]> = { token: [], order: [], report: [], cards: [] };
  private fates: OrderFate[] = [];
  private tokens = new Map<string, { revoked: boolean }>();
  private nextTransactionId = 1000;
  private timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly products: FakeProduct[],
  ) {}

  static async start(products: FakeProduct[] = FAKE_PRODUCTS): Promise<FakeReloadly> {
    const started: { fake?: FakeReloadly } = {};
    const server = createServer((req, res) => {
      started.fake!.handle(req, res).catch(() => res.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    started.fake = new FakeReloadly(server, `http://127.0.0.1:${port}`, products);
    return started.fake;
  }

  /** The service's settings for talking to this fake. */
  env(
    products: Record<string, { productId: number; unitPrice: number | string }>,
    extra: Record<string, string> = {},
  ): Record<string, string> {
    return {
      SUPPLIER_PROVIDER: 'reloadly',
      RELOADLY_CLIENT_ID: FAKE_CLIENT_ID,
      RELOADLY_CLIENT_SECRET: FAKE_CLIENT_SECRET,
      RELOADLY_ENV: 'sandbox',
      RELOADLY_AUTH_URL: this.url,
      RELOADLY_API_URL: this.url,
      RELOADLY_PRODUCTS: JSON.stringify(products),
      ...extra,
    };
  }

  /** The next calls of `route` answer with these faults, one each, in order. */
  fail(route: Route, ...faults: Fault[]): this {
    this.faults[route].push(...faults);
    return this;
  }

  /** The next orders taken meet these fates, one each, in order (then: SUCCESSFUL at once). */
  nextOrders(...fates: OrderFate[]): this {
    this.fates.push(...fates);
    return this;
  }

  /** Every token issued so far stops working (TOKEN_EXPIRED). */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.revoked = true;
  }

  reset(): void {
    for (const f of Object.values(this.faults)) f.length = 0;
    this.fates = [];
    this.calls.length = 0;
  }

  /** The orders taken under identifiers starting with `prefix` (ours are `<orderId>:…`). */
  ordersFor(prefix: string): FakeTransaction[] {
    return this.orders.filter((o) => o.customIdentifier.startsWith(prefix));
  }

  callsTo(route: Route, method?: string): FakeCall[] {
    return this.calls.filter((c) => c.route === route && (!method || c.method === method));
  }

  /** The codes as our service should show them: `<cardNumber> PIN <pinCode>`, or the card number. */
  static codesOf(tx: FakeTransaction): string[] {
    return tx.cards
      .slice(0, tx.cards.length - tx.fate.cardsShort)
      .map((c) => (c.pinCode ? `${c.cardNumber} PIN ${c.pinCode}` : c.cardNumber));
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const raw = await readBody(req);
    const route = routeOf(req.method ?? 'GET', url.pathname);
    const fault = route === 'other' ? undefined : this.faults[route].shift();
    const call: FakeCall = {
      route,
      method: req.method ?? 'GET',
      path: url.pathname,
      status: 0,
      fault: fault?.kind ?? null,
      at: Date.now(),
    };
    this.calls.push(call);
    const answer = (status: number, body: string, headers: Record<string, string> = {}) => {
      call.status = status;
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': route === 'token' ? 'application/json' : ACCEPT, ...headers });
        res.end(body);
      };
      if (fault?.kind === 'slow') this.later(fault.delayMs, send);
      else send();
    };
    const error = (status: number, message: string, errorCode: string | null) =>
      answer(
        status,
        JSON.stringify({ timeStamp: stamp(), message, path: url.pathname, errorCode, infoLink: null, details: [] }),
      );

    if (fault?.kind === 'rate_limited') {
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
      if (fault.resetInSeconds !== undefined)
        headers['x-ratelimit-reset'] = String(Math.ceil(Date.now() / 1000) + fault.resetInSeconds);
      call.status = 429;
      res.writeHead(429, { 'content-type': 'application/json', ...headers });
      res.end(
        JSON.stringify({
          timeStamp: stamp(),
          message: 'Too many requests',
          path: url.pathname,
          errorCode: null,
          infoLink: null,
          details: [],
        }),
      );
      return;
    }
    if (fault?.kind === 'server_error' && !(route === 'order' && fault.afterTaking)) {
      return error(
        fault.status ?? 503,
        'Could not retrieve/update resources at the moment, please try again later',
        null,
      );
    }

    if (route === 'token') return this.token(raw, answer, error);
    if (route === 'other') {
      // Spring's default 404.
      return answer(
        404,
        JSON.stringify({
          timestamp: new Date().toISOString(),
          status: 404,
          error: 'Not Found',
          message: 'No message available',
          path: url.pathname,
        }),
      );
    }
    if (req.headers.accept !== ACCEPT) return error(406, 'Could not find acceptable representation', null);
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = bearer ? this.tokens.get(bearer) : undefined;
    if (!token) return error(401, 'Full authentication is required to access this resource', 'INVALID_TOKEN');
    if (fault?.kind === 'token_expired') this.expireTokens();
    if (token.revoked) return error(401, 'Access token expired', 'TOKEN_EXPIRED');

    if (route === 'order') return this.order(req, res, raw, fault, call, answer, error);
    if (fault?.kind === 'garbage')
      return answer(200, '<html><body>Service Unavailable</body></html>', { 'content-type': 'text/html' });
    if (route === 'report') {
      const key = url.searchParams.get('customIdentifier');
      const rows = fault?.kind === 'stale' ? [] : this.orders.filter((o) => key === null || o.customIdentifier === key);
      const content = rows.map((o) => this.transactionJson(o));
      return answer(200, page(content));
    }
    // cards
    const id = Number(/^\/orders\/transactions\/(\d+)\/cards$/.exec(url.pathname)?.[1]);
    const tx = this.orders.find((o) => o.transactionId === id);
    if (!tx)
      return answer(
        404,
        JSON.stringify({
          timeStamp: stamp(),
          status: 404,
          error: 'Not found',
          message: 'Invalid transaction id',
          path: url.pathname,
        }),
      );
    const status = this.statusOf(tx, false);
    const cards = status === 'SUCCESSFUL' ? tx.cards.slice(0, tx.cards.length - tx.fate.cardsShort) : [];
    const product = this.products.find((p) => p.productId === tx.productId)!;
    return answer(200, `[${cards.map((c) => cardJson(c, product.numericCards ?? false)).join(',')}]`);
  }

  private token(
    raw: string,
    answer: (s: number, b: string) => void,
    error: (s: number, m: string, c: string | null) => void,
  ): void {
    const body = parseJson(raw) as Record<string, unknown> | undefined;
    if (body?.grant_type !== 'client_credentials')
      return error(400, 'Unsupported grant type', 'INVALID_INPUT_PROVIDED');
    if (
      body.client_id !== FAKE_CLIENT_ID ||
      body.client_secret !== FAKE_CLIENT_SECRET ||
      body.audience !== SANDBOX_AUDIENCE
    ) {
      return error(401, 'Access Denied', 'INVALID_CREDENTIALS');
    }
    const accessToken = `eyJfake.${randomBytes(24).toString('base64url')}`;
    this.tokens.set(accessToken, { revoked: false });
    this.tokensIssued++;
    answer(
      200,
      JSON.stringify({
        access_token: accessToken,
        scope: 'developer',
        expires_in: this.expiresInSeconds,
        token_type: 'Bearer',
      }),
    );
  }

  private order(
    req: IncomingMessage,
    res: ServerResponse,
    raw: string,
    fault: Fault | undefined,
    call: FakeCall,
    answer: (s: number, b: string, h?: Record<string, string>) => void,
    error: (s: number, m: string, c: string | null) => void,
  ): void {
    if (!/^application\/json/.test(req.headers['content-type'] ?? ''))
      return error(415, 'Content type not supported', null);
    const body = parseJson(raw) as Record<string, any> | undefined;
    const product = this.products.find((p) => p.productId === body?.productId);
    if (!body || !product)
      return error(400, 'The product was either not found or is no longer available, Please contact support', null);
    const quantity = body.quantity;
    if (!Number.isInteger(quantity) || quantity < 1) return error(400, 'Invalid quantity', 'INVALID_INPUT_PROVIDED');
    if (!product.fixedRecipientDenominations.includes(body.unitPrice))
      return error(400, 'Invalid price. Please ensure you selected the right price.', null);
    const key = body.customIdentifier;
    if (typeof key !== 'string' || key.length === 0 || key.length > 150)
      return error(400, 'Invalid custom identifier', 'INVALID_INPUT_PROVIDED');
    if (typeof body.senderName !== 'string' || !body.senderName)
      return error(400, 'Sender name is required', 'INVALID_INPUT_PROVIDED');
    // A repeated identifier is refused, and the existing order is not returned (3P, sandbox).
    if (this.orders.some((o) => o.customIdentifier === key))
      return error(400, 'Custom identifier already used', 'CUSTOM_IDENTIFIER_ALREADY_USED');
    const amount = round4(quantity * body.unitPrice * (1 - product.discountPercentage / 100) + product.senderFee);
    if (amount > this.balance)
      return error(400, 'Insufficient balance to complete this transaction', 'INSUFFICIENT_BALANCE');

    const fate = this.fates.shift() ?? {};
    const tx: FakeTransaction = {
      transactionId: this.nextTransactionId++,
      customIdentifier: key,
      productId: product.productId,
      quantity,
      unitPrice: body.unitPrice,
      amount,
      fate: {
        status: fate.status ?? 'SUCCESSFUL',
        pendingReads: fate.pendingReads ?? 0,
        cardsShort: fate.cardsShort ?? 0,
      },
      reads: 0,
      cards: Array.from({ length: quantity }, () => ({
        cardNumber: digits(product.numericCards ? 19 : 16),
        pinCode: product.pin ? digits(4) : null,
      })),
      createdAt: new Date(),
    };
    this.orders.push(tx);
    // FAILED and REFUNDED cost nothing (3P).
    if (tx.fate.status === 'SUCCESSFUL') this.balance = round4(this.balance - amount);

    if (fault?.kind === 'drop_after_taking') {
      call.status = 'dropped';
      res.socket?.destroy();
      return;
    }
    if (fault?.kind === 'garbage')
      return answer(200, '{"transactionId": 12, "amount": <truncated', { 'content-type': ACCEPT });
    if (fault?.kind === 'server_error') return error(fault.status ?? 502, 'Bad Gateway', null);
    answer(200, this.transactionJson(tx));
  }

  /** A transaction's status now: PENDING for its first reads, then its fate (a read counts when `read`). */
  private statusOf(tx: FakeTransaction, read = true): string {
    const status = tx.reads < tx.fate.pendingReads ? 'PENDING' : tx.fate.status;
    if (read) tx.reads++;
    return status;
  }

  private transactionJson(tx: FakeTransaction): string {
    const product = this.products.find((p) => p.productId === tx.productId)!;
    const status = this.statusOf(tx);
    const totalPrice = tx.quantity * tx.unitPrice;
    return JSON.stringify({
      transactionId: tx.transactionId,
      amount: tx.amount,
      discount: round4(totalPrice * (product.discountPercentage / 100)),
      currencyCode: this.currencyCode,
      fee: product.senderFee,
      smsFee: 0,
      totalFee: product.senderFee,
      recipientEmail: 'wholesale@example.com',
      recipientPhone: null,
      customIdentifier: tx.customIdentifier,
      status,
      product: {
        productId: product.productId,
        productName: product.productName,
        countryCode: product.countryCode,
        quantity: tx.quantity,
        unitPrice: tx.unitPrice,
        totalPrice,
        currencyCode: product.currencyCode,
        brand: product.brand,
      },
      transactionCreatedTime: stamp(tx.createdAt),
    });
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }
}

function routeOf(method: string, path: string): Route | 'other' {
  if (method === 'POST' && path === '/oauth/token') return 'token';
  if (method === 'POST' && path === '/orders') return 'order';
  if (method === 'GET' && path === '/reports/transactions') return 'report';
  if (method === 'GET' && /^\/orders\/transactions\/\d+\/cards$/.test(path)) return 'cards';
  return 'other';
}

/** A Spring page of already-serialized rows (as the Java SDK's fixtures show it). */
function page(rows: string[]): string {
  const meta = {
    totalElements: rows.length,
    totalPages: rows.length ? 1 : 0,
    last: true,
    first: true,
    size: 10,
    number: 0,
    numberOfElements: rows.length,
    empty: rows.length === 0,
  };
  return `{"content":[${rows.join(',')}],${JSON.stringify(meta).slice(1)}`;
}

/** A card as JSON; numeric cards carry their digits as JSON numbers, as the docs type them. */
function cardJson(c: { cardNumber: string; pinCode: string | null }, numeric: boolean): string {
  if (!numeric) return JSON.stringify(c);
  return `{"cardNumber":${c.cardNumber},"pinCode":${c.pinCode ?? 'null'}}`;
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
