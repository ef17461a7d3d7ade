import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RECENT_KEY, VsCodeApi, addRecent, createCommandHandlers, truncate } from '../src/commands';
import type { AnswerView } from '../src/markdown';
import { createMockVscode, memento, MockOptions, Position, secretStore, Selection } from './mockVscode';

const ASK_RESULT = {
  question: 'how are numbers added?',
  answer: 'By add.',
  markdown: 'By `add`.\n\nSources:\n- [calc.py:1-2](file:///ws/calc.py#L1-L2)',
  subquestions: ['where is add'],
  sources: [{ path: 'calc.py', uri: 'file:///ws/calc.py', root: '/ws', start_line: 1, end_line: 2, symbol: 'add', score: 1, content: '' }],
  locations: [{ uri: 'file:///ws/calc.py', range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } } }],
};

/** `codeask.ask` arguments without the `askId` (a fresh random id each time: checked to be a UUID). */
function askArgs(args: unknown[]): unknown[] {
  return args.map((a) => {
    const { askId, ...rest } = a as { askId?: unknown };
    assert.match(String(askId), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    return rest;
  });
}

function setup(opts: MockOptions = {}, respond: (command: string, args: unknown[]) => unknown = () => ASK_RESULT) {
  const { vscode, calls } = createMockVscode(opts);
  const requests: { command: string; args: unknown[] }[] = [];
  const answers: AnswerView[] = [];
  const statuses: unknown[] = [];
  const keyChanges: unknown[][] = [];
  const state = memento();
  const secrets = secretStore();
  const handlers = createCommandHandlers({
    vscode: vscode as unknown as VsCodeApi,
    request: async (command, args) => {
      requests.push({ command, args });
      return respond(command, args);
    },
    state,
    secrets,
    showAnswer: (view) => answers.push(view),
    onStatus: (s) => statuses.push(s),
    onApiKeyChanged: (provider, key) => {
      keyChanges.push([provider, key]);
    },
  });
  return { handlers, calls, requests, answers, statuses, keyChanges, state, secrets, vscode };
}

describe('codeask.askQuestion', () => {
  it('asks a typed question under a progress notification and shows the answer', async () => {
    const t = setup({ onQuickPick: (qp) => { qp.type('how are numbers added?'); qp.accept(); } });
    const result = await t.handlers.askQuestion();
    assert.equal(result, ASK_RESULT);
    assert.deepEqual(t.requests.map((r) => r.command), ['codeask.ask']);
    assert.deepEqual(askArgs(t.requests[0].args), [{ question: 'how are numbers added?' }]);
    assert.equal(t.calls.progress.length, 1);
    assert.equal(t.calls.progress[0].location, 15);
    assert.equal(t.answers.length, 1);
    assert.equal(t.answers[0].title, 'how are numbers added?');
    assert.equal(t.answers[0].markdown, ASK_RESULT.markdown);
    assert.deepEqual(t.answers[0].sources, ASK_RESULT.sources);
    assert.deepEqual(t.answers[0].locations, ASK_RESULT.locations);
    assert.deepEqual(t.state.data.get(RECENT_KEY), ['how are numbers added?']);
  });

  it('says in the answer why there is no LLM in Restricted Mode', async () => {
    const t = setup({ onQuickPick: (qp) => { qp.type('how are numbers added?'); qp.accept(); } });
    (t.vscode.workspace as { isTrusted?: boolean }).isTrusted = false;
    await t.handlers.askQuestion();
    assert.match(t.answers[0].markdown, /^> Restricted Mode: codeask calls no LLM for an untrusted folder/);
    assert.ok(t.answers[0].markdown.endsWith(ASK_RESULT.markdown));
  });

  it('offers recent questions in the quick pick and accepts one', async () => {
    const t = setup({
      onQuickPick: (qp) => {
        assert.deepEqual(qp.items.map((i) => i.label), ['second', 'first']);
        qp.activeItems = [qp.items[1]];
        qp.accept();
      },
    });
    await t.state.update(RECENT_KEY, ['second', 'first']);
    await t.handlers.askQuestion();
    assert.deepEqual(askArgs(t.requests[0].args), [{ question: 'first' }]);
    assert.deepEqual(t.state.data.get(RECENT_KEY), ['first', 'second']);
  });

  it('puts typed text first, above matching recent questions', async () => {
    const t = setup({
      onQuickPick: (qp) => {
        qp.type('new one');
        assert.equal(qp.items[0].label, 'new one');
        assert.equal(qp.items.length, 2);
        qp.accept();
      },
    });
    await t.state.update(RECENT_KEY, ['old']);
    await t.handlers.askQuestion();
    assert.deepEqual(askArgs(t.requests[0].args), [{ question: 'new one' }]);
  });

  it('does nothing when the quick pick is dismissed', async () => {
    const t = setup({ onQuickPick: (qp) => qp.hide() });
    assert.equal(await t.handlers.askQuestion(), undefined);
    assert.equal(t.requests.length, 0);
  });

  it('takes the question as an argument too', async () => {
    const t = setup();
    await t.handlers.askQuestion('direct?');
    assert.equal(t.calls.quickPicks.length, 0);
    assert.deepEqual(askArgs(t.requests[0].args), [{ question: 'direct?' }]);
  });

  it('reports server errors', async () => {
    const t = setup({}, () => {
      throw new Error('index missing');
    });
    assert.equal(await t.handlers.askQuestion('q'), undefined);
    assert.equal(t.answers.length, 0);
    assert.match(t.calls.error[0], /ask failed: index missing/);
  });

  it('stays quiet when the user cancels', async () => {
    const t = setup({ cancelProgress: true }, async () => {
      await new Promise((r) => setTimeout(r, 5));
      throw new Error('Request cancelled');
    });
    assert.equal(await t.handlers.askQuestion('q'), undefined);
    assert.equal(t.calls.error.length, 0);
  });
});

describe('codeask.explainSelection', () => {
  const editor = {
    document: { uri: { toString: () => 'file:///ws/calc.py' } },
    selection: new Selection(new Position(2, 4), new Position(5, 0)),
  };
  it('sends the document uri and the LSP range and shows the result', async () => {
    const t = setup({ activeTextEditor: editor }, () => ({ markdown: 'It adds.', sources: [], locations: [] }));
    await t.handlers.explainSelection();
    assert.deepEqual(t.requests, [
      {
        command: 'codeask.explain',
        args: ['file:///ws/calc.py', { start: { line: 2, character: 4 }, end: { line: 5, character: 0 } }],
      },
    ]);
    assert.equal(t.answers[0].title, 'Explain calc.py:3-6');
    assert.equal(t.answers[0].markdown, 'It adds.');
  });
  it('shows the result of the server code action (codeask.explain run through VS Code)', () => {
    const t = setup();
    const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 3 } };
    t.handlers.showExplanation(['file:///ws/calc.py', range], { markdown: 'Adds.', sources: [], locations: [] });
    assert.equal(t.answers[0].title, 'Explain calc.py:1-2');
    assert.equal(t.answers[0].markdown, 'Adds.');
    t.handlers.showExplanation(['file:///ws/calc.py', range], null);
    assert.equal(t.answers.length, 1);
  });
  it('shows a refusal once, as a warning in the server\'s words', async () => {
    const refusal = Object.assign(new Error('cannot explain: assets/logo.py is a binary file'), { code: -32602 });
    const t = setup({ activeTextEditor: editor }, () => {
      throw refusal;
    });
    assert.equal(await t.handlers.explainSelection(), undefined);
    assert.deepEqual(t.calls.warn, ['codeask: cannot explain: assets/logo.py is a binary file']);
    assert.deepEqual(t.calls.error, []);
    assert.equal(t.answers.length, 0);
    const failed = setup({ activeTextEditor: editor }, () => {
      throw Object.assign(new Error('explain_command failed: boom'), { code: -32603 });
    });
    await failed.handlers.explainSelection();
    assert.deepEqual(failed.calls.warn, []);
    assert.equal(failed.calls.error.length, 1);
    assert.match(failed.calls.error[0], /explain failed: explain_command failed: boom/);
  });
  it('runs the code action\'s codeask.explain: the result in the panel, a failure shown once and not rethrown', async () => {
    const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 3 } };
    const args = ['file:///ws/calc.py', range];
    const t = setup();
    const result = { markdown: 'Adds.', sources: [], locations: [] };
    assert.equal(await t.handlers.runExplainCommand(args, async () => result), result);
    assert.equal(t.answers[0].title, 'Explain calc.py:1-2');
    const refusal = { code: -32602, message: 'cannot explain: .env is a secret file' };
    // resolves (VS Code shows a failed code action command itself: that would be a second message)
    assert.equal(
      await t.handlers.runExplainCommand(args, async () => {
        throw refusal;
      }),
      undefined,
    );
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(t.calls.warn, ['codeask: cannot explain: .env is a secret file']);
    assert.deepEqual(t.calls.error, []);
    const cancelled = Object.assign(new Error('Canceled'), { name: 'Canceled' });
    await t.handlers.runExplainCommand(args, async () => {
      throw cancelled;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(t.calls.warn.length + t.calls.error.length, 1);
    assert.equal(t.answers.length, 1);
  });
  it('asks for a selection when there is none', async () => {
    const t = setup({ activeTextEditor: { ...editor, selection: new Selection(new Position(1, 1), new Position(1, 1)) } });
    await t.handlers.explainSelection();
    assert.equal(t.requests.length, 0);
    assert.match(t.calls.warn[0], /select some code/);
    const none = setup();
    await none.handlers.explainSelection();
    assert.equal(none.requests.length, 0);
  });
});

describe('codeask.showStatus and codeask.reindexWorkspace', () => {
  const status = { indexing: false, files: 12, chunks_total: 40, vectors_pending: 0, index_dir: '/c', llm: null };
  it('shows a readable status and updates the status bar', async () => {
    const t = setup({}, () => status);
    await t.handlers.showStatus();
    assert.deepEqual(t.requests, [{ command: 'codeask.status', args: [] }]);
    assert.deepEqual(t.statuses, [status]);
    assert.match(t.calls.info[0], /^codeask: idle, 12 files, 40 chunks; LLM: none/);
  });
  it('reindexes on request from the status message', async () => {
    const t = setup({ messageChoice: 'Reindex' }, (command) => (command === 'codeask.reindex' ? { files: 12 } : status));
    await t.handlers.showStatus();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(t.requests.map((r) => r.command), ['codeask.status', 'codeask.reindex', 'codeask.status']);
  });
  it('reindexes and reports the stats', async () => {
    const t = setup({}, (command) => (command === 'codeask.reindex' ? { files: 3, chunks: 9 } : status));
    const stats = await t.handlers.reindexWorkspace();
    assert.deepEqual(stats, { files: 3, chunks: 9 });
    assert.equal(t.requests[0].command, 'codeask.reindex');
    assert.deepEqual(t.requests[0].args, []);
    assert.equal(t.calls.info[0], 'codeask: reindex finished (files: 3, chunks: 9)');
    assert.deepEqual(t.statuses, [status]);
  });
  it('reports a failing status call', async () => {
    const t = setup({}, () => {
      throw new Error('Client is not running');
    });
    assert.equal(await t.handlers.showStatus(), undefined);
    assert.match(t.calls.error[0], /status failed: Client is not running/);
  });
});

describe('codeask.setApiKey', () => {
  it('stores the key in secret storage per provider and tells the extension', async () => {
    const t = setup({ quickPick: (items) => (items as { provider: string }[])[1], inputBox: '  sk-ant-123  ' });
    await t.handlers.setApiKey();
    assert.equal(t.secrets.data.get('codeask.apiKey.anthropic'), 'sk-ant-123');
    assert.deepEqual(t.keyChanges, [['anthropic', 'sk-ant-123']]);
    assert.equal(t.calls.inputBoxes[0].password, true);
    assert.equal(t.calls.info[0], 'codeask: Anthropic API key stored.');
  });
  it('removes the key on empty input, and does nothing on cancel', async () => {
    const t = setup({ inputBox: '' });
    await t.secrets.store('codeask.apiKey.openai', 'old');
    await t.handlers.setApiKey('openai');
    assert.equal(t.secrets.data.has('codeask.apiKey.openai'), false);
    assert.deepEqual(t.keyChanges, [['openai', undefined]]);
    const c = setup({ inputBox: undefined });
    await c.handlers.setApiKey('openai');
    assert.deepEqual(c.keyChanges, []);
  });
});

describe('opening cited sources', () => {
  it('opens the file from a webview click with the cited lines selected', async () => {
    const t = setup();
    const editor = await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/calc.py', startLine: 10, endLine: 20 });
    assert.ok(editor);
    assert.deepEqual(t.calls.opened, ['file:///ws/calc.py']);
    const sel = t.calls.shown[0].options.selection;
    assert.deepEqual([sel.start.line, sel.start.character, sel.end.line], [9, 0, 19]);
    assert.equal(t.calls.revealed.length, 1);
  });
  it('opens without a selection when the link has no lines, and ignores bad messages', async () => {
    const t = setup();
    await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/a.py' });
    assert.equal(t.calls.shown[0].options.selection, undefined);
    await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'https://evil' });
    assert.equal(t.calls.shown.length, 1);
  });
  it('reports a file that cannot be opened', async () => {
    const t = setup();
    assert.equal(await t.handlers.openSource({ uri: 'file:///ws/missing.py', start: 0, end: 0 }), undefined);
    assert.match(t.calls.error[0], /cannot open file:\/\/\/ws\/missing\.py/);
  });
});

describe('citations re-found when opened', () => {
  const anchored = {
    ...ASK_RESULT,
    sources: [
      {
        ...ASK_RESULT.sources[0],
        uri: 'file:///ws/calc.py#L1-L2',
        spans: [{ start_line: 1, end_line: 2, uri: 'file:///ws/calc.py#L1-L2', symbol: 'add', anchor: { symbol: 'add', hash: '0123456789abcdef' } }],
      },
      {
        ...ASK_RESULT.sources[0],
        uri: 'file:///ws/shop.py#L1-L30',
        spans: [
          { start_line: 1, end_line: 30, open_line: 12, uri: 'file:///ws/shop.py#L1-L30', symbol: 'Cart.total', anchor: { symbol: 'Cart', hash: 'fedcba9876543210' } },
        ],
      },
    ],
    also_relevant: [{ path: 'util.py', uri: 'file:///ws/util.py#L3-L4', root: '/ws', start_line: 3, end_line: 4, score: 0.5, content: '' }],
  };

  it('shows what was not sent apart and opens a moved citation at its new lines', async () => {
    const t = setup({}, (command) =>
      command === 'codeask.resolveCitation' ? { status: 'moved', note: 'moved since the answer', start_line: 11, end_line: 12 } : anchored,
    );
    await t.handlers.askQuestion('how are numbers added?');
    assert.deepEqual(t.answers[0].alsoRelevant, anchored.also_relevant);
    await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/calc.py', startLine: 1, endLine: 2 });
    assert.deepEqual(t.requests[1], {
      command: 'codeask.resolveCitation',
      args: [{ uri: 'file:///ws/calc.py', start_line: 1, end_line: 2, symbol: 'add', hash: '0123456789abcdef', open_line: 1 }],
    });
    const sel = t.calls.shown[0].options.selection;
    assert.deepEqual([sel.start.line, sel.end.line], [10, 11]);
    assert.deepEqual(t.calls.info, ['codeask: moved since the answer']);
  });

  it('scrolls to the definition the label names, inside the cited lines, where the server found it', async () => {
    const t = setup({}, (command) =>
      command === 'codeask.resolveCitation'
        ? { status: 'moved', note: 'moved since the answer', start_line: 6, end_line: 35, open_line: 17 }
        : anchored,
    );
    await t.handlers.askQuestion('how is the total computed?');
    const editor = await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/shop.py', startLine: 1, endLine: 30 });
    assert.equal((t.requests[1].args as any)[0].open_line, 12); // the span's open line, sent to be moved
    const sel = editor!.selection; // from its open line (the cursor) to its end, 5 lines down
    assert.deepEqual([sel.active.line, sel.anchor.line], [16, 34]);
    assert.deepEqual(t.calls.revealed.map((r: any) => [r.start.line, r.end.line]), [[16, 16]]); // its open line 12, 5 down, 0-based
    assert.deepEqual(t.calls.revealedHow, [3]); // at the top
  });

  it('opens the cited lines when the link has no anchor or the server cannot resolve it', async () => {
    const t = setup({}, (command) => {
      if (command === 'codeask.resolveCitation') throw new Error('down');
      return anchored;
    });
    await t.handlers.askQuestion('how are numbers added?');
    await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/other.py', startLine: 5, endLine: 6 });
    assert.equal(t.requests.length, 1); // no anchor: no request
    await t.handlers.onWebviewMessage({ type: 'openSource', uri: 'file:///ws/calc.py', startLine: 1, endLine: 2 });
    assert.equal(t.requests.length, 2);
    const sel = t.calls.shown[1].options.selection;
    assert.deepEqual([sel.start.line, sel.end.line], [0, 1]);
  });
});

describe('helpers', () => {
  it('keeps recent questions unique, newest first, bounded', () => {
    assert.deepEqual(addRecent(['a', 'b', 'c'], 'b'), ['b', 'a', 'c']);
    assert.equal(addRecent(Array.from({ length: 30 }, (_, i) => `q${i}`), 'new').length, 20);
  });
  it('truncates', () => {
    assert.equal(truncate('a  b\nc'), 'a b c');
    assert.equal(truncate('x'.repeat(100), 10), `${'x'.repeat(9)}…`);
  });
});
