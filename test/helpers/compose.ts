// What Docker Compose makes of docker-compose.yml and an .env file, for tests on a machine with no
// Docker: the .env format (compose's dotenv rules), `${VAR}` interpolation with its default and
// required forms, and a service's environment as its container gets it (env_file, then
// `environment`, which wins).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';

export type Vars = Record<string, string>;

/** One assignment of an .env file with the comment lines just above it. */
export interface EnvEntry {
  name: string;
  value: string;
  comments: string[];
}

/** Parses an .env file: `NAME=value`, single quotes literal, double quotes with escapes, `#` comments. */
export function parseDotenv(text: string): EnvEntry[] {
  const entries: EnvEntry[] = [];
  let comments: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '') {
      comments = [];
      continue;
    }
    if (line.startsWith('#')) {
      comments.push(line.slice(1).trim());
      continue;
    }
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new Error(`not an assignment: ${line}`);
    const [, name, rest] = m;
    let value: string;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) throw new Error(`${name}: unterminated single quote`);
      value = rest.slice(1, end);
    } else if (rest.startsWith('"')) {
      const end = rest.search(/(?<!\\)"(?=\s*(#.*)?$)/);
      if (end < 1) throw new Error(`${name}: unterminated double quote`);
      value = rest.slice(1, end).replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t' })[c] ?? c);
    } else {
      value = rest.replace(/\s+#.*$/, '').trim();
    }
    entries.push({ name, value, comments });
    comments = [];
  }
  return entries;
}

/** `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`, `${NAME:+alt}`, `$NAME`, `$$`. */
export function interpolate(value: string, vars: Vars): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced, op, arg, bare) => {
      if (whole === '$$') return '$';
      const name = (braced ?? bare) as string;
      const set = Object.hasOwn(vars, name);
      const given = set && vars[name] !== '';
      switch (op as string | undefined) {
        case ':-':
          return given ? vars[name] : interpolate(arg, vars);
        case '-':
          return set ? vars[name] : interpolate(arg, vars);
        case ':?':
          if (!given) throw new Error(`${name}: ${arg}`);
          return vars[name];
        case '?':
          if (!set) throw new Error(`${name}: ${arg}`);
          return vars[name];
        case ':+':
          return given ? interpolate(arg, vars) : '';
        default:
          return set ? vars[name] : '';
      }
    },
  );
}

export interface ComposeService {
  image?: string;
  command?: string[];
  env_file?: string[];
  environment?: Record<string, string | number | boolean>;
  ports?: string[];
  expose?: string[];
  profiles?: string[];
  [key: string]: unknown;
}

export function loadCompose(file: string): { services: Record<string, ComposeService>; [key: string]: unknown } {
  return parse(readFileSync(file, 'utf8'), { merge: true });
}

/**
 * A service's container environment: its env files (paths interpolated, relative to the compose
 * file's folder), then `environment` over them, every value interpolated with `vars` (the
 * project's .env).
 */
export function serviceEnvironment(service: ComposeService, vars: Vars, dir: string): Vars {
  const env: Vars = {};
  for (const file of service.env_file ?? []) {
    for (const { name, value } of parseDotenv(readFileSync(resolve(dir, interpolate(file, vars)), 'utf8')))
      env[name] = value;
  }
  for (const [name, value] of Object.entries(service.environment ?? {})) env[name] = interpolate(String(value), vars);
  return env;
}
