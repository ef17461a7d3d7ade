import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  CONTRIBUTED_KEYS,
  configurationItem,
  keyForProvider,
  maskKey,
  pruneEmpty,
  secretKey,
  serverEnv,
  toServerSettings,
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
    assert.deepEqual(configurationItem('codeask.hover', { hover: { llm: true } }, {}), { llm: true });
    assert.equal(configurationItem('codeask.indexOnStartup', { indexOnStartup: 'always' }, {}), 'always');
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
  it('adds the stored key of the chosen provider as llm.apiKey', () => {
    const keys = { openai: 'sk-open', anthropic: 'sk-ant' };
    const anthropic = toServerSettings({ llm: { provider: 'anthropic' } }, keys).llm as Record<string, unknown>;
    assert.equal(anthropic.apiKey, 'sk-ant');
    assert.equal(anthropic.openaiApiKey, 'sk-open');
    assert.equal(anthropic.anthropicApiKey, 'sk-ant');
    assert.equal((toServerSettings({ llm: { provider: 'openai' } }, keys).llm as any).apiKey, 'sk-open');
    assert.equal((toServerSettings({}, { anthropic: 'sk-ant' }).llm as any).apiKey, 'sk-ant');
    assert.equal((toServerSettings({}, keys).llm as any).apiKey, 'sk-open');
  });
  it('sends no key with provider none, and ignores keys typed into settings.json', () => {
    assert.deepEqual(toServerSettings({ llm: { provider: 'none' } }, { openai: 'sk' }), { llm: { provider: 'none' } });
    assert.deepEqual(toServerSettings({ llm: { provider: 'openai', apiKey: 'leak', openaiApiKey: 'leak' } }), {
      llm: { provider: 'openai' },
    });
  });
  it('does not modify its input', () => {
    const raw = JSON.parse(JSON.stringify(DEFAULTS));
    toServerSettings(raw, { openai: 'sk' });
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
    const keys = { openai: 'sk' };
    assert.deepEqual(configurationItem('codeask', DEFAULTS, keys), toServerSettings(DEFAULTS, keys));
    assert.deepEqual(configurationItem('codeask.retrieval', DEFAULTS, keys), { topK: 20, maxFiles: 8 });
    assert.equal(configurationItem('codeask.llm.apiKey', DEFAULTS, keys), 'sk');
    assert.equal(configurationItem('codeask.nothing', DEFAULTS, keys), null);
    assert.equal(configurationItem('python', DEFAULTS, keys), undefined);
    assert.equal(configurationItem(undefined, DEFAULTS, keys), undefined);
  });
});

describe('keys', () => {
  it('stores keys per provider', () => {
    assert.equal(secretKey('openai'), 'codeask.apiKey.openai');
    assert.equal(secretKey('anthropic'), 'codeask.apiKey.anthropic');
  });
  it('picks the key like the server does for auto', () => {
    assert.equal(keyForProvider('auto', { anthropic: 'a' }), 'a');
    assert.equal(keyForProvider('auto', { openai: 'o', anthropic: 'a' }), 'o');
    assert.equal(keyForProvider('none', { openai: 'o' }), undefined);
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
