import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatTable } from '../../../src/cli/table';
import { terminalCell, terminalJson, terminalLines } from '../../../src/cli/terminal-text';

const HOSTILE = 'a\u001b]0;title\u0007b\u009b2Jc\u202ed\u2066e\u007ff\r\ng\th';

describe('terminal-safe text', () => {
  it('escapes C0, DEL, C1 and bidirectional controls in a cell, newlines and tabs too', () => {
    assert.equal(terminalCell(HOSTILE), 'a\\x1b]0;title\\x07b\\x9b2Jc\\u202ed\\u2066e\\x7ff\\r\\ng\\th');
    assert.equal(terminalCell('email.welcome ünïcode ✓'), 'email.welcome ünïcode ✓');
  });

  it('keeps the newlines of multi-line output and escapes the rest', () => {
    assert.equal(terminalLines('one\u001b[2K\ntwo\u202e'), 'one\\x1b[2K\ntwo\\u202e');
  });

  it('keeps JSON the same value while escaping what JSON.stringify leaves raw', () => {
    const value = { name: HOSTILE, list: [1, 2] };
    const json = terminalJson(JSON.stringify(value, null, 2));
    assert.doesNotMatch(json, /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    assert.deepEqual(JSON.parse(json), value);
  });

  it('aligns table columns on the escaped text', () => {
    const table = formatTable(['NAME', 'STATE'], [[`x\u001b[1A`, 'dead']]).split('\n');
    assert.equal(table[1], 'x\\x1b[1A  dead');
    assert.equal(table[1]!.indexOf('dead'), table[0]!.indexOf('STATE'));
  });
});
