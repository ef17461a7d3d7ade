/**
 * Registers `codeask mcp` with VS Code's agent mode through the MCP server definition provider API
 * (`vscode.lm.registerMcpServerDefinitionProvider`, VS Code 1.101+). Feature-detected: on an older
 * VS Code (or an editor without the API) nothing is registered and nothing fails. The server is
 * started from the same environment as the language server (`codeask.serverPath`, or the
 * executable the extension found), for the workspace's `file:` folders.
 * Takes the `vscode` module as a parameter so it is tested without VS Code.
 */
import type { ServerCommand } from './serverCommand';

/** `contributes.mcpServerDefinitionProviders[].id` in package.json. */
export const MCP_PROVIDER_ID = 'codeask.mcpServers';
export const MCP_SERVER_LABEL = 'codeask';

export interface Disposable {
  dispose(): unknown;
}

interface EventEmitterLike {
  event: unknown;
  fire(): void;
  dispose(): void;
}

interface FolderLike {
  uri: { scheme: string; fsPath: string };
}

/** The parts of the `vscode` module this file uses (the MCP parts optional: older VS Code). */
export interface McpVscode {
  lm?: { registerMcpServerDefinitionProvider?: (id: string, provider: unknown) => Disposable };
  McpStdioServerDefinition?: new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string | number | null>,
    version?: string,
  ) => unknown;
  EventEmitter: new () => EventEmitterLike;
  workspace: {
    workspaceFolders?: readonly FolderLike[];
    onDidChangeWorkspaceFolders(listener: () => unknown): Disposable;
  };
}

export interface McpLaunch {
  command: string;
  args: string[];
}

/**
 * The `codeask mcp` command line for a language-server command: `codeask serve` ->
 * `codeask mcp FOLDERS`, `python -m codeask serve` -> `python -m codeask mcp FOLDERS`.
 */
export function mcpLaunch(server: ServerCommand, executable: string, folders: readonly string[]): McpLaunch {
  const args = [...server.args];
  const serve = args.lastIndexOf('serve');
  if (serve >= 0) args.splice(serve, 1, 'mcp');
  else args.push('mcp');
  return { command: executable, args: [...args, ...folders] };
}

export interface McpRegistration {
  /** Tell VS Code the definition changed (server path, keys or folders). */
  refresh(): void;
  dispose(): void;
}

/**
 * Register the provider when the running VS Code has the API; `undefined` otherwise.
 *
 * @param server the server's command (`undefined` while no server executable is known: then no
 *   definition is offered).
 * @param env extra environment for the server (API keys), merged over VS Code's by VS Code.
 * @param version the extension's version: a change makes VS Code refresh the tool list.
 */
export function registerMcpProvider(
  vscode: McpVscode,
  server: () => { command: ServerCommand; executable: string } | undefined,
  env: () => Record<string, string>,
  version: string,
): McpRegistration | undefined {
  const register = vscode.lm?.registerMcpServerDefinitionProvider;
  const Definition = vscode.McpStdioServerDefinition;
  if (typeof register !== 'function' || typeof Definition !== 'function') return undefined;
  const changed = new vscode.EventEmitter();
  let registration: Disposable;
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => {
      const found = server();
      const folders = (vscode.workspace.workspaceFolders ?? [])
        .filter((f) => f.uri.scheme === 'file')
        .map((f) => f.uri.fsPath);
      if (!found || folders.length === 0) return [];
      const launch = mcpLaunch(found.command, found.executable, folders);
      return [new Definition(MCP_SERVER_LABEL, launch.command, launch.args, env(), version)];
    },
  };
  try {
    registration = register.call(vscode.lm, MCP_PROVIDER_ID, provider);
  } catch {
    // An editor that has the function but refuses the provider: the language server still works.
    changed.dispose();
    return undefined;
  }
  const folders = vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire());
  return {
    refresh: () => changed.fire(),
    dispose: () => {
      folders.dispose();
      registration.dispose();
      changed.dispose();
    },
  };
}
