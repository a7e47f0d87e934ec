/**
 * The chat's webview in the side bar. The page is static HTML under a strict CSP: scripts run only
 * with this page's nonce and come only from media/; model output reaches the page as data in
 * messages and media/chat.js builds it into elements as text, never as HTML. The composer offers
 * `@codebase` (a toggle button, and Tab after a partial `@co`), which the server reads in the question.
 */

import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ChatController, ChatView } from './controller';
import type { FromWebview } from './messages';

export const CHAT_VIEW_ID = 'llamaLsp.chat';

export interface PageResources {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

export function chatHtml({ cspSource, scriptUri, styleUri, nonce }: PageResources): string {
  const csp = `default-src 'none'; style-src ${cspSource}; script-src 'nonce-${nonce}';`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${styleUri}">
<title>Llama Chat</title>
</head>
<body>
<div id="transcript" role="log" aria-live="polite"></div>
<form id="composer">
<div id="context"></div>
<textarea id="prompt" rows="3" aria-describedby="mention-hint" placeholder="Ask about the active file or selection, or with @codebase about the whole workspace (Enter to send, Shift+Enter for a new line)"></textarea>
<div id="mention-hint" aria-live="polite" hidden>Tab completes @codebase: the workspace's code that best matches the question goes with it.</div>
<div class="buttons">
<button id="send" type="submit">Ask</button>
<button id="stop" type="button" class="secondary" disabled>Stop</button>
<button id="new" type="button" class="secondary">New conversation</button>
<button id="codebase" type="button" class="secondary" aria-pressed="false" title="Ask about the whole workspace: the code that best matches the question goes with it">@codebase</button>
</div>
</form>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body>
</html>`;
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
  ) {}

  resolveWebviewView(webviewView: vscode.WebviewView): void {
    this.view = webviewView;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const webview = webviewView.webview;
    webview.options = { enableScripts: true, localResourceRoots: [media] };
    webview.html = chatHtml({
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString(),
      nonce: randomBytes(16).toString('base64'),
    });
    const sink: ChatView = { post: (message) => void webview.postMessage(message) };
    this.controller.attachView(sink);
    const received = webview.onDidReceiveMessage((message: FromWebview) => void this.controller.handle(message));
    webviewView.onDidDispose(() => {
      received.dispose();
      this.controller.detachView(sink);
      if (this.view === webviewView) this.view = undefined;
    });
  }

  /** Opens the side bar on the chat (resolving the view if it never was); `focus` moves focus into it. */
  async reveal(focus: boolean): Promise<void> {
    if (this.view !== undefined && !focus) this.view.show(true);
    else await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }
}
