export default async function globalTeardown() {
  for (const stop of globalThis.__wholesaleStops ?? []) await stop().catch(() => undefined);
}
