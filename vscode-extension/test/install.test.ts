/**
 * The managed server environment, for real: the wheel `npm run package` builds (built here when
 * missing), a virtual environment in a temporary storage folder, pip, then `codeask serve` from it
 * answering `initialize` over stdio. The venv sees the interpreter's installed packages
 * (--system-site-packages) and pip runs with --no-index, so no dependency is downloaded.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { InstallError, bundledWheel, ensureServerEnv, findPython, venvPaths } from '../src/install';

const root = join(__dirname, '..', '..');
const python = process.env.CODEASK_PYTHON || 'python3';
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;

function wheel(): string {
  let found = bundledWheel(join(root, 'server'));
  if (!found) {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'build-wheel.mjs')], { stdio: 'inherit' });
    assert.equal(r.status, 0, 'build-wheel failed');
    found = bundledWheel(join(root, 'server'));
  }
  assert.ok(found, 'no wheel in vscode-extension/server');
  return found;
}

async function initialize(codeask: string, cwd: string): Promise<{ name: string; version?: string }> {
  const env = { ...process.env };
  delete env.PYTHONPATH; // run the installed wheel, not a checkout
  const child = spawn(codeask, ['serve'], { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  try {
    const result: any = await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      workspaceFolders: null,
    });
    await conn.sendRequest('shutdown');
    await conn.sendNotification('exit');
    return result.serverInfo;
  } finally {
    conn.dispose();
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.on('exit', resolve)));
  }
}

const temps: string[] = [];
function temp(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}
after(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('findPython', () => {
  it('explains a missing and a too-old Python', async () => {
    await assert.rejects(findPython([{ command: '/nonexistent/python3' }]), (e: InstallError) => {
      assert.equal(e.kind, 'no-python');
      assert.match(e.message, /Python 3\.11 or newer/);
      assert.match(e.message, /Reinstall Server/);
      return true;
    });
    const dir = temp('codeask-py-');
    const old = join(dir, 'python3.9');
    writeFileSync(old, '#!/bin/sh\necho 3.9.18\n');
    chmodSync(old, 0o755);
    await assert.rejects(findPython([{ command: old }]), (e: InstallError) => {
      assert.equal(e.kind, 'old-python');
      assert.match(e.message, /python3\.9 is 3\.9\.18/);
      return true;
    });
    const found = await findPython([{ command: old }, { command: python }]);
    assert.equal(found.command, python);
    assert.ok(found.version[0] === 3 && found.version[1] >= 11);
  });
});

describe('ensureServerEnv', () => {
  it('stops when cancelled, before creating anything', async () => {
    const storage = temp('codeask-storage-');
    const token = { isCancellationRequested: true, onCancellationRequested: () => ({ dispose() {} }) };
    await assert.rejects(
      ensureServerEnv({ storageDir: storage, wheel: wheel(), pythons: [{ command: python }], token }),
      (e: InstallError) => e.kind === 'cancelled',
    );
    assert.ok(!existsSync(venvPaths(storage).dir));
  });

  it('installs the bundled wheel, starts the server from it, reuses and upgrades the environment', async () => {
    const storage = temp('codeask-storage-');
    const whl = wheel();
    const log: string[] = [];
    const options = {
      storageDir: storage,
      wheel: whl,
      pythons: [{ command: python }],
      log: (line: string) => log.push(line),
      systemSitePackages: true,
      pipArgs: ['--no-index'],
    };
    const first = await ensureServerEnv(options);
    assert.equal(first.reused, false);
    assert.ok(log.some((l) => l.includes('pip install')), log.join('\n'));
    const info = await initialize(first.codeask, storage);
    assert.equal(info.name, 'codeask');
    assert.equal(info.version, version); // the wheel matches the extension
    // the server imports codeask from the managed environment
    const where = spawnSync(first.python, ['-c', 'import codeask; print(codeask.__file__)'], {
      env: { ...process.env, PYTHONPATH: '' },
      encoding: 'utf8',
    });
    assert.ok(where.stdout.startsWith(venvPaths(storage).dir), where.stdout);

    log.length = 0;
    const second = await ensureServerEnv(options);
    assert.equal(second.reused, true);
    assert.equal(second.codeask, first.codeask);
    assert.equal(log.length, 0, log.join("\n")); // no pip run

    // an extension update ships another wheel: the same environment is upgraded in place
    const marker = join(venvPaths(storage).dir, 'codeask-wheel.json');
    writeFileSync(marker, JSON.stringify({ wheel: 'codeask-0.0.1-py3-none-any.whl' }));
    const third = await ensureServerEnv(options);
    assert.equal(third.reused, false);
    assert.ok(log.some((l) => l.includes('upgrading')), log.join('\n'));
    assert.ok(!log.some((l) => l.includes('creating')), log.join('\n'));
    assert.equal(JSON.parse(readFileSync(marker, 'utf8')).wheel, whl.split('/').pop());
  });
});
