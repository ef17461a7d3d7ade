/**
 * End-to-end protocol test against the real Python server: spawns `python3 -m codeask serve`
 * (interpreter from CODEASK_PYTHON), initializes it on a small temporary workspace, waits for
 * indexing to finish and asks a question without an LLM. Fails (does not skip) when the server
 * is missing, unless CODEASK_SKIP_PROTOCOL_TEST=1.
 */
import assert from 'node:assert/strict';
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ConfigurationRequest,
  ExecuteCommandRequest,
  InitializeRequest,
  InitializeResult,
  InitializedNotification,
  Location,
  ProtocolConnection,
  RegistrationRequest,
  ShowMessageNotification,
  ShowMessageRequest,
  UnregistrationRequest,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  Trace,
} from 'vscode-languageserver-protocol/node';
import { isRefusal } from '../src/commands';
import { configurationItem, serverEnv, userScopeSettings } from '../src/settings';

const SKIP = process.env.CODEASK_SKIP_PROTOCOL_TEST === '1';
const PYTHON = process.env.CODEASK_PYTHON || 'python3';
const INDEX_TIMEOUT_MS = 120_000;
/** This repository's server sources (vscode-extension/out/test -> ../../../server). */
const REPO_SERVER = join(__dirname, '..', '..', '..', 'server');
/** A stored API key: it must reach the server's environment and never appear in the LSP trace. */
const CANARY_KEY = 'sk-codeask-trace-canary-6f2d9e';
/** The user's settings as VS Code returns them, with a key someone typed into settings.json. */
const USER_SETTINGS = { llm: { provider: 'none', apiKey: 'sk-codeask-typed-canary-41b7' }, retrieval: { topK: 20 } };

interface Status {
  indexing: boolean;
  files?: number;
  chunks_total?: number;
  vectors_pending?: number;
  index_dir?: string;
  llm?: string | null;
  index_state?: string;
}

interface AskResult {
  question: string;
  answer: string;
  markdown: string;
  subquestions: string[];
  sources: { path: string; uri: string; start_line: number; end_line: number; symbol?: string; score?: number }[];
  locations: Location[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A timer that does not keep the process alive (for races during shutdown). */
function grace(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

describe('protocol: the real codeask server over stdio', { skip: SKIP ? 'CODEASK_SKIP_PROTOCOL_TEST=1' : false, timeout: 240_000 }, () => {
  let workspace: string;
  let cacheDir: string;
  let child: ChildProcessWithoutNullStreams | undefined;
  let connection: ProtocolConnection | undefined;
  let stderr = '';
  let exited: Promise<never>;
  let init: InitializeResult | undefined;
  const progress: unknown[] = [];
  const trace: string[] = [];
  /** `window/showMessage` notifications from the server. */
  const shown: string[] = [];

  /** Rejects with the server's stderr when the process dies first. */
  function guarded<T>(what: string, p: Promise<T>): Promise<T> {
    return Promise.race([p, exited]).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${what}: ${message}\n--- server stderr (last 4000 chars) ---\n${stderr.slice(-4000)}`);
    });
  }

  before(async () => {
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'codeask-ws-')));
    cacheDir = mkdtempSync(join(tmpdir(), 'codeask-cache-'));
    mkdirSync(join(workspace, 'pkg'));
    writeFileSync(
      join(workspace, 'calc.py'),
      [
        '"""Arithmetic helpers."""',
        '',
        '',
        'def add_numbers(a: int, b: int) -> int:',
        '    """Add two numbers and return their sum."""',
        '    return a + b',
        '',
        '',
        'def multiply_numbers(a: int, b: int) -> int:',
        '    """Multiply two numbers."""',
        '    return a * b',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(workspace, 'pkg', 'greeting.py'),
      [
        '"""Greetings."""',
        '',
        'from calc import add_numbers',
        '',
        '',
        'class Greeter:',
        '    """Builds greeting messages for users."""',
        '',
        '    def greet(self, name: str) -> str:',
        '        return f"Hello, {name}! 1 + 1 = {add_numbers(1, 1)}"',
        '',
      ].join('\n'),
    );
  });

  // Starting the server is a test (not a hook) so that a missing server counts as failed tests.
  it('starts `python -m codeask serve` and initializes it', async () => {
    const base: NodeJS.ProcessEnv = { ...process.env, CODEASK_CACHE_DIR: cacheDir, PYTHONUNBUFFERED: '1' };
    delete base.OPENAI_API_KEY;
    const env = serverEnv(base, { openai: CANARY_KEY }, true); // as the extension starts the server
    delete env.ANTHROPIC_API_KEY;
    delete env.CODEASK_LLM;
    delete env.CODEASK_MODEL;
    // Run this repository's server even when it is not pip-installed in editable mode.
    if (existsSync(join(REPO_SERVER, 'codeask'))) {
      env.PYTHONPATH = [REPO_SERVER, env.PYTHONPATH].filter(Boolean).join(delimiter);
    }

    const proc = spawn(PYTHON, ['-m', 'codeask', 'serve'], { cwd: workspace, env, stdio: 'pipe' });
    child = proc;
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
    });
    exited = new Promise<never>((_, reject) => {
      proc.on('error', (e) => reject(new Error(`cannot run ${PYTHON}: ${e.message} (set CODEASK_PYTHON)`)));
      proc.on('exit', (code, signal) =>
        reject(new Error(`\`${PYTHON} -m codeask serve\` exited (code ${code}, signal ${signal})`)),
      );
    });
    exited.catch(() => undefined); // handled where awaited

    const conn = createProtocolConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
    connection = conn;
    // As the extension answers (configurationItem), with `codeask.trace.server = verbose` on.
    conn.onRequest(ConfigurationRequest.type, (params) => params.items.map((item) => configurationItem(item.section, USER_SETTINGS) ?? null));
    conn.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
      conn.onProgress(WorkDoneProgress.type, params.token, (value) => progress.push(value));
      return null;
    });
    conn.onRequest(RegistrationRequest.type, () => undefined);
    conn.onRequest(UnregistrationRequest.type, () => undefined);
    conn.onRequest(ShowMessageRequest.type, () => null);
    conn.onNotification(ShowMessageNotification.type, (params) => shown.push(params.message));
    conn.onError(() => undefined);
    conn.listen();
    await conn.trace(Trace.Verbose, { log: (message: unknown, data?: string) => trace.push(`${typeof message === 'string' ? message : JSON.stringify(message)} ${data ?? ''}`) });

    const rootUri = pathToFileURL(workspace).href;
    init = await guarded(
      'initialize',
      conn.sendRequest(InitializeRequest.type, {
        processId: process.pid,
        clientInfo: { name: 'codeask-vscode-protocol-test' },
        rootUri,
        workspaceFolders: [{ uri: rootUri, name: 'ws' }],
        initializationOptions: userScopeSettings((key) => (key === 'llm.provider' ? { globalValue: 'none' } : undefined), true),
        capabilities: {
          workspace: { configuration: true, workspaceFolders: true, didChangeConfiguration: { dynamicRegistration: true } },
          window: { workDoneProgress: true },
          textDocument: { hover: { contentFormat: ['markdown', 'plaintext'] } },
        },
      }),
    );
    await conn.sendNotification(InitializedNotification.type, {});
  });

  after(async () => {
    try {
      if (connection && child && child.exitCode === null) {
        await Promise.race([connection.sendRequest('shutdown'), grace(5000)]).catch(() => undefined);
        await connection.sendNotification('exit').catch(() => undefined);
        await Promise.race([new Promise((r) => child!.once('exit', r)), grace(5000)]);
      }
    } finally {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      connection?.dispose();
      rmSync(workspace, { recursive: true, force: true });
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });

  function execute<T>(command: string, args: unknown[]): Promise<T> {
    assert.ok(connection && init, 'the server did not start (see the first test)');
    return guarded(command, connection!.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }) as Promise<T>);
  }

  it('advertises the codeask commands', () => {
    assert.ok(init, 'the server did not start (see the first test)');
    const commands = init.capabilities.executeCommandProvider?.commands ?? [];
    for (const id of ['codeask.ask', 'codeask.explain', 'codeask.reindex', 'codeask.status']) {
      assert.ok(commands.includes(id), `executeCommandProvider lacks ${id}: ${JSON.stringify(commands)}`);
    }
  });

  it('does not index before the first question (indexOnStartup: auto, no index, no .codeask.toml)', async () => {
    const status = await execute<Status>('codeask.status', []);
    assert.equal(status.index_state, 'not-indexed', JSON.stringify(status));
    assert.equal(status.indexing, false);
    assert.equal(status.files, 0);
    assert.ok('llm' in status, 'status reports the llm');
    assert.ok(!progress.some((p) => (p as { title?: string }).title === 'codeask: indexing'), JSON.stringify(progress));
  });

  it('answers codeask.ask without an LLM, citing file:// locations in the workspace', async () => {
    const result = await execute<AskResult>('codeask.ask', [
      { question: 'Which function adds two numbers and returns their sum?', no_llm: true },
    ]);
    assert.ok(result && typeof result === 'object', 'a result object');
    assert.equal(typeof result.markdown, 'string');
    assert.ok(Array.isArray(result.sources) && result.sources.length > 0, `sources: ${JSON.stringify(result.sources)}`);
    assert.ok(Array.isArray(result.locations) && result.locations.length > 0, `locations: ${JSON.stringify(result.locations)}`);
    const root = workspace.endsWith(sep) ? workspace : workspace + sep;
    for (const loc of result.locations) {
      assert.match(loc.uri, /^file:\/\//, loc.uri);
      const path = realpathSync(fileURLToPath(loc.uri));
      assert.ok(path.startsWith(root), `${path} is inside ${workspace}`);
      assert.equal(typeof loc.range.start.line, 'number');
      assert.ok(loc.range.start.line >= 0 && loc.range.end.line >= loc.range.start.line, JSON.stringify(loc.range));
    }
    assert.ok(
      result.locations.some((l) => l.uri.endsWith('/calc.py')),
      `calc.py is cited: ${result.locations.map((l) => l.uri).join(', ')}`,
    );
    for (const source of result.sources) {
      assert.match(source.uri, /^file:\/\//);
    }
    assert.match(result.markdown, /\(file:\/\/[^)]*#L\d+/, 'markdown links the sources with #L fragments');
  });

  it('has indexed the workspace for that first question (codeask.status)', async () => {
    const deadline = Date.now() + INDEX_TIMEOUT_MS;
    let status: Status | undefined;
    for (;;) {
      status = await execute<Status>('codeask.status', []);
      if (status && status.indexing === false && (status.files ?? 0) >= 2) break;
      if (Date.now() > deadline) {
        assert.fail(
          `still indexing after ${INDEX_TIMEOUT_MS / 1000}s: ${JSON.stringify(status)}; ` +
            `last progress: ${JSON.stringify(progress.slice(-3))}\n${stderr.slice(-4000)}`,
        );
      }
      await sleep(500);
    }
    assert.equal(typeof status.chunks_total, 'number');
    assert.notEqual(status.index_state, 'not-indexed');
  });

  it('refuses to explain a secret file with one InvalidParams error and no showMessage besides', async () => {
    writeFileSync(join(workspace, '.env'), 'API_TOKEN=env-token-value-9\n');
    const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } };
    assert.ok(connection && init, 'the server did not start (see the first test)');
    const args = [pathToFileURL(join(workspace, '.env')).href, range];
    let refusal: unknown;
    // not through execute(): it rewraps the error, and the code is what the extension reads
    await connection!.sendRequest(ExecuteCommandRequest.type, { command: 'codeask.explain', arguments: args }).then(
      () => assert.fail('.env was explained'),
      (error: unknown) => {
        refusal = error;
      },
    );
    assert.ok(isRefusal(refusal), `an InvalidParams error: ${JSON.stringify(refusal)}`);
    assert.match((refusal as Error).message, /^cannot explain: \.env is a secret file[^\n]*$/);
    await execute('codeask.status', []); // a round trip: a message sent with the refusal has arrived
    assert.deepEqual(
      shown.filter((m) => m.includes('explain')),
      [],
      'the error is the one message: the extension shows it, so the server must not show it too',
    );
  });

  it('a verbose trace of the whole session holds no API key', () => {
    assert.ok(trace.length > 5, 'the session was traced');
    const text = trace.join('\n');
    assert.match(text, /initializationOptions/);
    assert.match(text, /workspace\/configuration/);
    assert.ok(!text.includes(CANARY_KEY) && !text.includes('sk-codeask-typed-canary-41b7'), 'a key is in the trace');
  });
});
