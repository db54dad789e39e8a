/**
 * End-to-end tests of the web UI in Debian's Chromium (playwright-core; `npx playwright install`
 * is not needed): the UI built once per source state, a gateway listening on a loopback port, one
 * browser per test file.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { SignInCodes } from '../../src/gateway/ui.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway, type TestFilesOptions } from './gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const window: any, document: any, location: any;

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .sort();
}

/**
 * The UI built from the current sources into .tmp/ui-<hash> (reused while ui/ and src/ are unchanged; built
 * into a scratch folder and renamed, so test files building at once never see half a build).
 */
export async function buildUi(): Promise<string> {
  const h = crypto.createHash('sha256');
  // src/ too: the UI bundles a few pure modules of the server's (src/mail/body-parts.ts).
  for (const f of [...sourceFiles(path.join(ROOT, 'ui')), ...sourceFiles(path.join(ROOT, 'src')), path.join(ROOT, 'package-lock.json')]) {
    h.update(path.relative(ROOT, f)).update(fs.readFileSync(f));
  }
  const out = path.join(ROOT, '.tmp', `ui-${h.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(path.join(out, 'index.html'))) return out;
  const scratch = `${out}.${process.pid}.${Date.now()}`;
  await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'ui/vite.config.ts', '--outDir', scratch], {
    cwd: ROOT,
  });
  try {
    fs.renameSync(scratch, out);
  } catch {
    fs.rmSync(scratch, { recursive: true, force: true }); // another file won the race: its build is the same
  }
  // Builds of earlier sources, once an hour old (a benchmark or another run may be about to serve one).
  for (const name of fs.readdirSync(path.dirname(out))) {
    const dir = path.join(path.dirname(out), name);
    if (/^ui-[0-9a-f]{16}$/.test(name) && dir !== out && Date.now() - fs.statSync(dir).mtimeMs > 3600_000) {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

export interface UiHarness {
  gw: TestGateway;
  url: string;
  codes: SignInCodes;
  browser: Browser;
  close(): Promise<void>;
}

export async function startUiHarness(opts: { files?: TestFilesOptions } = {}): Promise<UiHarness> {
  const dir = await buildUi();
  const codes = new SignInCodes();
  const gw = await startTestGateway({ ui: { dir, codes }, files: opts.files });
  const address = await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  return {
    gw,
    url: address,
    codes,
    browser,
    async close() {
      await browser.close();
      await gw.close();
    },
  };
}

/** A page signed in through the password form, with page errors collected (a test fails on any). */
export async function signedInPage(
  h: UiHarness,
  viewport = { width: 1440, height: 900 },
  options: BrowserContextOptions = {},
): Promise<{ page: Page; errors: string[] }> {
  const context = await h.browser.newContext({ ...options, viewport });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => {
    errors.push(`dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`${h.url}/`);
  await page.getByLabel('Access token').fill(TEST_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('searchbox').waitFor();
  return { page, errors };
}

let axeSource: string | undefined;

/** axe-core's serious and critical violations on the page as it is now (ids and targets). */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (a script tag would be refused).
  axeSource ??= fs.readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3) }));
  });
  return result.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => `${v.id}: ${v.targets.join(', ')}`);
}
