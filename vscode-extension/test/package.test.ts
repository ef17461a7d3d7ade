import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

describe('package.json', () => {
  it('declares the engine, bundle entry point and license', () => {
    assert.equal(pkg.engines.vscode, '^1.91.0');
    assert.equal(pkg.devDependencies['@types/vscode'], '~1.91.0');
    assert.equal(pkg.main, './dist/extension.js');
    assert.equal(pkg.license, 'Apache-2.0');
    assert.ok(pkg.repository);
  });
  it('contributes the palette commands but not the server-side ones', () => {
    const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
    for (const id of ['codeask.askQuestion', 'codeask.explainSelection', 'codeask.reindexWorkspace', 'codeask.showStatus', 'codeask.setApiKey']) {
      assert.ok(ids.includes(id), id);
    }
    for (const id of ['codeask.ask', 'codeask.explain', 'codeask.reindex', 'codeask.status']) {
      assert.ok(!ids.includes(id), `${id} is registered by vscode-languageclient`);
    }
    const context = pkg.contributes.menus['editor/context'];
    assert.deepEqual(context[0].command, 'codeask.explainSelection');
    assert.equal(context[0].when, 'editorHasSelection');
  });
  it('contributes the settings', () => {
    const props = pkg.contributes.configuration.properties;
    for (const key of ['serverPath', 'llm.provider', 'llm.model', 'llm.baseUrl', 'retrieval.topK', 'retrieval.maxFiles', 'hover.enabled']) {
      assert.ok(props[`codeask.${key}`], key);
    }
    assert.deepEqual(props['codeask.llm.provider'].enum, ['auto', 'openai', 'anthropic', 'none']);
    assert.ok(!Object.keys(props).some((k) => /apikey/i.test(k)), 'API keys are not settings');
  });
  it('is fit for a marketplace: icon, CHANGELOG, gallery banner, and the wheel in the .vsix', () => {
    for (const file of [pkg.icon, 'CHANGELOG.md', 'README.md', 'LICENSE']) assert.ok(existsSync(join(root, file)), file);
    assert.ok(pkg.galleryBanner && pkg.categories.length && pkg.keywords.length && pkg.repository.url);
    assert.match(pkg.scripts.package, /build-wheel.*vsce package/);
    const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8');
    assert.ok(!/^server/m.test(ignore), 'server/*.whl must go in the .vsix');
    const ids = pkg.contributes.commands.map((c: { command: string }) => c.command);
    assert.ok(ids.includes('codeask.reinstallServer'));
    assert.deepEqual(pkg.contributes.mcpServerDefinitionProviders.map((p: { id: string }) => p.id), ['codeask.mcpServers']);
  });
  it('activates on its commands, on a .codeask.toml, and after start-up (never during it)', () => {
    // After start-up, a folder with no .codeask.toml and no index starts nothing (activation.test.ts).
    assert.ok(!pkg.activationEvents.includes('*'));
    assert.deepEqual(pkg.activationEvents, ['workspaceContains:.codeask.toml', 'onStartupFinished']);
    // Contributed commands activate the extension by themselves (VS Code >= 1.74).
    assert.ok(pkg.contributes.commands.some((c: { command: string }) => c.command === 'codeask.askQuestion'));
  });
  it('contributes indexOnStartup and hover.llm with cheap defaults', () => {
    const props = pkg.contributes.configuration.properties;
    assert.deepEqual(props['codeask.indexOnStartup'].enum, ['auto', 'always', 'never']);
    assert.equal(props['codeask.indexOnStartup'].default, 'auto');
    assert.equal(props['codeask.hover.llm'].type, 'boolean');
    assert.equal(props['codeask.hover.llm'].default, false);
  });
  it('does not register server command ids in the extension source', () => {
    const src = readFileSync(join(root, 'src', 'extension.ts'), 'utf8');
    const registered = [...src.matchAll(/registerCommand\(\s*'([^']+)'/g)].map((m) => m[1]);
    for (const id of registered) assert.ok(!['codeask.ask', 'codeask.explain', 'codeask.reindex', 'codeask.status'].includes(id), id);
    assert.ok(registered.includes('codeask.askQuestion'));
  });
});
