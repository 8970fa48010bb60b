/**
 * The `warren/errors` entry: the error classes the root entry leaves out to keep within its 100 names. Every
 * other error class is exported from `warren` itself.
 */
export { LimitError, PartitionLostError } from './errors';
