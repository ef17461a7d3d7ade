/**
 * The MCP server definition provider (`codeask mcp` for VS Code's agent mode), against a fake
 * `vscode` with and without the API.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MCP_PROVIDER_ID, McpVscode, mcpLaunch, registerMcpProvider } from '../src/mcp';
import { resolveServerCommand } from '../src/serverCommand';

type Any = any;

class EventEmitter {
  listeners: (() => void)[] = [];
  event = (listener: () => void) => {
    this.listeners.push(listener);
    return { dispose: () => undefined };
  };
  fire() {
    for (const l of this.listeners) l();
  }
  dispose() {
    this.listeners = [];
  }
}

class Definition {
  constructor(
    readonly label: string,
    readonly command: string,
    readonly args?: string[],
    readonly env?: Record<string, string | number | null>,
    readonly version?: string,
  ) {}
}

function fakeVscode(withApi: boolean, folders: { scheme: string; fsPath: string }[]) {
  const registered: { id: string; provider: Any }[] = [];
  let folderListener: (() => void) | undefined;
  const vscode: McpVscode & Any = {
    EventEmitter,
    workspace: {
      workspaceFolders: folders.map((uri) => ({ uri })),
      onDidChangeWorkspaceFolders: (l: () => void) => {
        folderListener = l;
        return { dispose: () => (folderListener = undefined) };
      },
    },
  };
  if (withApi) {
    vscode.lm = {
      registerMcpServerDefinitionProvider(id: string, provider: Any) {
        registered.push({ id, provider });
        return { dispose: () => registered.splice(0) };
      },
    };
    vscode.McpStdioServerDefinition = Definition;
  }
  return { vscode, registered, changeFolders: () => folderListener?.() };
}

describe('mcpLaunch', () => {
  it('turns the language server command into codeask mcp FOLDERS', () => {
    const exe = resolveServerCommand('codeask');
    assert.deepEqual(mcpLaunch(exe, '/usr/bin/codeask', ['/a', '/b c']), { command: '/usr/bin/codeask', args: ['mcp', '/a', '/b c'] });
    const py = resolveServerCommand('/venv/bin/python3');
    assert.deepEqual(mcpLaunch(py, '/venv/bin/python3', ['/a']), { command: '/venv/bin/python3', args: ['-m', 'codeask', 'mcp', '/a'] });
  });
});

describe('registerMcpProvider', () => {
  it('does nothing on a VS Code without the API', () => {
    const { vscode } = fakeVscode(false, [{ scheme: 'file', fsPath: '/proj' }]);
    assert.equal(registerMcpProvider(vscode, () => undefined, () => ({}), '0.1.0'), undefined);
    // half an API (a proposed-API build) is treated as absent too
    (vscode as Any).lm = { registerMcpServerDefinitionProvider: () => ({ dispose() {} }) };
    assert.equal(registerMcpProvider(vscode, () => undefined, () => ({}), '0.1.0'), undefined);
  });

  it('offers codeask mcp for the file: folders, from the language server environment', async () => {
    const { vscode, registered, changeFolders } = fakeVscode(true, [
      { scheme: 'file', fsPath: '/proj' },
      { scheme: 'vscode-remote', fsPath: '/remote' },
      { scheme: 'file', fsPath: '/lib' },
    ]);
    let target: Any;
    const env = { OPENAI_API_KEY: 'sk-test' };
    const reg = registerMcpProvider(vscode, () => target, () => env, '0.2.0');
    assert.ok(reg);
    assert.equal(registered.length, 1);
    assert.equal(registered[0].id, MCP_PROVIDER_ID);
    const provider = registered[0].provider;
    assert.deepEqual(await provider.provideMcpServerDefinitions(), []); // no server known yet

    let changes = 0;
    provider.onDidChangeMcpServerDefinitions(() => changes++);
    target = { command: resolveServerCommand('/venv/bin/python'), executable: '/venv/bin/python' };
    reg.refresh();
    changeFolders();
    assert.equal(changes, 2);
    const [def] = (await provider.provideMcpServerDefinitions()) as Definition[];
    assert.ok(def instanceof Definition);
    assert.equal(def.label, 'codeask');
    assert.equal(def.command, '/venv/bin/python');
    assert.deepEqual(def.args, ['-m', 'codeask', 'mcp', '/proj', '/lib']);
    assert.deepEqual(def.env, env);
    assert.equal(def.version, '0.2.0');
    reg.dispose();
    assert.equal(registered.length, 0);
  });

  it('offers nothing without a file: folder, and survives an editor refusing the provider', async () => {
    const { vscode, registered } = fakeVscode(true, []);
    registerMcpProvider(vscode, () => ({ command: resolveServerCommand('codeask'), executable: '/bin/codeask' }), () => ({}), '1');
    assert.deepEqual(await registered[0].provider.provideMcpServerDefinitions(), []);
    (vscode as Any).lm.registerMcpServerDefinitionProvider = () => {
      throw new Error('provider id not contributed');
    };
    assert.equal(registerMcpProvider(vscode, () => undefined, () => ({}), '1'), undefined);
  });
});
