/** Entry point: creates the parts, wires their events together, registers the commands. */

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ChatController, errorMessage } from './chat/controller';
import { EditorHost, editorContext } from './chat/host';
import { CHAT_VIEW_ID, ChatViewProvider } from './chat/view';
import { ACTION_COMMANDS, runAction } from './codeActions';
import { COMMAND_DISMISS, COMMAND_GO_TO_OR_ACCEPT, NextEditController } from './nextEdit';
import { COMMAND_INSTALL_SERVER, Notifier } from './notifications';
import { COMMAND_SHOW_ANSWER, SECTION, type ShowAnswerArgs } from './protocol';
import { COMMAND_SEARCH_CODEBASE, searchCodebase } from './search';
import { McpFailureLog, PROJECT_MCP_FILES, mayRunMcpServers, mcpLogLines } from './mcpStats';
import { LlamaServer } from './server';
import { pythonExtensionInterpreter, ServerInstaller } from './serverInstall';
import { statsSummary } from './status';
import { StatusBar } from './statusBar';
import { askToolConsent } from './toolConsentPrompt';
import { resolvedActionNotice } from './verification';

let server: LlamaServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Llama LSP', { log: true });
  const traceOutput = vscode.window.createOutputChannel('Llama LSP Trace', { log: true });
  const installRoot = path.join(context.globalStorageUri.fsPath, 'server');
  const llama = new LlamaServer(
    {
      extensionPath: context.extensionPath,
      installRoot,
      laterPythons: pythonExtensionInterpreter,
    },
    output,
    traceOutput,
    (params, token) => askToolConsent(params, token, output),
  );
  server = llama;
  const mcpFailures = new McpFailureLog();
  const installer = new ServerInstaller(context.extensionPath, installRoot, llama, output);
  const notifier = new Notifier(llama, output);
  const statusBar = new StatusBar('llamaLsp.showStats');
  statusBar.show(llama.status);

  const host = new EditorHost(llama, notifier);
  const controller = new ChatController(llama, host);
  const view = new ChatViewProvider(context.extensionUri, controller);
  const nextEdit = new NextEditController(llama, context.extensionUri, output);

  const actionDeps = { server: llama, chat: controller, notifier, revealChat: () => view.reveal(false) };
  context.subscriptions.push(
    output,
    traceOutput,
    llama,
    statusBar,
    host,
    controller,
    nextEdit,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    llama.onDidChangeStatus((status) => {
      statusBar.show(status);
      if (status.phase === 'error' && status.message !== undefined && !status.reported) {
        notifier.serverError(status.message, status.installModel, status.installServer);
      } else if (status.phase === 'ready' || status.phase === 'starting') {
        notifier.forgetServerError();
      }
    }),
    // A lightbulb action's edit is applied by VS Code right after this; a failed check warns.
    // A chat starts the MCP servers it needs: one that failed is named in the output channel, once.
    llama.onDidEndChat(() => void logMcpFailures(llama, mcpFailures, output)),
    llama.onDidResolveCheck(({ title, verification }) => notifier.report(resolvedActionNotice(title, verification))),
    // Restricted Mode withheld the settings that run commands (settings.ts, forTrust); now they may go.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void llama.trustGranted()),
    host.onDidChangeContext(() => controller.contextChanged()),
    controller.onDidChangeBusy((busy) => void vscode.commands.executeCommand('setContext', 'llamaLsp.busy', busy)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      // The other settings reach the running server (synchronize.configurationSection); a new command
      // needs a new process.
      if (event.affectsConfiguration(`${SECTION}.serverCommand`)) void llama.restart();
    }),
    vscode.commands.registerCommand('llamaLsp.askSelection', async () => {
      const editor = vscode.window.activeTextEditor;
      await view.reveal(true);
      controller.pinContext(editor !== undefined ? editorContext(editor) : undefined);
    }),
    ...Object.entries(ACTION_COMMANDS).map(([id, action]) =>
      vscode.commands.registerCommand(id, () => runAction(action, actionDeps)),
    ),
    vscode.commands.registerCommand(COMMAND_SEARCH_CODEBASE, () => searchCodebase({ server: llama, notifier })),
    vscode.commands.registerCommand(COMMAND_GO_TO_OR_ACCEPT, () => nextEdit.goToOrAccept()),
    vscode.commands.registerCommand(COMMAND_DISMISS, () => nextEdit.dismiss()),
    vscode.commands.registerCommand('llamaLsp.newConversation', () => controller.newConversation()),
    vscode.commands.registerCommand('llamaLsp.stop', () => controller.stop()),
    vscode.commands.registerCommand('llamaLsp.restartServer', () => llama.restart()),
    vscode.commands.registerCommand(COMMAND_INSTALL_SERVER, () => installer.install()),
    vscode.commands.registerCommand('llamaLsp.showStats', () => showStats(llama, output, mcpFailures)),
    vscode.commands.registerCommand(COMMAND_SHOW_ANSWER, async (answer: ShowAnswerArgs) => {
      controller.showAnswer(answer);
      await view.reveal(false);
    }),
  );
  void llama.start().then(() => installer.offerUpdate());
}

export async function deactivate(): Promise<void> {
  await server?.stop(); // lets the server save its KV cache state before the window goes
  server = undefined;
}

async function logMcpFailures(llama: LlamaServer, failures: McpFailureLog, output: vscode.LogOutputChannel): Promise<void> {
  const hasProjectFile = (): boolean =>
    (vscode.workspace.workspaceFolders ?? []).some(
      (folder) =>
        folder.uri.scheme === 'file' && PROJECT_MCP_FILES.some((file) => fs.existsSync(path.join(folder.uri.fsPath, file))),
    );
  // Most chats run no MCP server: no stats request for them.
  if (!mayRunMcpServers(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted, hasProjectFile)) return;
  try {
    for (const line of failures.newFailures((await llama.stats()).mcp)) output.error(line);
  } catch {
    // No stats (the server stopped): a failure shows with the next chat, or with Show Cache Stats.
  }
}

async function showStats(llama: LlamaServer, output: vscode.LogOutputChannel, mcpFailures: McpFailureLog): Promise<void> {
  try {
    const stats = await llama.stats();
    output.info(`assistant/stats: ${JSON.stringify(stats, null, 2)}`);
    for (const line of mcpFailures.newFailures(stats.mcp)) output.error(line);
    for (const line of mcpLogLines(stats.mcp)) output.info(line);
    const choice = await vscode.window.showInformationMessage(`Llama: ${statsSummary(stats)}`, 'Show details');
    if (choice === 'Show details') output.show();
  } catch (error) {
    void vscode.window.showErrorMessage(`Llama: no stats: ${errorMessage(error)}`, 'Show log').then((choice) => {
      if (choice === 'Show log') output.show();
    });
  }
}
