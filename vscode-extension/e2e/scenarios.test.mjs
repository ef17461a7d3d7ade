/**
 * The codeask .vsix in a real VS Code (code-server), worked through Chromium as a person does.
 * Run by run.sh (which installs code-server, Node 24, Chromium and playwright-core first):
 *
 *     node --test --test-concurrency=1 e2e/scenarios.test.mjs
 *
 * Environment: CODEASK_E2E_DIR (the run's folder: screenshots, logs, workspaces; a new temp
 * folder when unset), CODEASK_E2E_VSIX (the .vsix; default: the one `npm run package` built).
 * Every scenario asserts on what the page shows and saves a screenshot under <dir>/screenshots.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  PATIENCE,
  REPO,
  Workbench,
  codeaskExecutable,
  installVsix,
  launchBrowser,
  layout,
  pythonExecutable,
  sleep,
  startCodeServer,
  until,
  writeUserSettings,
} from './workbench.mjs';

const root = process.env.CODEASK_E2E_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-e2e-'));
const { dirs, env } = layout(root);
const WEIRD = 'src/my #1 módulo.py';

function vsixPath() {
  if (process.env.CODEASK_E2E_VSIX) return process.env.CODEASK_E2E_VSIX;
  const dir = path.join(REPO, 'vscode-extension');
  const found = fs.readdirSync(dir).filter((n) => n.endsWith('.vsix')).sort();
  if (!found.length) throw new Error('no .vsix in vscode-extension/ (run `npm run package --prefix vscode-extension`)');
  return path.join(dir, found[found.length - 1]);
}

/** A small project: a shop with pricing, a cart, and a file whose name needs escaping. */
function makeWorkspace(name, { toml = true } = {}) {
  const ws = path.join(dirs.workspaces, name);
  const files = {
    'src/shop/pricing.py':
      'TAX_RATE = 0.2\n\n\ndef apply_discount(total, percent):\n    """Lower a cart total by a percentage discount."""\n    if not 0 <= percent <= 100:\n        raise ValueError("percent out of range")\n    return round(total * (1 - percent / 100), 2)\n\n\ndef with_tax(amount):\n    """The amount with value added tax."""\n    return round(amount * (1 + TAX_RATE), 2)\n',
    'src/shop/cart.py':
      'from shop.pricing import apply_discount, with_tax\n\n\nclass Cart:\n    """Items a customer is about to buy."""\n\n    def __init__(self):\n        self.items = []\n\n    def add(self, name, price, quantity=1):\n        self.items.append((name, price, quantity))\n\n    def total(self, discount_percent=0):\n        """The price of every item, discounted, with tax."""\n        subtotal = sum(price * quantity for _, price, quantity in self.items)\n        return with_tax(apply_discount(subtotal, discount_percent))\n',
    'src/shop/shipping.py':
      'def shipping_cost(weight_kg, express=False):\n    """Parcel price from its weight; express doubles it."""\n    base = 4.5 + 1.2 * weight_kg\n    return base * 2 if express else base\n',
    [WEIRD]:
      '"""Zebra helpers."""\n\nimport math\n\n\ndef zebra_stripe_counter(zebras):\n    """Count the stripes of every zebra in the herd."""\n    return sum(z.stripes for z in zebras)\n',
  };
  if (toml) files['.codeask.toml'] = '[index]\n';
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), text);
  }
  return ws;
}

function lines(ws, rel, start, end) {
  return fs.readFileSync(path.join(ws, rel), 'utf8').split('\n').slice(start - 1, end).join('\n');
}

let server;
let browser;
let fakeLlm;
let fakeLlmUrl;
const fakeLlmLog = path.join(dirs.root, 'fake-llm-requests.jsonl');
const baseSettings = {
  'security.workspace.trust.startupPrompt': 'always',
  'workbench.startupEditor': 'none',
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'workbench.tips.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'telemetry.telemetryLevel': 'off',
  'codeask.serverPath': '',
};

function llmRequests() {
  return fs.existsSync(fakeLlmLog) ? fs.readFileSync(fakeLlmLog, 'utf8').split('\n').filter(Boolean).length : 0;
}

before(async () => {
  const started = Date.now();
  process.stdout.write(`codeask e2e: run folder ${dirs.root}\n`);
  const vsix = vsixPath();
  process.stdout.write(installVsix(dirs, env, vsix));
  writeUserSettings(dirs, { ...baseSettings, 'codeask.serverPath': codeaskExecutable(), 'codeask.llm.provider': 'none' });
  fakeLlm = spawn('python3', [path.join(REPO, 'vscode-extension', 'e2e', 'fake_llm_serve.py'), fakeLlmLog], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  fakeLlmUrl = await new Promise((resolve, reject) => {
    fakeLlm.stdout.once('data', (d) => resolve(String(d).trim()));
    fakeLlm.once('exit', (code) => reject(new Error(`the fake LLM server exited (${code})`)));
  });
  server = await startCodeServer(dirs, env, path.join(dirs.root, 'code-server.log'));
  browser = await launchBrowser();
  process.stdout.write(`codeask e2e: code-server ${server.url} ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  server?.child.kill('SIGTERM');
  fakeLlm?.stdin.end();
  const shots = fs.existsSync(dirs.screenshots) ? fs.readdirSync(dirs.screenshots).sort() : [];
  process.stdout.write(`codeask e2e: screenshots in ${dirs.screenshots}:\n${shots.map((s) => `  ${path.join(dirs.screenshots, s)}\n`).join('')}`);
});

/** Asks `question` through the palette and the quick pick; resolves the answer tab's text. */
async function ask(wb, question, expect) {
  await wb.command('Codeask: Ask a Question');
  await wb.typeInQuickInput(question);
  return until('the answer tab', async () => {
    const text = await wb.answerText().catch(() => '');
    return expect.test(text) ? text : undefined;
  });
}

describe('codeask in VS Code (code-server 4.139.1)', () => {
  it('1. no LLM: ranked files with snippets; a citation opens the file on the function it is about, the cited lines from it selected', async () => {
    const ws = makeWorkspace('no-llm');
    const wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    try {
      await until('the index', async () => /codeask: \d+ files?/.test((await wb.codeaskStatus()) ?? ''));
      const text = await ask(wb, 'where is the discount applied to the cart total?', /pricing\.py/);
      assert.match(text, /apply_discount/); // a snippet, not only a file name
      const links = wb.answerFrame().locator('a.codeask-source');
      const count = await links.count();
      assert.ok(count >= 2, `citations in the tab: ${count}`);
      const target = wb.answerFrame().locator('a.codeask-source[data-uri*="pricing.py"][data-start]').first();
      const start = Number(await target.getAttribute('data-start'));
      const end = Number(await target.getAttribute('data-end'));
      await wb.screenshot('1-no-llm-answer');
      await target.click();
      await until('pricing.py in the editor', async () => (await wb.activeTab()).includes('pricing.py'));
      await sleep(500);
      // the span opens on TAX_RATE: the editor opens on apply_discount (its open_line), the cursor there,
      // the cited lines from it to the span's end selected (data-start/end are 1-based)
      const def = fs.readFileSync(path.join(ws, 'src/shop/pricing.py'), 'utf8').split('\n').indexOf('def apply_discount(total, percent):') + 1;
      assert.ok(start < def && def <= end, `lines ${start}-${end} hold apply_discount (${def}) below their first`);
      await until('the cursor on apply_discount', async () => (await wb.cursorPosition()).startsWith(`Ln ${def}, Col 1`));
      const selected = await wb.selectedText();
      const expected = lines(ws, 'src/shop/pricing.py', def, end);
      assert.equal(selected.replace(/\n$/, ''), expected.replace(/\n$/, ''), `lines ${def}-${end}`);
      await wb.screenshot('1-no-llm-citation-opened');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
  });

  it('2. with an LLM (the fake OpenAI-compatible server): the answer streams into the tab, numbered citations are links, an odd file name opens', async () => {
    const ws = makeWorkspace('llm');
    writeUserSettings(dirs, {
      ...baseSettings,
      'codeask.serverPath': codeaskExecutable(),
      'codeask.llm.provider': 'openai',
      'codeask.llm.baseUrl': fakeLlmUrl,
      'codeask.llm.model': 'e2e-model',
    });
    const wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    try {
      await wb.command('Codeask: Set API Key');
      await wb.page.locator('.quick-input-list .monaco-list-row', { hasText: 'OpenAI' }).first().click();
      await wb.typeInQuickInput('sk-e2e-not-a-real-key');
      await until('the index', async () => /codeask: \d+ files?/.test((await wb.codeaskStatus()) ?? ''));
      const before = llmRequests();
      await wb.command('Codeask: Ask a Question');
      await wb.typeInQuickInput('how are the stripes of zebras counted?');
      // The fake model streams its answer for a few seconds: the tab shows its start before its end.
      const partial = await until('part of the answer in the tab', async () => {
        const t = await wb.answerText().catch(() => '');
        return /FAKE ANSWER from the e2e server/.test(t) ? t : undefined;
      }, undefined, 100);
      assert.doesNotMatch(partial, /END OF THE FAKE ANSWER/, 'the answer appeared only when done');
      assert.match(partial, /writing the answer…/);
      await wb.screenshot('2-llm-answer-streaming');
      const text = await until('the whole answer', async () => {
        const t = await wb.answerText().catch(() => '');
        return /END OF THE FAKE ANSWER/.test(t) && !/writing the answer…/.test(t) ? t : undefined;
      });
      assert.ok(llmRequests() > before, 'the fake LLM server got the question');
      assert.equal((text.match(/^Sources$/gm) ?? []).length, 1, `one list of sources: ${text}`);
      const numbered = wb.answerFrame().locator('.answer a.codeask-source', { hasText: /^\[\d+\]$/ });
      assert.ok((await numbered.count()) >= 1, `numbered citation links in the answer: ${text}`);
      // the numbered citation of the file named with a space, a '#' and a non-ASCII letter
      const weird = wb.answerFrame().locator('.answer a.codeask-source[data-uri*="m%C3%B3dulo"]', { hasText: /^\[\d+\]$/ }).first();
      await weird.waitFor({ state: 'attached' });
      assert.match(decodeURIComponent(await weird.getAttribute('data-uri')), /my #1 módulo\.py$/);
      await wb.screenshot('2-llm-answer');
      await weird.click();
      await until('the odd file in the editor', async () => (await wb.activeTab()).includes('my #1 módulo.py'));
      // opened on the function the answer is about (its open_line), not on the module docstring above it
      await until('the cursor on the function', async () => (await wb.cursorPosition()).startsWith('Ln 6, Col 1'));
      assert.match(await wb.selectedText(), /^def zebra_stripe_counter/);
      await wb.screenshot('2-llm-odd-file-opened');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
  });

  it('3. Explain Selection on a function, and a hover listing related code', async () => {
    const ws = makeWorkspace('llm'); // the second scenario's folder (made again when run alone)
    writeUserSettings(dirs, {
      ...baseSettings,
      'codeask.serverPath': codeaskExecutable(),
      'codeask.llm.provider': 'openai',
      'codeask.llm.baseUrl': fakeLlmUrl,
      'codeask.llm.model': 'e2e-model',
    });
    const wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    try {
      await until('the index', async () => /codeask: \d+ files?/.test((await wb.codeaskStatus()) ?? ''));
      await wb.openFile('src/shop/cart.py');
      await wb.gotoLine(13);
      await until('the function selected', async () => {
        await wb.page.keyboard.press('Shift+ArrowDown');
        return /Ln 17, Col 1 \(\d+ selected\)/.test(await wb.cursorPosition());
      }, undefined, 300);
      const before = llmRequests();
      await wb.command('Codeask: Explain Selection');
      const text = await until('the explanation', async () => {
        const t = await wb.answerText().catch(() => '');
        return /Explain src\/shop\/cart\.py:13-17/.test(t) && /FAKE ANSWER/.test(t) ? t : undefined;
      });
      assert.ok(llmRequests() > before);
      assert.match(text, /Related\n[\s\S]*pricing\.py/); // the code the function uses, listed once
      assert.doesNotMatch(text, /^Sources$/m);
      // the explanation's [n] are links to the related code, as an answer's are
      const cited = wb.answerFrame().locator('.answer a.codeask-source', { hasText: /^\[\d+\]$/ });
      assert.ok((await cited.count()) >= 1, `numbered citation links in the explanation: ${text}`);
      await wb.screenshot('3-explain-selection');
      // a click on the first line clears the selection (a hover inside one explains the selection)
      await wb.page.locator('.view-line').first().click();
      const word = wb.page.locator('.view-lines .view-line span', { hasText: /^apply_discount$/ }).first();
      await word.hover();
      const hover = wb.page.locator('.monaco-hover-content', { hasText: 'Related code' }).first();
      await hover.waitFor({ state: 'visible', timeout: PATIENCE }); // the pointer rests on the name
      const links = hover.locator('a');
      assert.ok((await links.count()) >= 1, await hover.innerText());
      assert.match(await hover.innerText(), /pricing\.py/);
      await wb.screenshot('3-hover-related-code');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
  });

  it('4. status bar: not indexed, indexing, N files; reopening an indexed folder shows its count at once', async () => {
    const ws = makeWorkspace('lifecycle', { toml: false });
    writeUserSettings(dirs, { ...baseSettings, 'codeask.serverPath': codeaskExecutable(), 'codeask.llm.provider': 'none' });
    const wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    const seen = [];
    const record = async () => {
      const t = await wb.codeaskStatus().catch(() => undefined);
      if (t && seen[seen.length - 1] !== t) seen.push(t);
      return t;
    };
    try {
      await wb.command('Codeask: Show Status'); // no .codeask.toml: a command activates codeask
      await until('"not indexed yet"', async () => /not indexed yet/.test((await record()) ?? ''));
      await wb.screenshot('4-status-not-indexed');
      await wb.page.keyboard.press('Escape');
      await wb.command('Codeask: Ask a Question');
      await wb.typeInQuickInput('what does shipping cost?');
      await until('the count after indexing', async () => /codeask: 4 files/.test((await record()) ?? ''), undefined, 100);
      assert.ok(seen.some((t) => t.includes('~spin')), `a spinner while indexing: ${JSON.stringify(seen)}`);
      assert.ok(!seen.some((t) => /: 0 files/.test(t)), JSON.stringify(seen));
      await wb.screenshot('4-status-indexed');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
    // A folder with a .codeask.toml is indexed when it opens; reopened, it shows its count without
    // "0 files" on the way.
    const reopen = makeWorkspace('reopen');
    const first = await Workbench.open(browser, server.url, reopen, { shots: dirs.screenshots });
    try {
      await until('the first index', async () => /codeask: 4 files/.test((await first.codeaskStatus()) ?? ''));
    } catch (error) {
      await first.close(true);
      throw error;
    }
    await first.close();
    await sleep(3000); // the first window's server notices its window has gone
    let again = await Workbench.open(browser, server.url, reopen, { shots: dirs.screenshots });
    const reopened = [];
    try {
      await until('the count of the reopened folder', async () => {
        const t = await again.codeaskStatus().catch(() => undefined);
        if (t && reopened[reopened.length - 1] !== t) reopened.push(t);
        return /codeask: 4 files/.test(t ?? '');
      }, undefined, 50);
      assert.ok(!reopened.some((t) => /: 0 files/.test(t)), JSON.stringify(reopened));
      await again.screenshot('4-status-reopened');
      // The first folder has no .codeask.toml, but an index now: codeask starts there by itself.
      await again.close();
      await sleep(3000);
      again = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
      await until('the count of the indexed folder without .codeask.toml, with no command run', async () =>
        /codeask: 4 files/.test((await again.codeaskStatus()) ?? ''));
      await again.screenshot('4-status-indexed-no-toml');
      process.stdout.write(`codeask e2e: status bar, new folder: ${JSON.stringify(seen)}; reopened: ${JSON.stringify(reopened)}\n`);
    } catch (error) {
      await again.close(true);
      throw error;
    }
    await again.close();
  });

  it('5. Restricted Mode: no LLM request leaves, and the answer says why', async () => {
    const ws = makeWorkspace('restricted');
    writeUserSettings(dirs, {
      ...baseSettings,
      'codeask.serverPath': codeaskExecutable(),
      'codeask.llm.provider': 'openai',
      'codeask.llm.baseUrl': fakeLlmUrl,
    });
    const wb = await Workbench.open(browser, server.url, ws, { trust: false, shots: dirs.screenshots });
    try {
      await until('the index', async () => /codeask: \d+ files?/.test((await wb.codeaskStatus()) ?? ''));
      const before = llmRequests();
      const text = await ask(wb, 'where is the discount applied to the cart total?', /pricing\.py/);
      assert.match(text, /Restricted Mode/);
      await sleep(1000);
      assert.equal(llmRequests(), before, 'a request reached the LLM server from an untrusted workspace');
      await wb.screenshot('5-restricted-mode');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
  });

  it('6. codeask.serverPath is honoured; unset, the managed environment is built from the bundled wheel', async () => {
    const ws = makeWorkspace('server-path');
    const exe = codeaskExecutable();
    writeUserSettings(dirs, { ...baseSettings, 'codeask.serverPath': exe, 'codeask.llm.provider': 'none' });
    let wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    try {
      await until('the index', async () => /codeask: \d+ files?/.test((await wb.codeaskStatus()) ?? ''));
      const out = await wb.outputChannel();
      assert.ok(out.includes(`starting ${exe} serve`), out);
      await wb.screenshot('6-server-path-output');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
    // Unset: code-server's PATH has no `codeask` (see below), so the extension creates its own
    // environment from the wheel in the .vsix, with the Python codeask.pythonPath names.
    writeUserSettings(dirs, { ...baseSettings, 'codeask.pythonPath': pythonExecutable(), 'codeask.llm.provider': 'none' });
    wb = await Workbench.open(browser, server.url, ws, { shots: dirs.screenshots });
    try {
      await until('the server (or its install) to start', async () => /codeask: \d+ files?|\$\(error\)/.test((await wb.codeaskStatus()) ?? ''), PATIENCE * 3);
      let out = await wb.outputChannel();
      if (!/\(managed environment\)/.test(out)) {
        // `codeask` was on the extension host's PATH (CI's pip install): ask for the managed one.
        await wb.command('Codeask: Reinstall Server');
        out = await until('the managed server', async () => {
          const text = await wb.outputChannel();
          return /\(managed environment\)/.test(text) ? text : undefined;
        }, PATIENCE * 3, 5000);
      }
      assert.match(out, /starting \S*\/globalStorage\/codeask\.codeask\/venv\/bin\/codeask serve/);
      assert.match(out, /server codeask [\d.]+ \(managed environment\)/);
      // the environment got the wheel the .vsix carries
      const pip = await wb.outputChannel('/server/codeask-');
      assert.match(pip, /pip install \S*\/codeask\.codeask-[\d.]+\/server\/codeask-[\d.]+-py3-none-any\.whl/);
      await wb.screenshot('6-managed-environment-output');
    } catch (error) {
      await wb.close(true);
      throw error;
    }
    await wb.close();
  });
});
