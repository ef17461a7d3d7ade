/**
 * Which documents the language client sends to the server: files (the `file` scheme) inside the
 * workspace folders, in the languages codeask chunks by syntax (tree-sitter). Hover and document
 * sync are offered for these only; the server checks the same again (roots, ignore rules).
 *
 * Pure: no `vscode` import, so it is unit-tested directly.
 */

/** VS Code language ids of the languages the server chunks by syntax (codeask.index.chunk.TREE_SITTER_LANGUAGES). */
export const INDEXED_LANGUAGES: readonly string[] = [
  'c',
  'cpp',
  'cuda-cpp',
  'csharp',
  'dart',
  'go',
  'groovy',
  'java',
  'javascript',
  'javascriptreact',
  'kotlin',
  'lua',
  'objective-c',
  'objective-cpp',
  'php',
  'python',
  'ruby',
  'rust',
  'scala',
  'shellscript',
  'starlark',
  'swift',
  'typescript',
  'typescriptreact',
  'zig',
];

export interface DocumentFilterLike {
  scheme: 'file';
  language: string;
  pattern: string;
}

/** `/a/b/**` for a folder path (forward slashes, no trailing slash doubled). */
export function folderPattern(fsPath: string): string {
  const path = fsPath.replace(/\\/g, '/').replace(/\/+$/, '');
  return `${path}/**`;
}

/**
 * One filter per workspace folder and indexed language. With no folder open, nothing is selected
 * (codeask serves workspace folders only).
 */
export function documentSelector(folderPaths: readonly string[], languages: readonly string[] = INDEXED_LANGUAGES): DocumentFilterLike[] {
  const out: DocumentFilterLike[] = [];
  for (const folder of folderPaths) {
    for (const language of languages) out.push({ scheme: 'file', language, pattern: folderPattern(folder) });
  }
  return out;
}
