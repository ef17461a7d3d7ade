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
