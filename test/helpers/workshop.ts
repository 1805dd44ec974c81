import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeItem {
  name: string;
  description?: string;
  /** The workshop app the item belongs to; 346110 is our game. */
  appId?: string;
  /** Answer with this status and no page. */
  status?: number;
  /** Never answer. */
  hang?: boolean;
}

/** A local stand-in for the workshop website: WORKSHOP_URL points at it in tests. */
export class FakeWorkshop {
  readonly items = new Map<string, FakeItem>();
  requests = 0;
  private server: Server | undefined;
  private url = '';

  /** The WORKSHOP_URL template for this fake. */
  get template(): string {
    return `${this.url}/sharedfiles/filedetails/?id={id}`;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      this.requests++;
      const id = new URL(request.url ?? '/', 'http://x').searchParams.get('id') ?? '';
      const item = this.items.get(id);
      if (item?.hang) return; // the socket stays open until the client gives up
      if (!item) {
        // The real workshop answers 200 with an error page for an unknown id.
        response
          .writeHead(200, { 'content-type': 'text/html' })
          .end('<html><body><div class="error_ctn">There was a problem accessing the item.</div></body></html>');
        return;
      }
      if (item.status) return void response.writeHead(item.status).end();
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(item));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function page(item: FakeItem): string {
  const app = item.appId ?? '346110';
  return `<!DOCTYPE html><html><head><title>Steam Workshop::${escapeHtml(item.name)}</title></head><body>
<div class="breadcrumbs">
  <a href="https://steamcommunity.com/app/${app}">Game ${app}</a>&nbsp;&gt;&nbsp;
  <a href="https://steamcommunity.com/app/${app}/workshop/">Workshop</a>&nbsp;&gt;&nbsp;
  <a href="https://steamcommunity.com/id/someone/myworkshopfiles/?appid=${app}">Someone's Workshop</a>
</div>
<div class="workshopItemTitle">${escapeHtml(item.name)}</div>
<div class="workshopItemDescription" id="highlightContent">${escapeHtml(item.description ?? '')}</div>
</body></html>`;
}
