/**
 * Whether a folder is a codeask folder, cheaply (a few `stat`s, no process started): it has a
 * `.codeask.toml`, or codeask already indexed it. The extension activates when VS Code has started
 * (`onStartupFinished`) in every window, and starts the server at once only for such folders;
 * elsewhere the server starts with the first codeask command.
 *
 * The index of a folder lives outside it, where the server puts it
 * (`codeask.index.folders.index_dir_for`): `<cache>/<folder name>-<sha256(absolute path)[:12]>`, the
 * cache being `$CODEASK_CACHE_DIR`, else platformdirs' user cache dir for "codeask" plus `indexes`.
 * A cache dir set only in a codeask settings file is not seen here (a `.codeask.toml` is itself
 * the marker; a user-wide one means the first command starts the server).
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

/** The settings file that marks a codeask folder. */
export const CONFIG_FILE = '.codeask.toml';

/** `~` at the start of `p` -> `home` (as Python's `Path.expanduser`). */
function expandUser(p: string, home: string): string {
  return p.replace(/^~(?=$|[\\/])/, home);
}

/**
 * Where the server keeps indexes for `env` on `platform`: `$CODEASK_CACHE_DIR`, else
 * `platformdirs.user_cache_dir("codeask", appauthor=False)/indexes` (Linux `$XDG_CACHE_HOME` or
 * `~/.cache`, then `codeask`; macOS `~/Library/Caches/codeask`; Windows `%LOCALAPPDATA%\codeask\Cache`).
 */
export function cacheRoot(env: NodeJS.ProcessEnv, platform: NodeJS.Platform, home: string): string {
  const explicit = env.CODEASK_CACHE_DIR?.trim();
  if (explicit) return expandUser(explicit, home);
  if (platform === 'win32') {
    return path.win32.join(env.LOCALAPPDATA?.trim() || path.win32.join(home, 'AppData', 'Local'), 'codeask', 'Cache', 'indexes');
  }
  if (platform === 'darwin') return path.posix.join(home, 'Library', 'Caches', 'codeask', 'indexes');
  return path.posix.join(env.XDG_CACHE_HOME?.trim() || path.posix.join(home, '.cache'), 'codeask', 'indexes');
}

/** `<cache>/<name>-<sha256(root)[:12]>` for the absolute, resolved folder path `root`. */
export function indexDirFor(root: string, cache: string): string {
  const digest = createHash('sha256').update(root, 'utf8').digest('hex').slice(0, 12);
  const base = path.basename(root) || 'root';
  const name = Array.from(base, (ch) => (/^[\p{L}\p{N}._-]$/u.test(ch) ? ch : '_')).join('');
  return path.join(cache, `${name}-${digest}`);
}

/** True when `folder` has a `.codeask.toml` or an index under `cache`; false for a missing folder. */
export function isCodeaskFolder(folder: string, cache: string): boolean {
  let root: string;
  try {
    root = fs.realpathSync.native(folder);
  } catch {
    return false;
  }
  return fs.existsSync(path.join(root, CONFIG_FILE)) || fs.existsSync(indexDirFor(root, cache));
}
