/**
 * The managed server environment, for real: the wheel `npm run package` builds (built here when
 * missing), a virtual environment in a temporary storage folder, pip, then `codeask serve` from it
 * answering `initialize` over stdio. The venv sees the installed packages of the interpreter that
 * runs the tests (`interpreterPackages`: its site-packages, a virtual environment's own included)
 * and pip runs with --no-index, so no dependency is downloaded. Without them, pip's failure is
 * reported as what it is; pip's real output for each kind of failure gives its own message.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { InstallError, bundledWheel, ensureServerEnv, findPython, pipFailure, run, venvPaths } from '../src/install';

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
      interpreterPackages: true,
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

describe('pip failures', () => {
  /** pip's output for `pip install args` by the test interpreter, ignoring the user's pip configuration. */
  async function pipOutput(args: string[]): Promise<string> {
    const r = await run(python, ['-m', 'pip', 'install', '--isolated', '--no-cache-dir', '--disable-pip-version-check', ...args]);
    assert.notEqual(r.code, 0, r.stdout);
    return `${r.stdout}\n${r.stderr}`;
  }

  it('a package index that cannot be reached', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const output = await pipOutput(['--index-url', `http://127.0.0.1:${port}/simple`, '--retries', '1', '--timeout', '5', 'codeask-no-such-package']);
    const message = pipFailure(output);
    assert.match(message, /needs the Python package index, which could not be reached \(pip: ".*(NewConnectionError|Connection refused)/);
    assert.match(message, /Reinstall Server/);
  });

  it('no matching distribution', async () => {
    const output = await pipOutput(['--no-index', '--find-links', temp('codeask-wheels-'), 'codeask-no-such-package']);
    assert.equal(
      pipFailure(output),
      'codeask: pip found no version of codeask-no-such-package that it can install for this Python ' +
        '(pip: "No matching distribution found for codeask-no-such-package"): the package index or wheel folder it reads ' +
        '(PIP_INDEX_URL, PIP_FIND_LINKS) lacks one; see the "codeask" output for its log, then run "Codeask: Reinstall Server"',
    );
  });

  it('a package that fails to build', async () => {
    // a source tree whose in-tree build backend fails, as a missing compiler would
    const project = join(temp('codeask-build-'), 'brokenpkg');
    mkdirSync(project);
    writeFileSync(join(project, 'pyproject.toml'), '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n');
    writeFileSync(join(project, 'backend.py'), 'def build_wheel(*args, **kwargs):\n    raise SystemExit("no compiler")\n');
    const message = pipFailure(await pipOutput(['--no-index', project]));
    assert.match(message, /^codeask: pip could not build \S*brokenpkg from source \(pip: ".*did not run successfully/);
    assert.match(message, /compiler or build tool/);
  });

  it('anything else quotes pip\'s error', async () => {
    const message = pipFailure(await pipOutput(['--no-index', join(temp('codeask-none-'), 'codeask-0.1.0-py3-none-any.whl')]));
    assert.match(message, /^codeask: pip could not install the server \(pip: ".*codeask-0\.1\.0-py3-none-any\.whl.*"\); see the "codeask" output/);
  });

  it('an environment without the dependencies says pip found no version of them', async () => {
    const storage = temp('codeask-storage-');
    await assert.rejects(
      ensureServerEnv({ storageDir: storage, wheel: wheel(), pythons: [{ command: python }], pipArgs: ['--no-index', '--isolated'] }),
      (e: InstallError) => {
        assert.equal(e.kind, 'pip');
        assert.match(e.message, /^codeask: pip found no version of \S+ that it can install for this Python \(pip: "No matching distribution found for /);
        return true;
      },
    );
  });
});
