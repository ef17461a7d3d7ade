/**
 * Hover middleware: inside a non-empty selection the hover explains the selection
 * (`codeask.explain`); anywhere else it defers to the server's own hover.
 */
import type * as vscode from 'vscode';
import type { RequestFn } from './commands';
import { Range as LspRange, rewriteSourceLinks } from './markdown';

export const OPEN_SOURCE_COMMAND = 'codeask.openSource';

interface PositionLike {
  line: number;
  character: number;
}
interface SelectionLike<P> {
  isEmpty: boolean;
  start: PositionLike;
  end: PositionLike;
  contains(position: P): boolean;
}

/** The first non-empty selection that contains `position`. */
export function selectionAt<P, S extends SelectionLike<P>>(selections: readonly S[] | undefined, position: P): S | undefined {
  return (selections ?? []).find((s) => !s.isEmpty && s.contains(position));
}

export type HoverApi = Pick<typeof vscode, 'window' | 'MarkdownString' | 'Hover'>;

export type ProvideHoverNext = (
  document: vscode.TextDocument,
  position: vscode.Position,
  token: vscode.CancellationToken,
) => vscode.ProviderResult<vscode.Hover>;

export interface SelectionHoverDeps {
  vscode: HoverApi;
  request: RequestFn;
  /** `codeask.hover.enabled`. */
  enabled(): boolean;
}

/** A `middleware.provideHover` for vscode-languageclient. */
export function createSelectionHover(deps: SelectionHoverDeps) {
  const vs = deps.vscode;
  const cache = new Map<string, Promise<unknown>>();

  function explain(uri: string, version: number, range: LspRange): Promise<unknown> {
    const key = `${uri}@${version}:${range.start.line}:${range.start.character}-${range.end.line}:${range.end.character}`;
    let pending = cache.get(key);
    if (!pending) {
      // Not cancelled with the hover: moving the mouse and back reuses the answer.
      pending = deps.request('codeask.explain', [uri, range]);
      pending.catch(() => cache.delete(key));
      cache.set(key, pending);
      while (cache.size > 8) cache.delete(cache.keys().next().value as string);
    }
    return pending;
  }

  return async function provideHover(
    document: vscode.TextDocument,
    position: vscode.Position,
    token: vscode.CancellationToken,
    next: ProvideHoverNext,
  ): Promise<vscode.Hover | null | undefined> {
    const editor =
      vs.window.activeTextEditor?.document === document
        ? vs.window.activeTextEditor
        : vs.window.visibleTextEditors.find((e) => e.document === document);
    const selection = selectionAt(editor?.selections, position);
    if (!selection || !deps.enabled()) {
      return next(document, position, token);
    }
    const range: LspRange = {
      start: { line: selection.start.line, character: selection.start.character },
      end: { line: selection.end.line, character: selection.end.character },
    };
    let result: { markdown?: string } | undefined;
    try {
      result = (await explain(document.uri.toString(), document.version, range)) as { markdown?: string } | undefined;
    } catch {
      return next(document, position, token);
    }
    if (token.isCancellationRequested) return undefined;
    if (!result?.markdown) return next(document, position, token);
    const md = new vs.MarkdownString(rewriteSourceLinks(result.markdown, OPEN_SOURCE_COMMAND));
    md.isTrusted = { enabledCommands: [OPEN_SOURCE_COMMAND] };
    return new vs.Hover(md, selection as unknown as vscode.Range);
  };
}
