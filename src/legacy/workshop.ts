import { parse } from 'node-html-parser';

/** The game whose workshop items are mods of ours (its app id on the workshop). */
export const GAME_APP_ID = '346110';
const TIMEOUT_MS = 5_000;
const MAX_BYTES = 2 * 1024 * 1024;

export interface WorkshopItem {
  name: string;
  /** The item's description as text; ownership proof searches it for the confirmation code. */
  description: string;
}

/** The workshop did not answer in time or answered with a server error. */
export class WorkshopUnavailableError extends Error {}

export function workshopUrl(template: string, modId: string): string {
  return template.replaceAll('{id}', encodeURIComponent(modId));
}

/**
 * Reads a mod's workshop page. Resolves to null when there is no such page or the page belongs
 * to another game; rejects with WorkshopUnavailableError when the workshop is down or slow.
 */
export async function fetchWorkshopItem(template: string, modId: string): Promise<WorkshopItem | null> {
  let html: string;
  try {
    const response = await fetch(workshopUrl(template, modId), {
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'text/html' },
    });
    if (response.status === 404 || response.status === 410) return null;
    if (!response.ok) throw new WorkshopUnavailableError(`the workshop answered ${response.status}`);
    html = await readAtMost(response, MAX_BYTES);
  } catch (error) {
    if (error instanceof WorkshopUnavailableError) throw error;
    const reason =
      (error as Error).name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000} s` : (error as Error).message;
    throw new WorkshopUnavailableError(`the workshop could not be reached: ${reason}`);
  }
  return parseWorkshopPage(html);
}

export function parseWorkshopPage(html: string): WorkshopItem | null {
  const page = parse(html);
  const ofOurGame = page
    .querySelectorAll('.breadcrumbs a')
    .some((link) => new RegExp(`/app/${GAME_APP_ID}(?:[/?#]|$)`).test(link.getAttribute('href') ?? ''));
  const title = page.querySelector('.workshopItemTitle')?.text.trim();
  if (!ofOurGame || !title) return null;
  return { name: title, description: page.querySelector('#highlightContent')?.text ?? '' };
}

async function readAtMost(response: Response, limit: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => {});
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
