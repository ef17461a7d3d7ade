/**
 * The answer webview: one panel, reused for every answer; clicks on cited sources are posted
 * back and handed to `onMessage` (which opens the file at the cited lines).
 */
import { randomBytes } from 'crypto';
import type * as vscode from 'vscode';
import { AnswerView, renderAnswerHtml } from './markdown';

export type PanelApi = Pick<typeof vscode, 'window' | 'ViewColumn'>;

export class AnswerPanel {
  private panel: vscode.WebviewPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly vs: PanelApi,
    private readonly onMessage: (msg: unknown) => unknown,
  ) {}

  show(view: AnswerView): vscode.WebviewPanel {
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
