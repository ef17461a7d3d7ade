/**
 * The answer webview: one panel, reused for every answer; clicks on cited sources are posted
 * back and handed to `onMessage` (which opens the file at the cited lines). An answer being
 * streamed is shown with `showPartial` (the page once, then its text posted to the page's script),
 * until `show` replaces it with the answer.
 */
import { randomBytes } from 'crypto';
import type * as vscode from 'vscode';
import { AnswerView, renderAnswerHtml, renderMarkdown } from './markdown';

export type PanelApi = Pick<typeof vscode, 'window' | 'ViewColumn'>;

export class AnswerPanel {
  private panel: vscode.WebviewPanel | undefined;
  /** The title of the streamed answer the page shows, if it shows one. */
  private streaming: string | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly vs: PanelApi,
    private readonly onMessage: (msg: unknown) => unknown,
  ) {}

  /** Shows the text streamed so far of the answer to `title` (the whole text each time). */
  showPartial(title: string, markdown: string): void {
    if (this.panel && this.streaming === title) {
      void this.panel.webview.postMessage({ type: 'partial', html: renderMarkdown(markdown) });
      return;
    }
    this.show({ title, markdown, streaming: true });
    this.streaming = title;
  }

  show(view: AnswerView): vscode.WebviewPanel {
    this.streaming = undefined;
    if (!this.panel) {
      const panel = this.vs.window.createWebviewPanel(
        'codeask.answer',
        'codeask',
        { viewColumn: this.vs.ViewColumn.Beside, preserveFocus: false },
        { enableScripts: true, enableFindWidget: true, retainContextWhenHidden: true, localResourceRoots: [] },
      );
      this.disposables.push(
        panel.webview.onDidReceiveMessage((msg) => this.onMessage(msg)),
        panel.onDidDispose(() => {
          this.panel = undefined;
          this.streaming = undefined;
          while (this.disposables.length) this.disposables.pop()?.dispose();
        }),
      );
      this.panel = panel;
    } else {
      this.panel.reveal(undefined, false);
    }
    const nonce = randomBytes(16).toString('hex');
    this.panel.title = `codeask: ${view.title.length > 40 ? `${view.title.slice(0, 39)}…` : view.title}`;
    this.panel.webview.html = renderAnswerHtml(view, nonce, this.panel.webview.cspSource);
    return this.panel;
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
