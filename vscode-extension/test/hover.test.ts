import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HoverApi, OPEN_SOURCE_COMMAND, createSelectionHover } from '../src/hover';
import { createMockVscode, Hover, MarkdownString, Position, Selection } from './mockVscode';

function setup(selections: Selection[], enabled = true, respond: () => unknown = () => ({ markdown: 'Adds. [calc.py:1-2](file:///ws/calc.py#L1-L2)' })) {
  const { vscode } = createMockVscode();
  const document = { uri: { toString: () => 'file:///ws/calc.py' }, version: 3 };
  vscode.window.activeTextEditor = { document, selections, selection: selections[0] };
  const requests: unknown[][] = [];
  const nexts: unknown[] = [];
  const hover = createSelectionHover({
    vscode: vscode as unknown as HoverApi,
    request: async (command, args) => {
      requests.push([command, ...args]);
      return respond();
    },
    enabled: () => enabled,
  });
  const next = (_d: unknown, p: unknown) => {
    nexts.push(p);
    return 'server hover' as any;
  };
  const token = { isCancellationRequested: false } as any;
  const call = (p: Position) => hover(document as any, p as any, token, next as any);
  return { call, requests, nexts };
}

describe('selection hover', () => {
  const sel = new Selection(new Position(1, 0), new Position(3, 5));

  it('explains the selection when hovering inside it', async () => {
    const t = setup([sel]);
    const result = (await t.call(new Position(2, 2))) as unknown as Hover;
    assert.ok(result instanceof Hover);
    assert.deepEqual(t.requests, [
      ['codeask.explain', 'file:///ws/calc.py', { start: { line: 1, character: 0 }, end: { line: 3, character: 5 } }],
    ]);
    const md = result.contents as MarkdownString;
    assert.match(md.value, /^Adds\. \[calc\.py:1-2\]\(command:codeask\.openSource\?/);
    assert.deepEqual(md.isTrusted, { enabledCommands: [OPEN_SOURCE_COMMAND] });
    assert.equal(result.range, sel);
    assert.equal(t.nexts.length, 0);
  });

  it('reuses the explanation while the selection is unchanged', async () => {
    const t = setup([sel]);
    await t.call(new Position(2, 2));
    await t.call(new Position(3, 1));
    assert.equal(t.requests.length, 1);
  });

  it('defers to the server outside the selection, with no selection, or when disabled', async () => {
    const outside = setup([sel]);
    assert.equal(await outside.call(new Position(7, 0)), 'server hover');
    const empty = setup([new Selection(new Position(2, 2), new Position(2, 2))]);
    assert.equal(await empty.call(new Position(2, 2)), 'server hover');
    const disabled = setup([sel], false);
    assert.equal(await disabled.call(new Position(2, 2)), 'server hover');
    assert.equal(outside.requests.length + empty.requests.length + disabled.requests.length, 0);
  });

  it('falls back to the server hover when explain fails', async () => {
    const t = setup([sel], true, () => {
      throw new Error('boom');
    });
    assert.equal(await t.call(new Position(2, 2)), 'server hover');
  });
});
