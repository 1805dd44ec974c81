import type { StoredTokens, TokenStore } from './token-store.ts';

/**
 * Keeps tokens in one JSON file (Node only), readable by its owner alone: the file is written
 * with mode 0600 to a temporary name and renamed over the old one, so a reader never sees half
 * a file; its directory is created with mode 0700.
 */
export class FileTokenStore implements TokenStore {
  constructor(readonly path: string) {}

  async get(key: string): Promise<StoredTokens | undefined> {
    const all = await this.readAll();
    return Object.hasOwn(all, key) ? all[key] : undefined;
  }

  async set(key: string, tokens: StoredTokens): Promise<void> {
    const all = await this.readAll();
    all[key] = tokens;
    await this.writeAll(all);
  }

  async delete(key: string): Promise<void> {
    const all = await this.readAll();
    if (!Object.hasOwn(all, key)) return;
    delete all[key];
    await this.writeAll(all);
  }

  private async readAll(): Promise<Record<string, StoredTokens>> {
    const { readFile } = await import('node:fs/promises');
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Object.create(null);
      throw error;
    }
    try {
      const parsed = JSON.parse(text);
      return parsed && typeof parsed === 'object' ? Object.assign(Object.create(null), parsed) : Object.create(null);
    } catch {
      return Object.create(null); // a damaged file is as good as none: sign in again
    }
  }

  private async writeAll(all: Record<string, StoredTokens>): Promise<void> {
    const { mkdir, writeFile, rename, chmod } = await import('node:fs/promises');
    const { dirname } = await import('node:path');
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temporary, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    await chmod(temporary, 0o600); // the umask may have narrowed it further, never widened; be exact
    await rename(temporary, this.path);
  }
}
