import type { Router } from 'express';
import { html } from '../page-layout';

// The Copy button next to a secret shown once (a new API key, a webhook signing secret). The page
// works without script: the secret is selectable text; the button is hidden until the script
// (served from here, as the Content-Security-Policy allows only the site's own scripts) can work.

export const COPY_SCRIPT = '/account/assets/copy.js';

/** A hidden button that copies the text of the element with id `targetId`. */
export const copyButton = (targetId: string, testId: string) =>
  html`<button type="button" class="secondary" data-copy="${targetId}" data-testid="${testId}" hidden>Copy</button>`;

const SCRIPT = `(() => {
  for (const button of document.querySelectorAll('[data-copy]')) {
    const source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      const text = source.textContent.trim();
      try {
        await navigator.clipboard.writeText(text);
      } catch (e) {
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        document.execCommand('copy');
      }
      button.textContent = 'Copied';
      setTimeout(() => { button.textContent = 'Copy'; }, 1500);
    });
  }
})();`;

export function copyScriptRoute(router: Router): void {
  router.get('/assets/copy.js', (_req, res) => {
    res
      .set({
        'Content-Type': 'text/javascript; charset=utf-8',
        'Cache-Control': 'public, max-age=300',
        'X-Content-Type-Options': 'nosniff',
      })
      .send(SCRIPT);
  });
}
