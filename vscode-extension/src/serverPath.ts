/**
 * Finding the server executable before starting it, so that a missing `codeask` gives one clear
 * message instead of a spawn error. Uses only node's fs/path (no `vscode`).
 */
import * as fs from 'fs';
import * as path from 'path';

export type IsFile = (p: string) => boolean;

export const isExecutableFile: IsFile = (p) => {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    if (process.platform === 'win32') return true;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/**
 * The full path of `command` (like `which`): as given when it contains a separator, else the
 * first match in `PATH` (with `PATHEXT` extensions on Windows). Undefined when not found.
 */
export function findExecutable(
  command: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  isFile: IsFile = isExecutableFile,
): string | undefined {
  const win = platform === 'win32';
  const exts = win ? ['', ...(env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean)] : [''];
  const p = win ? path.win32 : path.posix;
  if (command.includes('/') || (win && command.includes('\\'))) {
    return exts.map((e) => command + e).find(isFile);
  }
  const dirs = (env.PATH ?? env.Path ?? '').split(win ? ';' : ':').filter(Boolean);
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = p.join(dir, command + ext);
      if (isFile(candidate)) return candidate;
    }
  }
  return undefined;
}
