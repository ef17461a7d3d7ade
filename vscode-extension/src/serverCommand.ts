/**
 * How the codeask language server is started, and what to tell the user when it is not.
 * Pure: no `vscode` import.
 */

export interface ServerCommand {
  command: string;
  args: string[];
  /** True when `command` is a Python interpreter (run as `python -m codeask serve`). */
  python: boolean;
}

export const DEFAULT_SERVER_PATH = 'codeask';
/** codeask is installed from its repository (it is not on PyPI). */
export const INSTALL_COMMAND = 'pip install /path/to/codeask';

/** Last path component, for both `/` and `\` separators. */
export function basename(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] ?? path;
}

/** `python`, `python3`, `python3.12`, `pythonw.exe`, `python3.11-dbg` ... */
export function isPythonInterpreter(path: string): boolean {
  return /^python[\w.-]*$/i.test(basename(path).replace(/\.exe$/i, ''));
}

/**
 * The command line for setting `codeask.serverPath`.
 *
 * - empty / unset: `codeask serve` from PATH;
 * - a path whose basename starts with `python`: `<path> -m codeask serve`;
 * - anything else: a `codeask` executable, `<path> serve`.
 *
 * A leading `~` is expanded with `home`.
 */
export function resolveServerCommand(serverPath: string | undefined | null, home?: string): ServerCommand {
  let path = (serverPath ?? '').trim() || DEFAULT_SERVER_PATH;
  if (home && (path === '~' || path.startsWith('~/') || path.startsWith('~\\'))) {
    path = home + path.slice(1);
  }
  if (isPythonInterpreter(path)) {
    return { command: path, args: ['-m', 'codeask', 'serve'], python: true };
  }
  return { command: path, args: ['serve'], python: false };
}

/** The command line as one string, for messages. */
export function describeCommand(cmd: ServerCommand): string {
  const quote = (s: string) => (/\s/.test(s) ? `"${s}"` : s);
  return [cmd.command, ...cmd.args].map(quote).join(' ');
}

/** The notification shown when the server cannot be started, with the fix. */
export function startFailureMessage(cmd: ServerCommand, error?: unknown): string {
  const reason = error instanceof Error ? error.message : error ? String(error) : '';
  const install = cmd.python ? `${cmd.command} -m ${INSTALL_COMMAND}` : INSTALL_COMMAND;
  return (
    `codeask: could not start the language server (\`${describeCommand(cmd)}\`${reason ? `: ${reason}` : ''}). ` +
    `Install it with \`${install}\` (or \`pip install .\` from the codeask repository), ` +
    'or set "codeask.serverPath" to a codeask executable or a Python interpreter that has codeask installed.'
  );
}

/** The oldest server this extension works with (`serverInfo.version` of `initialize`). */
export const MIN_SERVER_VERSION = '0.1.0';

/** Compare dotted versions: negative, 0 or positive (`0.10.0` > `0.9.2`; missing parts are 0). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Why the server that answered `initialize` cannot be used (one message with the upgrade
 * command), or undefined. `managed`: started from the extension's own environment.
 */
export function serverVersionProblem(
  serverInfo: { name?: string; version?: string } | undefined,
  managed: boolean,
  required: string = MIN_SERVER_VERSION,
): string | undefined {
  const version = serverInfo?.version;
  if (version && compareVersions(version, required) >= 0) return undefined;
  const upgrade = managed
    ? 'run "Codeask: Reinstall Server"'
    : `upgrade it with \`${INSTALL_COMMAND.replace('pip install', 'pip install --upgrade')}\`, or clear "codeask.serverPath" and run "Codeask: Reinstall Server" to use the server bundled with the extension`;
  return `codeask: the language server is ${version ? `version ${version}` : 'of an unknown version'}, older than ${required}, which this extension needs: ${upgrade}.`;
}
