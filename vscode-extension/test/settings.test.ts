import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  CONTRIBUTED_KEYS,
  TRUSTED_ONLY_KEYS,
  configurationItem,
  maskKey,
  pruneEmpty,
  secretKey,
  serverEnv,
  toServerSettings,
  userScopeSettings,
  withoutDefaults,
} from '../src/settings';

// What `workspace.getConfiguration().get('codeask')` returns with the defaults.
const DEFAULTS = {
  serverPath: 'codeask',
  llm: { provider: 'auto', model: '', baseUrl: '' },
  retrieval: { topK: 20, maxFiles: 8 },
  hover: { enabled: true },
  trace: { server: 'off' },
};

describe('indexOnStartup and hover.llm', () => {
  it('reach the server as set, and are left to the server defaults when not set', () => {
    const raw = { ...DEFAULTS, indexOnStartup: 'never', hover: { enabled: true, llm: true } };
    const set = new Set(['indexOnStartup', 'hover.llm']);
    const s = toServerSettings(withoutDefaults(raw, (key) => set.has(key)));
    assert.equal(s.indexOnStartup, 'never');
    assert.deepEqual(s.hover, { llm: true });
    const defaults = toServerSettings(withoutDefaults({ ...DEFAULTS, indexOnStartup: 'auto', hover: { enabled: true, llm: false } }, () => false));
    assert.equal(defaults.indexOnStartup, undefined);
    assert.equal(defaults.hover, undefined);
    assert.ok(CONTRIBUTED_KEYS.includes('indexOnStartup') && CONTRIBUTED_KEYS.includes('hover.llm'));
  });
  it('answer a workspace/configuration item for codeask.hover', () => {
    assert.deepEqual(configurationItem('codeask.hover', { hover: { llm: true } }), { llm: true });
    assert.equal(configurationItem('codeask.indexOnStartup', { indexOnStartup: 'always' }), 'always');
  });
});

describe('toServerSettings', () => {
  it('maps the VS Code section to the server object, without client-only keys or blanks', () => {
    assert.deepEqual(toServerSettings(DEFAULTS), {
      llm: { provider: 'auto' },
      retrieval: { topK: 20, maxFiles: 8 },
      hover: { enabled: true },
    });
  });
  it('passes model, baseUrl and extra user keys through', () => {
    const s = toServerSettings({
      ...DEFAULTS,
      llm: { provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'http://localhost:11434/v1' },
      index: { extraExclude: ['vendor/**'] },
    });
    assert.deepEqual(s.llm, { provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'http://localhost:11434/v1' });
    assert.deepEqual(s.index, { extraExclude: ['vendor/**'] });
  });
  it('ignores keys typed into settings.json', () => {
    assert.deepEqual(toServerSettings({ llm: { provider: 'openai', apiKey: 'leak', openaiApiKey: 'leak', anthropicApiKey: 'x' } }), {
      llm: { provider: 'openai' },
    });
  });
  it('does not modify its input', () => {
    const raw = JSON.parse(JSON.stringify(DEFAULTS));
    toServerSettings(raw);
    assert.deepEqual(raw, DEFAULTS);
  });
  it('tolerates garbage', () => {
    assert.deepEqual(toServerSettings(undefined), {});
    assert.deepEqual(toServerSettings('x'), {});
  });
});

describe('withoutDefaults', () => {
  it('drops contributed settings the user did not set, keeps the rest', () => {
    const set = new Set(['llm.model', 'retrieval.topK']);
    const raw = { ...DEFAULTS, llm: { ...DEFAULTS.llm, model: 'm' }, retrieval: { topK: 5, maxFiles: 8 }, index: { x: 1 } };
    const out = withoutDefaults(raw, (k) => set.has(k));
    assert.deepEqual(out, { llm: { model: 'm' }, retrieval: { topK: 5 }, hover: {}, trace: {}, index: { x: 1 } });
    assert.deepEqual(toServerSettings(out), { llm: { model: 'm' }, retrieval: { topK: 5 }, index: { x: 1 } });
  });
  it('lists exactly the settings package.json contributes', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const contributed = Object.keys(pkg.contributes.configuration.properties).map((k) => k.replace(/^codeask\./, ''));
    assert.deepEqual([...contributed].sort(), [...CONTRIBUTED_KEYS].sort());
  });
});

describe('configurationItem', () => {
  it('answers the codeask section and its subsections, and nothing else', () => {
    assert.deepEqual(configurationItem('codeask', DEFAULTS), toServerSettings(DEFAULTS));
    assert.deepEqual(configurationItem('codeask.retrieval', DEFAULTS), { topK: 20, maxFiles: 8 });
    assert.equal(configurationItem('codeask.nothing', DEFAULTS), null);
    assert.equal(configurationItem('python', DEFAULTS), undefined);
    assert.equal(configurationItem(undefined, DEFAULTS), undefined);
  });
});

describe('workspace trust and keys', () => {
  // user scope sets provider and model; the workspace (a repository's .vscode/settings.json) sets an endpoint
  const inspect = (key: string) =>
    ({
      'llm.provider': { globalValue: 'openai', workspaceValue: 'anthropic' },
      'llm.baseUrl': { workspaceValue: 'http://attacker.example/v1' },
      'llm.model': { globalValue: 'gpt-x' },
      serverPath: { workspaceValue: '/tmp/evil' },
      'retrieval.topK': { globalValue: 7 },
    })[key] as { globalValue?: unknown } | undefined;

  it('initializationOptions hold user-scope values only', () => {
    assert.deepEqual(userScopeSettings(inspect, true), { llm: { provider: 'openai', model: 'gpt-x' }, retrieval: { topK: 7 } });
  });
  it('an untrusted workspace gets no LLM until it is trusted', () => {
    assert.deepEqual(userScopeSettings(inspect, false), { llm: { provider: 'none', model: 'gpt-x' }, retrieval: { topK: 7 } });
    assert.deepEqual(serverEnv({ PATH: '/bin' }, { openai: 'sk-o' }, false), { PATH: '/bin' });
  });
  it('declares the endpoint settings as restricted configurations', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations;
    assert.deepEqual([...restricted].sort(), TRUSTED_ONLY_KEYS.map((k) => `codeask.${k}`).sort());
  });
  it('no LSP payload carries a key, stored or typed into settings.json (what a verbose trace would show)', () => {
    const keys = { openai: 'sk-canary-openai-1234', anthropic: 'sk-canary-anthropic-5678' };
    const typed = { ...DEFAULTS, llm: { provider: 'openai', apiKey: 'sk-canary-typed-9999' } };
    const payloads = [
      userScopeSettings((k) => (k === 'llm.provider' ? { globalValue: 'openai' } : undefined), true),
      toServerSettings(typed),
      configurationItem('codeask', typed),
      configurationItem('codeask.llm', typed),
      configurationItem('codeask.llm.apiKey', typed),
    ];
    const trace = JSON.stringify(payloads);
    for (const secret of [...Object.values(keys), 'sk-canary-typed-9999']) assert.ok(!trace.includes(secret), trace);
    assert.equal(serverEnv({}, keys, true).OPENAI_API_KEY, keys.openai); // the one way in
  });
});

describe('keys', () => {
  it('stores keys per provider', () => {
    assert.equal(secretKey('openai'), 'codeask.apiKey.openai');
    assert.equal(secretKey('anthropic'), 'codeask.apiKey.anthropic');
  });
  it('puts the keys in the server environment without touching the base', () => {
    const base = { PATH: '/bin' };
    const env = serverEnv(base, { openai: 'o', anthropic: 'a' });
    assert.deepEqual(env, { PATH: '/bin', OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' });
    assert.deepEqual(base, { PATH: '/bin' });
    assert.deepEqual(serverEnv(base, {}), base);
  });
  it('masks keys', () => {
    assert.equal(maskKey('sk-1234567890abcd'), 'sk-…abcd');
    assert.equal(maskKey('short'), '*****');
  });
  it('prunes empties', () => {
    assert.deepEqual(pruneEmpty({ a: '', b: null, c: { d: ' ' }, e: 0, f: false, g: [] }), { e: 0, f: false, g: [] });
  });
});
