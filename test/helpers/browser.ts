import { chromium, type Browser } from 'playwright-core';

// The Chromium that test/global-setup.mjs found or unpacked (scripts/ensure-chromium.mjs: Debian's,
// else the one shipped in the @sparticuz/chromium package), driven by playwright-core: no browser
// download. The flags keep it off the closed network and working as root in a container.
export function chromiumPath(): string {
  const { CHROMIUM_PATH: path, WHOLESALE_NO_CHROMIUM: missing } = process.env;
  if (missing) throw new Error(missing);
  if (!path)
    throw new Error('no Chromium: run the browser tests with jest (its global setup finds one) or set CHROMIUM_PATH');
  return path;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
