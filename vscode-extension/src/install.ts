/**
 * The managed server environment: a private virtual environment in the extension's global storage
 * with the codeask wheel the .vsix carries (`server/codeask-<version>-py3-none-any.whl`).
 *
 * Used when `codeask.serverPath` is unset and no `codeask` is on PATH: find a Python >= 3.11,
 * `python -m venv <storage>/venv`, `pip install <wheel>` (its dependencies from the package index),
 * and start `<venv>/bin/codeask serve`. A marker file records which wheel is installed: the same
 * wheel is reused without running pip, a new wheel (an extension update) upgrades the environment.
 * Pure node (child_process, fs): no `vscode` import, so it is tested without VS Code.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

/** The oldest Python the server supports (pyproject.toml `requires-python`). */
export const MIN_PYTHON: [number, number] = [3, 11];
const MARKER = 'codeask-wheel.json';

export interface CancelToken {
  isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

/** A failure with `message` written for the user: what went wrong and what to do. */
export class InstallError extends Error {
  constructor(
    message: string,
    readonly kind: 'no-python' | 'old-python' | 'venv' | 'pip' | 'cancelled' | 'no-wheel',
  ) {
    super(message);
  }
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `command args`, streaming output lines to `log`; kills the process on cancellation. */
export function run(
  command: string,
  args: string[],
  options: { log?: (line: string) => void; token?: CancelToken; env?: NodeJS.ProcessEnv } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(command, args, { env: options.env ?? process.env, windowsHide: true });
    } catch (error) {
      reject(error);
      return;
    }
    let stdout = '';
    let stderr = '';
    const relay = (chunk: Buffer, into: 'out' | 'err') => {
      const text = chunk.toString();
      if (into === 'out') stdout += text;
      else stderr += text;
      for (const line of text.split(/\r?\n/)) if (line.trim()) options.log?.(line);
    };
    child.stdout?.on('data', (c: Buffer) => relay(c, 'out'));
    child.stderr?.on('data', (c: Buffer) => relay(c, 'err'));
    const cancel = options.token?.onCancellationRequested(() => child.kill());
    child.on('error', (error) => {
      cancel?.dispose();
      reject(error);
    });
    child.on('close', (code) => {
      cancel?.dispose();
      resolve({ code, stdout, stderr });
    });
  });
}

export interface PythonInfo {
  command: string;
  /** Extra arguments before the script (`py -3`). */
  args: string[];
  version: [number, number, number];
}

/** `python -c` printing the version, or undefined when `command` cannot be run. */
export async function probePython(command: string, args: string[] = []): Promise<PythonInfo | undefined> {
  try {
    const r = await run(command, [...args, '-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])']);
    const m = r.code === 0 ? /^(\d+)\.(\d+)\.(\d+)/.exec(r.stdout.trim()) : null;
    return m ? { command, args, version: [Number(m[1]), Number(m[2]), Number(m[3])] } : undefined;
  } catch {
    return undefined;
  }
}

export function isSupported(version: [number, number, number]): boolean {
  return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

/**
 * The first supported Python among `candidates` (an explicit interpreter setting, the Python
 * extension's active environment, then `python3` / `python` / `py -3`).
 *
 * @throws InstallError `no-python` when none runs, `old-python` when all are older than 3.11.
 */
export async function findPython(candidates: { command: string; args?: string[] }[]): Promise<PythonInfo> {
  const tooOld: string[] = [];
  for (const c of candidates) {
    const info = await probePython(c.command, c.args ?? []);
    if (!info) continue;
    if (isSupported(info.version)) return info;
    tooOld.push(`${[c.command, ...(c.args ?? [])].join(' ')} is ${info.version.join('.')}`);
  }
  const need = `Python ${MIN_PYTHON.join('.')} or newer`;
  if (tooOld.length) {
    throw new InstallError(
      `codeask needs ${need} (${tooOld.join('; ')}). Install a newer Python, then run "Codeask: Reinstall Server" ` +
        '(or set "codeask.pythonPath" to it).',
      'old-python',
    );
  }
  throw new InstallError(
    `codeask needs ${need}, and none was found (tried ${candidates.map((c) => c.command).join(', ')}). ` +
      'Install Python from python.org or your package manager, then run "Codeask: Reinstall Server" ' +
      '(or set "codeask.pythonPath" to an interpreter).',
    'no-python',
  );
}

/** The standard Python candidates on this platform (after any explicit ones). */
export function defaultPythonCandidates(platform: NodeJS.Platform = process.platform): { command: string; args?: string[] }[] {
  return platform === 'win32'
    ? [{ command: 'py', args: ['-3'] }, { command: 'python' }, { command: 'python3' }]
    : [{ command: 'python3' }, { command: 'python' }];
}

/** The bundled wheel in `dir` (the newest `codeask-*.whl`), or undefined. */
export function bundledWheel(dir: string): string | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => /^codeask-[^-]+-.*\.whl$/.test(n));
  } catch {
    return undefined;
  }
  names.sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const last = names[names.length - 1];
  return last ? path.join(dir, last) : undefined;
}

export interface ServerEnv {
  /** The venv's interpreter. */
  python: string;
  /** The venv's `codeask` executable. */
  codeask: string;
  /** True when the environment already had this wheel (pip did not run). */
  reused: boolean;
}

export interface EnsureOptions {
  /** The extension's global storage folder (created when missing). */
  storageDir: string;
  /** The bundled wheel. */
  wheel: string;
  /** Python candidates, best first (see {@link findPython}). */
  pythons: { command: string; args?: string[] }[];
  log?: (line: string) => void;
  /** Progress messages for a notification ("creating the environment", "installing ..."). */
  report?: (message: string) => void;
  token?: CancelToken;
  /** Give the venv the chosen interpreter's installed packages (tests and offline machines): its
   * site-packages folders, read from the interpreter and added by a `.pth` file. A virtual
   * environment's interpreter counts as itself (`--system-site-packages` would give its base's). */
  interpreterPackages?: boolean;
  /** Extra `pip install` arguments, e.g. `--no-index` or `--index-url URL`. */
  pipArgs?: string[];
  /** Remove the environment first ("Codeask: Reinstall Server"). */
  force?: boolean;
}

export function venvPaths(storageDir: string, platform: NodeJS.Platform = process.platform): { dir: string; python: string; codeask: string } {
  const dir = path.join(storageDir, 'venv');
  return platform === 'win32'
    ? { dir, python: path.join(dir, 'Scripts', 'python.exe'), codeask: path.join(dir, 'Scripts', 'codeask.exe') }
    : { dir, python: path.join(dir, 'bin', 'python'), codeask: path.join(dir, 'bin', 'codeask') };
}

function readMarker(dir: string): { wheel?: string } {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, MARKER), 'utf8'));
  } catch {
    return {};
  }
}

/** The environment when it already holds `wheel` (nothing to install), else undefined. */
export function installedEnv(storageDir: string, wheel: string): ServerEnv | undefined {
  const paths = venvPaths(storageDir);
  if (fs.existsSync(paths.codeask) && readMarker(paths.dir).wheel === path.basename(wheel)) {
    return { python: paths.python, codeask: paths.codeask, reused: true };
  }
  return undefined;
}

/**
 * Create or update the managed environment so that it holds `wheel`; returns its executables.
 *
 * @throws InstallError with a message saying what to do (no Python, too old, venv or pip failure,
 *   cancelled); the pip output went to `log`.
 */
export async function ensureServerEnv(options: EnsureOptions): Promise<ServerEnv> {
  const { storageDir, wheel, log, report, token } = options;
  if (!fs.existsSync(wheel)) {
    throw new InstallError(`the codeask wheel is missing from the extension (${wheel}); reinstall the extension`, 'no-wheel');
  }
  const paths = venvPaths(storageDir);
  const wheelName = path.basename(wheel);
  if (options.force) fs.rmSync(paths.dir, { recursive: true, force: true });
  const existing = installedEnv(storageDir, wheel);
  if (existing) return existing;
  const cancelled = () => {
    if (token?.isCancellationRequested) {
      throw new InstallError('codeask: installing the server was cancelled; run "Codeask: Reinstall Server" to try again', 'cancelled');
    }
  };
  fs.mkdirSync(storageDir, { recursive: true });
  if (!fs.existsSync(paths.python)) {
    const py = await findPython(options.pythons);
    cancelled();
    report?.(`creating a Python ${py.version.join('.')} environment`);
    log?.(`[codeask] creating ${paths.dir} with ${[py.command, ...py.args].join(' ')} (${py.version.join('.')})`);
    const r = await run(py.command, [...py.args, '-m', 'venv', paths.dir], { log, token });
    cancelled();
    if (r.code !== 0 || !fs.existsSync(paths.python)) {
      fs.rmSync(paths.dir, { recursive: true, force: true });
      const hint = /ensurepip|venv/.test(r.stderr) ? ' (on Debian/Ubuntu: sudo apt install python3-venv)' : '';
      throw new InstallError(
        `codeask: creating a virtual environment failed${hint}; see the "codeask" output, then run "Codeask: Reinstall Server"`,
        'venv',
      );
    }
    if (options.interpreterPackages) await shareSitePackages(py, paths.python, log);
  } else {
    log?.(`[codeask] upgrading ${paths.dir} to ${wheelName}`);
  }
  const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONPATH: undefined, PIP_REQUIRE_VIRTUALENV: undefined };
  const pip = async (args: string[]) => {
    report?.(`installing ${wheelName}`);
    log?.(`[codeask] ${paths.python} -m pip install ${args.join(' ')}`);
    const r = await run(paths.python, ['-m', 'pip', 'install', ...args], { log, token, env });
    cancelled();
    if (r.code !== 0) throw new InstallError(pipFailure(`${r.stdout}\n${r.stderr}`), 'pip');
  };
  // The wheel itself first (replacing an older codeask, never taken from elsewhere), then its
  // dependencies from the index (or from the interpreter's packages with interpreterPackages).
  await pip(['--force-reinstall', '--no-deps', ...(options.pipArgs ?? []), wheel]);
  await pip([...(options.pipArgs ?? []), wheel]);
  if (!fs.existsSync(paths.codeask)) {
    throw new InstallError('codeask: pip ran but no codeask executable was installed; see the "codeask" output', 'pip');
  }
  fs.writeFileSync(path.join(paths.dir, MARKER), JSON.stringify({ wheel: wheelName, installed: new Date().toISOString() }));
  log?.(`[codeask] the server environment is ready: ${paths.codeask}`);
  return { python: paths.python, codeask: paths.codeask, reused: false };
}

const PYTHON_SITE_DIRS =
  'import json, site; print(json.dumps(site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])))';
const PYTHON_PURELIB = 'import json, sysconfig; print(json.dumps(sysconfig.get_paths()["purelib"]))';

/**
 * Make the site-packages folders of `py` (where its installed packages are, its user site
 * included) visible to the venv whose interpreter is `venvPython`: one `site.addsitedir` line per
 * folder in `codeask-interpreter-packages.pth`, after the venv's own folder on `sys.path`.
 *
 * @throws InstallError `venv` when either interpreter cannot say where its packages are.
 */
async function shareSitePackages(py: PythonInfo, venvPython: string, log?: (line: string) => void): Promise<void> {
  const source = await run(py.command, [...py.args, '-c', PYTHON_SITE_DIRS]);
  const target = await run(venvPython, ['-c', PYTHON_PURELIB]);
  if (source.code !== 0 || target.code !== 0) {
    throw new InstallError('codeask: could not read where the interpreter keeps its packages; see the "codeask" output', 'venv');
  }
  const dirs: string[] = JSON.parse(source.stdout);
  const lines = dirs.map((dir) => `import site; site.addsitedir(${JSON.stringify(dir)})`);
  fs.writeFileSync(path.join(JSON.parse(target.stdout), 'codeask-interpreter-packages.pth'), lines.join('\n') + '\n');
  log?.(`[codeask] the environment also sees the packages of ${dirs.join(', ')}`);
}

const NETWORK = /NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ProxyError|SSLError|ConnectTimeoutError|Read timed out/i;
const BUILD = /did not run successfully|Failed building wheel for|Failed to build |Could not build wheels for/;

/** The first line of `text` that matches `pattern`, trimmed to 300 characters, or undefined. */
function lineOf(text: string, pattern: RegExp): string | undefined {
  return text.split(/\r?\n/).find((line) => pattern.test(line))?.trim().slice(0, 300);
}

/**
 * The line to show when `pip install` failed, from pip's output (stdout and stderr), quoting the line that says
 * why: the index could not be reached (pip's connection, name resolution, proxy or TLS warnings:
 * it retries, then finds nothing), no version of a requirement matched (an index or wheel folder
 * without it, a Python too new for it), a package failed to build from source, or else pip's first
 * `ERROR:` line.
 */
export function pipFailure(output: string): string {
  const then = '; see the "codeask" output for its log, then run "Codeask: Reinstall Server"';
  const quote = (line: string | undefined) => (line ? ` (pip: "${line}")` : '');
  const network = lineOf(output, NETWORK);
  if (network) {
    return (
      `codeask: installing the server needs the Python package index, which could not be reached${quote(network)}; ` +
      'check your network or proxy (pip reads PIP_INDEX_URL and HTTPS_PROXY), then run "Codeask: Reinstall Server"'
    );
  }
  const missing = /No matching distribution found for (\S+)/.exec(output);
  if (missing) {
    return (
      `codeask: pip found no version of ${missing[1]} that it can install for this Python${quote(missing[0])}: ` +
      'the package index or wheel folder it reads (PIP_INDEX_URL, PIP_FIND_LINKS) lacks one' +
      then
    );
  }
  const build = lineOf(output, BUILD) ?? lineOf(output, /metadata-generation-failed/);
  if (build) {
    const what = [...output.matchAll(/^(?:Collecting|Processing) (\S+)/gm)].pop()?.[1] ?? 'a package';
    return `codeask: pip could not build ${what} from source${quote(build)} (a compiler or build tool it needs is missing?)${then}`;
  }
  return `codeask: pip could not install the server${quote(lineOf(output, /^ERROR: /))}${then}`;
}
