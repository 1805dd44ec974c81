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

export async function measure(baseUrl: string, load: Load, options: { seconds: number; connections: number }): Promise<Figures> {
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
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: unexpected + result.errors + result.timeouts,
    requests: result.requests.total,
    bytesPerAnswer: answered > 0 ? Math.round(result.throughput.total / answered) : 0,
  };
}
