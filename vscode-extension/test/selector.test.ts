import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INDEXED_LANGUAGES, documentSelector, folderPattern } from '../src/selector';

describe('documentSelector', () => {
  it('selects files of indexed languages inside each workspace folder only', () => {
    const selector = documentSelector(['/work/a', '/work/b/']);
    assert.equal(selector.length, 2 * INDEXED_LANGUAGES.length);
    assert.ok(selector.every((f) => f.scheme === 'file'));
    assert.deepEqual(new Set(selector.map((f) => f.pattern)), new Set(['/work/a/**', '/work/b/**']));
    const languages = new Set(selector.map((f) => f.language));
    for (const id of ['python', 'typescript', 'typescriptreact', 'go', 'rust', 'java']) assert.ok(languages.has(id), id);
    for (const id of ['markdown', 'plaintext', 'json', 'log']) assert.ok(!languages.has(id), id);
  });
  it('selects nothing without a workspace folder (never every file on disk)', () => {
    assert.deepEqual(documentSelector([]), []);
  });
  it('writes Windows folders with forward slashes', () => {
    assert.equal(folderPattern('C:\\src\\proj\\'), 'C:/src/proj/**');
  });
});
