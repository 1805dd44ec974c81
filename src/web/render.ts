import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

/** Server-rendered pages: Eta templates in ./templates, HTML-escaped by default. */
export const views = new Eta({
  views: fileURLToPath(new URL('./templates', import.meta.url)),
  cache: process.env.NODE_ENV !== 'development',
  autoEscape: true,
});

export function renderPage(template: string, data: Record<string, unknown>): string {
  return views.render(template, data);
}
