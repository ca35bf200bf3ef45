// Starts `pipec lsp` for .pipe files. The server does the work: diagnostics,
// hover, go to definition and formatting.
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration('pipe').get('pipecPath') || 'pipec';
  const server = { command, args: ['lsp'] };
  client = new LanguageClient('pipe', 'pipec lsp', { run: server, debug: server }, {
    documentSelector: [{ scheme: 'file', language: 'pipe' }, { scheme: 'untitled', language: 'pipe' }],
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
