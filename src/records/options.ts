import { createHash } from 'node:crypto';
import { ConfigurationError, validationMessage } from '../core';

/**
 * The signing key of warren's own records (docs/reference/trust.md): a secret shared by every
 * process of the namespace. A string, or a list of strings while a key rotates: the first signs, every
 * one verifies. Each key's id (written beside the signature) is derived from the key itself, so a key
 * needs no name and a reader finds the key a record was signed with at once.
 */
export type SigningKeyOption =
  | string
  | readonly string[]
  | {
      /** The key, or the keys of a rotation: the first signs, every one verifies. */
      readonly keys: string | readonly string[];
      /**
       * While a key is being rolled out: sign, and still apply unsigned records (those of processes
       * that have no key yet); badly signed ones are refused. Default false. Turn it off once every
       * process of the namespace has the key (docs/reference/trust.md).
       */
      readonly acceptUnsigned?: boolean;
    };

export const RECORD_SIGNING_DEFAULTS = Object.freeze({
  /** Shorter keys are refused: 32 characters of a random key are 128 bits or more. */
  minKeyLength: 32,
  /** Keys accepted at once (a rotation needs two; more only slows a bad record's rejection). */
  maxKeys: 8,
});

/** One key, ready: its derived id and its secret. */
export interface RecordKey {
  readonly id: string;
  readonly secret: Buffer;
}

/** The resolved signing: undefined when no key is configured (records are checked, not verified). */
export interface ResolvedRecordSigning {
  /** Signs every record this process writes. */
  readonly signWith: RecordKey;
  /** Verifies: by id. */
  readonly keys: ReadonlyMap<string, RecordKey>;
  /** Applies unsigned records too (a rollout in progress); a bad signature is refused all the same. */
  readonly acceptUnsigned: boolean;
}

/** The id of a key: 8 hex characters of its SHA-256 (names the key without revealing it). */
export function keyId(secret: Buffer): string {
  return createHash('sha256').update('warren-key-id\0').update(secret).digest('hex').slice(0, 8);
}

/** `signingKey` checked and resolved once, at construction; undefined when absent. */
export function resolveRecordSigning(
  input: SigningKeyOption | undefined,
  path = 'signingKey',
): ResolvedRecordSigning | undefined {
  if (input === undefined) return undefined;
  if (typeof input === 'object' && input !== null && !Array.isArray(input))
    return resolveRollout(input, path);
  const list: readonly unknown[] =
    typeof input === 'string' ? [input] : Array.isArray(input) ? input : [input];
  if (list.length === 0 || list.length > RECORD_SIGNING_DEFAULTS.maxKeys)
    throw new ConfigurationError(
      validationMessage(
        path,
        `must be a key or a list of 1 to ${RECORD_SIGNING_DEFAULTS.maxKeys} keys`,
        list.length,
      ),
    );
  const keys = new Map<string, RecordKey>();
  list.forEach((key, i) => {
    const at = typeof input === 'string' ? path : `${path}[${i}]`;
    if (typeof key !== 'string')
      throw new ConfigurationError(validationMessage(at, 'must be a string', typeof key));
    if (key.length < RECORD_SIGNING_DEFAULTS.minKeyLength)
      throw new ConfigurationError(
        `${at} must be at least ${RECORD_SIGNING_DEFAULTS.minKeyLength} characters (got ${key.length})`,
      );
    const secret = Buffer.from(key, 'utf8');
    const id = keyId(secret);
    keys.set(id, { id, secret });
  });
  const first = keys.get(keyId(Buffer.from(list[0] as string, 'utf8')))!;
  return Object.freeze({ signWith: first, keys, acceptUnsigned: false });
}

/** The object form: `{ keys, acceptUnsigned }`. */
function resolveRollout(input: object, path: string): ResolvedRecordSigning {
  const { keys, acceptUnsigned = false, ...rest } = input as { keys?: unknown; acceptUnsigned?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new ConfigurationError(`${path}.${unknown[0]} is not an option (known: keys, acceptUnsigned)`);
  if (typeof acceptUnsigned !== 'boolean')
    throw new ConfigurationError(
      validationMessage(`${path}.acceptUnsigned`, 'must be a boolean', acceptUnsigned),
    );
  if (typeof keys !== 'string' && !Array.isArray(keys))
    throw new ConfigurationError(`${path}.keys must be a key or a list of keys`);
  const resolved = resolveRecordSigning(keys as string | readonly string[], `${path}.keys`)!;
  return Object.freeze({ ...resolved, acceptUnsigned });
}
