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
import { cacheRoot, isCodeaskFolder } from './indexDir';
import { InstallError, ServerEnv, bundledWheel, defaultPythonCandidates, ensureServerEnv, installedEnv } from './install';
import { McpVscode, registerMcpProvider } from './mcp';
import { AnswerPanel } from './panel';
import { documentSelector } from './selector';
import {
  INSTALL_COMMAND,
  ServerCommand,
  describeCommand,
  resolveServerCommand,
  serverVersionProblem,
  startFailureMessage,
} from './serverCommand';
import { findExecutable } from './serverPath';
import {
  ApiKeys,
  KEYED_PROVIDERS,
  TRUSTED_ONLY_KEYS,
  configurationItem,
  secretKey,
  serverEnv,
  toServerSettings,
  userScopeSettings,
  withoutDefaults,
} from './settings';
import { CrashTracker, ServerStatus, StatusBar, StatusPoller, WorkDoneProgress } from './status';
import { ANSWER_DELTA, AnswerStream } from './stream';

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

/** The user-scope settings the server trusts (`initializationOptions`); see `userScopeSettings`. */
function trustedSettings(): unknown {
  const section = vscode.workspace.getConfiguration('codeask');
  return userScopeSettings((key) => section.inspect(key), vscode.workspace.isTrusted);
}

/** A string setting from user scope only (`serverPath`, `pythonPath`): a workspace must not choose
 * what VS Code runs. */
function userSetting(key: string): string | undefined {
  const value = vscode.workspace.getConfiguration('codeask').inspect<string>(key)?.globalValue;
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

/** `codeask.serverPath` from user scope only. */
function serverPathSetting(): string | undefined {
  return userSetting('serverPath');
}

/** Whether the user set `codeask.serverPath` (else the extension may install its own server). */
function serverPathSet(): boolean {
  return serverPathSetting() !== undefined;
}

/** The interpreter of the Python extension's active environment, when that extension is installed. */
async function pythonExtensionInterpreter(): Promise<string | undefined> {
  try {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) return undefined;
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    const active = envs?.getActiveEnvironmentPath?.(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = active ? await envs.resolveEnvironment(active) : undefined;
    return resolved?.executable?.uri?.fsPath;
  } catch {
    return undefined;
  }
}

async function loadKeys(secrets: vscode.SecretStorage): Promise<ApiKeys> {
  const keys: ApiKeys = {};
  for (const provider of KEYED_PROVIDERS) {
    const value = await secrets.get(secretKey(provider));
    if (value) keys[provider] = value;
  }
  return keys;
}

/** Whether a workspace folder (on this machine) has a `.codeask.toml` or an index: see indexDir.ts. */
function workspaceHasCodeask(): boolean {
  const cache = cacheRoot(process.env, process.platform, os.homedir());
  return (vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme === 'file' && isCodeaskFolder(f.uri.fsPath, cache));
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('codeask');
  const statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  const statusBar = new StatusBar(statusItem);
  const crashes = new CrashTracker(5, 3 * 60 * 1000);
  const keys: ApiKeys = await loadKeys(context.secrets);
  let executable: Executable | undefined;
  let lastFailureNotice = 0;
  // `codeask mcp` for VS Code's agent mode, from the same environment as the language server.
  let mcpTarget: { command: ServerCommand; executable: string } | undefined;
  const mcp = registerMcpProvider(
    vscode as unknown as McpVscode,
    () => mcpTarget,
    () => serverEnv({}, keys, vscode.workspace.isTrusted) as Record<string, string>,
    String(context.extension?.packageJSON?.version ?? ''),
  );
  if (mcp) context.subscriptions.push(mcp);

  async function request(command: string, args: unknown[], token?: vscode.CancellationToken): Promise<unknown> {
    if (!started) await queueStart(() => startServer()); // the first command in a folder codeask had not seen
    if (!client || client.state === State.Stopped) {
      throw new Error('the codeask language server is not running (see the "codeask" output, or run "Codeask: Restart Server")');
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token);
  }

  // The status is fetched again while it is provisional (indexing, stale): the update at start-up
  // may end before its progress is reported, or without a notification that would refresh it.
  const statusPoller = new StatusPoller(async () => {
    try {
      return statusBar.status((await request('codeask.status', [])) as ServerStatus);
    } catch (error) {
      output.appendLine(`[codeask extension] status: ${errorMessage(error)}`);
      return false;
    }
  });

  function refreshStatus(): Promise<void> {
    return statusPoller.refresh();
  }

  async function sendConfiguration(): Promise<void> {
    if (!client || client.state !== State.Running) return;
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { codeask: toServerSettings(rawSettings()) },
    });
  }

  function notifyStartFailure(error?: unknown): void {
    statusBar.stopped('the language server could not be started');
    const now = Date.now();
    if (now - lastFailureNotice < 5000) return;
    lastFailureNotice = now;
    const cmd = resolveServerCommand(serverPathSetting(), os.homedir());
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
      initializationOptions: () => trustedSettings(),
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
        // show its result in the answer panel, or its failure once (our own calls use sendRequest,
        // not this path).
        executeCommand: async (command, args, next) => {
          if (command !== 'codeask.explain') return next(command, args);
          return handlers.runExplainCommand(args, async (a) => next(command, a));
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
              const value = configurationItem(item.section, rawSettings(item.scopeUri));
              return value === undefined ? result[i] : value;
            });
          },
          // Send the server's view (client-only keys and any typed API key removed), not the raw section.
          didChangeConfiguration: async () => sendConfiguration(),
        },
      },
    };
    const lc = new LanguageClient('codeask', 'codeask', exe, clientOptions);
    // The text of an answer being written, before the `codeask.ask` response (see stream.ts).
    lc.onNotification(ANSWER_DELTA, (params: unknown) => answerStream.onDelta(params));
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

  /** Python candidates for the managed environment: the `codeask.pythonPath` setting alone when
   * set, else the Python extension's environment, then python3 / python / py -3 on PATH. */
  async function pythonCandidates(): Promise<{ command: string; args?: string[] }[]> {
    const explicit = userSetting('pythonPath') ?? '';
    if (explicit) return [{ command: explicit.replace(/^~(?=$|[\\/])/, os.homedir()) }];
    const fromExtension = await pythonExtensionInterpreter();
    return [...(fromExtension ? [{ command: fromExtension }] : []), ...defaultPythonCandidates()];
  }

  /** The managed server environment, installed (or upgraded) under a cancellable progress
   * notification when needed; undefined after a failure (already reported) or without a wheel. */
  async function managedServer(force: boolean): Promise<ServerEnv | undefined> {
    const wheel = bundledWheel(context.asAbsolutePath('server'));
    if (!wheel) return undefined;
    const storageDir = context.globalStorageUri.fsPath;
    const ready = force ? undefined : installedEnv(storageDir, wheel);
    if (ready) return ready;
    const pythons = await pythonCandidates();
    const gen = generation;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'codeask: installing the server', cancellable: true },
      async (progress, userToken) => {
        // Cancelled by the user, or by a newer start (a changed codeask.serverPath, a trust grant).
        const cancel = new vscode.CancellationTokenSource();
        const forward = userToken.onCancellationRequested(() => cancel.cancel());
        abandonInstall = () => cancel.cancel();
        try {
          return await ensureServerEnv({
            storageDir,
            wheel,
            pythons,
            force,
            token: cancel.token,
            log: (line) => output.appendLine(line),
            report: (message) => progress.report({ message }),
          });
        } catch (error) {
          if (gen !== generation) return undefined; // superseded: the newer start reports

          const message = error instanceof InstallError ? error.message : `codeask: installing the server failed: ${errorMessage(error)}`;
          output.appendLine(`[codeask extension] ${message}`);
          statusBar.stopped('the server is not installed');
          void vscode.window.showErrorMessage(message, 'Show Log', 'Reinstall Server').then((choice) => {
            if (choice === 'Show Log') output.show(true);
            else if (choice === 'Reinstall Server') void vscode.commands.executeCommand('codeask.reinstallServer');
          });
          return undefined;
        } finally {
          abandonInstall = undefined;
          forward.dispose();
          cancel.dispose();
        }
      },
    );
  }

  // Starts (activation, restart, reinstall) run one at a time, in order. A start that is waiting
  // for the managed environment gives way to a newer one: when the user settings reach the
  // extension host after activation, the restart for codeask.serverPath came while the first
  // start was installing from the package index, and the install, finishing later, replaced the
  // server the setting named.
  let generation = 0;
  let lifecycle: Promise<unknown> = Promise.resolve();
  let abandonInstall: (() => void) | undefined;
  /** False until the server is first started: activation in a folder with no `.codeask.toml` and no
   * index starts nothing (it waits, status bar item hidden, for a codeask command). */
  let started = false;

  function queueStart(op: () => Promise<void>): Promise<void> {
    if (!started) statusItem.show();
    started = true;
    generation++;
    abandonInstall?.();
    const run = lifecycle.then(op);
    lifecycle = run.catch(() => undefined);
    return run;
  }

  async function startServer(force = false): Promise<void> {
    const gen = generation;
    let cmd = resolveServerCommand(serverPathSetting(), os.homedir());
    let found = serverPathSet() ? findExecutable(cmd.command) : undefined;
    let managed = false;
    if (!serverPathSet()) {
      if (typeof vscode.env.remoteName === 'string' && vscode.env.remoteName) {
        // code-server, SSH, containers: VS Code never passes a User-settings value of a
        // machine-scoped setting to this extension host (found by the VS Code tier).
        output.appendLine(
          `[codeask extension] codeask.serverPath is not set for this machine: in a remote window (${vscode.env.remoteName}) it is read from the Remote settings only, not from User settings`,
        );
      }
      // No explicit server: `codeask` on PATH, else the environment this extension manages
      // (installed from the wheel the .vsix carries); "Reinstall Server" forces the latter.
      const env = force || !findExecutable(cmd.command) ? await managedServer(force) : undefined;
      if (gen !== generation) return; // a newer start is queued
      if (env) {
        cmd = resolveServerCommand(env.codeask);
        found = env.codeask;
        managed = true;
      } else {
        found = findExecutable(cmd.command);
      }
    }
    if (!found) {
      notifyStartFailure(`"${cmd.command}" was not found${cmd.command.includes('/') || cmd.command.includes('\\') ? '' : ' on PATH'}`);
      return;
    }
    mcpTarget = { command: cmd, executable: found };
    mcp?.refresh();
    const folder = vscode.workspace.workspaceFolders?.[0];
    executable = {
      command: found,
      args: cmd.args,
      options: {
        env: serverEnv(process.env, keys, vscode.workspace.isTrusted),
        cwd: folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined,
      },
    };
    output.appendLine(`[codeask extension] starting ${describeCommand({ ...cmd, command: found })}`);
    crashes.reset();
    statusBar.starting();
    client = createClient(executable);
    try {
      await client.start();
    } catch (error) {
      notifyStartFailure(error);
      return;
    }
    const info = client.initializeResult?.serverInfo;
    output.appendLine(`[codeask extension] server ${info?.name ?? 'codeask'} ${info?.version ?? '(no version reported)'}${managed ? ' (managed environment)' : ''}`);
    const problem = serverVersionProblem(info, managed);
    if (problem) {
      output.appendLine(`[codeask extension] ${problem}`);
      await stopServer();
      statusBar.stopped('the server is too old');
      void vscode.window.showErrorMessage(problem, managed ? 'Reinstall Server' : 'Show Output').then((choice) => {
        if (choice === 'Reinstall Server') void vscode.commands.executeCommand('codeask.reinstallServer');
        else if (choice === 'Show Output') output.show(true);
      });
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

  function restartServer(): Promise<void> {
    return queueStart(async () => {
      await stopServer();
      await startServer();
    });
  }

  function reinstallServer(): Promise<void> {
    return queueStart(async () => {
      await stopServer();
      if (serverPathSet()) {
        void vscode.window.showInformationMessage(
          'codeask: "codeask.serverPath" is set, so the extension does not manage the server; clear it to use the bundled one.',
        );
      }
      await startServer(!serverPathSet());
    });
  }

  const panel = new AnswerPanel(vscode, (msg) => handlers.onWebviewMessage(msg));
  const answerStream = new AnswerStream(panel);
  const handlers = createCommandHandlers({
    vscode,
    request,
    state: context.globalState,
    secrets: context.secrets,
    showAnswer: (view) => panel.show(view),
    stream: answerStream,
    onStatus: (status) => {
      if (statusBar.status(status)) void refreshStatus();
    },
    showOutput: () => output.show(true),
    onApiKeyChanged: async (provider, key) => {
      if (key) keys[provider] = key;
      else delete keys[provider];
      if (executable) executable.options = { ...executable.options, env: serverEnv(process.env, keys, vscode.workspace.isTrusted) };
      mcp?.refresh();
      if (started) await restartServer(); // keys reach the server only through its environment
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
    vscode.commands.registerCommand('codeask.reinstallServer', () => reinstallServer()),
    vscode.commands.registerCommand(OPEN_SOURCE_COMMAND, (uri?: unknown, start?: unknown, end?: unknown) =>
      handlers.openSource(openRequestFromArgs(uri, start, end)),
    ),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // The trusted settings travel in initializationOptions: a change needs a new server.
      if (started && TRUSTED_ONLY_KEYS.some((key) => event.affectsConfiguration(`codeask.${key}`))) void restartServer();
    }),
    // Restricted Mode ran the server without an LLM and without keys; trusting the workspace lifts that.
    vscode.workspace.onDidGrantWorkspaceTrust(() => started && void restartServer()),
    context.secrets.onDidChange(async (event) => {
      if (!event.key.startsWith('codeask.apiKey.')) return;
      Object.assign(keys, await loadKeys(context.secrets));
      for (const provider of KEYED_PROVIDERS) {
        if (!(await context.secrets.get(secretKey(provider)))) delete keys[provider];
      }
      if (started) await restartServer();
    }),
    { dispose: () => statusPoller.dispose() },
    { dispose: () => void stopServer() },
  );

  if (workspaceHasCodeask()) {
    await queueStart(() => startServer());
  } else {
    statusItem.hide();
    output.appendLine('[codeask extension] no .codeask.toml and no codeask index in this workspace: the server starts with the first codeask command');
  }
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  if (old && old.state !== State.Stopped) await old.stop(5000).catch(() => undefined);
}
