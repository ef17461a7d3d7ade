/**
 * The extension finds a folder's index where the server puts it: the paths are compared with the
 * server's own `codeask.index.folders.index_dir_for` (run with the Python README's test command
 * installed codeask into; CODEASK_PYTHON picks another interpreter).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { cacheRoot, indexDirFor, isCodeaskFolder } from '../src/indexDir';

const python = process.env.CODEASK_PYTHON || 'python3';

/** The server's index folder for each of `folders`, with `env` as the server's environment. */
function serverIndexDirs(folders: string[], env: NodeJS.ProcessEnv): string[] {
  const code = [
    'import json, sys',
    'from pathlib import Path',
    'from codeask.index.folders import index_dir_for',
    'from codeask.settings import load_settings',
    'print(json.dumps([str(index_dir_for(Path(f), load_settings(None))) for f in json.loads(sys.argv[1])]))',
  ].join('\n');
  const r = spawnSync(python, ['-c', code, JSON.stringify(folders)], { env, encoding: 'utf8' });
  assert.equal(r.status, 0, `${python}: ${r.stderr || r.error}`);
  return JSON.parse(r.stdout);
}

describe('the index folder of a workspace folder', () => {
  const base = fs.realpathSync.native(fs.mkdtempSync(path.join(os.tmpdir(), 'codeask-indexdir-')));
  const folders = ['plain', 'my #1 módulo', 'a.b-c_d', 'ünï cödé (2)', 'x\u0301y'].map((name) => {
    const dir = path.join(base, name);
    fs.mkdirSync(dir);
    return dir;
  });

  it('is where the server puts it, with CODEASK_CACHE_DIR', () => {
    const cache = path.join(base, 'cache dir');
    const env = { ...process.env, CODEASK_CACHE_DIR: cache };
    assert.deepEqual(
      folders.map((f) => indexDirFor(f, cacheRoot(env, process.platform, os.homedir()))),
      serverIndexDirs(folders, env),
    );
  });

  it('is where the server puts it, in the user cache dir', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: path.join(base, 'xdg cache'), HOME: path.join(base, 'home') };
    delete env.CODEASK_CACHE_DIR;
    assert.deepEqual(
      folders.map((f) => indexDirFor(f, cacheRoot(env, process.platform, env.HOME!))),
      serverIndexDirs(folders, env),
    );
  });

  it('marks a codeask folder: a .codeask.toml, or an index; not a plain or missing folder', () => {
    const cache = path.join(base, 'marks');
    const [plain, withToml, indexed] = ['p', 't', 'i'].map((n) => {
      const dir = path.join(base, `mark-${n}`);
      fs.mkdirSync(dir);
      return dir;
    });
    fs.writeFileSync(path.join(withToml, '.codeask.toml'), '');
    fs.mkdirSync(indexDirFor(indexed, cache), { recursive: true });
    assert.equal(isCodeaskFolder(plain, cache), false);
    assert.equal(isCodeaskFolder(path.join(base, 'missing'), cache), false);
    assert.equal(isCodeaskFolder(withToml, cache), true);
    assert.equal(isCodeaskFolder(indexed, cache), true);
    // a symlink to the indexed folder: the server resolves it, and so does the check
    const link = path.join(base, 'link-to-indexed');
    fs.symlinkSync(indexed, link);
    assert.equal(isCodeaskFolder(link, cache), true);
  });
});
