import http from 'node:http';
import autocannon from 'autocannon';

export interface Load {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** A different request each time (single-use codes and tokens, fresh ids). */
  next?: () => { path?: string; headers?: Record<string, string>; body?: string };
  /** The status every answer must have (default: any 2xx). */
  expectStatus?: number;
  /**
   * Who sends the requests: autocannon (default), or 'node', a plain keep-alive client on
   * node:http. For answers of hundreds of kilobytes autocannon's own parsing is the bottleneck
   * (the 10,000-engram list in br: about 170 req/s under autocannon, over 1,400 with 'node' in the
   * same run), so such cases measured the client rather than the server.
   */
  client?: 'autocannon' | 'node';
}

export interface Figures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Answers of another status, and connection errors or timeouts: a case with any of these is flagged. */
  failed: number;
  requests: number;
  /** Average bytes per answer (body and headers), to see whether compression applied. */
  bytesPerAnswer: number;
}

export async function measure(
  baseUrl: string,
  load: Load,
  options: { seconds: number; connections: number },
): Promise<Figures> {
  if (load.client === 'node') return measureWithNode(baseUrl, load, options);
  const { next } = load;
  const result = await autocannon({
    url: baseUrl,
    connections: options.connections,
    duration: options.seconds,
    requests: [
      {
        method: (load.method ?? 'GET') as autocannon.Request['method'],
        path: load.path,
        headers: load.headers,
        body: load.body,
        ...(next ? { setupRequest: (request: autocannon.Request) => ({ ...request, ...next() }) } : {}),
      },
    ],
  });
  const statuses = result.statusCodeStats as unknown as Record<string, { count: number }>;
  const answered = Object.values(statuses).reduce((sum, { count }) => sum + count, 0);
  const unexpected =
    load.expectStatus === undefined ? result.non2xx : answered - (statuses[String(load.expectStatus)]?.count ?? 0);
  if (unexpected + result.errors + result.timeouts > 0) {
    // What failed, on the run's progress output: the table only counts it.
    const byStatus = Object.entries(statuses)
      .map(([status, { count }]) => `${status} × ${count}`)
      .join(', ');
    process.stderr.write(
      `  failed requests: answers ${byStatus}; connection errors ${result.errors}; timeouts ${result.timeouts}\n`,
    );
  }
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: unexpected + result.errors + result.timeouts,
    requests: result.requests.total,
    bytesPerAnswer: answered > 0 ? Math.round(result.throughput.total / answered) : 0,
  };
}

/** measure() with a plain keep-alive node:http client per connection, each sending its next request once the last answer is read. */
async function measureWithNode(
  baseUrl: string,
  load: Load,
  options: { seconds: number; connections: number },
): Promise<Figures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  let failed = 0;
  let bytes = 0;
  const started = performance.now();
  const end = started + options.seconds * 1000;
  const once = () =>
    new Promise<void>((resolve) => {
      const extra = load.next?.() ?? {};
      const sent = performance.now();
      const request = http.request(
        new URL(extra.path ?? load.path, baseUrl),
        { method: load.method ?? 'GET', agent, headers: extra.headers ?? load.headers },
        (response) => {
          // Headers as sent on the wire (status line, name: value, CRLFs), as autocannon counts them.
          bytes += 17 + response.rawHeaders.reduce((sum, item, _index) => sum + item.length + 2, 0) + 2;
          response.on('data', (chunk: Buffer) => (bytes += chunk.length));
          response.on('end', () => {
            latencies.push(performance.now() - sent);
            const status = response.statusCode ?? 0;
            if (load.expectStatus === undefined ? status < 200 || status > 299 : status !== load.expectStatus) failed++;
            resolve();
          });
          response.on('error', () => {
            failed++;
            resolve();
          });
        },
      );
      request.on('error', () => {
        failed++;
        resolve();
      });
      request.end(extra.body ?? load.body);
    });
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < end) await once();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  // Hundredths of a millisecond (autocannon keeps whole milliseconds): ratios of small latencies stay meaningful.
  const at = (fraction: number) =>
    latencies.length
      ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))]! * 100) / 100
      : 0;
  return {
    requestsPerSecond: Math.round(latencies.length / elapsed),
    p50: at(0.5),
    p99: at(0.99),
    failed,
    requests: latencies.length,
    bytesPerAnswer: latencies.length > 0 ? Math.round(bytes / latencies.length) : 0,
  };
}
