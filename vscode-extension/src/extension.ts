/**
 * Entry point: starts the codeask language server (`codeask serve`) with vscode-languageclient
 * and wires the palette commands, the answer panel, the status bar and the selection hover.
 * The logic lives in the other modules (tested without VS Code); this file only connects it.
 */
import * as os from 'os';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  Executable,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  State,
} from 'vscode-languageclient/node';
import { createCommandHandlers, errorMessage } from './commands';
import { OPEN_SOURCE_COMMAND, createSelectionHover } from './hover';
import { openRequestFromArgs } from './markdown';
import { AnswerPanel } from './panel';
import { INSTALL_COMMAND, describeCommand, resolveServerCommand, startFailureMessage } from './serverCommand';
import { documentSelector } from './selector';
import { findExecutable } from './serverPath';
import {
  ApiKeys,
  KEYED_PROVIDERS,
  configurationItem,
  secretKey,
  serverEnv,
  toServerSettings,
  withoutDefaults,
} from './settings';
import { CrashTracker, ServerStatus, StatusBar, WorkDoneProgress } from './status';

let client: LanguageClient | undefined;

/** The `codeask` section as the user set it (contributed settings left at default removed). */
function rawSettings(scopeUri?: string): unknown {
  const scope = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
  const section = vscode.workspace.getConfiguration('codeask', scope);
  return withoutDefaults(vscode.workspace.getConfiguration(undefined, scope).get('codeask') ?? {}, (key) => {
    const i = section.inspect(key);
    return !!i && (i.globalValue !== undefined || i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
  });
}

async function loadKeys(secrets: vscode.SecretStorage): Promise<ApiKeys> {
  const keys: ApiKeys = {};
  for (const provider of KEYED_PROVIDERS) {
    const value = await secrets.get(secretKey(provider));
    if (value) keys[provider] = value;
  }
  return keys;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('codeask');
  const statusBar = new StatusBar(vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50));
  const crashes = new CrashTracker(5, 3 * 60 * 1000);
  const keys: ApiKeys = await loadKeys(context.secrets);
  let executable: Executable | undefined;
  let lastFailureNotice = 0;

  async function request(command: string, args: unknown[], token?: vscode.CancellationToken): Promise<unknown> {
    if (!client || client.state === State.Stopped) {
      throw new Error('the codeask language server is not running (see the "codeask" output, or run "Codeask: Restart Server")');
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token);
  }

  async function refreshStatus(): Promise<void> {
    try {
      statusBar.status((await request('codeask.status', [])) as ServerStatus);
    } catch (error) {
      output.appendLine(`[codeask extension] status: ${errorMessage(error)}`);
    }
  }

  async function sendConfiguration(): Promise<void> {
    if (!client || client.state !== State.Running) return;
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { codeask: toServerSettings(rawSettings(), keys) },
    });
  }

  function notifyStartFailure(error?: unknown): void {
    statusBar.stopped('the language server could not be started');
    const now = Date.now();
    if (now - lastFailureNotice < 5000) return;
    lastFailureNotice = now;
    const cmd = resolveServerCommand(vscode.workspace.getConfiguration('codeask').get<string>('serverPath'), os.homedir());
    const message = startFailureMessage(cmd, error);
    output.appendLine(`[codeask extension] ${message}`);
    void vscode.window
      .showErrorMessage(message, 'Set codeask.serverPath', 'Copy Install Command', 'Show Output')
      .then((choice) => {
        if (choice === 'Set codeask.serverPath') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'codeask.serverPath');
        } else if (choice === 'Copy Install Command') {
          void vscode.env.clipboard.writeText(cmd.python ? `${cmd.command} -m ${INSTALL_COMMAND}` : INSTALL_COMMAND);
        } else if (choice === 'Show Output') {
          output.show(true);
        }
      });
  }

  const selectionHover = createSelectionHover({
    vscode,
    request,
    enabled: () => vscode.workspace.getConfiguration('codeask').get<boolean>('hover.enabled', true),
  });

  function createClient(exe: Executable): LanguageClient {
    const clientOptions: LanguageClientOptions = {
      // Files inside the workspace folders, in the languages codeask indexes (not every file on disk).
      documentSelector: documentSelector(
        (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath),
      ),
      outputChannel: output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: () => toServerSettings(rawSettings(), keys),
      synchronize: { configurationSection: 'codeask' },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => {
          if (client?.state === State.Starting) {
            // Died before answering `initialize`: not a crash to retry, a setup problem.
            notifyStartFailure('the server exited during startup (see the "codeask" output)');
            return { action: CloseAction.DoNotRestart, handled: true };
          }
          if (crashes.shouldRestart()) {
            output.appendLine(`[codeask extension] the server exited unexpectedly; restarting (${crashes.recent} in the last 3 minutes)`);
            statusBar.starting();
            return { action: CloseAction.Restart, handled: true };
          }
          statusBar.stopped('the server crashed repeatedly');
          void vscode.window
            .showErrorMessage(
              `codeask: the language server crashed ${crashes.max} times in 3 minutes and will not be restarted.`,
              'Restart Server',
              'Show Output',
            )
            .then((choice) => {
              if (choice === 'Restart Server') void vscode.commands.executeCommand('codeask.restartServer');
              else if (choice === 'Show Output') output.show(true);
            });
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        provideHover: selectionHover,
        // The server's "Explain selection" code action runs codeask.explain through VS Code;
        // show its result in the answer panel (our own calls use sendRequest, not this path).
        executeCommand: async (command, args, next) => {
          const result = await next(command, args);
          if (command === 'codeask.explain') handlers.showExplanation(args, result);
          return result;
        },
        handleWorkDoneProgress: (token, params, next) => {
          if (statusBar.progress(token, params as WorkDoneProgress)) void refreshStatus();
          next(token, params);
        },
        workspace: {
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return params.items.map((item, i) => {
              const value = configurationItem(item.section, rawSettings(item.scopeUri), keys);
              return value === undefined ? result[i] : value;
            });
          },
          // Send the server's view (client-only keys removed, API keys added), not the raw section.
          didChangeConfiguration: async () => sendConfiguration(),
        },
      },
    };
    const lc = new LanguageClient('codeask', 'codeask', exe, clientOptions);
    lc.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        lastFailureNotice = 0;
        void refreshStatus();
      } else if (event.newState === State.Starting) {
        statusBar.starting();
      } else if (event.newState === State.Stopped && event.oldState === State.Running) {
        statusBar.stopped();
      }
    });
    return lc;
  }

  async function startServer(): Promise<void> {
    const cmd = resolveServerCommand(vscode.workspace.getConfiguration('codeask').get<string>('serverPath'), os.homedir());
    const found = findExecutable(cmd.command);
    if (!found) {
      notifyStartFailure(`"${cmd.command}" was not found${cmd.command.includes('/') || cmd.command.includes('\\') ? '' : ' on PATH'}`);
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    executable = {
      command: found,
      args: cmd.args,
      options: { env: serverEnv(process.env, keys), cwd: folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined },
    };
    output.appendLine(`[codeask extension] starting ${describeCommand({ ...cmd, command: found })}`);
    crashes.reset();
    statusBar.starting();
    client = createClient(executable);
    try {
      await client.start();
    } catch (error) {
      notifyStartFailure(error);
    }
  }

  async function stopServer(): Promise<void> {
    const old = client;
    client = undefined;
    if (!old) return;
    try {
      if (old.state !== State.Stopped) await old.stop(5000);
    } catch (error) {
      output.appendLine(`[codeask extension] stopping the server: ${errorMessage(error)}`);
    }
    await old.dispose().catch(() => undefined);
  }

  async function restartServer(): Promise<void> {
    await stopServer();
    await startServer();
  }

  const panel = new AnswerPanel(vscode, (msg) => handlers.onWebviewMessage(msg));
  const handlers = createCommandHandlers({
    vscode,
    request,
    state: context.globalState,
    secrets: context.secrets,
    showAnswer: (view) => panel.show(view),
    onStatus: (status) => statusBar.status(status),
    showOutput: () => output.show(true),
    onApiKeyChanged: async (provider, key) => {
      if (key) keys[provider] = key;
      else delete keys[provider];
      if (executable) executable.options = { ...executable.options, env: serverEnv(process.env, keys) };
      if (key) await sendConfiguration();
      else await restartServer(); // the running process still has the old key in its environment
    },
  });

  context.subscriptions.push(
    output,
    { dispose: () => panel.dispose() },
    vscode.commands.registerCommand('codeask.askQuestion', (question?: unknown) => handlers.askQuestion(question)),
    vscode.commands.registerCommand('codeask.explainSelection', () => handlers.explainSelection()),
    vscode.commands.registerCommand('codeask.reindexWorkspace', () => handlers.reindexWorkspace()),
    vscode.commands.registerCommand('codeask.showStatus', () => handlers.showStatus()),
    vscode.commands.registerCommand('codeask.setApiKey', (provider?: unknown) => handlers.setApiKey(provider)),
    vscode.commands.registerCommand('codeask.restartServer', () => restartServer()),
    vscode.commands.registerCommand(OPEN_SOURCE_COMMAND, (uri?: unknown, start?: unknown, end?: unknown) =>
      handlers.openSource(openRequestFromArgs(uri, start, end)),
    ),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('codeask.serverPath')) void restartServer();
    }),
    context.secrets.onDidChange(async (event) => {
      if (!event.key.startsWith('codeask.apiKey.')) return;
      Object.assign(keys, await loadKeys(context.secrets));
      for (const provider of KEYED_PROVIDERS) {
        if (!(await context.secrets.get(secretKey(provider)))) delete keys[provider];
      }
      await sendConfiguration();
    }),
    { dispose: () => void stopServer() },
  );

  await startServer();
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  if (old && old.state !== State.Stopped) await old.stop(5000).catch(() => undefined);
}
