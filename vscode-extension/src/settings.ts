/**
 * VS Code settings -> the settings object the codeask server reads.
 *
 * The server takes the `codeask` section (camelCase, nested as VS Code writes it) from
 * `initializationOptions` and from `workspace/configuration`; it rejects unknown keys, so
 * client-only settings (`serverPath`, `pythonPath`, `trace`) are removed and empty values are dropped
 * (an empty `model` means "the provider's default"). API keys come from SecretStorage and are
 * added here, never read from or written to settings.json.
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

/** The key the server should use for `provider` (`auto`: OpenAI first, like the server). */
export function keyForProvider(provider: Provider, keys: ApiKeys): string | undefined {
  switch (provider) {
    case 'openai':
      return keys.openai || undefined;
    case 'anthropic':
      return keys.anthropic || undefined;
    case 'auto':
      return keys.openai || keys.anthropic || undefined;
    default:
      return undefined;
  }
}

/**
 * The server's view of the settings.
 *
 * @param raw the `codeask` section as VS Code returns it
 *   (`workspace.getConfiguration().get('codeask')`), e.g.
 *   `{serverPath, llm: {provider, model, baseUrl}, retrieval: {topK, maxFiles}, hover: {enabled}}`.
 * @param keys API keys from SecretStorage.
 * @returns e.g. `{llm: {provider: 'openai', apiKey: 'sk-…', openaiApiKey: 'sk-…'}, retrieval: {topK: 20}}`.
 */
export function toServerSettings(raw: unknown, keys: ApiKeys = {}): JsonObject {
  const source: JsonObject = isObject(raw) ? { ...raw } : {};
  for (const key of CLIENT_ONLY_KEYS) delete source[key];
  // Keys never come from settings.json, even if someone typed one there.
  if (isObject(source.llm)) {
    const llm = { ...source.llm };
    delete llm.apiKey;
    delete llm.openaiApiKey;
    delete llm.anthropicApiKey;
    source.llm = llm;
  }
  const settings = pruneEmpty(source);
  const llm: JsonObject = isObject(settings.llm) ? settings.llm : {};
  const provider = PROVIDERS.includes(llm.provider as Provider) ? (llm.provider as Provider) : 'auto';
  if (provider !== 'none') {
    const apiKey = keyForProvider(provider, keys);
    if (apiKey) llm.apiKey = apiKey;
    if (keys.openai) llm.openaiApiKey = keys.openai;
    if (keys.anthropic) llm.anthropicApiKey = keys.anthropic;
  }
  if (Object.keys(llm).length > 0) settings.llm = llm;
  return settings;
}

/** The value for a `workspace/configuration` item of `section` (`codeask` or `codeask.x.y`). */
export function configurationItem(section: string | undefined, raw: unknown, keys: ApiKeys): unknown {
  if (section === undefined || !(section === 'codeask' || section.startsWith('codeask.'))) {
    return undefined;
  }
  let value: unknown = toServerSettings(raw, keys);
  for (const part of section.split('.').slice(1)) {
    value = isObject(value) ? value[part] : undefined;
  }
  return value === undefined ? null : value;
}

/** Environment for the spawned server: the stored keys as OPENAI_API_KEY / ANTHROPIC_API_KEY. */
export function serverEnv(base: NodeJS.ProcessEnv, keys: ApiKeys): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
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
