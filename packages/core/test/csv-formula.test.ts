import { neutralizeFormula } from '@svc/core/internals';

/**
 * The CSV export's guard against formula injection (export/stream.ts, docs/decisions/export.md):
 * a text cell a spreadsheet could evaluate gets a leading apostrophe; any other text is left as is.
 */
describe('neutralizeFormula', () => {
  it('guards a cell that starts with a formula trigger, a tab or a carriage return', () => {
    for (const text of ['=1+1', '+1', '-1', '@SUM(A1)', '=HYPERLINK("http://x")', '\tx', '\rx']) {
      expect([text, neutralizeFormula(text)]).toEqual([text, `'${text}`]);
    }
  });

  it('guards a trigger behind leading whitespace (spaces, tabs, CR, LF): some spreadsheets trim before they evaluate', () => {
    for (const text of [' =1+1', '   =1+1', '\n=1+1', '\r\n=1+1', ' \t\n+1', '\n-1', '\n@SUM(A1)', '\n\n=HYPERLINK("http://x")']) {
      expect([text, neutralizeFormula(text)]).toEqual([text, `'${text}`]);
    }
  });

  it('leaves other text alone, whitespace before it included', () => {
    for (const text of ['', 'ACME', ' ACME', '\nACME', 'a=1', '1+1', '   ', '\n', ' 1-1', 'x\n=1+1']) {
      expect([text, neutralizeFormula(text)]).toEqual([text, text]);
    }
  });
});
