import { readFileSync } from 'node:fs';
import { Router } from 'express';
import { PAGE_HEADERS } from './page-layout';

// The API reference at /wholesale/v1/docs, public like openapi.json: Redoc renders the same
// document the server publishes. Its bundle is served from node_modules, never from a CDN.

const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');

// Redoc styles itself inline, runs its search index in a blob: worker and draws data: images.
const DOCS_HEADERS = {
  ...PAGE_HEADERS,
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  // Public and the same for everyone: short caching is fine.
  'Cache-Control': 'public, max-age=60',
};

function page(specUrl: string, bundleUrl: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Wholesale API reference</title>
</head><body>
<redoc spec-url="${specUrl}" hide-download-button="false" expand-responses="200" path-in-middle-panel="true"></redoc>
<script src="${bundleUrl}"></script>
</body></html>`;
}

export function apiDocs(apiPrefix: string): Router {
  const router = Router();
  const bundle = readFileSync(REDOC_BUNDLE);
  router.get('/', (_req, res) => {
    res
      .status(200)
      .set({ ...DOCS_HEADERS, 'Content-Type': 'text/html; charset=utf-8' })
      .send(page(`${apiPrefix}/openapi.json`, `${apiPrefix}/docs/redoc.standalone.js`));
  });
  router.get('/redoc.standalone.js', (_req, res) => {
    res
      .status(200)
      .set({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=86400',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(bundle);
  });
  return router;
}
