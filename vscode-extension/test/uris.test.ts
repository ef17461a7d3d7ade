/**
 * Cited `file:` links for awkward paths (space, #, %, (, ), ;, &, =, non-ASCII) open the right
 * file with the right lines: in the answer webview (renderMarkdown -> data-uri) and in hovers
 * (rewriteSourceLinks -> command URI). Links are written as the server writes them (every
 * reserved character percent-encoded) and as other tools do (Node's pathToFileURL, which keeps
 * `(`, `)`, `;`, `&`, `=` raw, so a raw `)` must be parsed as markdown, not cut by a regex).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { commandUri, renderMarkdown, rewriteSourceLinks } from '../src/markdown';

const NAMES = [
  'with space.py',
  'hash#tag.py',
  'per%cent.py',
  'paren(1).py',
  'close)paren.py',
  'semi;colon.py',
  'amp&ersand.py',
  'equals=sign.py',
  'nön-ascii_ü.py',
  '日本語.py',
  'all #%();&= é.py',
];
const DIR = '/tmp/proj (copy) #2/src';

/** As codeask's server writes it: pygls' from_fs_path (RFC 3986 unreserved and `/` kept). */
function serverUri(path: string): string {
  return 'file://' + path.split('/').map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/');
}

function unescapeHtml(text: string): string {
  return text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

const STYLES: [string, (p: string) => string, (uri: string) => string][] = [
  ['server', serverUri, (uri) => uri],
  ['node', (p) => pathToFileURL(p).href, (uri) => `<${uri}>`],
];

describe('file: links for awkward paths', () => {
  for (const [style, toUri, wrap] of STYLES) {
    for (const name of NAMES) {
      const path = `${DIR}/${name}`;
      const uri = toUri(path);
      const md = `See [\`${name}\`:3-7](${wrap(`${uri}#L3-L7`)}) and \`[not](file:///a/link.py)\`.\n\nSources:\n1. [src/${name}:3-7](${wrap(`${uri}#L3-L7`)})\n`;

      it(`${style} URI round-trips for ${JSON.stringify(name)}`, () => {
        assert.equal(fileURLToPath(uri), path);
      });

      it(`webview link opens ${JSON.stringify(name)} (${style})`, () => {
        const html = renderMarkdown(md);
        const found = [...html.matchAll(/data-uri="([^"]*)" data-start="(\d+)" data-end="(\d+)"/g)];
        assert.equal(found.length, 2, html);
        for (const m of found) {
          assert.equal(fileURLToPath(unescapeHtml(m[1])), path);
          assert.deepEqual([Number(m[2]), Number(m[3])], [3, 7]);
        }
      });

      it(`hover link opens ${JSON.stringify(name)} (${style})`, () => {
        const out = rewriteSourceLinks(md, 'codeask.openSource');
        const commands = [...out.matchAll(/\]\((command:codeask\.openSource\?[^)\s]+)\)/g)].map((m) => m[1]);
        assert.equal(commands.length, 2, out);
        for (const command of commands) {
          const [target, start, end] = JSON.parse(decodeURIComponent(command.slice('command:codeask.openSource?'.length)));
          assert.equal(fileURLToPath(target), path);
          assert.deepEqual([start, end], [3, 7]);
        }
        assert.ok(out.includes('`[not](file:///a/link.py)`'), 'a link inside a code span is text, not a link');
      });
    }
  }

  it('command URIs keep a parenthesis out of the markdown link', () => {
    const uri = commandUri('x', [serverUri(`${DIR}/close)paren.py`)]);
    assert.doesNotMatch(uri, /[()\s]/);
  });
});
