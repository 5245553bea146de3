import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

// The redemption upstream protocol as a partner reads it: its OpenAPI document
// (docs/redemption-upstream.openapi.json) turned into request and response checks with a standard
// JSON Schema validator, a proxy that holds every exchange between the service and an upstream to
// it, and a fake partner whose answers a test scripts. Nothing here imports the service's own
// protocol module: the document and its prose are the only source.

type Json = Record<string, any>;

export const DOC_FILE = resolve(__dirname, '..', '..', 'docs', 'redemption-upstream.openapi.json');
export const upstreamDoc: Json = JSON.parse(readFileSync(DOC_FILE, 'utf8'));

const KEY = 'upstream';
const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export interface Operation {
  id: string;
  method: string;
  template: string;
  match: RegExp;
  pointer: string;
  op: Json;
}

export class UpstreamContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly operations: Operation[] = [];

  constructor(private readonly doc: Json = upstreamDoc) {
    addFormats(this.ajv);
    this.ajv.addSchema(doc, KEY);
    for (const [template, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const match = new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}$`);
        this.operations.push({
          id: op.operationId,
          method: method.toUpperCase(),
          template,
          match,
          pointer: `${KEY}#/paths/${escape(template)}/${method}`,
          op,
        });
      }
    }
  }

  operationOf(method: string, path: string): Operation | undefined {
    return this.operations.find((o) => o.method === method.toUpperCase() && o.match.test(path));
  }

  /** Problems of a request as sent: its operation, headers, path parameters and body. */
  request(r: { method: string; url: string; headers: Record<string, string | undefined>; body: string }): {
    op?: Operation;
    problems: string[];
  } {
    const path = r.url.split('?')[0];
    const op = this.operationOf(r.method, path);
    if (!op) return { problems: [`${r.method} ${path}: no such operation`] };
    const problems: string[] = [];
    const pathValues = op.match.exec(path)!.slice(1).map(decodeURIComponent);
    const pathNames = [...op.template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    (op.op.parameters ?? []).forEach((p: Json, i: number) => {
      const { param, pointer } = this.deref(p, `${op.pointer}/parameters/${i}`);
      const value =
        param.in === 'header' ? r.headers[param.name.toLowerCase()] : pathValues[pathNames.indexOf(param.name)];
      if (value === undefined) {
        if (param.required) problems.push(`${param.in} ${param.name}: missing`);
        return;
      }
      problems.push(...this.check(`${pointer}/schema`, value, `${param.in} ${param.name}`));
    });
    if (op.op.requestBody) {
      if (!/^application\/json\b/.test(r.headers['content-type'] ?? ''))
        problems.push(`content-type: ${r.headers['content-type']} is not application/json`);
      problems.push(...this.check(`${op.pointer}/requestBody/content/application~1json/schema`, parse(r.body), 'body'));
    } else if (r.body !== '') {
      problems.push('body: the operation takes none');
    }
    return { op, problems };
  }

  /** Problems of an answer to `op`: a declared status, JSON, and the schema of that status. */
  response(op: Operation, status: number, contentType: string | undefined, body: string): string[] {
    const responses = op.op.responses as Json;
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => responses[k]);
    if (!key) return [`status ${status}: not declared for ${op.id}`];
    const { param: response, pointer } = this.deref(responses[key], `${op.pointer}/responses/${key}`);
    if (!response.content) return body === '' ? [] : ['body: the response has none'];
    if (!/^application\/json\b/.test(contentType ?? ''))
      return [`content-type: ${contentType} is not application/json`];
    return this.check(`${pointer}/content/application~1json/schema`, parse(body), `${status} body`);
  }

  private deref(node: Json, pointer: string): { param: Json; pointer: string } {
    if (!node.$ref) return { param: node, pointer };
    const path = (node.$ref as string).slice(2).split('/');
    return {
      param: path.reduce((n: Json, k) => n[k.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc),
      pointer: `${KEY}${node.$ref}`,
    };
  }

  private check(pointer: string, value: unknown, where: string): string[] {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: pointer });
      this.compiled.set(pointer, validate);
    }
    if (value === NOT_JSON) return [`${where}: not JSON`];
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${where}${e.instancePath} ${e.message}`);
  }
}

const NOT_JSON = Symbol('not JSON');
function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks).toString('utf8')));
    req.on('error', fail);
  });
}

function listen(server: Server): Promise<string> {
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => ok(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((ok) => server.close(() => ok()));
}

/** One request through the proxy and its answer, with what the document says about both. */
export interface Exchange {
  operationId?: string;
  method: string;
  path: string;
  status: number;
  requestBody: string;
  responseBody: string;
  problems: string[];
}

/**
 * A proxy in front of an upstream (`target`, a base URL): every request and every answer is held
 * to the document and recorded in `exchanges`, then passed on unchanged.
 */
export async function startValidatingProxy(contract = new UpstreamContract()) {
  const exchanges: Exchange[] = [];
  const state = { target: '' };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
    );
    const checked = contract.request({ method: req.method!, url: req.url!, headers, body });
    const exchange: Exchange = {
      operationId: checked.op?.id,
      method: req.method!,
      path: req.url!,
      status: 0,
      requestBody: body,
      responseBody: '',
      problems: checked.problems,
    };
    exchanges.push(exchange);
    try {
      const forwarded: Record<string, string> = {};
      for (const name of [
        'content-type',
        'accept',
        'x-upstream-timestamp',
        'x-upstream-nonce',
        'x-upstream-signature',
      ]) {
        if (headers[name] !== undefined) forwarded[name] = headers[name]!;
      }
      const answer = await fetch(`${state.target}${req.url}`, {
        method: req.method,
        headers: forwarded,
        body: body || undefined,
      });
      const text = await answer.text();
      const contentType = answer.headers.get('content-type') ?? undefined;
      Object.assign(exchange, { status: answer.status, responseBody: text });
      if (checked.op) exchange.problems.push(...contract.response(checked.op, answer.status, contentType, text));
      res.writeHead(answer.status, contentType ? { 'content-type': contentType } : {}).end(text);
    } catch (err) {
      exchange.problems.push(`proxy: ${(err as Error).message}`);
      res.writeHead(502).end();
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  const url = await listen(server);
  return {
    url,
    exchanges,
    set target(base: string) {
      state.target = base;
    },
    close: () => close(server),
  };
}

/** The signature the prose specifies, computed here independently of the service's code. */
export function documentedSignature(
  secret: string,
  r: { timestamp: string; nonce: string; method: string; path: string; body: string },
): string {
  return `v1=${createHmac('sha256', secret).update([r.timestamp, r.nonce, r.method, r.path, r.body].join('\n')).digest('hex')}`;
}

/** How the fake partner answers the next request. */
export type PartnerAnswer =
  | { kind: 'ok' }
  | { kind: 'status'; status: number; body: string; contentType?: string }
  | { kind: 'slow'; ms: number }
  | { kind: 'reset' };

export interface PartnerRequest {
  method: string;
  path: string;
  body: string;
  headers: Record<string, string | undefined>;
  signatureValid: boolean;
  problems: string[];
}

/**
 * A partner server scripted per request (`answers`, then valid answers). It checks each request
 * against the document and the documented signature, and records them.
 */
export async function startFakePartner(secret: string, contract = new UpstreamContract()) {
  const answers: PartnerAnswer[] = [];
  const requests: PartnerRequest[] = [];
  const valid: Record<string, unknown> = {
    checkSession: { verdict: 'valid' },
    submitRedemption: { ref: 'sub_fake_1' },
    getSubmissionStatus: { state: 'failed', failureCode: 'rejected_by_operator', holdsResources: false },
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
    );
    const base = '/partner';
    const path = req.url!.startsWith(base) ? req.url!.slice(base.length) : req.url!;
    const checked = contract.request({ method: req.method!, url: path, headers, body });
    const expected = documentedSignature(secret, {
      timestamp: headers['x-upstream-timestamp'] ?? '',
      nonce: headers['x-upstream-nonce'] ?? '',
      method: req.method!,
      path,
      body,
    });
    requests.push({
      method: req.method!,
      path,
      body,
      headers,
      signatureValid: headers['x-upstream-signature'] === expected,
      problems: checked.problems,
    });
    const answer = answers.shift() ?? { kind: 'ok' };
    if (answer.kind === 'reset') return void req.socket.destroy();
    if (answer.kind === 'slow') await new Promise((r) => setTimeout(r, answer.ms));
    if (answer.kind === 'status')
      return void res
        .writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json' })
        .end(answer.body);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(valid[checked.op?.id ?? ''] ?? {}));
  };
  const server = createServer((req, res) => void handle(req, res));
  const origin = await listen(server);
  // A base URL with a path of its own: what is signed is the path below it.
  return { url: `${origin}/partner`, answers, requests, close: () => close(server) };
}
