/**
 * Rendering of codeask answers: markdown -> HTML for the answer webview, cited `file://` links
 * (`file:///abs/a.py#L10-L20`, 1-based lines) -> clickable elements whose click is posted back
 * to the extension, and -> `command:` URIs for hovers. Pure: no `vscode` import.
 */
import MarkdownIt from 'markdown-it';

/** A cited location: a `file:` URI without fragment and 1-based, inclusive lines. */
export interface SourceLink {
  uri: string;
  startLine?: number;
  endLine?: number;
}

/** What the webview posts when a source link is clicked. Lines are 1-based. */
export interface OpenSourceMessage {
  type: 'openSource';
  uri: string;
  startLine?: number;
  endLine?: number;
}

/**
 * A request to open `uri` and select 0-based lines `start`..`end` (inclusive), scrolled to line
 * `open` (inside them: where the cited definition begins) when it is below `start`.
 */
export interface OpenRequest {
  uri: string;
  start?: number;
  end?: number;
  open?: number;
}

/** A source as `codeask.ask` / `codeask.explain` return it. */
export interface Source {
  path?: string;
  uri?: string;
  root?: string;
  start_line?: number;
  end_line?: number;
  symbol?: string | null;
  score?: number;
  content?: string;
  /** Where a reader starts (1-based, inside the lines): the labelled definition the question is about. */
  open_line?: number;
  /** Every span of the file the answer drew on, this source's own lines first (1-based). */
  spans?: SourceSpan[];
}

export interface SourceSpan {
  start_line?: number;
  end_line?: number;
  open_line?: number;
  uri?: string;
  symbol?: string | null;
  /** What re-finds the span after edits (`codeask.resolveCitation`). */
  anchor?: Anchor;
}

/** A cited span's anchor: its enclosing symbol and a hash of its text. */
export interface Anchor {
  symbol?: string;
  hash?: string;
}

/** The heading of what retrieval found but the answer's prompt left out. */
export const ALSO_RELEVANT = 'Also relevant, not sent to the model';

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}
export interface Location {
  uri: string;
  range: Range;
}

/** A row of the sources list. Lines are 1-based. */
export interface SourceEntry {
  label: string;
  uri: string;
  startLine?: number;
  endLine?: number;
  symbol?: string;
  score?: number;
}

const FRAGMENT = /^L(\d+)(?:[.,:C]\d+)?(?:-L?(\d+)(?:[.,:C]\d+)?)?$/i;

/** `file:///abs/a.py#L10-L20` -> `{uri: 'file:///abs/a.py', startLine: 10, endLine: 20}`; non-file links -> undefined. */
export function parseSourceLink(href: string): SourceLink | undefined {
  const text = href.trim();
  if (!/^file:/i.test(text)) return undefined;
  const hash = text.indexOf('#');
  const uri = hash >= 0 ? text.slice(0, hash) : text;
  if (uri.length <= 'file:'.length) return undefined;
  const fragment = hash >= 0 ? text.slice(hash + 1) : '';
  const match = FRAGMENT.exec(fragment);
  if (!match) return { uri };
  const startLine = Number(match[1]);
  let endLine = match[2] !== undefined ? Number(match[2]) : startLine;
  if (endLine < startLine) endLine = startLine;
  return { uri, startLine, endLine };
}

/** The message the webview posts for `link`. */
export function openSourceMessage(link: SourceLink): OpenSourceMessage {
  const msg: OpenSourceMessage = { type: 'openSource', uri: link.uri };
  if (link.startLine !== undefined) msg.startLine = link.startLine;
  if (link.endLine !== undefined) msg.endLine = link.endLine;
  return msg;
}

function lineNumber(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
}

/**
 * Validates a message from the webview (untrusted) and turns its 1-based lines into 0-based
 * ones. Only `file:` URIs are accepted.
 */
export function openRequestFromMessage(msg: unknown): OpenRequest | undefined {
  if (typeof msg !== 'object' || msg === null) return undefined;
  const m = msg as Record<string, unknown>;
  if (m.type !== 'openSource' || typeof m.uri !== 'string' || !/^file:/i.test(m.uri)) return undefined;
  const start = lineNumber(m.startLine);
  let end = lineNumber(m.endLine) ?? start;
  if (start === undefined) return { uri: m.uri };
  if (end === undefined || end < start) end = start;
  return { uri: m.uri, start: start - 1, end: end - 1 };
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/** `src/a.py:10-20` */
export function linkLabel(pathOrUri: string, startLine?: number, endLine?: number): string {
  let label = pathOrUri;
  if (/^file:/i.test(label)) {
    try {
      label = decodeURIComponent(label.replace(/^file:\/\//i, ''));
    } catch {
      // keep the raw URI
    }
  }
  if (startLine === undefined) return label;
  return endLine !== undefined && endLine !== startLine ? `${label}:${startLine}-${endLine}` : `${label}:${startLine}`;
}

function createRenderer(): MarkdownIt {
  // html: false -> raw HTML in the answer (which quotes code) is shown as text, not rendered.
  const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
  // Only explicit http(s) URLs become links: `calc.py` is a file name, not a Paraguayan host.
  md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
  // markdown-it refuses file: links by default; sources are file: links. Keep the rest refused.
  md.validateLink = (url: string) => !/^\s*(javascript|vbscript|data):/i.test(url);
  const defaultLinkOpen =
    md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    const href = token.attrGet('href') ?? '';
    const link = parseSourceLink(href);
    if (link) {
      token.attrSet('href', '#');
      token.attrSet('class', 'codeask-source');
      token.attrSet('data-uri', link.uri);
      if (link.startLine !== undefined) token.attrSet('data-start', String(link.startLine));
      if (link.endLine !== undefined) token.attrSet('data-end', String(link.endLine));
      token.attrSet('title', linkLabel(link.uri, link.startLine, link.endLine));
    } else if (!/^(https?:|mailto:)/i.test(href)) {
      // Relative or unknown-scheme links go nowhere inside a webview.
      token.attrSet('href', '#');
    }
    return defaultLinkOpen(tokens, idx, options, env, self);
  };
  // No remote content: an image a model was steered into writing (`![x](https://host/?d=...)`)
  // would be fetched with no click and carry what its URL holds. Show its text and address instead.
  md.renderer.rules.image = (tokens, idx) => {
    const token = tokens[idx];
    const alt = token.children ? token.children.map((c) => c.content).join('') : token.content;
    const src = token.attrGet('src') ?? '';
    return `<span class="codeask-image" title="image not loaded">[image: ${escapeHtml(alt || 'untitled')}] ${escapeHtml(src)}</span>`;
  };
  md.core.ruler.push('codeask_lists', listHeadings);
  md.core.ruler.push('codeask_citations', citationLinks);
  return md;
}

/** What a render reads (`citations`) and reports (`lists`: the list headings the markdown carries). */
export interface RenderEnv {
  /** The sources a bare `[n]` cites (n is 1-based); without it `[n]` stays text. */
  citations?: Source[];
  /** Filled by the render: the headings of the server's own lists found (see {@link LIST_HEADINGS}). */
  lists?: Set<string>;
}

/**
 * The lines that head a list of sources in a server's markdown (a paragraph of its own, a list
 * right after it): `Sources:` (an answer's), `Related:` (an explanation's), and what was not sent.
 */
export const LIST_HEADINGS = ['Sources', 'Related', ALSO_RELEVANT];

type CoreState = Parameters<Parameters<MarkdownIt['core']['ruler']['push']>[1]>[0];

/** A top-level `Sources:` / `Related:` / ALSO_RELEVANT paragraph before a list is shown as an `<h2>`. */
function listHeadings(state: CoreState): void {
  const tokens = state.tokens;
  for (let i = 0; i + 3 < tokens.length; i++) {
    const [open, inline, close, next] = tokens.slice(i, i + 4);
    if (open.type !== 'paragraph_open' || open.level !== 0 || inline.type !== 'inline') continue;
    if (next.type !== 'bullet_list_open' && next.type !== 'ordered_list_open') continue;
    const heading = LIST_HEADINGS.find((h) => inline.content.trim() === `${h}:` || inline.content.trim() === h);
    if (!heading) continue;
    open.tag = close.tag = 'h2';
    const text = new state.Token('text', '', 0);
    text.content = heading;
    inline.children = [text];
    (state.env as RenderEnv).lists?.add(heading);
  }
}

/** `file:///a.py#L3-L9` for a source (its own fragment when its URI has one), or undefined. */
function citationHref(source: Source | undefined): string | undefined {
  if (!source?.uri || !/^file:/i.test(source.uri)) return undefined;
  if (source.uri.includes('#')) return source.uri;
  const start = lineNumber(source.start_line);
  const end = lineNumber(source.end_line) ?? start;
  return start === undefined ? source.uri : `${source.uri}#L${start}-L${end}`;
}

const BARE_CITATION = /\[(\d{1,3})\]/g;

/**
 * A bare `[n]` in the text (not in code, not inside a link) becomes a link to `env.citations[n-1]`
 * (rendered as a clickable source by `link_open`); a number naming no source stays text.
 */
function citationLinks(state: CoreState): void {
  const citations = (state.env as RenderEnv).citations;
  if (!citations?.length) return;
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: typeof block.children = [];
    let inLink = 0;
    for (const token of block.children) {
      if (token.type === 'link_open') inLink++;
      if (token.type === 'link_close') inLink--;
      if (token.type !== 'text' || inLink > 0) {
        out.push(token);
        continue;
      }
      let last = 0;
      for (const match of token.content.matchAll(BARE_CITATION)) {
        const href = citationHref(citations[Number(match[1]) - 1]);
        if (!href) continue;
        const before = new state.Token('text', '', 0);
        before.content = token.content.slice(last, match.index);
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = [['href', href]];
        const label = new state.Token('text', '', 0);
        label.content = match[0];
        out.push(before, open, label, new state.Token('link_close', 'a', -1));
        last = (match.index ?? 0) + match[0].length;
      }
      if (last === 0) {
        out.push(token);
      } else {
        const rest = new state.Token('text', '', 0);
        rest.content = token.content.slice(last);
        out.push(rest);
      }
    }
    block.children = out;
  }
}

let renderer: MarkdownIt | undefined;

/**
 * Markdown -> HTML; file: links become `<a class="codeask-source" data-uri data-start data-end>`,
 * bare `[n]` become such links to `env.citations[n-1]`, and `env.lists` receives the headings of the
 * source lists the markdown carries.
 */
export function renderMarkdown(markdown: string, env: RenderEnv = {}): string {
  renderer ??= createRenderer();
  return renderer.render(markdown ?? '', env);
}

/**
 * The rows of the sources list, one per span: a source with `spans` (its best span first, then the
 * spans widening added) gives a row each, in the order the server lists its LSP Locations (one per
 * span). A row's lines come from the matching Location (0-based, converted) when there is one,
 * else from the span's `start_line`/`end_line` (1-based).
 */
export function sourceEntries(sources: Source[] | undefined, locations?: Location[]): SourceEntry[] {
  const out: SourceEntry[] = [];
  let next = 0;
  for (const source of sources ?? []) {
    const spans: SourceSpan[] = source.spans && source.spans.length > 0 ? source.spans : [source];
    spans.forEach((span, j) => {
      const loc = locations?.[next++];
      const fileUri = source.uri ? source.uri.split('#')[0] : loc?.uri;
      const uri = j === 0 ? (source.uri ?? loc?.uri) : (span.uri ?? fileUri);
      if (!uri) return;
      let startLine = lineNumber(span.start_line);
      let endLine = lineNumber(span.end_line);
      if (loc && loc.uri === uri.split('#')[0] && loc.range) {
        startLine = loc.range.start.line + 1;
        endLine = loc.range.end.line + 1;
      }
      out.push({
        label: linkLabel(source.path || uri, startLine, endLine),
        uri,
        startLine,
        endLine,
        symbol: span.symbol || undefined,
        score: j === 0 && typeof source.score === 'number' ? source.score : undefined,
      });
    });
  }
  return out;
}

function sourceAttrs(entry: { uri: string; startLine?: number; endLine?: number }): string {
  let attrs = `href="#" class="codeask-source" data-uri="${escapeHtml(entry.uri)}"`;
  if (entry.startLine !== undefined) attrs += ` data-start="${entry.startLine}"`;
  if (entry.endLine !== undefined) attrs += ` data-end="${entry.endLine}"`;
  return attrs;
}

/** `<ol>` of sources, every value escaped. */
export function renderSources(entries: SourceEntry[]): string {
  if (entries.length === 0) return '';
  const items = entries.map((e) => {
    const symbol = e.symbol ? ` <code>${escapeHtml(e.symbol)}</code>` : '';
    const score = e.score !== undefined ? ` <span class="score">${escapeHtml(e.score.toFixed(3))}</span>` : '';
    return `<li><a ${sourceAttrs(e)}>${escapeHtml(e.label)}</a>${symbol}${score}</li>`;
  });
  return `<ol class="sources">\n${items.join('\n')}\n</ol>`;
}

export interface AnswerView {
  /** Shown as the heading (the question, or what was explained). */
  title: string;
  markdown: string;
  sources?: Source[];
  locations?: Location[];
  subquestions?: string[];
  /** Found by retrieval but not sent to the model (`also_relevant`): listed under {@link ALSO_RELEVANT}. */
  alsoRelevant?: Source[];
  /** The sources a bare `[n]` of the markdown cites (an explanation's); see {@link RenderEnv}. */
  citations?: Source[];
  /** The answer is still being written (streamed text, shown until the response replaces it). */
  streaming?: boolean;
}

/**
 * Runs in the webview: posts `openSource` for clicks on source links, and puts the streamed answer
 * the extension posts (`{type: 'partial', html}`, HTML from {@link renderMarkdown}) into `.answer`.
 */
export const WEBVIEW_SCRIPT = `
(function () {
  const vscode = acquireVsCodeApi();
  window.addEventListener('message', function (event) {
    const msg = event.data;
    const answer = document.querySelector('.answer');
    if (answer && msg && msg.type === 'partial' && typeof msg.html === 'string') answer.innerHTML = msg.html;
  });
  document.addEventListener('click', function (event) {
    const target = event.target instanceof Element ? event.target.closest('a') : null;
    if (!target || !target.dataset.uri) return;
    event.preventDefault();
    const msg = { type: 'openSource', uri: target.dataset.uri };
    if (target.dataset.start) msg.startLine = Number(target.dataset.start);
    if (target.dataset.end) msg.endLine = Number(target.dataset.end);
    vscode.postMessage(msg);
  });
})();
`;

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 16px; line-height: 1.5; }
h1.question { font-size: 1.2em; border-bottom: 1px solid var(--vscode-panel-border); padding-bottom: 6px; }
a { color: var(--vscode-textLink-foreground); }
a:hover { color: var(--vscode-textLink-activeForeground); }
code { font-family: var(--vscode-editor-font-family); }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px; overflow-x: auto; }
.subquestions { color: var(--vscode-descriptionForeground); }
.sources .score { color: var(--vscode-descriptionForeground); font-size: 0.9em; margin-left: 4px; }
h2 { font-size: 1.05em; margin-top: 1.5em; }
.writing { color: var(--vscode-descriptionForeground); font-style: italic; }
`;

/** The whole webview document. `cspSource` is `webview.cspSource`; `nonce` is random per render. */
export function renderAnswerHtml(view: AnswerView, nonce: string, cspSource: string): string {
  const subs = (view.subquestions ?? []).filter((q) => q && q !== view.title);
  const subHtml = subs.length
    ? `<details class="subquestions"><summary>Also searched for</summary><ul>${subs
        .map((q) => `<li>${escapeHtml(q)}</li>`)
        .join('')}</ul></details>`
    : '';
  // The server's markdown usually ends with its own lists (`Sources:`, `Related:`, what was not
  // sent): those are shown, and the panel's lists only where the markdown has none.
  const env: RenderEnv = { citations: view.citations, lists: new Set() };
  const answer = renderMarkdown(view.markdown, env);
  const listed = env.lists ?? new Set();
  const hasSources = listed.has('Sources') || listed.has('Related');
  const sources = hasSources ? '' : renderSources(sourceEntries(view.sources, view.locations));
  const also = listed.has(ALSO_RELEVANT)
    ? ''
    : renderSources(sourceEntries(view.alsoRelevant)).replace('<ol class="sources">', '<ul class="sources">').replace(/<\/ol>$/, '</ul>');
  const writing = view.streaming ? '<p class="writing">writing the answer…</p>' : '';
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource} 'unsafe-inline'`,
    `img-src ${cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(view.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1 class="question">${escapeHtml(view.title)}</h1>
${subHtml}
<div class="answer">
${answer}
</div>
${writing}
${sources ? `<h2>Sources</h2>\n${sources}` : ''}
${also ? `<h2>${ALSO_RELEVANT}</h2>\n${also}` : ''}
<script nonce="${escapeHtml(nonce)}">${WEBVIEW_SCRIPT}</script>
</body>
</html>`;
}

/** `command:<id>?<args>` with `args` JSON, encoded so it is safe inside a markdown link. */
export function commandUri(commandId: string, args: unknown[]): string {
  const encoded = encodeURIComponent(JSON.stringify(args)).replace(
    /[()'!*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `command:${commandId}?${encoded}`;
}

/** A parser that accepts `file:` links (markdown-it refuses them by default), for `rewriteSourceLinks`. */
function createLinkParser(): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: false });
  md.validateLink = (url: string) => /^file:/i.test(url.trim());
  return md;
}

let linkParser: MarkdownIt | undefined;

/** The `href` of every link markdown-it finds in `markdown` (inline tokens, any depth). */
function linkHrefs(md: MarkdownIt, markdown: string): Set<string> {
  const hrefs = new Set<string>();
  const walk = (tokens: ReturnType<MarkdownIt['parse']>): void => {
    for (const token of tokens) {
      if (token.type === 'link_open') hrefs.add(token.attrGet('href') ?? '');
      if (token.children) walk(token.children);
    }
  };
  walk(md.parse(markdown, {}));
  return hrefs;
}

/**
 * Rewrites markdown links to `file:` URIs into `command:<commandId>?["uri", start, end]`
 * (1-based lines) so that a hover can open them at the cited lines.
 *
 * Links are found by markdown-it, not by a regex: the destinations are the links markdown-it
 * parses (so a `)` inside `<...>` or balanced parentheses, a link in a code span, an escaped
 * bracket all mean what they mean in markdown), and each destination's extent in the text is
 * read with markdown-it's own `parseLinkDestination`.
 */
export function rewriteSourceLinks(markdown: string, commandId: string): string {
  linkParser ??= createLinkParser();
  const md = linkParser;
  const hrefs = linkHrefs(md, markdown);
  if (hrefs.size === 0) return markdown;
  let out = '';
  let last = 0;
  let at = markdown.indexOf('](');
  while (at >= 0) {
    let start = at + 2;
    while (start < markdown.length && (markdown[start] === ' ' || markdown[start] === '\t' || markdown[start] === '\n')) start++;
    const dest = md.helpers.parseLinkDestination(markdown, start, markdown.length);
    const href = dest.ok ? md.normalizeLink(dest.str) : '';
    const link = dest.ok && hrefs.has(href) ? parseSourceLink(href) : undefined;
    if (link) {
      const args: unknown[] = [link.uri];
      if (link.startLine !== undefined) args.push(link.startLine, link.endLine ?? link.startLine);
      out += markdown.slice(last, start) + commandUri(commandId, args);
      last = dest.pos;
      at = markdown.indexOf('](', dest.pos);
    } else {
      at = markdown.indexOf('](', at + 2);
    }
  }
  return out + markdown.slice(last);
}

/** Arguments of the `codeask.openSource` command (as `rewriteSourceLinks` writes them) -> OpenRequest. */
export function openRequestFromArgs(uri: unknown, startLine?: unknown, endLine?: unknown): OpenRequest | undefined {
  return openRequestFromMessage({ type: 'openSource', uri, startLine, endLine });
}
