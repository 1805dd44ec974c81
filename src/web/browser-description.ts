import Bowser from 'bowser';

/**
 * How the account page names a browser sign-in: the device and browser read from its User-Agent
 * (by bowser), and where it came from as its network (no location database is used, so no place
 * is named). The names only help a person tell their browsers apart.
 */

/** Shorter names than bowser's for the browsers whose full names crowd a phone's row. */
const BROWSER_NAMES: ReadonlyMap<string, string> = new Map([
  ['Microsoft Edge', 'Edge'],
  ['Samsung Internet for Android', 'Samsung Internet'],
]);

/** How a person calls the device, by its system (and, for Apple's and Android's, its kind). */
function deviceName(parser: Bowser.Parser.Parser): string {
  const platform = parser.getPlatform();
  switch (parser.getOSName()) {
    case 'iOS':
      return platform.model === 'iPad' || platform.type === 'tablet' ? 'iPad' : 'iPhone';
    case 'Android':
      return platform.type === 'tablet' ? 'Android tablet' : 'Android phone';
    case 'Chrome OS':
      return 'Chromebook';
    case 'Windows':
      return 'Windows computer';
    case 'macOS':
      return 'Mac';
    case 'Linux':
      return 'Linux computer';
    default:
      return 'Unknown device';
  }
}

export interface BrowserDescription {
  /** e.g. "Firefox 128", or the first product named ("curl"), or "Unknown browser". */
  browser: string;
  /** e.g. "Android phone", "Mac", or "Unknown device". */
  device: string;
}

export function describeBrowser(userAgent: string | null): BrowserDescription {
  const ua = userAgent?.trim() ?? '';
  if (ua === '') return { browser: 'Unknown browser', device: 'Unknown device' };
  const parser = Bowser.getParser(ua);
  const { name, version } = parser.getBrowser();
  let browser = 'Unknown browser';
  if (name) browser = [BROWSER_NAMES.get(name) ?? name, version?.split('.')[0]].filter(Boolean).join(' ');
  else {
    // A program rather than a browser (curl, a script): its own product name, without "Mozilla".
    const product = /^([A-Za-z][\w.-]{0,39})\//.exec(ua)?.[1];
    if (product && product !== 'Mozilla') browser = product;
  }
  return { browser, device: deviceName(parser) };
}

/**
 * The network an address belongs to, as the place a sign-in came from: its /24 (IPv4) or /48
 * (IPv6). The address itself would say no more about where the browser is, and names a home.
 */
export function networkOf(ip: string | null): string | undefined {
  if (!ip) return undefined;
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}$/i.exec(ip);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  if (!ip.includes(':')) return undefined;
  const [head = '', tail] = ip.split('::');
  const groups = head === '' ? [] : head.split(':');
  // "::" stands for as many zero groups as are missing; the first three groups are the /48.
  if (tail !== undefined) while (groups.length < 3) groups.push('0');
  const prefix = groups.slice(0, 3).map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
  if (prefix.length < 3 || prefix.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return `${prefix.join(':')}::/48`;
}
