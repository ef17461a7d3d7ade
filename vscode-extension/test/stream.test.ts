import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VsCodeApi, createCommandHandlers } from '../src/commands';
import { AnswerView, renderAnswerHtml, renderMarkdown } from '../src/markdown';
import { ANSWER_DELTA, AnswerStream, parseAnswerDelta } from '../src/stream';
import { createMockVscode, memento, secretStore } from './mockVscode';

/** A stream whose delayed renders run when the test says (`flush`), shown into `shown`. */
function manualStream() {
  const shown: { title: string; markdown: string }[] = [];
  const later: (() => void)[] = [];
  const stream = new AnswerStream({ showPartial: (title, markdown) => shown.push({ title, markdown }) }, (fn) => later.push(fn));
  const flush = () => {
    while (later.length) later.shift()!();
  };
  return { stream, shown, flush };
}

describe('AnswerStream', () => {
  it('shows the first piece at once and later pieces together, whole text each time', () => {
    const { stream, shown, flush } = manualStream();
    stream.begin('a1', 'how?');
    stream.onDelta({ askId: 'a1', delta: 'The ' });
    assert.deepEqual(shown, [{ title: 'how?', markdown: 'The ' }]);
    stream.onDelta({ askId: 'a1', delta: 'sum is ' });
    stream.onDelta({ askId: 'a1', delta: '`add` [1].' });
    assert.equal(shown.length, 1, 'pieces wait for the next render');
    flush();
    assert.deepEqual(shown[1], { title: 'how?', markdown: 'The sum is `add` [1].' });
    flush();
    assert.equal(shown.length, 2, 'nothing new, nothing shown');
  });

  it('drops pieces of another ask, malformed params, and pieces after the end', () => {
    const { stream, shown, flush } = manualStream();
    stream.onDelta({ askId: 'a0', delta: 'before any ask' });
    stream.begin('a1', 'q');
    for (const params of [{ askId: 'other', delta: 'x' }, { askId: 'a1' }, { askId: 1, delta: 'x' }, null, 'a1', { askId: 'a1', delta: 5 }]) {
      stream.onDelta(params);
    }
    assert.deepEqual(shown, []);
    stream.onDelta({ askId: 'a1', delta: 'ok' });
    stream.onDelta({ askId: 'a1', delta: ' more' });
    stream.end('a1');
    flush();
    stream.onDelta({ askId: 'a1', delta: 'late' });
    assert.deepEqual(shown, [{ title: 'q', markdown: 'ok' }]);
  });

  it('validates the notification params', () => {
    assert.equal(ANSWER_DELTA, 'codeask/answerDelta');
    assert.deepEqual(parseAnswerDelta({ askId: 'x', delta: 'y', extra: 1 }), { askId: 'x', delta: 'y' });
    assert.equal(parseAnswerDelta({ askId: 'x' }), undefined);
  });
});

describe('an ask streamed into the panel', () => {
  it('passes a fresh askId, shows the pieces the server sends before its response, then the answer', async () => {
    const { vscode } = createMockVscode({ onQuickPick: (qp) => (qp.type('how are numbers added?'), qp.accept()) });
    const { stream, shown, flush } = manualStream();
    const answers: AnswerView[] = [];
    const ids: string[] = [];
    const handlers = createCommandHandlers({
      vscode: vscode as unknown as VsCodeApi,
      // The server: the answer's text as notifications, in order, then the response.
      request: async (_command, args) => {
        const askId = (args[0] as { askId: string }).askId;
        ids.push(askId);
        for (const delta of ['By ', '`add` ', '[1].']) stream.onDelta({ askId, delta });
        flush();
        assert.equal(answers.length, 0, 'the answer is not shown before the response');
        return { markdown: 'By `add` [[1]](file:///ws/calc.py#L1-L2).', sources: [] };
      },
      state: memento(),
      secrets: secretStore(),
      showAnswer: (view) => answers.push(view),
      stream,
    });
    await handlers.askQuestion();
    assert.deepEqual(shown.map((s) => s.markdown), ['By ', 'By `add` [1].']);
    assert.ok(shown.every((s) => s.title === 'how are numbers added?'));
    assert.equal(answers.length, 1);
    assert.match(answers[0].markdown, /\[\[1\]\]\(file:/);
    stream.onDelta({ askId: ids[0], delta: 'after the response' });
    flush();
    assert.equal(shown.length, 2, 'the ask ended with its response');
    await handlers.askQuestion();
    assert.equal(ids.length, 2);
    assert.notEqual(ids[0], ids[1]);
  });

  it('renders streamed text escaped, with the page saying the answer is being written', () => {
    const partial = renderMarkdown('The <img src=x onerror=alert(1)> part `a<b>` and [1]');
    assert.doesNotMatch(partial, /<img/);
    assert.match(partial, /&lt;img src=x onerror=alert\(1\)&gt;/);
    assert.match(partial, /<code>a&lt;b&gt;<\/code>/);
    const page = renderAnswerHtml({ title: 'q', markdown: 'The sum', streaming: true }, 'n', 'vscode-webview://x');
    assert.match(page, /<div class="answer">\n<p>The sum<\/p>\n\n<\/div>\n<p class="writing">writing the answer…<\/p>/);
    assert.match(page, /addEventListener\('message'/);
    assert.doesNotMatch(renderAnswerHtml({ title: 'q', markdown: 'The sum' }, 'n', 'x'), /writing the answer/);
  });
});
