import { CsvError, csvRecord, parseCsv, parseCsvWithHeader } from '../../src/domain/csv';

// RFC 4180 as exports write it and batch uploads read it: CRLF records, fields quoted when they hold
// a comma, a quote or a line break (quotes doubled), nothing else changed; and the parser gives back
// exactly what was written.

test.each([
  [['a', 'b', 'c'], 'a,b,c\r\n'],
  [['', null, undefined, 0], ',,,0\r\n'],
  [['a,b', 'say "hi"', 'two\r\nlines', 'lf\nonly'], '"a,b","say ""hi""","two\r\nlines","lf\nonly"\r\n'],
  [['-5.00', '=1+1', ' padded ', 'é😀'], '-5.00,=1+1, padded ,é😀\r\n'],
])('%j is written as %j', (values, text) => {
  expect(csvRecord(values)).toBe(text);
});

test('what is written parses back to the same values, record by record', () => {
  const records = [
    ['id', 'note'],
    ['1', 'goodwill, "VIP"\r\nsecond line'],
    ['2', ''],
    ['3', '"'],
  ];
  expect(parseCsv(records.map(csvRecord).join(''))).toEqual(records);
});

test('LF line ends, a last record without a line end, and blank lines are read too', () => {
  expect(parseCsv('a,b\nc,d')).toEqual([
    ['a', 'b'],
    ['c', 'd'],
  ]);
  expect(parseCsv('a,b\r\n\r\nc,d\r\n')).toEqual([
    ['a', 'b'],
    ['c', 'd'],
  ]);
  expect(parseCsv('a,""\r\n')).toEqual([['a', '']]);
});

test.each([
  ['a quote inside an unquoted field', 'a,b"c\r\n', 'line 1'],
  ['text after a closing quote', 'x\r\n"a"b,c\r\n', 'line 2'],
  ['a quoted field never closed', 'a,"b\r\nc\r\n', 'not closed'],
])('%s is a CsvError naming where', (_name, text, where) => {
  expect(() => parseCsv(text)).toThrow(CsvError);
  expect(() => parseCsv(text)).toThrow(where);
});

test('records become objects by the header; a record of another width is refused', () => {
  expect(parseCsvWithHeader('qty,id\r\n1,a\r\n').rows).toEqual([{ qty: '1', id: 'a' }]);
  expect(() => parseCsvWithHeader('qty,id\r\n1\r\n')).toThrow('record 1: 1 fields, the header has 2');
});
