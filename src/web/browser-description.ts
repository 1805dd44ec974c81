/**
 * How the account page names a browser sign-in: the device and browser read from its User-Agent,
 * and where it came from as its network (no location database is used, so no place is named).
 * A short list of rules, not a full parser: the names only help a person tell their browsers apart.
 */

/** Browsers in the order their tokens must be tested: each later one's token appears in earlier ones' strings. */
const BROWSERS: readonly [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/\b(?:OPR|OPiOS)\/(\d+)/, 'Opera'],
  [/\bSamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/\bVivaldi\/(\d+)/, 'Vivaldi'],
  [/\b(?:Firefox|FxiOS)\/(\d+)/, 'Firefox'],
  [/\bCriOS\/(\d+)/, 'Chrome'],
  [/\bChromium\/(\d+)/, 'Chromium'],
  [/\b(?:Headless)?Chrome\/(\d+)/, 'Chrome'],
  [/\bVersion\/(\d+)(?:\.\d+)*(?: Mobile\/\w+)? Safari\//, 'Safari'],
];

/** Devices by their system's token, in the same kind of order (an iPad's string names Mac OS X, Android's Linux). */
const DEVICES: readonly [RegExp, string][] = [
  [/\biPhone\b/, 'iPhone'],
  [/\biPad\b/, 'iPad'],
  [/\bAndroid\b.*\bMobile\b/, 'Android phone'],
  [/\bAndroid\b/, 'Android tablet'],
  [/\bCrOS\b/, 'Chromebook'],
  [/\bWindows\b/, 'Windows computer'],
  [/\bMacintosh\b|\bMac OS X\b/, 'Mac'],
  [/\bLinux\b|\bX11\b/, 'Linux computer'],
];

export interface BrowserDescription {
  /** e.g. "Firefox 128", or the first product named ("curl"), or "Unknown browser". */
  browser: string;
  /** e.g. "Android phone", "Mac", or "Unknown device". */
  device: string;
}

export function describeBrowser(userAgent: string | null): BrowserDescription {
  const ua = userAgent ?? '';
  let browser = 'Unknown browser';
  for (const [pattern, name] of BROWSERS) {
    const match = pattern.exec(ua);
    if (match) {
      browser = `${name} ${match[1]}`;
      break;
    }
  }
  // A program rather than a browser (curl, a script): its own product name, without "Mozilla".
  if (browser === 'Unknown browser') {
    const product = /^([A-Za-z][\w.-]{0,39})\//.exec(ua)?.[1];
    if (product && product !== 'Mozilla') browser = product;
  }
  const device = DEVICES.find(([pattern]) => pattern.test(ua))?.[1] ?? 'Unknown device';
  return { browser, device };
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
