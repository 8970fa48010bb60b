/**
 * Text fit for people who should not see secrets: an error message, a snapshot's errors, a line the CLI
 * prints. Every `scheme://user:password@` in it keeps its user and loses its password, and a Basic or
 * Bearer authorization value is masked. The faces (CLI, dashboard) run every message they show through
 * it, so that a secret a lower layer forgot to mask still never reaches a terminal or a browser.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@:]*):[^\s/?#]*@/gi, '$1$2:***@')
    .replace(/\b(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]{8,}/g, '$1 ***');
}
