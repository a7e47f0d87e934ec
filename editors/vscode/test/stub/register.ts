/**
 * Loaded with `node --require` before the unit tests: makes `require('vscode')` resolve to the stub,
 * since outside VS Code's extension host there is no such module.
 */

import Module = require('node:module');
import * as path from 'node:path';

const stub = path.join(__dirname, 'vscode.js');
const moduleInternals = Module as unknown as {
  _resolveFilename(request: string, ...rest: unknown[]): string;
};
const resolve = moduleInternals._resolveFilename;
moduleInternals._resolveFilename = function (request: string, ...rest: unknown[]): string {
  return request === 'vscode' ? stub : resolve.call(this, request, ...rest);
};
