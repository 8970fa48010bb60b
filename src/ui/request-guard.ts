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

/**
 * The dashboard's gate. Without `authorize`, answers loopback clients only, as viewers. Identity comes
 * from the socket and `authorize`, never from X-Forwarded-* headers (anyone can send them).
 * Mutations need the session's CSRF token in a header and a same-host Origin.
 */
export class RequestGuard {
  private readonly secret = randomBytes(32);

  constructor(private readonly options: ResolvedDashboardOptions) {}

  async caller(request: IncomingMessage): Promise<Caller> {
    const address = request.socket.remoteAddress;
    if (this.options.authorize === undefined) {
      if (!isLoopback(address))
        throw new Refusal(403, 'this dashboard answers loopback clients only (configure authorize)');
      return { role: 'viewer', who: address ?? 'unknown' };
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

  /** The session id from the cookie, or a new one with the Set-Cookie header to send. */
  session(request: IncomingMessage): { id: string; setCookie: string | undefined } {
    const existing = readCookie(request, SESSION_COOKIE);
    if (existing && /^[A-Za-z0-9_-]{20,64}$/.test(existing)) return { id: existing, setCookie: undefined };
    const id = randomBytes(24).toString('base64url');
    return { id, setCookie: `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/` };
  }

  /** The CSRF token of a session: only the page served to that session's browser can read it. */
  token(sessionId: string): string {
    return createHmac('sha256', this.secret).update(sessionId).digest('base64url');
  }

  /** Refuses a mutating request that another site could have made the browser send. */
  checkMutation(request: IncomingMessage): void {
    const origin = request.headers.origin;
    let originHost: string | undefined;
    try {
      originHost = origin ? new URL(origin).host : undefined;
    } catch {
      originHost = undefined;
    }
    if (originHost === undefined || originHost !== request.headers.host)
      throw new Refusal(403, 'cross-site request refused (Origin does not match Host)');
    if (!(request.headers['content-type'] ?? '').startsWith('application/json'))
      throw new Refusal(415, 'actions take application/json');
    const session = readCookie(request, SESSION_COOKIE);
    const sent = request.headers[CSRF_HEADER];
    if (!session || typeof sent !== 'string' || !sameText(sent, this.token(session)))
      throw new Refusal(403, 'missing or wrong CSRF token (reload the page)');
  }
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
