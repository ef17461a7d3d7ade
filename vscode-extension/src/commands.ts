/**
 * Palette command handlers. Everything they touch in VS Code comes through `deps.vscode`
 * (the real module in the extension, a mock in the tests) and server calls go through
 * `deps.request` (`workspace/executeCommand` in the extension).
 */
import type * as vscode from 'vscode';
import {
  Anchor,
  AnswerView,
  Location,
  OpenRequest,
  Range as LspRange,
  Source,
  SourceSpan,
  openRequestFromMessage,
} from './markdown';
import { KEYED_PROVIDERS, KeyedProvider, secretKey } from './settings';
import { ServerStatus, formatStats, formatStatus, formatStatusDetail } from './status';
import { AnswerStream, newAskId } from './stream';

/** The VS Code API surface the handlers use. */
export type VsCodeApi = Pick<
  typeof vscode,
  'window' | 'workspace' | 'Uri' | 'Range' | 'Selection' | 'ProgressLocation' | 'TextEditorRevealType'
>;

export type RequestFn = (command: string, args: unknown[], token?: vscode.CancellationToken) => Promise<unknown>;

export interface CommandDeps {
  vscode: VsCodeApi;
  /** Runs a server command (`workspace/executeCommand`). */
  request: RequestFn;
  /** `context.globalState` (recent questions). */
  state: Pick<vscode.Memento, 'get' | 'update'>;
  /** `context.secrets` (API keys). */
  secrets: Pick<vscode.SecretStorage, 'get' | 'store' | 'delete'>;
  /** Shows an answer in the webview panel. */
  showAnswer(view: AnswerView): void;
  /** Shows an ask's answer text while the server streams it (`codeask/answerDelta`), until its response. */
  stream?: Pick<AnswerStream, 'begin' | 'end'>;
  /** Called with every status the server reports (status bar). */
  onStatus?(status: ServerStatus): void;
  /** Called after an API key was stored or removed. */
  onApiKeyChanged?(provider: KeyedProvider, key: string | undefined): Promise<void> | void;
  /** Reveals the server's output channel. */
  showOutput?(): void;
}

export const RECENT_KEY = 'codeask.recentQuestions';
export const MAX_RECENT = 20;

export interface AskResult {
  question?: string;
  answer?: string;
  markdown?: string;
  subquestions?: string[];
  sources?: Source[];
  locations?: Location[];
  /** Found by retrieval but not sent to the model. */
  also_relevant?: Source[];
}

/** What `codeask.resolveCitation` returns: where cited code is now (1-based lines). */
export interface Resolution {
  status?: 'same' | 'moved' | 'changed' | 'gone';
  note?: string;
  start_line?: number;
  end_line?: number;
  /** The cited span's open line where it is now. */
  open_line?: number;
}

/** `file:///a.py#10-20` (1-based lines): the key of a cited span in {@link citedSpansOf}. */
function spanKey(uri: string, start?: number, end?: number): string {
  return `${uri.split('#')[0]}#${start}-${end ?? start}`;
}

/** What an answer says of one cited span: the anchor that re-finds it, the line a reader starts on (1-based). */
export interface CitedSpan {
  anchor?: Anchor;
  openLine?: number;
}

/** Every span of `sources` (and `also_relevant`), by {@link spanKey}. */
export function citedSpansOf(sources: Source[] | undefined): Map<string, CitedSpan> {
  const out = new Map<string, CitedSpan>();
  for (const source of sources ?? []) {
    const spans: SourceSpan[] = source.spans?.length ? source.spans : [source];
    for (const span of spans) {
      const uri = span.uri ?? source.uri;
      if (!uri) continue;
      out.set(spanKey(uri, span.start_line, span.end_line), {
        anchor: span.anchor?.hash ? span.anchor : undefined,
        openLine: typeof span.open_line === 'number' ? span.open_line : undefined,
      });
    }
  }
  return out;
}

/** `q` first, without duplicates, at most `max`. */
export function addRecent(list: readonly string[], q: string, max = MAX_RECENT): string[] {
  return [q, ...list.filter((x) => x !== q)].slice(0, max);
}

export function truncate(text: string, max = 60): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && 'message' in error) return String((error as { message: unknown }).message);
  return String(error);
}

/** JSON-RPC `InvalidParams`: the server refused the input (e.g. a file codeask never explains). */
export const INVALID_PARAMS = -32602;

/**
 * True for a request the server refused (`InvalidParams`): its message is the one line to show
 * (`cannot explain: .env is a secret file`). The server does not also `window/showMessage` it.
 */
export function isRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === INVALID_PARAMS;
}

/** True for a cancelled request (VS Code's `CancellationError`, LSP `RequestCancelled` / `ServerCancelled`). */
export function isCancellation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return name === 'Canceled' || code === -32800 || code === -32802;
}

/** LSP range of an editor selection. */
export function toLspRange(sel: { start: { line: number; character: number }; end: { line: number; character: number } }): LspRange {
  return {
    start: { line: sel.start.line, character: sel.start.character },
    end: { line: sel.end.line, character: sel.end.character },
  };
}

interface QuestionItem extends vscode.QuickPickItem {
  question: string;
}

export function createCommandHandlers(deps: CommandDeps) {
  const vs = deps.vscode;
  /** The spans of the answer last shown: a click on one of its citations re-finds the code first. */
  let cited = new Map<string, CitedSpan>();

  function show(view: AnswerView): void {
    cited = citedSpansOf([...(view.sources ?? []), ...(view.alsoRelevant ?? [])]);
    deps.showAnswer(view);
  }

  function recent(): string[] {
    const list = deps.state.get<string[]>(RECENT_KEY, []);
    return Array.isArray(list) ? list.filter((x) => typeof x === 'string') : [];
  }

  async function remember(question: string): Promise<void> {
    await deps.state.update(RECENT_KEY, addRecent(recent(), question));
  }

  /** Shows a failed request once: a refusal as a warning in the server's words, anything else as an error. */
  async function reportError(what: string, error: unknown): Promise<void> {
    if (isRefusal(error)) {
      await vs.window.showWarningMessage(`codeask: ${errorMessage(error)}`);
      return;
    }
    const actions = deps.showOutput ? ['Show Output'] : [];
    const choice = await vs.window.showErrorMessage(`codeask: ${what} failed: ${errorMessage(error)}`, ...actions);
    if (choice === 'Show Output') deps.showOutput?.();
  }

  /** Runs `task` under a cancellable progress notification; undefined when cancelled or failed. */
  async function run<T>(title: string, what: string, task: (token: vscode.CancellationToken) => Promise<T>): Promise<T | undefined> {
    let cancelled = false;
    try {
      return await vs.window.withProgress(
        { location: vs.ProgressLocation.Notification, title, cancellable: true },
        async (_progress, token) => {
          token?.onCancellationRequested?.(() => {
            cancelled = true;
          });
          return task(token);
        },
      );
    } catch (error) {
      if (!cancelled) await reportError(what, error);
      return undefined;
    }
  }

  /** Quick pick of recent questions that also takes a new one. */
  function pickQuestion(): Promise<string | undefined> {
    const previous = recent();
    const recentItems: QuestionItem[] = previous.map((q) => ({ label: q, description: 'recent', question: q }));
    const qp = vs.window.createQuickPick<QuestionItem>();
    qp.title = 'codeask: ask about this workspace';
    qp.placeholder = previous.length
      ? 'Type a question and press Enter, or pick a recent one'
      : 'Type a question and press Enter, e.g. "where are settings loaded?"';
    qp.ignoreFocusOut = true;
    qp.items = recentItems;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (value: string | undefined) => {
        if (settled) return;
        settled = true;
        resolve(value);
      };
      qp.onDidChangeValue((value) => {
        const text = value.trim();
        qp.items = text
          ? [
              { label: text, description: 'ask', alwaysShow: true, question: text },
              ...recentItems.filter((i) => i.question !== text),
            ]
          : recentItems;
      });
      qp.onDidAccept(() => {
        const picked = qp.selectedItems[0]?.question ?? qp.activeItems[0]?.question ?? qp.value;
        finish(picked?.trim() || undefined);
        qp.hide();
      });
      qp.onDidHide(() => {
        finish(undefined);
        qp.dispose();
      });
      qp.show();
    });
  }

  /** In Restricted Mode the server runs without an LLM (see `userScopeSettings`): the answer says so. */
  function restrictedNote(): string {
    return vs.workspace.isTrusted === false
      ? '> Restricted Mode: codeask calls no LLM for an untrusted folder, so this lists the retrieved code only. ' +
          'Trust the folder (Manage Workspace Trust) to get written answers.\n\n'
      : '';
  }

  async function askQuestion(question?: unknown): Promise<AskResult | undefined> {
    const q = (typeof question === 'string' && question.trim()) || (await pickQuestion());
    if (!q) return undefined;
    await remember(q);
    // The server streams the answer's text under this id meanwhile; the response replaces it.
    const askId = newAskId();
    deps.stream?.begin(askId, q);
    let result: AskResult | undefined;
    try {
      result = (await run(`codeask: ${truncate(q)}`, 'ask', (token) =>
        deps.request('codeask.ask', [{ question: q, askId }], token),
      )) as AskResult | undefined;
    } finally {
      deps.stream?.end(askId);
    }
    if (!result) return undefined;
    show({
      title: q,
      markdown: restrictedNote() + (result.markdown ?? result.answer ?? ''),
      sources: result.sources,
      locations: result.locations,
      subquestions: result.subquestions,
      alsoRelevant: result.also_relevant,
    });
    return result;
  }

  async function explainSelection(): Promise<AskResult | undefined> {
    const editor = vs.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      await vs.window.showWarningMessage('codeask: select some code to explain first.');
      return undefined;
    }
    const { document, selection } = editor;
    const range = toLspRange(selection);
    const where = describeRange(document.uri.toString(), range);
    const result = (await run(`codeask: explaining ${where}`, 'explain', (token) =>
      deps.request('codeask.explain', [document.uri.toString(), range], token),
    )) as AskResult | undefined;
    if (!result) return undefined;
    showExplanation([document.uri.toString(), range], result);
    return result;
  }

  /** `calc.py:3-6` for a document URI and an LSP range. */
  function describeRange(uri: string, range: LspRange): string {
    let path = uri;
    try {
      path = vs.workspace.asRelativePath(vs.Uri.parse(uri));
    } catch {
      // keep the URI
    }
    return `${path}:${range.start.line + 1}-${range.end.line + 1}`;
  }

  /**
   * Shows a `codeask.explain` result for `args` (`[uri, range]`) in the answer panel; also used
   * when the server's "Explain selection" code action runs the command.
   */
  function showExplanation(args: unknown[], result: unknown): void {
    const r = result as AskResult | undefined;
    if (!r || typeof r !== 'object' || typeof r.markdown !== 'string') return;
    const [uri, range] = args as [unknown, LspRange | undefined];
    const title =
      typeof uri === 'string' && range?.start && range?.end ? `Explain ${describeRange(uri, range)}` : 'Explain selection';
    // An explanation's `[n]` cite the n-th related source (the server leaves them as text).
    show({ title, markdown: r.markdown, sources: r.sources, locations: r.locations, citations: r.sources });
  }

  /**
   * `middleware.executeCommand` for `codeask.explain` run through VS Code (the server's "Explain
   * selection" code action): shows the result in the answer panel, or reports a failure once (a
   * refusal as a warning) and resolves undefined, so that VS Code does not show it a second time.
   */
  async function runExplainCommand(args: unknown[], next: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
    let result: unknown;
    try {
      result = await next(args);
    } catch (error) {
      if (!isCancellation(error)) void reportError('explain', error);
      return undefined;
    }
    showExplanation(args, result);
    return result;
  }

  async function showStatus(): Promise<ServerStatus | undefined> {
    let status: ServerStatus;
    try {
      status = (await deps.request('codeask.status', [])) as ServerStatus;
    } catch (error) {
      await reportError('status', error);
      return undefined;
    }
    deps.onStatus?.(status);
    const actions = ['Reindex', ...(deps.showOutput ? ['Show Output'] : [])];
    void Promise.resolve(vs.window.showInformationMessage(formatStatus(status), { detail: formatStatusDetail(status) }, ...actions)).then(
      async (choice) => {
        if (choice === 'Reindex') await reindexWorkspace();
        else if (choice === 'Show Output') deps.showOutput?.();
      },
    );
    return status;
  }

  async function reindexWorkspace(): Promise<unknown> {
    const stats = await run('codeask: reindexing the workspace', 'reindex', (token) =>
      deps.request('codeask.reindex', [], token),
    );
    if (stats === undefined) return undefined;
    void vs.window.showInformationMessage(formatStats(stats));
    try {
      deps.onStatus?.((await deps.request('codeask.status', [])) as ServerStatus);
    } catch {
      // the status bar refreshes on the next progress end
    }
    return stats;
  }

  async function setApiKey(providerArg?: unknown): Promise<void> {
    let provider = KEYED_PROVIDERS.find((p) => p === providerArg);
    if (!provider) {
      const items = await Promise.all(
        KEYED_PROVIDERS.map(async (p) => ({
          label: p === 'openai' ? 'OpenAI' : 'Anthropic',
          description: (await deps.secrets.get(secretKey(p))) ? 'key stored' : 'no key stored',
          provider: p,
        })),
      );
      const picked = await vs.window.showQuickPick(items, { title: 'codeask: API key for which provider?' });
      if (!picked) return;
      provider = picked.provider;
    }
    const name = provider === 'openai' ? 'OpenAI' : 'Anthropic';
    const key = await vs.window.showInputBox({
      title: `codeask: ${name} API key`,
      prompt: `Stored in VS Code's secret storage (never in settings.json). Leave empty to remove the stored ${name} key.`,
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    const trimmed = key.trim();
    if (trimmed) {
      await deps.secrets.store(secretKey(provider), trimmed);
    } else {
      await deps.secrets.delete(secretKey(provider));
    }
    await deps.onApiKeyChanged?.(provider, trimmed || undefined);
    void vs.window.showInformationMessage(
      trimmed ? `codeask: ${name} API key stored.` : `codeask: ${name} API key removed.`,
    );
  }

  /**
   * `req` moved to where its code is now, when it is a citation of the answer last shown (it has an
   * anchor): `codeask.resolveCitation` re-finds it, and a status other than `same` is said. Its
   * `open` line is the span's open line, where the server found it. Any failure keeps the cited
   * lines.
   */
  async function resolved(req: OpenRequest): Promise<OpenRequest> {
    if (req.start === undefined) return req;
    const start = req.start + 1;
    const end = (req.end ?? req.start) + 1;
    const span = cited.get(spanKey(req.uri, start, end));
    const line = span?.openLine;
    const here = { ...req, open: line !== undefined && line >= start && line <= end ? line - 1 : req.start };
    if (!span?.anchor) return here;
    try {
      const { symbol = '', hash } = span.anchor;
      const found = (await deps.request('codeask.resolveCitation', [
        { uri: req.uri.split('#')[0], start_line: start, end_line: end, symbol, hash, open_line: here.open + 1 },
      ])) as Resolution | undefined;
      if (!found || typeof found.start_line !== 'number' || typeof found.end_line !== 'number') return here;
      if (found.status !== 'same' && found.note) void vs.window.showInformationMessage(`codeask: ${found.note}`);
      const open = typeof found.open_line === 'number' && found.open_line > 0 ? found.open_line : found.start_line;
      return { uri: req.uri, start: found.start_line - 1, end: found.end_line - 1, open: open - 1 };
    } catch {
      return here;
    }
  }

  /**
   * Opens `req.uri` where the cited code is now: lines `req.open`..`req.end` (0-based; `open` the
   * span's open line, the definition the question is about, else `start`) selected, the cursor on
   * the first of them and that line at the top when it is below the span's first.
   */
  async function openSource(request: OpenRequest | undefined): Promise<vscode.TextEditor | undefined> {
    if (!request) return undefined;
    const req = await resolved(request);
    const uri = vs.Uri.parse(req.uri);
    try {
      const document = await vs.workspace.openTextDocument(uri);
      if (req.start === undefined) return await vs.window.showTextDocument(document, { preview: true });
      const range = document.validateRange(new vs.Range(req.start, 0, req.end ?? req.start, Number.MAX_SAFE_INTEGER));
      const line = Math.max(range.start.line, Math.min(req.open ?? range.start.line, range.end.line));
      const open = new vs.Range(line, 0, line, 0);
      const shown = new vs.Range(open.start, range.end);
      const editor = await vs.window.showTextDocument(document, { preview: true, selection: shown });
      editor.selection = new vs.Selection(range.end, open.start); // the option puts the cursor at the end
      if (line > range.start.line) editor.revealRange(open, vs.TextEditorRevealType.AtTop);
      else editor.revealRange(range, vs.TextEditorRevealType.InCenterIfOutsideViewport);
      return editor;
    } catch (error) {
      void vs.window.showErrorMessage(`codeask: cannot open ${req.uri}: ${errorMessage(error)}`);
      return undefined;
    }
  }

  /** A message posted by the answer webview. */
  function onWebviewMessage(msg: unknown): Promise<vscode.TextEditor | undefined> {
    return openSource(openRequestFromMessage(msg));
  }

  return { askQuestion, explainSelection, showExplanation, runExplainCommand, showStatus, reindexWorkspace, setApiKey, openSource, onWebviewMessage, pickQuestion };
}

export type CommandHandlers = ReturnType<typeof createCommandHandlers>;
