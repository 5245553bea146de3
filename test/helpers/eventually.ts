// Polling with a deadline instead of fixed sleeps, for tests and for the topology harness (which
// also runs outside jest, from bench/soak.ts: nothing here may need jest or the API contract).

/**
 * Polls until `check` returns a value. A check that throws counts as "not yet" (e.g. a workflow
 * that is about to be started, a server that does not accept connections yet); the last error is
 * reported if the deadline passes.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  everyMs = 100,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${what} not reached before the deadline (${timeoutMs} ms)${lastError ? `: ${String(lastError)}` : ''}`,
        { cause: lastError },
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
