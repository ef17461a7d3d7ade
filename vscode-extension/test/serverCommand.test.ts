import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MIN_SERVER_VERSION,
  compareVersions,
  describeCommand,
  isPythonInterpreter,
  resolveServerCommand,
  serverVersionProblem,
  startFailureMessage,
} from '../src/serverCommand';
import { findExecutable } from '../src/serverPath';

describe('resolveServerCommand', () => {
  it('defaults to `codeask serve` from PATH', () => {
    assert.deepEqual(resolveServerCommand(undefined), { command: 'codeask', args: ['serve'], python: false });
    assert.deepEqual(resolveServerCommand('  '), { command: 'codeask', args: ['serve'], python: false });
  });
  it('runs a codeask executable with serve', () => {
    assert.deepEqual(resolveServerCommand('/opt/venv/bin/codeask'), {
      command: '/opt/venv/bin/codeask',
      args: ['serve'],
      python: false,
    });
  });
  it('runs a Python interpreter with -m codeask serve', () => {
    for (const p of ['python', 'python3', '/usr/bin/python3.12', 'C:\\venv\\Scripts\\python.exe', '.venv/bin/pythonw']) {
      assert.deepEqual(resolveServerCommand(p), { command: p, args: ['-m', 'codeask', 'serve'], python: true }, p);
    }
    assert.equal(isPythonInterpreter('/usr/bin/ipython'), false);
    assert.equal(isPythonInterpreter('/python3/bin/codeask'), false);
  });
  it('expands ~', () => {
    assert.equal(resolveServerCommand('~/venv/bin/python', '/home/me').command, '/home/me/venv/bin/python');
  });
});

describe('start failure message', () => {
  it('names the command and the fixes', () => {
    const msg = startFailureMessage(resolveServerCommand(undefined), new Error('spawn codeask ENOENT'));
    assert.match(msg, /`codeask serve`: spawn codeask ENOENT/);
    assert.match(msg, /pip install \/path\/to\/codeask/);
    assert.match(msg, /codeask\.serverPath/);
    const py = startFailureMessage(resolveServerCommand('/v/bin/python'));
    assert.match(py, /\/v\/bin\/python -m pip install \/path\/to\/codeask/);
    assert.equal(describeCommand({ command: '/a b/python', args: ['-m', 'codeask'], python: true }), '"/a b/python" -m codeask');
  });
});

describe('findExecutable', () => {
  const files = new Set(['/usr/bin/codeask', '/venv/bin/python3', 'C:\\py\\Scripts\\codeask.EXE']);
  const isFile = (p: string) => files.has(p);
  it('searches PATH', () => {
    assert.equal(findExecutable('codeask', { PATH: '/bin:/usr/bin' }, 'linux', isFile), '/usr/bin/codeask');
    assert.equal(findExecutable('nope', { PATH: '/bin:/usr/bin' }, 'linux', isFile), undefined);
  });
  it('checks paths directly', () => {
    assert.equal(findExecutable('/venv/bin/python3', {}, 'linux', isFile), '/venv/bin/python3');
    assert.equal(findExecutable('/venv/bin/python', {}, 'linux', isFile), undefined);
  });
  it('uses PATHEXT on Windows', () => {
    assert.equal(
      findExecutable('codeask', { Path: 'C:\\x;C:\\py\\Scripts', PATHEXT: '.COM;.EXE' }, 'win32', isFile),
      'C:\\py\\Scripts\\codeask.EXE',
    );
  });
  it('finds a real executable', () => {
    assert.ok(findExecutable('node'));
  });
});

describe('serverVersionProblem', () => {
  it('accepts the needed version and newer ones', () => {
    assert.equal(serverVersionProblem({ name: 'codeask', version: MIN_SERVER_VERSION }, false), undefined);
    assert.equal(serverVersionProblem({ name: 'codeask', version: '0.10.0' }, false, '0.9.2'), undefined);
    assert.ok(compareVersions('0.10.0', '0.9.2') > 0 && compareVersions('1.0', '1.0.0') === 0 && compareVersions('0.1.0', '0.2') < 0);
  });
  it('refuses an older or unversioned server with the upgrade command', () => {
    const own = serverVersionProblem({ name: 'codeask', version: '0.0.9' }, true, '0.1.0');
    assert.match(own ?? '', /version 0\.0\.9, older than 0\.1\.0/);
    assert.match(own ?? '', /Codeask: Reinstall Server/);
    const user = serverVersionProblem(undefined, false, '0.1.0');
    assert.match(user ?? '', /unknown version/);
    assert.match(user ?? '', /pip install --upgrade \/path\/to\/codeask/);
  });
});
