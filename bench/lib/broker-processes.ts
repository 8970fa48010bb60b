import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface BrokerPids {
  rabbitmq?: number;
  redis?: number;
}

/**
 * The broker is the process listening on the port the contenders connect to: matching by name is not
 * enough on a machine where other test runs start RabbitMQ nodes of their own.
 */
export function findBrokerPids(amqpPort: number, redisPort: number): BrokerPids {
  return { rabbitmq: findListenerPid(amqpPort), redis: findListenerPid(redisPort) };
}

function findListenerPid(port: number): number | undefined {
  const inodes = listeningSocketInodes(port);
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // exited, or not ours to read
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (inodes.has(target)) return Number(entry);
      } catch {
        // the descriptor closed while we looked
      }
    }
  }
  return undefined;
}

/** As `socket:[inode]`, the form a /proc/<pid>/fd link takes. */
function listeningSocketInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const LISTEN = '0A';
      if (fields.length > 9 && fields[3] === LISTEN && parseInt(fields[1].split(':')[1], 16) === port) {
        inodes.add(`socket:[${fields[9]}]`);
      }
    }
  }
  return inodes;
}
