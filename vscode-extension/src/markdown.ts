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

/** A request to open `uri` and select 0-based lines `start`..`end` (inclusive). */
export interface OpenRequest {
  uri: string;
  start?: number;
  end?: number;
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
  /** Every span of the file the answer drew on, this source's own lines first (1-based). */
  spans?: SourceSpan[];
}

export interface SourceSpan {
  start_line?: number;
  end_line?: number;
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
  return md;
}

let renderer: MarkdownIt | undefined;

/** Markdown -> HTML; file: links become `<a class="codeask-source" data-uri data-start data-end>`. */
export function renderMarkdown(markdown: string): string {
  renderer ??= createRenderer();
  return renderer.render(markdown ?? '');
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
}

/** Runs in the webview: posts `openSource` for clicks on source links. */
export const WEBVIEW_SCRIPT = `
(function () {
  const vscode = acquireVsCodeApi();
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
`;

/** The whole webview document. `cspSource` is `webview.cspSource`; `nonce` is random per render. */
export function renderAnswerHtml(view: AnswerView, nonce: string, cspSource: string): string {
  const subs = (view.subquestions ?? []).filter((q) => q && q !== view.title);
  const subHtml = subs.length
    ? `<details class="subquestions"><summary>Also searched for</summary><ul>${subs
        .map((q) => `<li>${escapeHtml(q)}</li>`)
        .join('')}</ul></details>`
    : '';
  const sources = renderSources(sourceEntries(view.sources, view.locations));
  const also = renderSources(sourceEntries(view.alsoRelevant)).replace('<ol class="sources">', '<ul class="sources">').replace(/<\/ol>$/, '</ul>');
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
${renderMarkdown(view.markdown)}
</div>
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
