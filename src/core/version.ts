/** warren's version, as in package.json (a unit test keeps them equal); processes report it to warren/ops. */
export const WARREN_VERSION = '0.1.0';
