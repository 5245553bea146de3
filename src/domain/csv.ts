// CSV as RFC 4180 has it: records end with CRLF; a field holding a comma, a double quote, CR or
// LF is enclosed in double quotes, with each quote inside doubled. Values are written exactly
// as the API gives them (no spreadsheet escaping), so a file parses back to the API's values;
// a null is an empty field.

export type CsvValue = string | number | null | undefined;

const NEEDS_QUOTES = /[",\r\n]/;

export function csvField(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  const s = String(value);
  return NEEDS_QUOTES.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRecord(values: readonly CsvValue[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

export class CsvError extends Error {}

/**
 * The records of a CSV text (RFC 4180, with LF accepted as a line end as well as CRLF). A
 * trailing line end does not start an empty record; blank lines are skipped. A quote that
 * opens or closes in the wrong place is a CsvError naming the line.
 */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  let line = 1;
  const endField = () => {
    record.push(field);
    field = '';
    wasQuoted = false;
  };
  const endRecord = () => {
    endField();
    if (record.length > 1 || record[0] !== '') records.push(record);
    record = [];
    line++;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') {
        if (c === '\n') line++;
        field += c;
      } else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else {
        quoted = false;
        wasQuoted = true;
      }
      continue;
    }
    if (c === ',') endField();
    else if (c === '\n') endRecord();
    else if (c === '\r' && text[i + 1] === '\n') {
      endRecord();
      i++;
    } else if (c === '"') {
      if (field !== '' || wasQuoted) throw new CsvError(`line ${line}: a quote inside an unquoted field`);
      quoted = true;
    } else if (wasQuoted) {
      throw new CsvError(`line ${line}: text after a closing quote`);
    } else {
      field += c;
    }
  }
  if (quoted) throw new CsvError(`line ${line}: a quoted field is not closed`);
  if (field !== '' || wasQuoted || record.length > 0) endRecord();
  return records;
}

/** Records as objects keyed by the header record's names (the first record). */
export function parseCsvWithHeader(text: string): { header: string[]; rows: Record<string, string>[] } {
  const [header = [], ...records] = parseCsv(text);
  const rows = records.map((r, i) => {
    if (r.length !== header.length)
      throw new CsvError(`record ${i + 1}: ${r.length} fields, the header has ${header.length}`);
    return Object.fromEntries(header.map((name, j) => [name, r[j]]));
  });
  return { header, rows };
}
