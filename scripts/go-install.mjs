// `go install` of pinned packages with progress on stderr. Go is silent while it compiles, and a
// first build of a Temporal binary takes minutes on two cores, so this says what is built, roughly
// how long it takes and that it happens once, then a line every 30 s while it runs.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

export function findGo() {
  return onPath('go') ?? (executable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

/** `~/.cache/...` for messages, the full path elsewhere. */
export function tildify(path) {
  const home = homedir();
  return home && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

export function duration(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

const stderrLine = (m) => process.stderr.write(`${m}\n`);

/**
 * Runs `go install -v PACKAGES` with GOBIN=`gobin` (in `cwd`, for a module of this repository).
 * `what` names the thing built, `why` says why it is built, `usually` how long a first build takes
 * here. Resolves on success; rejects with Go's last lines otherwise.
 */
export function goInstall({ go, packages, gobin, cwd, what, why = '', usually, log = stderrLine, everyMs = 30_000 }) {
  log(
    `${what}: ${why}building with Go into ${tildify(gobin)}, once per machine ` +
      `(usually ${usually} on 2 cores; later runs reuse it)`,
  );
  const started = Date.now();
  let downloaded = 0;
  let compiled = 0;
  const tail = [];
  return new Promise((resolve, reject) => {
    const child = spawn(go, ['install', '-v', ...packages], {
      cwd,
      env: { ...process.env, GOBIN: gobin, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
      // stdout carries the scripts' answer (a path): Go's output goes to stderr, counted, not echoed.
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let pending = '';
    const onData = (chunk) => {
      const lines = (pending + String(chunk)).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('go: downloading ')) downloaded++;
        else if (/^[\w.\-/]+$/.test(line))
          compiled++; // -v names each package as it is compiled
        else if (line.trim()) tail.push(line);
        if (tail.length > 40) tail.shift();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setInterval(() => {
      log(
        `${what}: still building, ${duration(Date.now() - started)} so far ` +
          `(${downloaded} modules downloaded, ${compiled} packages compiled; usually ${usually})`,
      );
    }, everyMs);
    child.once('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearInterval(timer);
      if (pending.trim()) tail.push(pending);
      if (code === 0) {
        log(`${what}: built in ${duration(Date.now() - started)}`);
        resolve();
      } else {
        reject(
          new Error(
            `go install failed (${code ?? signal}) after ${duration(Date.now() - started)}:\n${tail.join('\n')}`,
          ),
        );
      }
    });
  });
}
