import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ROLES, type DashboardIdentity, type ResolvedDashboardOptions, type Role } from './options';

const SESSION_COOKIE = 'warren_dashboard_session';
export const CSRF_HEADER = 'x-warren-csrf';

/** Who is asking: the role, and the name the audit log records. */
export interface Caller {
  readonly role: Role;
  readonly who: string;
}

/** Why a request is refused: the HTTP status and a reason for the page. */
export class Refusal {
  constructor(
    readonly status: number,
    readonly reason: string,
  ) {}
}

function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return plain === '::1' || (isIP(plain) === 4 && plain.startsWith('127.'));
}

/** Headers only a proxy (or someone pretending to be one) sends. */
const PROXY_HEADERS = [
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
  'via',
];

/** The names a loopback connection is reached by, besides the address it came in on. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** `name[:port]` as a Host header gives it, lower-cased; undefined when it is not one. */
function parseHost(value: string): { name: string; port: number | undefined } | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^\s:[\]/@]+)(?::(\d{1,5}))?$/.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  return { name: match[1]!, port: match[2] === undefined ? undefined : Number(match[2]) };
}

/** The host values of `Forwarded` (host=...) and `X-Forwarded-Host`, every hop's. */
function forwardedHosts(request: IncomingMessage): string[] {
  const hosts: string[] = [];
  const xfh = request.headers['x-forwarded-host'];
  for (const value of [xfh ?? []].flat()) hosts.push(...value.split(','));
  const forwarded = request.headers.forwarded;
  for (const value of [forwarded ?? []].flat())
    for (const pair of value.split(/[;,]/)) {
      const [key, ...rest] = pair.split('=');
      if (key?.trim().toLowerCase() === 'host') hosts.push(rest.join('=').trim().replace(/^"|"$/g, ''));
    }
  return hosts.map((h) => h.trim()).filter((h) => h !== '');
}

/** A value fit to repeat in a refusal: short, one line. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
}

/**
 * The dashboard's gate. Without `authorize`, answers direct loopback clients only, as `loopbackRole`.
 * Identity comes from the socket and `authorize`, never from X-Forwarded-* headers (anyone can send
 * them). The Host must be this dashboard's (loopback names, the address the connection came in on,
 * `allowedHosts`). Mutations need the session's CSRF token in a header and a same-host Origin.
 */
export class RequestGuard {
  private readonly secret = randomBytes(32);

  constructor(private readonly options: ResolvedDashboardOptions) {}

  /**
   * Refuses (421) a request whose Host (or forwarded host) is not this dashboard's: what a page on
   * another name that rebinds its DNS to this address sends. No-op when the Host is not checked.
   */
  checkHost(request: IncomingMessage): void {
    const allowed = this.options.allowedHosts;
    if (allowed === undefined) return;
    const header = request.headers.host;
    const host = header === undefined ? undefined : parseHost(header);
    const local = request.socket.localAddress;
    const localName = local === undefined ? undefined : bracketed(local);
    const localPort = request.socket.localPort;
    const defaultPort = (request.socket as { encrypted?: boolean }).encrypted ? 443 : 80;
    const isListed = (h: { name: string; port: number | undefined }) =>
      allowed.includes(h.name) || (h.port !== undefined && allowed.includes(`${h.name}:${h.port}`));
    const isLocal =
      host !== undefined &&
      (LOOPBACK_NAMES.includes(host.name) || host.name === localName) &&
      (host.port ?? defaultPort) === localPort;
    if (host === undefined || !(isLocal || isListed(host)))
      throw new Refusal(
        421,
        `this dashboard does not answer to Host ${shown(header ?? '')}: it answers to loopback names and ` +
          'its own address with its port, and to the names in allowedHosts',
      );
    // Without authorize a proxied request is refused anyway, saying why (caller).
    if (this.options.authorize === undefined) return;
    for (const forwarded of forwardedHosts(request)) {
      const h = parseHost(forwarded);
      if (h === undefined || !(LOOPBACK_NAMES.includes(h.name) || isListed(h)))
        throw new Refusal(
          421,
          `this dashboard does not answer to the forwarded host ${shown(forwarded)} (add it to allowedHosts)`,
        );
    }
  }

  async caller(request: IncomingMessage): Promise<Caller> {
    const address = request.socket.remoteAddress;
    if (this.options.authorize === undefined) {
      const proxied = PROXY_HEADERS.find((name) => request.headers[name] !== undefined);
      if (proxied !== undefined)
        throw new Refusal(
          403,
          `this request came through a proxy (${proxied}), so its loopback address says nothing about ` +
            'the client: without authorize the dashboard answers direct loopback clients only (behind a ' +
            'proxy, configure authorize)',
        );
      if (!isLoopback(address))
        throw new Refusal(403, 'this dashboard answers loopback clients only (configure authorize)');
      return { role: this.options.loopbackRole, who: address ?? 'unknown' };
    }
    let identity: Role | DashboardIdentity;
    try {
      identity = await this.options.authorize(request);
    } catch {
      throw new Refusal(403, 'not authorized');
    }
    const role = typeof identity === 'string' ? identity : identity?.role;
    if (!ROLES.includes(role)) throw new Refusal(403, 'not authorized');
    const user = typeof identity === 'string' ? undefined : identity.user;
    return { role, who: user ?? address ?? 'unknown' };
  }

  /**
   * The session id from the cookie, or a new one with the Set-Cookie header to send: scoped to the path
   * the dashboard is mounted at, and `Secure` when the request came over HTTPS (directly, or through a
   * proxy that says so when `authorize` is given: without it a proxied request never gets this far).
   */
  session(request: IncomingMessage): { id: string; setCookie: string | undefined } {
    const existing = readCookie(request, SESSION_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{20,64}$/.test(existing)) return { id: existing, setCookie: undefined };
    const id = randomBytes(24).toString('base64url');
    const secure = this.isHttps(request) ? '; Secure' : '';
    return {
      id,
      setCookie: `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=${mountPath(request)}${secure}`,
    };
  }

  /** The CSRF token of a session: only the page served to that session's browser can read it. */
  token(sessionId: string): string {
    return createHmac('sha256', this.secret).update(sessionId).digest('base64url');
  }

  /**
   * Refuses a mutating request that another site could have made the browser send. The Origin must name
   * the Host, or (with `authorize`, behind a proxy) the host the proxy says the browser asked for.
   */
  checkMutation(request: IncomingMessage): void {
    const origin = request.headers.origin;
    let originHost: string | undefined;
    try {
      originHost = origin ? new URL(origin).host : undefined;
    } catch {
      originHost = undefined;
    }
    const hosts = [request.headers.host];
    if (this.options.authorize !== undefined) hosts.push(forwardedHosts(request)[0]);
    if (originHost === undefined || !hosts.some((h) => h !== undefined && h.toLowerCase() === originHost))
      throw new Refusal(403, 'cross-site request refused (Origin does not match Host)');
    if (!(request.headers['content-type'] ?? '').startsWith('application/json'))
      throw new Refusal(415, 'actions take application/json');
    const session = readCookie(request, SESSION_COOKIE);
    const sent = request.headers[CSRF_HEADER];
    if (!session || typeof sent !== 'string' || !sameText(sent, this.token(session)))
      throw new Refusal(403, 'missing or wrong CSRF token (reload the page)');
  }

  private isHttps(request: IncomingMessage): boolean {
    if ((request.socket as { encrypted?: boolean }).encrypted) return true;
    if (this.options.authorize === undefined) return false;
    const proto = request.headers['x-forwarded-proto'];
    const first = [proto ?? []].flat()[0]?.split(',')[0]?.trim().toLowerCase();
    const forwarded = [request.headers.forwarded ?? []].flat()[0]?.split(',')[0] ?? '';
    return first === 'https' || /(^|;)\s*proto="?https"?\s*(;|$)/i.test(forwarded);
  }
}

/** An address as a Host header names it (IPv6 in brackets, IPv4-mapped ones as IPv4). */
function bracketed(address: string): string {
  const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return isIP(plain) === 6 ? `[${plain.toLowerCase()}]` : plain;
}

/**
 * Where the dashboard is mounted: what the framework took off the front of the URL (Express keeps the
 * whole URL in `originalUrl`, the Fastify plugin sets it), `/` standalone. Characters a cookie attribute
 * cannot hold are percent-encoded.
 */
export function mountPath(request: IncomingMessage): string {
  const path = (url: string | undefined) => (url ?? '/').split('?')[0]!;
  const full = path((request as { originalUrl?: string }).originalUrl ?? request.url);
  const own = path(request.url);
  const prefix = own !== '/' && full.endsWith(own) ? full.slice(0, -own.length) : full.replace(/\/$/, '');
  const safe = prefix.replace(/[^A-Za-z0-9\-._~!$&'()*+,=:@/%]/g, (c) => encodeURIComponent(c));
  return safe === '' ? '/' : safe;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function readCookie(request: IncomingMessage, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}
