import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

// Issue 13: every HTTP answer the API tests receive is held to the published OpenAPI document
// (status, headers, body), with a standard JSON Schema validator. The document is fetched from
// the server under test, so what is checked is exactly what integrators download.

type Json = Record<string, any>;

interface Operation {
  pointer: string;
  op: Json;
  match: RegExp;
  params: number;
}

interface Contract {
  ajv: Ajv2020;
  doc: Json;
  operations: Map<string, Operation[]>;
  errorPointer: string;
}

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function load(doc: Json, key: string): Contract {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(doc, key);
  const operations = new Map<string, Operation[]>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch']) {
      if (!item[method]) continue;
      const params = (path.match(/\{[^}]+\}/g) ?? []).length;
      const match = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      const list = operations.get(method) ?? [];
      list.push({ pointer: `${key}#/paths/${escape(path)}/${method}`, op: item[method], match, params });
      operations.set(
        method,
        list.sort((a, b) => a.params - b.params),
      );
    }
  }
  return { ajv, doc, operations, errorPointer: `${key}#/components/schemas/Error` };
}

const contracts = new Map<string, Promise<Contract | undefined>>();

/** The document for a request's surface: the reseller API, or the admin API (fetched with the request's token). */
function contractFor(url: URL, authorization: string | undefined): Promise<Contract | undefined> | undefined {
  const surface = url.pathname.startsWith('/wholesale/v1/')
    ? '/wholesale/v1'
    : url.pathname.startsWith('/admin/v1/')
      ? '/admin/v1'
      : undefined;
  if (!surface || url.pathname === `${surface}/openapi.json` || url.pathname.startsWith(`${surface}/docs`))
    return undefined;
  const key = `${url.origin}${surface}`;
  if (!contracts.has(key)) {
    contracts.set(
      key,
      fetch(`${key}/openapi.json`, { headers: surface === '/admin/v1' && authorization ? { authorization } : {} }).then(
        async (r) => (r.ok ? load(await r.json(), key) : undefined),
      ),
    );
  }
  return contracts.get(key);
}

export interface Answer {
  method: string;
  url: string;
  /** The request's Authorization header, to fetch the admin document. */
  authorization?: string;
  status: number;
  headers: Headers;
  text: string;
}

/** Why an answer breaks the published contract, or undefined when it keeps it (or no document covers it). */
export async function contractViolation(a: Answer): Promise<string | undefined> {
  const url = new URL(a.url);
  const pending = contractFor(url, a.authorization);
  if (!pending) return undefined;
  let c = await pending;
  if (!c) {
    // The admin document is behind the token: without a good one, the answer is an error body.
    c = await contractFor(new URL(`${url.origin}/wholesale/v1/x`), undefined);
    if (!c) return undefined;
    return checkBody(c, c.errorPointer, a.text, `${a.method} ${url.pathname} ${a.status}`);
  }
  const method = a.method.toLowerCase();
  const operation = c.operations.get(method)?.find((o) => o.match.test(url.pathname));
  const where = `${a.method} ${url.pathname} → ${a.status}`;
  if (!operation) {
    // An unknown route is the error handler's 404, with the error body; the edge's checks, the
    // key and the rate limit may answer first (400, 401, 429).
    if ([400, 401, 404, 429].includes(a.status)) return checkBody(c, c.errorPointer, a.text, where);
    return `${where}: no operation in the document`;
  }
  const response = operation.op.responses?.[String(a.status)];
  if (!response) return `${where}: status ${a.status} is not declared for ${operation.op.operationId}`;
  for (const [name, h] of Object.entries<Json>(response.headers ?? {})) {
    const value = a.headers.get(name);
    if (value === null) {
      if (h.required) return `${where}: required header ${name} missing`;
      continue;
    }
    const schema = h.schema ?? {};
    const typed = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
    if (!c.ajv.validate(schema, typed)) return `${where}: header ${name}=${value} ${c.ajv.errorsText()}`;
  }
  const ct = a.headers.get('content-type') ?? '';
  // A CSV file: its type as declared (its records are checked by the tests that read them).
  if (response.content?.['text/csv'])
    return ct.startsWith('text/csv') ? undefined : `${where}: content-type ${ct}, declared text/csv`;
  const json = response.content?.['application/json'];
  if (!json) return a.text === '' ? undefined : `${where}: a body the document does not declare`;
  if (!ct.startsWith('application/json')) return `${where}: content-type ${ct}, declared application/json`;
  return checkBody(c, `${operation.pointer}/responses/${a.status}/content/application~1json/schema`, a.text, where);
}

function checkBody(c: Contract, pointer: string, text: string, where: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${where}: body is not JSON: ${text.slice(0, 200)}`;
  }
  const validate = c.ajv.getSchema(pointer);
  if (!validate) return `${where}: no schema at ${pointer}`;
  if (validate(body)) return undefined;
  return `${where}: body breaks the document: ${c.ajv.errorsText(validate.errors, { separator: '; ' })}\n${text.slice(0, 500)}`;
}

/** Throws when an answer breaks the contract (the API tests' HTTP client calls it on every answer). */
export async function assertContract(a: Answer): Promise<void> {
  const problem = await contractViolation(a);
  if (problem) throw new Error(`response breaks the OpenAPI document: ${problem}`);
}
