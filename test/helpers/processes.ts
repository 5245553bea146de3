import type { ChildProcess } from 'node:child_process';

/**
 * The child has exited and its output has been read to the end. Node emits 'exit' when the process
 * ends, possibly before the last of its output is read, and 'close' once its pipes are drained too.
 */
export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const draining = [child.stdout, child.stderr].some((stream) => stream && !stream.closed);
  if ((child.exitCode !== null || child.signalCode !== null) && !draining)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((ok) => child.once('close', (code, signal) => ok({ code, signal })));
}

/**
 * Kills a process the test started (SIGKILL), if it still runs, and waits until nothing of it is
 * left: a test file that ends with a child still exiting keeps its jest worker from exiting.
 */
export async function killed(child: ChildProcess | undefined): Promise<void> {
  if (!child) return;
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await exited(child);
}
