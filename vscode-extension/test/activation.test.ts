/**
 * Loads the real extension entry point against a stubbed `vscode` module and checks what
 * activation registers, and the notification when the server executable is missing.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { indexDirFor } from '../src/indexDir';

type Any = any;

function deepStub(name: string): Any {
  // Anything the languageclient touches at load time: callable, constructible, with any property.
  const fn = function () {} as Any;
  return new Proxy(fn, {
    get: (target, key) => {
      if (key === 'prototype') return target.prototype;
      if (key === Symbol.toPrimitive) return () => name;
      if (typeof key === 'symbol' || key === 'then') return undefined;
      return deepStub(`${name}.${String(key)}`);
    },
    construct: () => ({}),
    apply: () => undefined,
  });
}

/** A workspace folder with a `.codeask.toml` (the extension starts its server at activation). */
function codeaskFolder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-ws-'));
  fs.writeFileSync(path.join(dir, '.codeask.toml'), '[index]\n');
  return dir;
}

function createVscodeStub(settings: Record<string, unknown>, extra: Record<string, unknown> = {}, folder = codeaskFolder()) {
  const disposable = { dispose() {} };
  const registered: string[] = [];
  const handlers = new Map<string, (...args: unknown[]) => unknown>();
  const errors: { message: string; actions: string[] }[] = [];
  const output: string[] = [];
  const statusItems: Any[] = [];
  const explicit: Any = {
    window: {
      createOutputChannel: () => ({
        appendLine: (s: string) => output.push(s),
        append: (s: string) => output.push(s),
        show() {},
        dispose() {},
      }),
      createStatusBarItem: () => {
        const item = { text: '', visible: false, show() { item.visible = true; }, hide() { item.visible = false; }, dispose() {} };
        statusItems.push(item);
        return item;
      },
      showErrorMessage: (message: string, ...actions: string[]) => {
        errors.push({ message, actions });
        return Promise.resolve(undefined);
      },
    },
    workspace: {
      workspaceFolders: [{ uri: { scheme: 'file', fsPath: folder }, name: 'ws', index: 0 }],
      getConfiguration: () => ({
        get: (key: string, fallback?: unknown) => (key in settings ? settings[key] : fallback),
        inspect: (key: string) => ({ key, globalValue: settings[key] }),
      }),
      onDidChangeConfiguration: () => disposable,
      onDidGrantWorkspaceTrust: () => disposable,
      isTrusted: true,
    },
    commands: {
      registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
        registered.push(id);
        handlers.set(id, handler);
        return disposable;
      },
      executeCommand: () => Promise.resolve(undefined),
    },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ViewColumn: { Beside: -2 },
    Uri: { parse: (s: string) => ({ toString: () => s }) },
    // VS Code before 1.101: no MCP server definition provider API
    lm: undefined,
    McpStdioServerDefinition: undefined,
    ...extra,
  };
  const vscode = new Proxy(explicit, {
    get: (target, key) => (key in target ? target[key] : typeof key === 'string' ? deepStub(`vscode.${key}`) : undefined),
  });
  return { vscode, registered, handlers, errors, output, statusItems };
}

function loadExtension(vscode: Any): Any {
  const mod = Module as Any;
  const original = mod._resolveFilename;
  mod._resolveFilename = function (request: string, ...rest: unknown[]) {
    return request === 'vscode' ? 'vscode' : original.call(this, request, ...rest);
  };
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode } as Any;
  try {
    const path = require.resolve('../src/extension');
    delete require.cache[path];
    return require(path);
  } finally {
    mod._resolveFilename = original;
  }
}

function context() {
  return {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: { get: async () => undefined, store: async () => undefined, delete: async () => undefined, onDidChange: () => ({ dispose() {} }) },
    globalState: { get: (_k: string, d?: unknown) => d, update: async () => undefined },
  };
}

describe('activation', () => {
  it('registers the palette commands (not the server ones) and explains a missing server', async () => {
    const stub = createVscodeStub({ serverPath: '/nonexistent/bin/codeask', 'hover.enabled': true });
    const ext = loadExtension(stub.vscode);
    const ctx = context();
    await ext.activate(ctx);
    for (const id of ['codeask.askQuestion', 'codeask.explainSelection', 'codeask.reindexWorkspace', 'codeask.showStatus', 'codeask.setApiKey']) {
      assert.ok(stub.registered.includes(id), id);
    }
    for (const id of ['codeask.ask', 'codeask.explain', 'codeask.reindex', 'codeask.status']) {
      assert.ok(!stub.registered.includes(id), id);
    }
    assert.equal(stub.errors.length, 1);
    assert.match(stub.errors[0].message, /could not start the language server/);
    assert.match(stub.errors[0].message, /pip install \/path\/to\/codeask/);
    assert.match(stub.errors[0].message, /\/nonexistent\/bin\/codeask" was not found/);
    assert.deepEqual(stub.errors[0].actions, ['Set codeask.serverPath', 'Copy Install Command', 'Show Output']);
    assert.equal(stub.statusItems[0].text, '$(error) codeask');
    assert.equal(stub.statusItems[0].command, 'codeask.showStatus');
    for (const d of ctx.subscriptions) d.dispose();
    await ext.deactivate();
  });

  it('starts nothing in a folder with no .codeask.toml and no index, until a codeask command', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-plain-'));
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-cache-'));
    const saved = process.env.CODEASK_CACHE_DIR;
    process.env.CODEASK_CACHE_DIR = cache;
    const stub = createVscodeStub({ serverPath: '/nonexistent/bin/codeask' }, {}, folder);
    const ext = loadExtension(stub.vscode);
    const ctx = context();
    try {
      await ext.activate(ctx);
      assert.equal(stub.errors.length, 0, 'no start was tried');
      assert.equal(stub.statusItems[0].visible, false);
      assert.ok(stub.output.some((l) => /starts with the first codeask command/.test(l)), stub.output.join('\n'));
      assert.ok(stub.registered.includes('codeask.showStatus'));
      stub.vscode.window.showInformationMessage = () => Promise.resolve(undefined);
      await stub.handlers.get('codeask.showStatus')!(); // the command starts the server (here: not found)
      assert.equal(stub.errors.length, 2, JSON.stringify(stub.errors)); // the start failure, then the status request's
      assert.match(stub.errors[0].message, /\/nonexistent\/bin\/codeask" was not found/);
      assert.equal(stub.statusItems[0].visible, true);
      assert.equal(stub.statusItems[0].text, '$(error) codeask');
    } finally {
      if (saved === undefined) delete process.env.CODEASK_CACHE_DIR;
      else process.env.CODEASK_CACHE_DIR = saved;
      for (const d of ctx.subscriptions) d.dispose();
      await ext.deactivate();
    }
  });

  it('starts the server at activation in a folder codeask indexed (no .codeask.toml)', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-indexed-'));
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-cache-'));
    fs.mkdirSync(indexDirFor(fs.realpathSync.native(folder), cache));
    const saved = process.env.CODEASK_CACHE_DIR;
    process.env.CODEASK_CACHE_DIR = cache;
    const stub = createVscodeStub({ serverPath: '/nonexistent/bin/codeask' }, {}, folder);
    const ext = loadExtension(stub.vscode);
    const ctx = context();
    try {
      await ext.activate(ctx);
      assert.equal(stub.errors.length, 1);
      assert.match(stub.errors[0].message, /\/nonexistent\/bin\/codeask" was not found/);
      assert.equal(stub.statusItems[0].visible, true);
    } finally {
      if (saved === undefined) delete process.env.CODEASK_CACHE_DIR;
      else process.env.CODEASK_CACHE_DIR = saved;
      for (const d of ctx.subscriptions) d.dispose();
      await ext.deactivate();
    }
  });

  it('registers the codeask MCP server provider when VS Code has the API', async () => {
    const providers: { id: string; provider: Any }[] = [];
    let disposed = 0;
    class EventEmitter {
      listeners: (() => void)[] = [];
      event = (l: () => void) => {
        this.listeners.push(l);
        return { dispose() {} };
      };
      fire() {
        for (const l of this.listeners) l();
      }
      dispose() {}
    }
    const stub = createVscodeStub(
      { serverPath: '/nonexistent/bin/codeask' },
      {
        lm: {
          registerMcpServerDefinitionProvider: (id: string, provider: Any) => {
            providers.push({ id, provider });
            return { dispose: () => disposed++ };
          },
        },
        McpStdioServerDefinition: class {},
        EventEmitter,
      },
    );
    stub.vscode.workspace.onDidChangeWorkspaceFolders = () => ({ dispose() {} });
    const ext = loadExtension(stub.vscode);
    const ctx = context();
    await ext.activate(ctx);
    const pkg = require('../../package.json');
    assert.equal(providers.length, 1);
    assert.equal(providers[0].id, pkg.contributes.mcpServerDefinitionProviders[0].id);
    // no server executable found: no definition offered (and no error beyond the start failure)
    assert.deepEqual(await providers[0].provider.provideMcpServerDefinitions(), []);
    assert.equal(stub.errors.length, 1);
    for (const d of ctx.subscriptions) d.dispose();
    assert.equal(disposed, 1);
    await ext.deactivate();
  });

  it('a codeask.serverPath that arrives while the managed server installs wins over the install', async () => {
    // The user settings can reach the extension host after activation: the first start, with no
    // serverPath, began installing the bundled server; the restart the setting caused must not be
    // replaced by that install when it finishes.
    const settings: Record<string, unknown> = {};
    const configListeners: ((e: Any) => void)[] = [];
    let finishInstall!: (env: unknown) => void;
    const stub = createVscodeStub(settings, { ProgressLocation: { Notification: 15 } });
    stub.vscode.workspace.onDidChangeConfiguration = (l: (e: Any) => void) => (configListeners.push(l), { dispose() {} });
    // the install (pip from the bundled wheel) under way until the test ends it
    stub.vscode.window.withProgress = () => new Promise((resolve) => (finishInstall = resolve));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-activation-'));
    fs.mkdirSync(path.join(dir, 'server'));
    fs.writeFileSync(path.join(dir, 'server', 'codeask-0.1.0-py3-none-any.whl'), '');
    const ctx = {
      ...context(),
      asAbsolutePath: (p: string) => path.join(dir, p),
      globalStorageUri: { fsPath: path.join(dir, 'storage') },
    };
    const savedPath = process.env.PATH;
    process.env.PATH = path.join(dir, 'empty-bin'); // no `codeask` on PATH: the managed server is needed
    const ext = loadExtension(stub.vscode);
    try {
      const activated = ext.activate(ctx);
      while (!finishInstall) await new Promise((r) => setImmediate(r));
      settings.serverPath = path.join(dir, 'from-settings', 'codeask');
      for (const l of configListeners) l({ affectsConfiguration: (k: string) => k === 'codeask.serverPath' });
      finishInstall({ python: '/managed/bin/python', codeask: '/managed/bin/codeask', reused: false });
      await activated;
      while (!stub.errors.length) await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(stub.output.filter((l) => l.includes('/managed/bin/codeask')).length, 0, stub.output.join('\n'));
      assert.equal(stub.errors.length, 1);
      assert.match(stub.errors[0].message, /from-settings\/codeask" was not found/);
    } finally {
      process.env.PATH = savedPath;
      for (const d of ctx.subscriptions) d.dispose();
      await ext.deactivate();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
