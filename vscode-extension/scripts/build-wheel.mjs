// Builds the codeask wheel the .vsix carries: `pip wheel` of the repository root into server/,
// replacing older wheels. Python: $CODEASK_PYTHON, else python3 (python on Windows).
// The build backend (setuptools, wheel) comes from the package index as pip builds; the wheel has no dependencies
// inside it (they come from the package index when the extension installs it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ext = join(here, '..');
const repo = join(ext, '..');
const out = join(ext, 'server');
const python = process.env.CODEASK_PYTHON || (process.platform === 'win32' ? 'python' : 'python3');

mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) if (name.endsWith('.whl')) rmSync(join(out, name));
const r = spawnSync(
  python,
  ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '-q', '-w', out, repo],
  { stdio: 'inherit' },
);
if (r.status !== 0) {
  console.error(`build-wheel: "${python} -m pip wheel" failed (exit ${r.status ?? r.error})`);
  process.exit(1);
}
rmSync(join(repo, 'build'), { recursive: true, force: true });
const wheels = readdirSync(out).filter((n) => n.endsWith('.whl'));
if (wheels.length !== 1) {
  console.error(`build-wheel: expected one wheel in ${out}, found ${wheels.join(', ') || 'none'}`);
  process.exit(1);
}
console.log(`build-wheel: ${join('server', wheels[0])}`);
