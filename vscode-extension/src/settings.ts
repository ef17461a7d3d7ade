/**
 * VS Code settings -> the settings objects the codeask server reads.
 *
 * The server takes the `codeask` section (camelCase, nested as VS Code writes it) from
 * `initializationOptions` (trusted: built here from **user-scope** values only, see
 * `userScopeSettings`) and from `workspace/configuration` (untrusted: it may hold workspace
 * values, so the server ignores endpoints, provider and model paths in it). Client-only settings
 * (`serverPath`, `pythonPath`, `trace`) are removed and empty values dropped (an empty `model` means "the
 * provider's default"). API keys never travel in either payload: they reach the server only
 * through its process environment (`serverEnv`), and only in a trusted workspace.
 *
 * Pure: no `vscode` import, so it is unit-tested directly.
 */

export type Provider = 'auto' | 'openai' | 'anthropic' | 'none';
export const PROVIDERS: readonly Provider[] = ['auto', 'openai', 'anthropic', 'none'];
/** Providers that take an API key. */
export const KEYED_PROVIDERS = ['openai', 'anthropic'] as const;
export type KeyedProvider = (typeof KEYED_PROVIDERS)[number];

export interface ApiKeys {
  openai?: string;
  anthropic?: string;
}

export type JsonObject = { [key: string]: unknown };

/** Settings under `codeask.*` that only the extension uses. */
export const CLIENT_ONLY_KEYS: readonly string[] = ['serverPath', 'pythonPath', 'trace'];

/** SecretStorage key holding the API key of `provider`. */
export function secretKey(provider: KeyedProvider): string {
  return `codeask.apiKey.${provider}`;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep copy without `null`, `undefined`, blank strings and objects left empty. */
export function pruneEmpty(value: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue;
    if (typeof v === 'string' && v.trim() === '') continue;
    if (isObject(v)) {
      const inner = pruneEmpty(v);
      if (Object.keys(inner).length > 0) out[key] = inner;
      continue;
    }
    out[key] = Array.isArray(v) ? [...v] : v;
  }
  return out;
}

/**
 * Settings that choose where code and keys go or what runs; VS Code reads them from user scope
 * only (package.json `restrictedConfigurations`, and `userScopeSettings` here). Keys relative to
 * `codeask.`.
 */
export const TRUSTED_ONLY_KEYS: readonly string[] = ['serverPath', 'pythonPath', 'llm.provider', 'llm.baseUrl'];

/** Removes every API key field, wherever someone typed one. */
function withoutKeys(source: JsonObject): JsonObject {
  if (isObject(source.llm)) {
    const llm = { ...source.llm };
    delete llm.apiKey;
    delete llm.openaiApiKey;
    delete llm.anthropicApiKey;
    source.llm = llm;
  }
  return source;
}

/**
 * The server's view of the settings: client-only keys, API keys and blanks removed.
 *
 * @param raw the `codeask` section as VS Code returns it
 *   (`workspace.getConfiguration().get('codeask')`), e.g.
 *   `{serverPath, llm: {provider, model, baseUrl}, retrieval: {topK, maxFiles}, hover: {enabled}}`.
 * @returns e.g. `{llm: {provider: 'openai'}, retrieval: {topK: 20}}` (never a key).
 */
export function toServerSettings(raw: unknown): JsonObject {
  const source: JsonObject = isObject(raw) ? { ...raw } : {};
  for (const key of CLIENT_ONLY_KEYS) delete source[key];
  return pruneEmpty(withoutKeys(source));
}

/** What `inspect(key)` tells about one setting (the fields used here). */
export interface InspectLike {
  globalValue?: unknown;
}

/**
 * `initializationOptions`: the settings the user set in **user** scope (never a workspace or
 * folder value), which the server trusts. In an untrusted workspace `llm.provider` is `none`:
 * no LLM call until the user trusts the workspace (retrieval-only answers still work).
 *
 * @param inspect `workspace.getConfiguration('codeask').inspect(key)` for a contributed key.
 * @param trusted `workspace.isTrusted`.
 */
export function userScopeSettings(
  inspect: (key: string) => InspectLike | undefined,
  trusted: boolean,
  keys: readonly string[] = CONTRIBUTED_KEYS,
): JsonObject {
  const out: JsonObject = {};
  for (const key of keys) {
    const value = inspect(key)?.globalValue;
    if (value === undefined) continue;
    const parts = key.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      if (!isObject(node[part])) node[part] = {};
      node = node[part] as JsonObject;
    }
    node[parts[parts.length - 1]] = value;
  }
  const settings = toServerSettings(out);
  if (!trusted) settings.llm = { ...(isObject(settings.llm) ? settings.llm : {}), provider: 'none' };
  return settings;
}

/** The value for a `workspace/configuration` item of `section` (`codeask` or `codeask.x.y`). */
export function configurationItem(section: string | undefined, raw: unknown): unknown {
  if (section === undefined || !(section === 'codeask' || section.startsWith('codeask.'))) {
    return undefined;
  }
  let value: unknown = toServerSettings(raw);
  for (const part of section.split('.').slice(1)) {
    value = isObject(value) ? value[part] : undefined;
  }
  return value === undefined ? null : value;
}

/**
 * Environment for the spawned server: the stored keys as OPENAI_API_KEY / ANTHROPIC_API_KEY, the
 * only way keys reach it. In an untrusted workspace no key is added (and none from `base` is
 * removed: the user's own shell environment is theirs).
 */
export function serverEnv(base: NodeJS.ProcessEnv, keys: ApiKeys, trusted = true): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (!trusted) return env;
  if (keys.openai) env.OPENAI_API_KEY = keys.openai;
  if (keys.anthropic) env.ANTHROPIC_API_KEY = keys.anthropic;
  return env;
}

/** `sk-abc…wxyz` style hint for messages, never the whole key. */
export function maskKey(key: string): string {
  if (key.length <= 8) return '*'.repeat(key.length);
  return `${key.slice(0, 3)}…${key.slice(-4)}`;
}

/** The settings this extension contributes that have a default (keys relative to `codeask.`). */
export const CONTRIBUTED_KEYS: readonly string[] = [
  'serverPath',
  'pythonPath',
  'llm.provider',
  'llm.model',
  'llm.baseUrl',
  'retrieval.topK',
  'retrieval.maxFiles',
  'hover.enabled',
  'hover.llm',
  'indexOnStartup',
  'trace.server',
];

/**
 * Removes contributed settings that the user did not set (VS Code fills in their defaults), so
 * the server's own defaults and the workspace's `.codeask.toml` apply to them. Settings the user
 * wrote that this extension does not contribute (e.g. `codeask.index.extraExclude`) are kept.
 *
 * @param isSet whether `codeask.<key>` has a user, workspace or folder value.
 */
export function withoutDefaults(raw: unknown, isSet: (key: string) => boolean, keys: readonly string[] = CONTRIBUTED_KEYS): JsonObject {
  const copy: JsonObject = isObject(raw) ? (JSON.parse(JSON.stringify(raw)) as JsonObject) : {};
  for (const key of keys) {
    if (isSet(key)) continue;
    const parts = key.split('.');
    let node: unknown = copy;
    for (const part of parts.slice(0, -1)) node = isObject(node) ? node[part] : undefined;
    if (isObject(node)) delete node[parts[parts.length - 1]];
  }
  return copy;
}
