// A Postgres a test can stop and start: run as its own process (`node --import tsx
// test/helpers/pg-server.ts <dataDir> <port>`), it starts embedded Postgres (ESM-only, so not
// inside jest), prints `ready <url>`, and then obeys lines on stdin: `stop` (Postgres shuts down
// on SIGINT, as an operator's fast shutdown does) → `stopped`, `start` → `started`, `exit`.
import { createInterface } from 'node:readline';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/dev/postgres';

async function main() {
  const [dataDir, port] = process.argv.slice(2);
  const open = () => startEmbeddedPostgres({ dataDir, port: Number(port), database: 'postgres' });
  let db: EmbeddedDatabase | undefined = await open();
  process.stdout.write(`ready ${db.url}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    const command = line.trim();
    if (command === 'stop') {
      await db?.stop();
      db = undefined;
      process.stdout.write('stopped\n');
    } else if (command === 'start') {
      db ??= await open();
      process.stdout.write('started\n');
    } else if (command === 'exit') {
      break;
    }
  }
  await db?.stop();
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`pg-server: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
