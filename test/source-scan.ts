/** Reading the repository's sources as text, for the tests that check its layers (layers, front door). */

/** Every module specifier a TypeScript file names: import/export ... from, bare import, require() and import(). */
export function specifiers(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /(?:^|[\n;])\s*(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /(?:^|[\n;])\s*import\s*['"]([^'"]+)['"]/g,
    /\b(?:require|import|jest\.(?:mock|doMock|requireActual))\(\s*['"]([^'"]+)['"]/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) found.push(m[1]!);
  return found;
}
